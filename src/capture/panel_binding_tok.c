/* panel-binding's artifact contract (an artifact receipt's listed files)
 * and the tokenizer binding (the files the receipt pins, verified under a
 * tokenizer root); panel_binding_internal.h. */
#include "capture/panel_binding_internal.h"
#include "format/npy.h"
#include "format/sha.h"
#include "format/validate_util.h"
#include "util/fsio.h"
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

/* ------------------------------------------------------------ the artifact contract */

static int cmp_artifact(const void *a, const void *b)
{
    const artifact *x = a, *y = b;
    int c = strcmp(x->rel, y->rel);
    if (c) return c;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return strcmp(x->sha, y->sha);
}

void pb_artifacts_free(artifact *a, size_t n)
{
    for (size_t i = 0; i < n; i++) free(a[i].rel);
    free(a);
}

int pb_artifact_contract(const jv *receipt, artifact **out, size_t *n_out, fd_err *e)
{
    *out = NULL;
    *n_out = 0;
    const jv *rows = jv_get(receipt, "artifacts");
    if (!rows || rows->t != JV_ARR || !rows->u.a.n) return perr(e, "artifact panel receipt has no artifacts");
    const char *panel_sha;
    if (pb_hex64(jv_get(receipt, "token_panel_artifact_sha256"), "receipt.token_panel_artifact_sha256", &panel_sha, e))
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
        if (!pb_posix_canonical(p->u.s.p, 1)) { rc = perr(e, "receipt.artifacts[%zu].path is unsafe or non-canonical", i); break; }
        snprintf(lab, sizeof lab, "receipt.artifacts[%zu].bytes", i);
        if (pb_integer(jv_get(row, "bytes"), lab, 0, &a[i].size, e)) { rc = -1; break; }
        const char *d;
        snprintf(lab, sizeof lab, "receipt.artifacts[%zu].sha256", i);
        if (pb_hex64(jv_get(row, "sha256"), lab, &d, e)) { rc = -1; break; }
        memcpy(a[i].sha, d, 65);
        a[i].rel = fd_xstrdup(p->u.s.p);
        if (!strcmp(pb_basename_of(p->u.s.p), "panel.json") && !strcmp(d, panel_sha)) { panels++; panel_index = i; }
    }
    if (!rc && panels != 1) rc = perr(e, "receipt must bind exactly one panel.json with token_panel_artifact_sha256");
    if (rc) { pb_artifacts_free(a, n); return -1; }
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
        if (!pb_posix_canonical(rel, 0)) { rc = perr(e, "unsafe or non-canonical artifact path: '%s'", rel); break; }
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
    if (rc) { pb_artifacts_free(a, n); return -1; }
    *out = a;
    *n_out = n;
    return 0;
}

/* ------------------------------------------------------------ tokenizer files */

static int cmp_tokfile(const void *a, const void *b)
{
    const tokfile *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return strcmp(x->sha, y->sha);
}

void pb_tokfiles_free(tokfile *t, size_t n)
{
    for (size_t i = 0; i < n; i++) free(t[i].name);
    free(t);
}

/* panel.py's reasons and rules, word for word (they are sealed into the
 * dataset's runtime receipt and its disclosures) */
#define RULE_LOADER "canonical JSON equal after dropping loader-only keys"
#define RULE_PROVENANCE "per-model provenance: the panel's identity is tokenizer.json + tokenizer_config.json; " \
                        "this file is the target's own"
#define REASON_TOKCFG "the panel is transported token ids and is never re-tokenized; the tokenizer files are " \
                      "identity evidence, not computation"
#define REASON_CONFIG "transformers_version is the saver's version, not a model property; the panel is " \
                      "transported token ids and is never re-tokenized"
#define REASON_PROVENANCE "the panel is transported token ids and is never re-tokenized; this file is identity " \
                          "evidence for the target, not the panel"

/* the record's common part: name, rule, both digests and sizes */
static jv *equivalence_record(const char *name, const char *rule, const fd_buf *root_raw, const fd_buf *cand_raw)
{
    char rs[65], cs[65];
    fd_sha256_hex(root_raw->p, root_raw->n, rs);
    fd_sha256_hex(cand_raw->p, cand_raw->n, cs);
    jv *r = jv_obj();
    jv_set(r, "name", jv_str(name));
    jv_set(r, "rule", jv_str(rule));
    jv_set(r, "root_sha256", jv_str(rs));
    jv_set(r, "root_bytes", jv_int((int64_t)root_raw->n));
    jv_set(r, "candidate_sha256", jv_str(cs));
    jv_set(r, "candidate_bytes", jv_int((int64_t)cand_raw->n));
    return r;
}

static jv *key_list(int present, const char *key)
{
    jv *a = jv_arr();
    if (present) jv_push(a, jv_str(key));
    return a;
}

/* canonical JSON equal after dropping the loader-only key (config.json:
 * transformers_version; tokenizer_config.json: local_files_only), and at
 * least one side dropped it; *record gets panel.py's evidence record. */
