#include "panel_binding.h"
#include "format/npy.h"
#include "format/sha.h"
#include "format/validate_util.h"
#include "util/fsio.h"
#include "util/strv.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PANEL_SCHEMA "quant-pipeline.glm53-token-panel.v1"
#define BUILD_RECEIPT_SCHEMA "malaiwah.token-panel-build-receipt.v1"
#define ARTIFACT_RECEIPT_SCHEMA "quant-pipeline.glm53-token-panel-receipt.v1"
#define TOKENIZER_RECEIPT_SCHEMA "quant-pipeline.glm53-tokenizer-receipt.v1"
#define ARCHIVE_ALGORITHM "sha256(ustar: sorted regular files; mode=0644; uid=gid=mtime=0)"
#define REFERENCE_SUBDIR ".reference"
#define JSON_MAX ((size_t)256 << 20)
#define NPY_MAX ((size_t)1 << 30)
#define EQUIV_MAX ((size_t)64 << 20)
#define MAX_FILES 1000000
#define MAX_DEPTH 64

/* every refusal of this file carries one code */
#define perr(e, ...) fd_fail((e), "panel_unresolvable", "", __VA_ARGS__)

static char *repr(const jv *v)
{
    return v ? py_repr(v) : fd_xstrdup("None");
}

/* ------------------------------------------------------------ small checks */

static int hex64(const jv *v, const char *label, const char **out, fd_err *e)
{
    *out = "";
    if (!v || v->t != JV_STR || !fd_is_hex64(v->u.s.p)) return perr(e, "%s must be a lowercase SHA-256 hex string", label);
    *out = v->u.s.p;
    return 0;
}

static int integer(const jv *v, const char *label, int64_t min, int64_t *out, fd_err *e)
{
    *out = 0;
    if (!v || v->t != JV_INT || v->u.i < min) return perr(e, "%s must be an integer >= %lld", label, (long long)min);
    *out = v->u.i;
    return 0;
}

static void canonical(const jv *v, int newline, fd_buf *b)
{
    fd_err e;
    jv_dump(v, &JV_CANON, b, &e);
    if (newline) fd_buf_putc(b, '\n');
}

static void sha_canonical(const jv *v, int newline, char hex[65])
{
    fd_buf b = {0};
    canonical(v, newline, &b);
    fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
}

/* A strict JSON object file (duplicate keys keep the last value: see README). */
static jv *json_file(const char *path, const char *label, fd_buf *raw, fd_err *e)
{
    fd_err r;
    if (fd_read_file(path, JSON_MAX, raw, &r)) { perr(e, "cannot read strict JSON %s %s: %s", label, path, r.msg); return NULL; }
    jv *v = jv_parse(raw->p, raw->n, &r);
    if (!v) { perr(e, "cannot read strict JSON %s %s: %s", label, path, r.msg); return NULL; }
    if (v->t != JV_OBJ) { jv_free(v); perr(e, "%s must be a JSON object", label); return NULL; }
    return v;
}

/* The modern self-blank seal or the legacy field-absent one (canonical + "\n"). */
static int verify_seal(const jv *doc, const char *label, char declared[65], const char **mode, fd_err *e)
{
    const char *claimed;
    char lab[160], h[65];
    snprintf(lab, sizeof lab, "%s.receipt_sha256", label);
    if (hex64(jv_get(doc, "receipt_sha256"), lab, &claimed, e)) return -1;
    snprintf(declared, 65, "%s", claimed);
    jv *m = jv_copy(doc);
    jv_set(m, "receipt_sha256", jv_str(""));
    sha_canonical(m, 0, h);
    jv_free(m);
    if (!strcmp(h, claimed)) { *mode = "self-blank"; return 0; }
    m = jv_copy(doc);
    jv_del(m, "receipt_sha256");
    sha_canonical(m, 1, h);
    jv_free(m);
    if (!strcmp(h, claimed)) { *mode = "legacy-field-absent"; return 0; }
    return perr(e, "%s receipt seal is neither modern self-blank nor legacy field-absent canonical JSON-with-newline", label);
}

static int is_repo(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || strchr(slash + 1, '/') || slash == s || !slash[1]) return 0;
    for (const char *p = s; *p; p++) {
        if (p == slash) continue;
        int alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (!alnum && ((p == s || p == slash + 1) || (*p != '.' && *p != '_' && *p != '-'))) return 0;
    }
    return 1;
}

static int is_rev40(const char *s)
{
    if (strlen(s) != 40) return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return 0;
    return 1;
}

static int pinned(const jv *repo, const jv *rev, const char *label, fd_err *e)
{
    if (!repo || repo->t != JV_STR || !is_repo(repo->u.s.p))
        return perr(e, "%s repository must have immutable owner/name form", label);
    if (!rev || rev->t != JV_STR || !is_rev40(rev->u.s.p))
        return perr(e, "%s revision must be a lowercase 40-hex commit", label);
    return 0;
}

/* PurePosixPath(value).as_posix() == value with no "", ".", ".." part. */
static int posix_canonical(const char *v, int allow_absolute)
{
    if (!*v || strchr(v, '\\') || strstr(v, "//")) return 0;
    const char *p = v;
    if (*p == '/') { if (!allow_absolute || !p[1]) return 0; p++; }
    size_t n = strlen(p);
    if (!n || p[n - 1] == '/') return 0;
    for (const char *s = p; *s;) {
        const char *t = strchr(s, '/');
        size_t k = t ? (size_t)(t - s) : strlen(s);
        if (!k || (k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.')) return 0;
        s += k + (t ? 1 : 0);
    }
    return 1;
}

static const char *basename_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* ------------------------------------------------------------ the tree */

typedef struct pfile {
    char *rel;
    uint64_t size;
    char sha[65];
} pfile;

typedef struct ptree {
    pfile *f;
    size_t n, cap;
} ptree;

static int walk(const char *root, const char *rel, int depth, ptree *t, fd_err *e)
{
    if (depth > MAX_DEPTH) return perr(e, "panel tree deeper than %d levels", MAX_DEPTH);
    char *dir = rel ? fd_path_join(root, rel) : fd_xstrdup(root);
    DIR *d = opendir(dir);
    if (!d) { perr(e, "cannot read panel directory %s: %s", dir, strerror(errno)); free(dir); return -1; }
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *r = rel ? fd_path_join(rel, de->d_name) : fd_xstrdup(de->d_name);
        char *full = fd_path_join(root, r);
        struct stat st;
        if (lstat(full, &st)) rc = perr(e, "cannot stat %s: %s", full, strerror(errno));
        else if (S_ISLNK(st.st_mode)) rc = perr(e, "panel contains symlink %s", full);
        else if (S_ISDIR(st.st_mode)) rc = walk(root, r, depth + 1, t, e);
        else if (!S_ISREG(st.st_mode)) rc = perr(e, "panel contains non-regular entry %s", full);
        else if (t->n >= MAX_FILES) rc = perr(e, "panel tree has more than %d files", MAX_FILES);
        else {
            if (t->n == t->cap) { t->cap = t->cap ? 2 * t->cap : 64; t->f = fd_xrealloc(t->f, t->cap * sizeof *t->f); }
            pfile *f = &t->f[t->n];
            fd_err he;
            if (fd_sha256_file(full, f->sha, &he)) rc = perr(e, "cannot read %s: %s", full, he.msg);
            else { f->rel = r; r = NULL; f->size = (uint64_t)st.st_size; t->n++; }
        }
        free(r);
        free(full);
    }
    closedir(d);
    free(dir);
    return rc;
}

static int cmp_pfile(const void *a, const void *b) { return strcmp(((const pfile *)a)->rel, ((const pfile *)b)->rel); }

static const pfile *tree_get(const ptree *t, const char *rel)
{
    pfile key = {.rel = (char *)rel};
    return bsearch(&key, t->f, t->n, sizeof *t->f, cmp_pfile);
}

static void tree_free(ptree *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->f[i].rel);
    free(t->f);
}