static int loader_equivalent(const char *name, const char *key, const fd_buf *root_raw, const fd_buf *cand_raw,
                             jv **record, fd_err *e)
{
    *record = NULL;
    fd_err pe;
    jv *r = jv_parse(root_raw->p, root_raw->n, &pe), *c = r ? jv_parse(cand_raw->p, cand_raw->n, &pe) : NULL;
    int rc = 0;
    if (!r || !c) rc = perr(e, "%s equivalence: not both strict JSON: %s", name, pe.msg);
    else if (r->t != JV_OBJ || c->t != JV_OBJ) rc = perr(e, "%s equivalence: both documents must be JSON objects", name);
    else {
        int dr = jv_del(r, key), dc = jv_del(c, key);
        fd_buf a = {0}, b = {0};
        pb_canonical(r, 0, &a);
        pb_canonical(c, 0, &b);
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
        else {
            jv *rec = equivalence_record(name, RULE_LOADER, root_raw, cand_raw);
            jv_set(rec, "loader_keys_allowlist", key_list(1, key));
            jv_set(rec, "keys_dropped_from_root", key_list(dr, key));
            jv_set(rec, "keys_dropped_from_candidate", key_list(dc, key));
            jv_set(rec, "reason", jv_str(strcmp(name, "config.json") ? REASON_TOKCFG : REASON_CONFIG));
            *record = rec;
        }
        fd_buf_free(&a);
        fd_buf_free(&b);
    }
    jv_free(r);
    jv_free(c);
    return rc;
}

/* One bound tokenizer artifact under base: its (root's) length, or a
 * refusal; a file admitted through its .reference copy appends its record
 * to *equivalences (created on first use). */
static int verify_tok_artifact(const char *base, const tokfile *t, int64_t *length, jv **equivalences, fd_err *e)
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
        jv *rec = NULL;
        fd_sha256_hex(rr.p, rr.n, rs);
        if (strcmp(rs, t->sha) || (t->size >= 0 && (int64_t)rr.n != t->size))
            rc = perr(e, "%s/%s does not carry the root's bound %s (its own SHA-256 fails)", REFERENCE_SUBDIR, t->name, t->name);
        else if (!provenance)
            rc = loader_equivalent(t->name, config ? "transformers_version" : "local_files_only", &rr, &cr, &rec, e);
        else {
            rec = equivalence_record(t->name, RULE_PROVENANCE, &rr, &cr);
            jv_set(rec, "reason", jv_str(REASON_PROVENANCE));
        }
        if (!rc) { /* admitted through the .reference copy, not byte for byte */
            *length = (int64_t)rr.n;
            if (!*equivalences) *equivalences = jv_arr();
            jv_push(*equivalences, rec);
        }
    }
    fd_buf_free(&rr);
    fd_buf_free(&cr);
    free(ref);
    free(path);
    return rc;
}

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
        if (!pb_posix_canonical(p->u.s.p, 1)) return perr(e, "%s[%zu].path is non-canonical", label, i);
        const char *name = pb_basename_of(p->u.s.p);
        for (size_t j = 0; j < tb->n_files; j++)
            if (!strcmp(tb->files[j].name, name)) return perr(e, "%s has duplicate canonical basename %s", label, name);
        tokfile *t = &tb->files[tb->n_files];
        snprintf(lab, sizeof lab, "%s[%zu].bytes", label, i);
        if (pb_integer(jv_get(row, "bytes"), lab, 0, &t->size, e)) return -1;
        const char *d;
        snprintf(lab, sizeof lab, "%s[%zu].sha256", label, i);
        if (pb_hex64(jv_get(row, "sha256"), lab, &d, e)) return -1;
        memcpy(t->sha, d, 65);
        t->name = fd_xstrdup(name);
        tb->n_files++;
    }
    qsort(tb->files, tb->n_files, sizeof *tb->files, cmp_tokfile);
    return 0;
}

/* the tokenizer.receipt.json of the panel (trp, freed here): schema, seal, identity digest, pinned
 * repository, listed files (verified under tok_root when given), vocab and id range */