/* ------------------------------------------------------------ the artifact contract */

typedef struct artifact {
    char *rel;
    int64_t size;
    char sha[65];
} artifact;

static int cmp_artifact(const void *a, const void *b)
{
    const artifact *x = a, *y = b;
    int c = strcmp(x->rel, y->rel);
    if (c) return c;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return strcmp(x->sha, y->sha);
}

static void artifacts_free(artifact *a, size_t n)
{
    for (size_t i = 0; i < n; i++) free(a[i].rel);
    free(a);
}

static int artifact_contract(const jv *receipt, artifact **out, size_t *n_out, fd_err *e)
{
    *out = NULL;
    *n_out = 0;
    const jv *rows = jv_get(receipt, "artifacts");
    if (!rows || rows->t != JV_ARR || !rows->u.a.n) return perr(e, "artifact panel receipt has no artifacts");
    const char *panel_sha;
    if (hex64(jv_get(receipt, "token_panel_artifact_sha256"), "receipt.token_panel_artifact_sha256", &panel_sha, e))
        return -1;
    size_t n = rows->u.a.n, panels = 0, panel_index = 0;
    artifact *a = fd_xcalloc(n, sizeof *a);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const jv *row = rows->u.a.v[i];
        char lab[96];
        if (row->t != JV_OBJ || row->u.o.n != 3 || !jv_get(row, "path") || !jv_get(row, "bytes") || !jv_get(row, "sha256")) {
            rc = perr(e, "receipt.artifacts[%zu] must contain exactly path, bytes, sha256", i);
            break;
        }
        const jv *p = jv_get(row, "path");
        if (p->t != JV_STR || strchr(p->u.s.p, '\\') || strstr(p->u.s.p, "//")) {
            rc = perr(e, "receipt.artifacts[%zu].path is not canonical POSIX", i);
            break;
        }
        if (!posix_canonical(p->u.s.p, 1)) { rc = perr(e, "receipt.artifacts[%zu].path is unsafe or non-canonical", i); break; }
        snprintf(lab, sizeof lab, "receipt.artifacts[%zu].bytes", i);
        if (integer(jv_get(row, "bytes"), lab, 0, &a[i].size, e)) { rc = -1; break; }
        const char *d;
        snprintf(lab, sizeof lab, "receipt.artifacts[%zu].sha256", i);
        if (hex64(jv_get(row, "sha256"), lab, &d, e)) { rc = -1; break; }
        memcpy(a[i].sha, d, 65);
        a[i].rel = fd_xstrdup(p->u.s.p);
        if (!strcmp(basename_of(p->u.s.p), "panel.json") && !strcmp(d, panel_sha)) { panels++; panel_index = i; }
    }
    if (!rc && panels != 1) rc = perr(e, "receipt must bind exactly one panel.json with token_panel_artifact_sha256");
    if (rc) { artifacts_free(a, n); return -1; }
    /* relative to the directory of that panel.json */
    const char *pp = a[panel_index].rel, *slash = strrchr(pp, '/');
    char *prefix = slash ? fd_xstrndup(pp, (size_t)(slash - pp)) : fd_xstrdup("");
    if (slash == pp) { free(prefix); prefix = fd_xstrdup("/"); }
    for (size_t i = 0; i < n && !rc; i++) {
        const char *p = a[i].rel, *rel = NULL;
        size_t k = strlen(prefix);
        if (!k) rel = p[0] == '/' ? NULL : p;
        else if (!strcmp(prefix, "/")) rel = p[0] == '/' ? p + 1 : NULL;
        else if (!strncmp(p, prefix, k) && p[k] == '/') rel = p + k + 1;
        if (!rel) { rc = perr(e, "listed artifact %s is outside panel root %s", p, *prefix ? prefix : "."); break; }
        if (!posix_canonical(rel, 0)) { rc = perr(e, "unsafe or non-canonical artifact path: '%s'", rel); break; }
        char *r = fd_xstrdup(rel);
        free(a[i].rel);
        a[i].rel = r;
    }
    free(prefix);
    if (!rc) {
        qsort(a, n, sizeof *a, cmp_artifact);
        for (size_t i = 1; i < n && !rc; i++)
            if (!strcmp(a[i].rel, a[i - 1].rel)) rc = perr(e, "duplicate listed artifact path %s", a[i].rel);
    }
    if (rc) { artifacts_free(a, n); return -1; }
    *out = a;
    *n_out = n;
    return 0;
}

/* ------------------------------------------------------------ tokenizer files */

typedef struct tokfile {
    char *name;
    int64_t size;  /* -1: only a digest is listed */
    char sha[65];
} tokfile;

static int cmp_tokfile(const void *a, const void *b)
{
    const tokfile *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return strcmp(x->sha, y->sha);
}

static void tokfiles_free(tokfile *t, size_t n)
{
    for (size_t i = 0; i < n; i++) free(t[i].name);
    free(t);
}

/* canonical JSON equal after dropping the loader-only key (config.json:
 * transformers_version; tokenizer_config.json: local_files_only), and at
 * least one side dropped it. */
static int loader_equivalent(const char *name, const char *key, const fd_buf *root_raw, const fd_buf *cand_raw, fd_err *e)
{
    fd_err pe;
    jv *r = jv_parse(root_raw->p, root_raw->n, &pe), *c = r ? jv_parse(cand_raw->p, cand_raw->n, &pe) : NULL;
    int rc = 0;
    if (!r || !c) rc = perr(e, "%s equivalence: not both strict JSON: %s", name, pe.msg);
    else if (r->t != JV_OBJ || c->t != JV_OBJ) rc = perr(e, "%s equivalence: both documents must be JSON objects", name);
    else {
        int dr = jv_del(r, key), dc = jv_del(c, key);
        fd_buf a = {0}, b = {0};
        canonical(r, 0, &a);
        canonical(c, 0, &b);
        if (a.n != b.n || memcmp(a.p, b.p, a.n)) {
            fd_buf diff = {0};
            fd_strv keys = {0};
            for (size_t i = 0; i < r->u.o.n; i++) fd_strv_push(&keys, r->u.o.m[i].k);
            for (size_t i = 0; i < c->u.o.n; i++)
                if (!jv_get(r, c->u.o.m[i].k)) fd_strv_push(&keys, c->u.o.m[i].k);
            fd_strv_sort(&keys);
            fd_buf_putc(&diff, '[');
            int first = 1;
            for (size_t i = 0; i < keys.n; i++) {
                const jv *x = jv_get(r, keys.v[i]), *y = jv_get(c, keys.v[i]);
                if (x && y && jv_equal(x, y)) continue;
                fd_buf_printf(&diff, "%s'%s'", first ? "" : ", ", keys.v[i]);
                first = 0;
            }
            fd_buf_putc(&diff, ']');
            rc = perr(e, "tokenizer artifact %s fails its SHA-256 and is not loader-key equivalent to the root's: keys "
                         "differ beyond ['%s']: %s", name, key, diff.p);
            fd_strv_free(&keys);
            fd_buf_free(&diff);
        } else if (!dr && !dc)
            rc = perr(e, "tokenizer artifact %s fails its SHA-256 and differs from the root's only in serialization; "
                         "loader-key equivalence admits ['%s'], not a re-serialization", name, key);
        fd_buf_free(&a);
        fd_buf_free(&b);
    }
    jv_free(r);
    jv_free(c);
    return rc;
}

/* One bound tokenizer artifact under base: its (root's) length, or a refusal. */
static int verify_tok_artifact(const char *base, const tokfile *t, int64_t *length, fd_err *e)
{
    char *path = fd_path_join(base, t->name);
    char sha[65];
    struct stat st;
    fd_err he;
    int rc = 0;
    errno = 0;
    if (stat(path, &st) || !S_ISREG(st.st_mode) || fd_sha256_file(path, sha, &he)) {
        rc = perr(e, "cannot read tokenizer artifact %s: %s", path, errno ? strerror(errno) : "not a regular file");
        free(path);
        return rc;
    }
    if (!strcmp(sha, t->sha) && (t->size < 0 || (int64_t)st.st_size == t->size)) {
        *length = (int64_t)st.st_size;
        free(path);
        return 0;
    }
    int provenance = !strcmp(t->name, "LICENSE") || !strcmp(t->name, "chat_template.jinja");
    int config = !strcmp(t->name, "config.json"), tokcfg = !strcmp(t->name, "tokenizer_config.json");
    if (!provenance && !config && !tokcfg) {
        rc = t->size >= 0 ? perr(e, "tokenizer artifact %s fails its listed size/SHA-256", t->name)
                          : perr(e, "tokenizer artifact %s fails its SHA-256", t->name);
        free(path);
        return rc;
    }
    char rel[PATH_MAX];
    snprintf(rel, sizeof rel, "%s/%s", REFERENCE_SUBDIR, t->name);
    char *ref = fd_path_join(base, rel);
    fd_buf rr = {0}, cr = {0};
    if (!fd_is_file(ref)) {
        rc = perr(e, "tokenizer artifact %s fails its SHA-256 (no %s/%s copy of the root's file to %s)", t->name,
                  REFERENCE_SUBDIR, t->name, provenance ? "record provenance against" : "test loader-key equivalence against");
    } else if (fd_read_file(ref, EQUIV_MAX, &rr, &he) || fd_read_file(path, EQUIV_MAX, &cr, &he)) {
        rc = perr(e, "cannot read tokenizer artifact %s: %s", t->name, he.msg);
    } else {
        char rs[65];
        fd_sha256_hex(rr.p, rr.n, rs);
        if (strcmp(rs, t->sha) || (t->size >= 0 && (int64_t)rr.n != t->size))
            rc = perr(e, "%s/%s does not carry the root's bound %s (its own SHA-256 fails)", REFERENCE_SUBDIR, t->name, t->name);
        else if (!provenance)
            rc = loader_equivalent(t->name, config ? "transformers_version" : "local_files_only", &rr, &cr, e);
        if (!rc) *length = (int64_t)rr.n;
    }
    fd_buf_free(&rr);
    fd_buf_free(&cr);
    free(ref);
    free(path);
    return rc;
}

typedef struct tokbind {
    const char *repository, *revision; /* borrowed from the documents */
    int64_t vocab, max_exclusive;
    tokfile *files;
    size_t n_files;
    int verified;
    char identity[65];
    jv *receipt;  /* NULL: null */
} tokbind;

static int listed_tokenizer_files(const jv *rows, const char *label, tokbind *tb, fd_err *e)
{
    if (!rows || rows->t != JV_ARR || !rows->u.a.n) return perr(e, "%s must be a non-empty artifact array", label);
    tb->files = fd_xcalloc(rows->u.a.n, sizeof *tb->files);
    for (size_t i = 0; i < rows->u.a.n; i++) {
        const jv *row = rows->u.a.v[i];
        char lab[160];
        if (row->t != JV_OBJ || row->u.o.n != 3 || !jv_get(row, "path") || !jv_get(row, "bytes") || !jv_get(row, "sha256"))
            return perr(e, "%s[%zu] must contain exactly path, bytes, sha256", label, i);
        const jv *p = jv_get(row, "path");
        if (p->t != JV_STR || strchr(p->u.s.p, '\\') || strstr(p->u.s.p, "//"))
            return perr(e, "%s[%zu].path is not canonical POSIX", label, i);
        if (!posix_canonical(p->u.s.p, 1)) return perr(e, "%s[%zu].path is non-canonical", label, i);
        const char *name = basename_of(p->u.s.p);
        for (size_t j = 0; j < tb->n_files; j++)
            if (!strcmp(tb->files[j].name, name)) return perr(e, "%s has duplicate canonical basename %s", label, name);
        tokfile *t = &tb->files[tb->n_files];
        snprintf(lab, sizeof lab, "%s[%zu].bytes", label, i);
        if (integer(jv_get(row, "bytes"), lab, 0, &t->size, e)) return -1;
        const char *d;
        snprintf(lab, sizeof lab, "%s[%zu].sha256", label, i);
        if (hex64(jv_get(row, "sha256"), lab, &d, e)) return -1;
        memcpy(t->sha, d, 65);
        t->name = fd_xstrdup(name);
        tb->n_files++;
    }
    qsort(tb->files, tb->n_files, sizeof *tb->files, cmp_tokfile);
    return 0;
}