static int from_tokenizer_receipt(char *trp, const char *tok_root, tokbind *tb, jv **tok_receipt_doc, fd_err *e)
{
    fd_buf raw = {0};
    jv *tr = pb_json_file(trp, "tokenizer receipt", &raw, e);
    free(trp);
    if (!tr) { fd_buf_free(&raw); return -1; }
    *tok_receipt_doc = tr;
    const jv *schema = jv_get(tr, "schema");
    if (!schema || schema->t != JV_STR || strcmp(schema->u.s.p, TOKENIZER_RECEIPT_SCHEMA)) {
        char *r = pb_repr(schema);
        perr(e, "unsupported tokenizer receipt schema %s", r);
        free(r);
        fd_buf_free(&raw);
        return -1;
    }
    char declared[65];
    const char *mode;
    if (pb_verify_seal(tr, "tokenizer", declared, &mode, e)) { fd_buf_free(&raw); return -1; }
    const jv *identity = jv_get(tr, "tokenizer_identity");
    if (!identity || identity->t != JV_OBJ) { fd_buf_free(&raw); return perr(e, "tokenizer_identity must be an object"); }
    const char *isha;
    if (pb_hex64(jv_get(tr, "tokenizer_identity_sha256"), "tokenizer_identity_sha256", &isha, e)) { fd_buf_free(&raw); return -1; }
    char h[65];
    pb_sha_canonical(identity, 1, h);
    if (strcmp(h, isha)) { fd_buf_free(&raw); return perr(e, "tokenizer_identity_sha256 does not verify"); }
    if (pb_pinned(jv_get(identity, "model_id"), jv_get(identity, "model_revision"), "tokenizer identity", e)) {
        fd_buf_free(&raw);
        return -1;
    }
    tb->repository = jv_get_str(identity, "model_id");
    tb->revision = jv_get_str(identity, "model_revision");
    if (listed_tokenizer_files(jv_get(identity, "files"), "tokenizer_identity.files", tb, e)) { fd_buf_free(&raw); return -1; }
    int64_t minimum;
    if (pb_integer(jv_get(tr, "vocab_size"), "tokenizer.vocab_size", 1, &tb->vocab, e) ||
        pb_integer(jv_get(tr, "minimum_token_id"), "tokenizer.minimum_token_id", 0, &minimum, e)) {
        fd_buf_free(&raw);
        return -1;
    }
    if (minimum != 0) { fd_buf_free(&raw); return perr(e, "tokenizer minimum_token_id must be zero"); }
    if (pb_integer(jv_get(tr, "maximum_token_id_exclusive"), "tokenizer.maximum_token_id_exclusive", 1, &tb->max_exclusive, e)) {
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
            if (verify_tok_artifact(base, &tb->files[i], &len, &tb->equivalences, e)) { free(base); fd_buf_free(&raw); return -1; }
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

/* no tokenizer.receipt.json: the panel receipt's tokenizer block (repository, revision, files_sha256,
 * vocab_size), its files verified under tok_root when given */
static int from_panel_receipt(const jv *receipt, const char *tok_root, tokbind *tb, fd_err *e)
{
    const jv *src = jv_get(receipt, "tokenizer");
    if (!src || src->t != JV_OBJ) return perr(e, "panel has no tokenizer.receipt.json or receipt.tokenizer identity");
    if (pb_pinned(jv_get(src, "repository"), jv_get(src, "revision"), "receipt.tokenizer", e)) return -1;
    tb->repository = jv_get_str(src, "repository");
    tb->revision = jv_get_str(src, "revision");
    const jv *map = jv_get(src, "files_sha256");
    if (!map || map->t != JV_OBJ || !map->u.o.n) return perr(e, "receipt.tokenizer.files_sha256 must be non-empty");
    tb->files = fd_xcalloc(map->u.o.n, sizeof *tb->files);
    for (size_t i = 0; i < map->u.o.n; i++) {
        const char *key = map->u.o.m[i].k;
        if (!pb_posix_canonical(key, 0)) return perr(e, "unsafe or non-canonical receipt.tokenizer.files_sha256 key: '%s'", key);
        const char *name = pb_basename_of(key);
        for (size_t j = 0; j < tb->n_files; j++)
            if (!strcmp(tb->files[j].name, name)) return perr(e, "receipt.tokenizer files have duplicate basename %s", name);
        const char *d;
        if (pb_hex64(map->u.o.m[i].v, "tokenizer file sha256", &d, e)) return -1;
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
            if (verify_tok_artifact(b, &tb->files[i], &len, &tb->equivalences, e)) { free(base); return -1; }
            tb->files[i].size = len;
        }
        free(base);
        tb->verified = 1;
    }
    if (pb_integer(jv_get(src, "vocab_size"), "tokenizer.vocab_size", 1, &tb->vocab, e)) return -1;
    tb->max_exclusive = tb->vocab;
    jv *idoc = jv_obj();
    jv_set(idoc, "repository", jv_str(tb->repository));
    jv_set(idoc, "revision", jv_str(tb->revision));
    jv_set(idoc, "files_sha256", jv_copy(map));
    jv_set(idoc, "vocab_size", jv_copy(jv_get(src, "vocab_size")));
    pb_sha_canonical(idoc, 1, tb->identity);
    jv_free(idoc);
    return 0;
}

int pb_tokenizer_binding(const char *panel_root, const jv *receipt, const char *tok_root, tokbind *tb,
                         jv **tok_receipt_doc, fd_err *e)
{
    memset(tb, 0, sizeof *tb);
    char *trp = fd_path_join(panel_root, "tokenizer.receipt.json");
    if (fd_is_file(trp)) return from_tokenizer_receipt(trp, tok_root, tb, tok_receipt_doc, e);
    free(trp);
    return from_panel_receipt(receipt, tok_root, tb, e);
}