static int tokenizer_binding(const char *panel_root, const jv *receipt, const char *tok_root, tokbind *tb,
                             jv **tok_receipt_doc, fd_err *e)
{
    memset(tb, 0, sizeof *tb);
    char *trp = fd_path_join(panel_root, "tokenizer.receipt.json");
    int have = fd_is_file(trp);
    if (have) {
        fd_buf raw = {0};
        jv *tr = json_file(trp, "tokenizer receipt", &raw, e);
        free(trp);
        if (!tr) { fd_buf_free(&raw); return -1; }
        *tok_receipt_doc = tr;
        const jv *schema = jv_get(tr, "schema");
        if (!schema || schema->t != JV_STR || strcmp(schema->u.s.p, TOKENIZER_RECEIPT_SCHEMA)) {
            char *r = repr(schema);
            perr(e, "unsupported tokenizer receipt schema %s", r);
            free(r);
            fd_buf_free(&raw);
            return -1;
        }
        char declared[65];
        const char *mode;
        if (verify_seal(tr, "tokenizer", declared, &mode, e)) { fd_buf_free(&raw); return -1; }
        const jv *identity = jv_get(tr, "tokenizer_identity");
        if (!identity || identity->t != JV_OBJ) { fd_buf_free(&raw); return perr(e, "tokenizer_identity must be an object"); }
        const char *isha;
        if (hex64(jv_get(tr, "tokenizer_identity_sha256"), "tokenizer_identity_sha256", &isha, e)) { fd_buf_free(&raw); return -1; }
        char h[65];
        sha_canonical(identity, 1, h);
        if (strcmp(h, isha)) { fd_buf_free(&raw); return perr(e, "tokenizer_identity_sha256 does not verify"); }
        if (pinned(jv_get(identity, "model_id"), jv_get(identity, "model_revision"), "tokenizer identity", e)) {
            fd_buf_free(&raw);
            return -1;
        }
        tb->repository = jv_get_str(identity, "model_id");
        tb->revision = jv_get_str(identity, "model_revision");
        if (listed_tokenizer_files(jv_get(identity, "files"), "tokenizer_identity.files", tb, e)) { fd_buf_free(&raw); return -1; }
        int64_t minimum;
        if (integer(jv_get(tr, "vocab_size"), "tokenizer.vocab_size", 1, &tb->vocab, e) ||
            integer(jv_get(tr, "minimum_token_id"), "tokenizer.minimum_token_id", 0, &minimum, e)) {
            fd_buf_free(&raw);
            return -1;
        }
        if (minimum != 0) { fd_buf_free(&raw); return perr(e, "tokenizer minimum_token_id must be zero"); }
        if (integer(jv_get(tr, "maximum_token_id_exclusive"), "tokenizer.maximum_token_id_exclusive", 1, &tb->max_exclusive, e)) {
            fd_buf_free(&raw);
            return -1;
        }
        if (tb->max_exclusive > tb->vocab) { fd_buf_free(&raw); return perr(e, "tokenizer maximum_token_id_exclusive exceeds vocab_size"); }
        if (tok_root) {
            char *base = realpath(tok_root, NULL);
            struct stat st;
            if (!base || stat(base, &st) || !S_ISDIR(st.st_mode)) {
                perr(e, "tokenizer_root is not a directory: %s", base ? base : tok_root);
                free(base);
                fd_buf_free(&raw);
                return -1;
            }
            for (size_t i = 0; i < tb->n_files; i++) {
                int64_t len;
                if (verify_tok_artifact(base, &tb->files[i], &len, e)) { free(base); fd_buf_free(&raw); return -1; }
            }
            free(base);
            tb->verified = 1;
        }
        memcpy(tb->identity, isha, 65);
        char fs[65];
        fd_sha256_hex(raw.p, raw.n, fs);
        tb->receipt = jv_obj();
        jv_set(tb->receipt, "declared_receipt_sha256", jv_str(declared));
        jv_set(tb->receipt, "receipt_seal_mode", jv_str(mode));
        jv_set(tb->receipt, "receipt_file_sha256", jv_str(fs));
        jv_set(tb->receipt, "receipt_file_bytes", jv_int((int64_t)raw.n));
        fd_buf_free(&raw);
        return 0;
    }
    free(trp);
    const jv *src = jv_get(receipt, "tokenizer");
    if (!src || src->t != JV_OBJ) return perr(e, "panel has no tokenizer.receipt.json or receipt.tokenizer identity");
    if (pinned(jv_get(src, "repository"), jv_get(src, "revision"), "receipt.tokenizer", e)) return -1;
    tb->repository = jv_get_str(src, "repository");
    tb->revision = jv_get_str(src, "revision");
    const jv *map = jv_get(src, "files_sha256");
    if (!map || map->t != JV_OBJ || !map->u.o.n) return perr(e, "receipt.tokenizer.files_sha256 must be non-empty");
    tb->files = fd_xcalloc(map->u.o.n, sizeof *tb->files);
    for (size_t i = 0; i < map->u.o.n; i++) {
        const char *key = map->u.o.m[i].k;
        if (!posix_canonical(key, 0)) return perr(e, "unsafe or non-canonical receipt.tokenizer.files_sha256 key: '%s'", key);
        const char *name = basename_of(key);
        for (size_t j = 0; j < tb->n_files; j++)
            if (!strcmp(tb->files[j].name, name)) return perr(e, "receipt.tokenizer files have duplicate basename %s", name);
        const char *d;
        if (hex64(map->u.o.m[i].v, "tokenizer file sha256", &d, e)) return -1;
        tokfile *t = &tb->files[tb->n_files++];
        t->name = fd_xstrdup(name);
        t->size = -1;
        memcpy(t->sha, d, 65);
    }
    qsort(tb->files, tb->n_files, sizeof *tb->files, cmp_tokfile);
    if (tok_root) {
        char *base = realpath(tok_root, NULL);
        const char *b = base ? base : tok_root;
        for (size_t i = 0; i < tb->n_files; i++) {
            int64_t len;
            if (verify_tok_artifact(b, &tb->files[i], &len, e)) { free(base); return -1; }
            tb->files[i].size = len;
        }
        free(base);
        tb->verified = 1;
    }
    if (integer(jv_get(src, "vocab_size"), "tokenizer.vocab_size", 1, &tb->vocab, e)) return -1;
    tb->max_exclusive = tb->vocab;
    jv *idoc = jv_obj();
    jv_set(idoc, "repository", jv_str(tb->repository));
    jv_set(idoc, "revision", jv_str(tb->revision));
    jv_set(idoc, "files_sha256", jv_copy(map));
    jv_set(idoc, "vocab_size", jv_copy(jv_get(src, "vocab_size")));
    sha_canonical(idoc, 1, tb->identity);
    jv_free(idoc);
    return 0;
}

/* ------------------------------------------------------------ arrays */

typedef struct npyv {
    fd_buf raw;
    char endian, kind;
    int width;
    uint64_t count;   /* 1-D length; 0 with ndim != 1 */
    int ndim;
    uint64_t shape[4];
    size_t off;
} npyv;

static int npy_read(const char *root, const char *rel, npyv *v, fd_err *e)
{
    memset(v, 0, sizeof *v);
    char *path = fd_path_join(root, rel);
    fd_err r;
    int rc = fd_read_file(path, NPY_MAX, &v->raw, &r);
    if (rc) { perr(e, "cannot read panel array %s: %s", path, r.msg); free(path); return -1; }
    char descr[16];
    if (fd_npy_parse((const unsigned char *)v->raw.p, v->raw.n, descr, v->shape, &v->ndim, &v->off, &r)) {
        perr(e, "invalid .npy header in %s: %s", path, r.msg);
        free(path);
        return -1;
    }
    if (v->ndim < 1) { perr(e, "%s must be a non-empty C-order array", path); free(path); return -1; }
    size_t dl = strlen(descr);
    if (dl != 3 || !strchr("<>=|", descr[0]) || !strchr("iub", descr[1]) || !strchr("1248", descr[2])) {
        perr(e, "unsupported dtype '%s' in %s", descr, path);
        free(path);
        return -1;
    }
    v->endian = descr[0];
    v->kind = descr[1];
    v->width = descr[2] - '0';
    uint64_t need = (uint64_t)v->width;
    for (int i = 0; i < v->ndim; i++) {
        if (v->shape[i] && need > UINT64_MAX / v->shape[i]) { need = UINT64_MAX; break; }
        need *= v->shape[i];
    }
    if (v->off > v->raw.n || v->raw.n - v->off != need) {
        perr(e, "%s .npy payload size disagrees with dtype/shape", path);
        free(path);
        return -1;
    }
    v->count = v->ndim == 1 ? v->shape[0] : 0;
    free(path);
    return 0;
}

static int64_t npy_at(const npyv *v, uint64_t i, int *overflow)
{
    const unsigned char *p = (const unsigned char *)v->raw.p + v->off + i * (uint64_t)v->width;
    uint64_t u = 0;
    for (int k = 0; k < v->width; k++) {
        int idx = v->endian == '>' ? k : v->width - 1 - k;
        u = u << 8 | p[idx];
    }
    if (v->kind == 'b') return u != 0;
    if (v->kind == 'i' && v->width < 8 && (u >> (8 * v->width - 1)) & 1) return (int64_t)(u | (~(uint64_t)0 << (8 * v->width)));
    if (v->kind == 'u' && u > INT64_MAX) { *overflow = 1; return INT64_MAX; }
    return (int64_t)u;
}

/* ------------------------------------------------------------ the archive */

static void octal(unsigned char *dst, size_t digits, uint64_t v)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%0*llo", (int)(digits - 1), (unsigned long long)v);
    memcpy(dst, tmp, digits - 1);
    dst[digits - 1] = 0;
}

/* tarfile USTAR_FORMAT stream ("w|") of the manifest: header per file
 * (mode 0644, uid/gid/mtime 0, empty owner names), data padded to 512, two
 * zero blocks, padded to a multiple of 10240. */
static int ustar_digest(const char *root, const ptree *t, char hex[65], uint64_t *bytes, fd_err *e)
{
    fd_sha *s = fd_sha_new();
    uint64_t total = 0;
    static const unsigned char zero[512];
    unsigned char *buf = fd_xmalloc(1 << 20);
    int rc = 0;
    for (size_t i = 0; i < t->n && !rc; i++) {
        const pfile *f = &t->f[i];
        unsigned char h[512];
        memset(h, 0, sizeof h);
        size_t nl = strlen(f->rel);
        const char *name = f->rel, *prefix = "";
        char pre[160] = "";
        if (nl > 100) { /* _posix_split_name: the longest prefix (<= 155) at a "/" leaving a name <= 100 */
            const char *cut = NULL;
            for (const char *p = f->rel; (p = strchr(p, '/')); p++)
                if ((size_t)(p - f->rel) <= 155 && strlen(p + 1) <= 100 && p + 1 != f->rel + nl) { cut = p; break; }
            if (!cut) { rc = perr(e, "panel path too long for a ustar archive: %s", f->rel); break; }
            memcpy(pre, f->rel, (size_t)(cut - f->rel));
            pre[cut - f->rel] = 0;
            prefix = pre;
            name = cut + 1;
        }
        memcpy(h, name, strlen(name));
        octal(h + 100, 8, 0644);
        octal(h + 108, 8, 0);
        octal(h + 116, 8, 0);
        octal(h + 124, 12, f->size);
        octal(h + 136, 12, 0);
        memset(h + 148, ' ', 8);
        h[156] = '0';
        memcpy(h + 257, "ustar\0" "00", 8);
        /* devmajor/devminor: NUL for a regular file (tarfile >= 3.9) */
        memcpy(h + 345, prefix, strlen(prefix));
        unsigned sum = 0;
        for (int k = 0; k < 512; k++) sum += h[k];
        char cs[8];
        snprintf(cs, sizeof cs, "%06o", sum);
        memcpy(h + 148, cs, 6);
        h[154] = 0;
        fd_sha_update(s, h, 512);
        total += 512;
        char *path = fd_path_join(root, f->rel);
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) { rc = perr(e, "cannot read %s: %s", path, strerror(errno)); free(path); break; }
        fd_sha *fs = fd_sha_new();
        uint64_t got = 0;
        for (;;) {
            ssize_t r = read(fd, buf, 1 << 20);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { if (r < 0) rc = perr(e, "cannot read %s: %s", path, strerror(errno)); break; }
            fd_sha_update(s, buf, (size_t)r);
            fd_sha_update(fs, buf, (size_t)r);
            got += (uint64_t)r;
        }
        close(fd);
        char now[65];
        fd_sha_final_hex(fs, now);
        if (!rc && (got != f->size || strcmp(now, f->sha))) rc = perr(e, "panel file changed while archiving: %s", f->rel);
        free(path);
        total += got;
        if (got % 512) { fd_sha_update(s, zero, 512 - got % 512); total += 512 - got % 512; }
    }
    free(buf);
    if (rc) { char tmp[65]; fd_sha_final_hex(s, tmp); return -1; }
    fd_sha_update(s, zero, 512);
    fd_sha_update(s, zero, 512);
    total += 1024;
    while (total % 10240) { fd_sha_update(s, zero, 512); total += 512; }
    fd_sha_final_hex(s, hex);
    *bytes = total;
    return 0;
}

/* ------------------------------------------------------------ resolve */

typedef struct selw {
    const char *window;
    uint64_t length;
    int64_t positions;
    char json_sha[65];
} selw;

static int cmp_selw(const void *a, const void *b) { return strcmp(((const selw *)a)->window, ((const selw *)b)->window); }

static int contains(const fd_strv *v, const char *s)
{
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->v[i], s)) return 1;
    return 0;
}

static void add_unique(fd_strv *v, const char *s)
{
    if (!contains(v, s)) fd_strv_push(v, s);
}

static void list_repr(const fd_strv *v, fd_buf *b)
{
    fd_buf_putc(b, '[');
    for (size_t i = 0; i < v->n; i++) fd_buf_printf(b, "%s'%s'", i ? ", " : "", v->v[i]);
    fd_buf_putc(b, ']');
}

int fd_resolve_panel(const char *panel_dir, const char *role, const char *tokenizer_root, jv **binding, fd_err *e)
{
    *binding = NULL;
    if (!role) role = "final";
    char *root = realpath(panel_dir, NULL);
    struct stat st;
    if (!root || stat(root, &st) || !S_ISDIR(st.st_mode) || !*role) {
        free(root);
        return perr(e, "panel root must be a directory and role must be non-empty");
    }
    int rc = -1;
    fd_buf panel_raw = {0}, receipt_raw = {0};
    jv *panel = NULL, *receipt = NULL, *tok_receipt = NULL;
    artifact *contract = NULL;
    size_t n_contract = 0;
    ptree tree = {0};
    tokbind tb;
    memset(&tb, 0, sizeof tb);
    fd_strv seen = {0}, used = {0}, expected = {0}, missing = {0}, extra = {0};
    selw *sel = NULL, *all = NULL;
    size_t n_sel = 0, n_all = 0;
    char *pj = fd_path_join(root, "panel.json"), *pr = fd_path_join(root, "panel.receipt.json");
    panel = json_file(pj, "panel", &panel_raw, e);
    if (panel) receipt = json_file(pr, "panel receipt", &receipt_raw, e);
    free(pj);
    free(pr);
    if (!panel || !receipt) goto done;
    const jv *ps = jv_get(panel, "schema"), *rs = jv_get(receipt, "schema");
    if (!ps || ps->t != JV_STR || strcmp(ps->u.s.p, PANEL_SCHEMA)) {
        char *r = repr(ps);
        perr(e, "unsupported panel schema %s", r);
        free(r);
        goto done;
    }
    int artifact_schema = rs && rs->t == JV_STR && !strcmp(rs->u.s.p, ARTIFACT_RECEIPT_SCHEMA);
    if (!artifact_schema && !(rs && rs->t == JV_STR && !strcmp(rs->u.s.p, BUILD_RECEIPT_SCHEMA))) {
        char *r = repr(rs);
        perr(e, "unsupported panel receipt schema %s", r);
        free(r);
        goto done;
    }
    char declared[65];
    const char *seal_mode;
    if (verify_seal(receipt, "panel", declared, &seal_mode, e)) goto done;
    if (artifact_schema && artifact_contract(receipt, &contract, &n_contract, e)) goto done;

    if (walk(root, NULL, 0, &tree, e)) goto done;
    qsort(tree.f, tree.n, sizeof *tree.f, cmp_pfile);
    for (size_t i = 0; i < n_contract; i++) {
        const pfile *f = tree_get(&tree, contract[i].rel);
        if (!f) { perr(e, "listed panel artifact is missing: %s", contract[i].rel); goto done; }
        if ((int64_t)f->size != contract[i].size || strcmp(f->sha, contract[i].sha)) {
            perr(e, "listed panel artifact %s fails size/SHA-256", contract[i].rel);
            goto done;
        }
    }
    if (artifact_schema) {
        const pfile *f = tree_get(&tree, "panel.json");
        const char *tp = jv_get_str(receipt, "token_panel_artifact_sha256");
        if (!f || !tp || strcmp(f->sha, tp)) { perr(e, "panel.json does not match token_panel_artifact_sha256"); goto done; }
    }
    const jv *rows = jv_get(panel, "windows");
    if (!rows || rows->t != JV_ARR || !rows->u.a.n) { perr(e, "panel.windows must be a non-empty array"); goto done; }
    if (tokenizer_binding(root, receipt, tokenizer_root, &tb, &tok_receipt, e)) goto done;
    const jv *trs = jv_get(receipt, "tokenizer_receipt_sha256");
    int bind_tok_receipt = trs && trs->t != JV_NULL;
    if (bind_tok_receipt) {
        const char *want;
        if (!tb.receipt) { perr(e, "panel receipt binds a different tokenizer receipt"); goto done; }
        if (hex64(trs, "receipt.tokenizer_receipt_sha256", &want, e)) goto done;
        if (strcmp(want, jv_get_str(tb.receipt, "declared_receipt_sha256"))) {
            perr(e, "panel receipt binds a different tokenizer receipt");
            goto done;
        }
    }
    sel = fd_xcalloc(rows->u.a.n, sizeof *sel);
    all = fd_xcalloc(rows->u.a.n, sizeof *all);
    for (size_t i = 0; i < rows->u.a.n; i++) {
        const jv *row = rows->u.a.v[i];
        if (row->t != JV_OBJ) { perr(e, "panel.windows[%zu] must be an object", i); goto done; }
        const char *window = jv_get_str(row, "window_id");
        if (!window || !*window || contains(&seen, window)) { perr(e, "panel window_id is absent or duplicated"); goto done; }
        fd_strv_push(&seen, window);
        const char *token_sha, *mask_sha;
        if (hex64(jv_get(row, "token_ids_sha256"), "window token_ids_sha256", &token_sha, e) ||
            hex64(jv_get(row, "attention_mask_sha256"), "window attention_mask_sha256", &mask_sha, e))
            goto done;
        char pt[PATH_MAX], pm[PATH_MAX];
        snprintf(pt, sizeof pt, "arrays/%s.tokens.npy", window);
        snprintf(pm, sizeof pm, "arrays/%s.mask.npy", window);
        const char *token_rel = NULL, *mask_rel = NULL, *only_token = NULL, *pref_mask = NULL;
        size_t n_tok = 0;
        for (size_t k = 0; k < tree.n; k++) {
            const pfile *f = &tree.f[k];
            size_t l = strlen(f->rel);
            if (!strcmp(f->sha, token_sha) && l >= 11 && !strcmp(f->rel + l - 11, ".tokens.npy")) {
                n_tok++;
                only_token = f->rel;
                if (!strcmp(f->rel, pt)) token_rel = f->rel;
            }
            if (!strcmp(f->sha, mask_sha) && l >= 4 && !strcmp(f->rel + l - 4, ".npy")) {
                if (!strcmp(f->rel, pm)) pref_mask = f->rel;
                if (!mask_rel || strcmp(f->rel, mask_rel) < 0) mask_rel = f->rel;
            }
        }
        if (!token_rel && n_tok == 1) token_rel = only_token;
        if (pref_mask) mask_rel = pref_mask;
        if (!token_rel || !mask_rel) { perr(e, "window %s cannot resolve its exact token/mask artifacts", window); goto done; }
        add_unique(&used, token_rel);
        add_unique(&used, mask_rel);
        npyv tv, mv;
        if (npy_read(root, token_rel, &tv, e)) goto done;
        if (npy_read(root, mask_rel, &mv, e)) { fd_buf_free(&tv.raw); goto done; }
        char h1[65], h2[65];
        fd_sha256_hex(tv.raw.p, tv.raw.n, h1);
        fd_sha256_hex(mv.raw.p, mv.raw.n, h2);
        int bad = 0;
#define WFAIL(...) do { perr(e, __VA_ARGS__); bad = 1; goto wdone; } while (0)
        if (strcmp(h1, token_sha) || strcmp(h2, mask_sha)) WFAIL("window %s artifact digest mismatch", window);
        if (tv.ndim != 1 || mv.ndim != 1 || tv.shape[0] != mv.shape[0])
            WFAIL("window %s token/mask shapes differ or are not vectors", window);
        if (tv.kind == 'b') WFAIL("token dtype must be integer, got %c%c%d", tv.endian, tv.kind, tv.width);
        fd_buf ids = {0};
        fd_buf_putc(&ids, '[');
        int overflow = 0, out_of_range = 0;
        for (uint64_t k = 0; k < tv.count; k++) {
            int64_t x = npy_at(&tv, k, &overflow);
            if (x < 0 || x >= tb.max_exclusive || overflow) out_of_range = 1;
            fd_buf_printf(&ids, "%s%lld", k ? "," : "", (long long)x);
        }
        fd_buf_putc(&ids, ']');
        char json_sha[65];
        fd_sha256_hex(ids.p, ids.n, json_sha);
        fd_buf_free(&ids);
        if (out_of_range) WFAIL("window %s has token outside pinned tokenizer range", window);
        if (jv_get(row, "token_ids_json_sha256")) {
            const char *want;
            if (hex64(jv_get(row, "token_ids_json_sha256"), "window token_ids_json_sha256", &want, e)) { bad = 1; goto wdone; }
            if (strcmp(want, json_sha)) WFAIL("window %s token JSON digest mismatch", window);
        }
        if (jv_get(row, "num_tokens")) {
            int64_t nt;
            if (integer(jv_get(row, "num_tokens"), "window num_tokens", 1, &nt, e)) { bad = 1; goto wdone; }
            if ((uint64_t)nt != tv.count) WFAIL("window %s num_tokens disagrees with artifact shape", window);
        }
        int64_t positions;
        if (integer(jv_get(row, "prediction_positions"), "window prediction_positions", 1, &positions, e)) { bad = 1; goto wdone; }
        if ((uint64_t)positions > tv.count) WFAIL("window %s scores more positions than tokens", window);
        if (mv.kind == 'b' && mv.width != 1)
            WFAIL("boolean mask dtype must have width 1, got %c%c%d", mv.endian, mv.kind, mv.width);
        int64_t valid = 0, prev = 0;
        for (uint64_t k = 0; k < mv.count; k++) {
            int64_t x = npy_at(&mv, k, &overflow);
            if (x != 0 && x != 1) WFAIL("window %s mask contains a value other than 0 or 1", window);
            if (k && prev == 1 && x == 1) valid++;
            prev = x;
        }
        if (valid != positions)
            WFAIL("window %s mask has %lld valid shifted next-token pairs but prediction_positions is %lld", window,
                  (long long)valid, (long long)positions);
        const char *wrole = jv_get_str(row, "role");
        if (!wrole || !*wrole) WFAIL("window %s role is absent", window);
        all[n_all].window = window;
        memcpy(all[n_all].json_sha, json_sha, 65);
        n_all++;
        if (!strcmp(wrole, role)) {
            sel[n_sel].window = window;
            sel[n_sel].length = tv.count;
            sel[n_sel].positions = positions;
            memcpy(sel[n_sel].json_sha, json_sha, 65);
            n_sel++;
        }
#undef WFAIL
    wdone:
        fd_buf_free(&tv.raw);
        fd_buf_free(&mv.raw);
        if (bad) goto done;
    }
    if (n_contract)
        for (size_t i = 0; i < n_contract; i++) add_unique(&expected, contract[i].rel);
    else {
        add_unique(&expected, "panel.json");
        add_unique(&expected, "panel.receipt.json");
    }
    add_unique(&expected, "panel.receipt.json");
    for (size_t i = 0; i < used.n; i++) add_unique(&expected, used.v[i]);
    if (bind_tok_receipt) add_unique(&expected, "tokenizer.receipt.json");
    for (size_t i = 0; i < expected.n; i++)
        if (!tree_get(&tree, expected.v[i])) fd_strv_push(&missing, expected.v[i]);
    for (size_t i = 0; i < tree.n; i++)
        if (!contains(&expected, tree.f[i].rel)) fd_strv_push(&extra, tree.f[i].rel);
    if (missing.n || extra.n) {
        fd_strv_sort(&missing);
        fd_strv_sort(&extra);
        fd_buf a = {0}, b = {0};
        list_repr(&missing, &a);
        list_repr(&extra, &b);
        perr(e, "panel root is not the exact sealed file closure; missing=%s extra=%s", a.p, b.p);
        fd_buf_free(&a);
        fd_buf_free(&b);
        goto done;
    }
    if (!n_sel) { perr(e, "panel has no windows with role '%s'", role); goto done; }
    qsort(all, n_all, sizeof *all, cmp_selw);
    fd_buf suite = {0};
    for (size_t i = 0; i < n_all; i++) fd_buf_printf(&suite, "%s%s", i ? "\n" : "", all[i].json_sha);
    char all_suite[65];
    fd_sha256_hex(suite.p, suite.n, all_suite);
    fd_buf_free(&suite);
    const jv *docs[2] = {panel, receipt};
    const char *labels[2] = {"panel", "receipt"};
    for (int k = 0; k < 2; k++) {
        const jv *v = jv_get(docs[k], "suite_token_hash_sha256");
        if (!v || v->t == JV_NULL) continue;
        char lab[64];
        const char *h;
        snprintf(lab, sizeof lab, "%s suite token hash", labels[k]);
        if (hex64(v, lab, &h, e)) goto done;
        if (strcmp(h, all_suite)) { perr(e, "%s suite token hash does not match sorted token artifacts", labels[k]); goto done; }
    }
    qsort(sel, n_sel, sizeof *sel, cmp_selw);
    for (size_t i = 1; i < n_sel; i++)
        if (sel[i].length != sel[0].length || sel[i].positions != sel[0].positions) {
            perr(e, "selected role is not shape-homogeneous");
            goto done;
        }
    int64_t scored = 0;
    for (size_t i = 0; i < n_sel; i++) scored += sel[i].positions;
    fd_buf ss = {0};
    for (size_t i = 0; i < n_sel; i++) fd_buf_printf(&ss, "%s%s", i ? "\n" : "", sel[i].json_sha);
    char sel_suite[65];
    fd_sha256_hex(ss.p, ss.n, sel_suite);
    fd_buf_free(&ss);
    if (!strcmp(role, "final")) {
        const jv *params = jv_get(receipt, "parameters");
        struct { const char *k; int64_t v; } checks[] = {
            {"context_length", (int64_t)sel[0].length}, {"prediction_positions_per_window", sel[0].positions},
            {"scored_positions_total", scored}, {"windows_total", (int64_t)n_sel}};
        for (size_t i = 0; params && params->t == JV_OBJ && i < 4; i++) {
            if (!jv_get(params, checks[i].k)) continue;
            char lab[96];
            int64_t x;
            snprintf(lab, sizeof lab, "receipt.parameters.%s", checks[i].k);
            if (integer(jv_get(params, checks[i].k), lab, 0, &x, e)) goto done;
            if (x != checks[i].v) { perr(e, "receipt.parameters.%s disagrees with selected role", checks[i].k); goto done; }
        }
        struct { const char *k; int64_t v; } fin[] = {{"final_windows", (int64_t)n_sel}, {"final_prediction_positions", scored}};
        for (size_t i = 0; i < 2; i++) {
            if (!jv_get(receipt, fin[i].k)) continue;
            char lab[96];
            int64_t x;
            snprintf(lab, sizeof lab, "receipt.%s", fin[i].k);
            if (integer(jv_get(receipt, fin[i].k), lab, 0, &x, e)) goto done;
            if (x != fin[i].v) { perr(e, "receipt.%s disagrees with selected role", fin[i].k); goto done; }
        }
    }
    char archive_sha[65];
    uint64_t archive_bytes;
    if (ustar_digest(root, &tree, archive_sha, &archive_bytes, e)) goto done;

    jv *manifest = jv_arr();
    for (size_t i = 0; i < tree.n; i++) {
        jv *r = jv_obj();
        jv_set(r, "path", jv_str(tree.f[i].rel));
        jv_set(r, "bytes", jv_int((int64_t)tree.f[i].size));
        jv_set(r, "sha256", jv_str(tree.f[i].sha));
        jv_push(manifest, r);
    }
    char manifest_sha[65], panel_sha[65], receipt_sha[65];
    sha_canonical(manifest, 0, manifest_sha);
    fd_sha256_hex(panel_raw.p, panel_raw.n, panel_sha);
    fd_sha256_hex(receipt_raw.p, receipt_raw.n, receipt_sha);
    jv *pid = NULL;
    if (py_truthy(jv_get(panel, "panel_id"))) pid = jv_copy(jv_get(panel, "panel_id"));
    else if (py_truthy(jv_get(receipt, "panel_id"))) pid = jv_copy(jv_get(receipt, "panel_id"));
    else {
        char d[96];
        snprintf(d, sizeof d, "panel-artifact-sha256:%s", panel_sha);
        pid = jv_str(d);
    }
    jv *pname = py_truthy(jv_get(panel, "name")) ? jv_copy(jv_get(panel, "name"))
              : py_truthy(jv_get(receipt, "panel_name")) ? jv_copy(jv_get(receipt, "panel_name")) : jv_copy(pid);
    jv *b = jv_obj(), *pb = jv_obj(), *rb = jv_obj(), *tk = jv_obj(), *cb = jv_obj(), *ar = jv_obj(), *files = jv_arr();
    jv_set(b, "schema", jv_str(FD_RESOLVED_PANEL_SCHEMA));
    jv_set(pb, "id", pid);
    jv_set(pb, "name", pname);
    jv_set(pb, "role", jv_str(role));
    jv_set(pb, "contexts", jv_int((int64_t)n_sel));
    jv_set(pb, "context_length", jv_int((int64_t)sel[0].length));
    jv_set(pb, "positions_per_context", jv_int(sel[0].positions));
    jv_set(pb, "scored_positions_total", jv_int(scored));
    jv_set(pb, "suite_token_hash_sha256", jv_str(sel_suite));
    jv_set(pb, "file", jv_str("panel.json"));
    jv_set(pb, "bytes", jv_int((int64_t)panel_raw.n));
    jv_set(pb, "sha256", jv_str(panel_sha));
    jv_set(b, "panel", pb);
    jv_set(rb, "file", jv_str("panel.receipt.json"));
    jv_set(rb, "bytes", jv_int((int64_t)receipt_raw.n));
    jv_set(rb, "declared_receipt_sha256", jv_str(declared));
    jv_set(rb, "receipt_seal_mode", jv_str(seal_mode));
    jv_set(rb, "receipt_file_sha256", jv_str(receipt_sha));
    jv_set(b, "receipt", rb);
    jv_set(tk, "id", jv_str(tb.repository));
    jv_set(tk, "repository", jv_str(tb.repository));
    jv_set(tk, "revision", jv_str(tb.revision));
    jv_set(tk, "vocab_size", jv_int(tb.vocab));
    jv_set(tk, "maximum_token_id_exclusive", jv_int(tb.max_exclusive));
    jv_set(tk, "identity_sha256", jv_str(tb.identity));
    for (size_t i = 0; i < tb.n_files; i++) {
        jv *f = jv_obj();
        jv_set(f, "name", jv_str(tb.files[i].name));
        jv_set(f, "bytes", jv_int(tb.files[i].size));
        jv_set(f, "sha256", jv_str(tb.files[i].sha));
        jv_push(files, f);
    }
    jv_set(tk, "files", files);
    jv_set(tk, "files_verified", jv_bool(tb.verified));
    jv_set(tk, "receipt", tb.receipt ? jv_copy(tb.receipt) : jv_null());
    jv_set(b, "tokenizer", tk);
    jv_set(cb, "manifest", manifest);
    jv_set(cb, "manifest_sha256", jv_str(manifest_sha));
    jv_set(ar, "format", jv_str("ustar"));
    jv_set(ar, "compression", jv_str("none"));
    jv_set(ar, "algorithm", jv_str(ARCHIVE_ALGORITHM));
    jv_set(ar, "bytes", jv_int((int64_t)archive_bytes));
    jv_set(ar, "sha256", jv_str(archive_sha));
    jv_set(cb, "archive", ar);
    jv_set(b, "content", cb);
    *binding = b;
    rc = 0;
done:
    free(root);
    fd_buf_free(&panel_raw);
    fd_buf_free(&receipt_raw);
    jv_free(panel);
    jv_free(receipt);
    jv_free(tok_receipt);
    artifacts_free(contract, n_contract);
    tree_free(&tree);
    tokfiles_free(tb.files, tb.n_files);
    jv_free(tb.receipt);
    fd_strv_free(&seen);
    fd_strv_free(&used);
    fd_strv_free(&expected);
    fd_strv_free(&missing);
    fd_strv_free(&extra);
    free(sel);
    free(all);
    return rc;
}
