#include "validate.h"
#include "validate_util.h"
#include "checksums.h"
#include "digest.h"
#include "paths.h"
#include "schema.h"
#include "sha.h"
#include "../util/fsio.h"
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char fd_schema_dataset_json[];
extern const unsigned int fd_schema_dataset_json_len;

/* ------------------------------------------------------------ the report */

static void add(fd_finding **v, size_t *n, size_t *cap, const char *code, const char *rule,
                const char *where, const char *fmt, va_list ap)
{
    if (*n == *cap) { *cap = *cap ? *cap * 2 : 16; *v = fd_xrealloc(*v, *cap * sizeof **v); }
    fd_buf m = {0};
    va_list ap2;
    va_copy(ap2, ap);
    int k = vsnprintf(NULL, 0, fmt, ap);
    fd_buf_reserve(&m, (size_t)k + 1);
    vsnprintf(m.p, (size_t)k + 1, fmt, ap2);
    va_end(ap2);
    (*v)[(*n)++] = (fd_finding){fd_xstrdup(code), fd_xstrdup(rule), m.p, fd_xstrdup(where ? where : "")};
}

void fd_report_error(fd_report *r, const char *code, const char *rule, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(&r->errors, &r->n_errors, &r->cap_errors, code, rule, where, fmt, ap);
    va_end(ap);
}

void fd_report_warn(fd_report *r, const char *code, const char *rule, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    add(&r->warnings, &r->n_warnings, &r->cap_warnings, code, rule, where, fmt, ap);
    va_end(ap);
}

void fd_report_ok(fd_report *r, const char *fmt, ...)
{
    if (r->n_checks == r->cap_checks) {
        r->cap_checks = r->cap_checks ? r->cap_checks * 2 : 32;
        r->checks = fd_xrealloc(r->checks, r->cap_checks * sizeof *r->checks);
    }
    char t[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t, sizeof t, fmt, ap);
    va_end(ap);
    r->checks[r->n_checks++] = fd_xstrdup(t);
}

static void free_findings(fd_finding *f, size_t n)
{
    for (size_t i = 0; i < n; i++) { free(f[i].code); free(f[i].rule); free(f[i].message); free(f[i].where); }
    free(f);
}

void fd_report_free(fd_report *r)
{
    free(r->subject);
    free_findings(r->errors, r->n_errors);
    free_findings(r->warnings, r->n_warnings);
    for (size_t i = 0; i < r->n_checks; i++) free(r->checks[i]);
    free(r->checks);
    jv_free(r->manifest);
    memset(r, 0, sizeof *r);
}

static jv *findings_json(const fd_finding *f, size_t n)
{
    jv *a = jv_arr();
    for (size_t i = 0; i < n; i++) {
        jv *o = jv_obj();
        jv_set(o, "code", jv_str(f[i].code));
        jv_set(o, "rule", jv_str(f[i].rule));
        jv_set(o, "message", jv_str(f[i].message));
        jv_set(o, "where", jv_str(f[i].where));
        jv_push(a, o);
    }
    return a;
}

static int cmp_cstr(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

jv *fd_report_to_json(const fd_report *r)
{
    jv *d = jv_obj();
    jv_set(d, "schema", jv_str("malaiwah.fidelity-structural-validation.v1"));
    jv_set(d, "format_version", jv_int(1));
    jv_set(d, "subject", jv_str(r->subject ? r->subject : ""));
    jv_set(d, "structural_status", jv_str(r->n_errors ? "invalid" : "sealed"));
    char **sorted = fd_xmalloc((r->n_checks + 1) * sizeof *sorted);
    if (r->n_checks) memcpy(sorted, r->checks, r->n_checks * sizeof *sorted); /* checks is NULL when none ran */
    qsort(sorted, r->n_checks, sizeof *sorted, cmp_cstr);
    jv *checks = jv_arr();
    for (size_t i = 0; i < r->n_checks; i++) jv_push(checks, jv_str(sorted[i]));
    free(sorted);
    jv_set(d, "checks_run", checks);
    jv_set(d, "errors", findings_json(r->errors, r->n_errors));
    jv_set(d, "warnings", findings_json(r->warnings, r->n_warnings));
    jv_set(d, "error_count", jv_int((int64_t)r->n_errors));
    jv_set(d, "warning_count", jv_int((int64_t)r->n_warnings));
    char seal[65];
    fd_err e;
    if (jv_seal(d, "receipt_sha256", seal, &e) == 0) jv_set(d, "receipt_sha256", jv_str(seal));
    return d;
}

/* --------------------------------------------------------------- helpers */

int py_truthy(const jv *v)
{
    if (!v) return 0;
    switch (v->t) {
    case JV_NULL: return 0;
    case JV_BOOL: return v->u.b;
    case JV_INT: return v->u.i != 0;
    case JV_BIGINT: return 1;
    case JV_FLOAT: return v->u.f != 0;
    case JV_STR: return v->u.s.n > 0;
    case JV_ARR: return v->u.a.n > 0;
    case JV_OBJ: return v->u.o.n > 0;
    }
    return 0;
}

const jv *obj_or_empty(const jv *d, const char *k)
{
    static const jv EMPTY = {.t = JV_OBJ};
    const jv *v = jv_get(d, k);
    return v && v->t == JV_OBJ ? v : &EMPTY;
}

const char *str_truthy(const jv *d, const char *k)
{
    const char *s = jv_get_str(d, k);
    return s && *s ? s : NULL;
}

char *py_repr(const jv *v)
{
    fd_buf b = {0};
    fd_err e;
    if (!v || v->t == JV_NULL) fd_buf_puts(&b, "None");
    else if (v->t == JV_BOOL) fd_buf_puts(&b, v->u.b ? "True" : "False");
    else if (v->t == JV_STR) { fd_buf_putc(&b, '\''); fd_buf_put(&b, v->u.s.p, v->u.s.n); fd_buf_putc(&b, '\''); }
    else if (jv_dump(v, &JV_DEFAULT, &b, &e)) fd_buf_puts(&b, "?");
    return fd_buf_cstr(&b);
}

int is_int_value(const jv *v, int64_t *out)
{
    if (!v || v->t != JV_INT) return 0;
    if (out) *out = v->u.i;
    return 1;
}

/* ------------------------------------------------------------- sub-docs */

jv *fd_load_sub(const char *root, const char *relpath, fd_report *r, const char *rule)
{
    fd_err e;
    if (fd_check_relpath(relpath, rule, 0, &e)) { fd_report_error(r, e.code, rule, relpath, "%s", e.msg); return NULL; }
    char *full = fd_path_join(root, relpath);
    jv *doc = NULL;
    if (!fd_is_file(full)) fd_report_error(r, "missing_file", rule, relpath, "%s is missing", relpath);
    else if (!(doc = jv_parse_file(full, &e)))
        fd_report_error(r, "bad_schema", rule, relpath, "unparseable JSON: %s", e.msg);
    else if (doc->t != JV_OBJ) {
        fd_report_error(r, "bad_schema", rule, relpath, "not an object");
        jv_free(doc);
        doc = NULL;
    }
    free(full);
    return doc;
}

void fd_check_sub_seal(const jv *doc, const char *relpath, fd_report *r)
{
    const jv *claimed = jv_get(doc, "receipt_sha256");
    char want[65];
    fd_err e;
    if (!claimed || claimed->t == JV_NULL) { fd_report_error(r, "seal_failed", "SEAL-1(g)", relpath, "no receipt_sha256"); return; }
    if (jv_seal(doc, "receipt_sha256", want, &e) || claimed->t != JV_STR || strcmp(claimed->u.s.p, want))
        fd_report_error(r, "seal_failed", "SEAL-1(g)", relpath, "receipt_sha256 does not recompute");
}

static const char *const PATH_KEYS[] = {"file", "token_file", "attention_mask_file", "panel_file", "manifest_file",
    "checksums_file", "head_json", "dir", "remap_file", "runtime_manifest", "receipt", NULL};

static int is_path_key(const char *k)
{
    for (const char *const *p = PATH_KEYS; *p; p++)
        if (!strcmp(*p, k)) return 1;
    return 0;
}

static void walk_paths(const jv *node, fd_report *r, const char *where, int depth)
{
    if (!node || depth > 600) return;
    char base[1024];
    fd_dirname(where, base, sizeof base);
    if (node->t == JV_OBJ) {
        for (size_t i = 0; i < node->u.o.n; i++) {
            const char *key = node->u.o.m[i].k;
            const jv *v = node->u.o.m[i].v;
            if (v->t == JV_STR && is_path_key(key) && !fd_starts(v->u.s.p, "http://") && !fd_starts(v->u.s.p, "https://")) {
                int allow_parent = fd_starts(where, "compat/") || !strcmp(key, "runtime_manifest");
                fd_err e;
                char joined[4096];
                int bad = fd_check_relpath(v->u.s.p, where, allow_parent, &e) != 0;
                if (!bad && (fd_join_norm(base, v->u.s.p, joined, sizeof joined) || fd_starts(joined, "..")))
                    bad = fd_fail(&e, "path_escape", "", "'%s' resolves outside the dataset root", v->u.s.p) != 0;
                if (bad) {
                    char *w = fd_xmalloc(strlen(where) + strlen(key) + 2);
                    sprintf(w, "%s:%s", where, key);
                    fd_report_error(r, e.code, "PATH-1/PATH-3", w, "%s", e.msg);
                    free(w);
                }
            }
            walk_paths(v, r, where, depth + 1);
        }
    } else if (node->t == JV_ARR) {
        for (size_t i = 0; i < node->u.a.n; i++) walk_paths(node->u.a.v[i], r, where, depth + 1);
    }
}

/* ----------------------------------------------------------- the checks */

static void schema_cb(void *ctx, const char *msg)
{
    fd_report_error(ctx, "schema_invalid", "SCHEMA", "fidelity-dataset.json", "%s", msg);
}

static void check_schema(const jv *manifest, fd_report *r)
{
    fd_err e;
    jv *schema = jv_parse((const char *)fd_schema_dataset_json, fd_schema_dataset_json_len, &e);
    fd_schema *s = schema ? fd_schema_new(schema, &e) : NULL;
    if (!s || fd_schema_validate(s, manifest, schema_cb, r, &e) < 0)
        fd_report_error(r, "schema_invalid", "SCHEMA", "fidelity-dataset.json", "schema layer failed: %s", e.msg);
    fd_schema_free(s);
    jv_free(schema);
    fd_report_ok(r, "schema");
}

static jv *load_manifest(const char *path_in, fd_report *r)
{
    char *path = fd_xstrdup(path_in);
    fd_err e;
    jv *m = NULL;
    const char *W = "fidelity-dataset.json";
    if (!fd_is_file(path)) fd_report_error(r, "bad_schema", "SCHEMA", W, "fidelity-dataset.json is missing");
    else if (!(m = jv_parse_file(path, &e))) fd_report_error(r, "bad_schema", "SCHEMA", W, "unparseable: %s", e.msg);
    else if (m->t != JV_OBJ) fd_report_error(r, "bad_schema", "SCHEMA", W, "fidelity-dataset.json is not an object");
    else {
        const char *schema = jv_get_str(m, "schema");
        const jv *fv = jv_get(m, "format_version");
        if (!schema || strcmp(schema, "malaiwah.fidelity-dataset.v1")) {
            char *rep = py_repr(jv_get(m, "schema"));
            fd_report_error(r, "bad_schema", "SCHEMA", W, "schema is %s; this tool reads only 'malaiwah.fidelity-dataset.v1'", rep);
            free(rep);
        } else if (!fv || !((fv->t == JV_INT && fv->u.i == 1) || (fv->t == JV_FLOAT && fv->u.f == 1.0) ||
                            (fv->t == JV_BOOL && fv->u.b))) {
            char *rep = py_repr(fv);
            fd_report_error(r, "bad_schema", "SCHEMA", W, "format_version is %s, expected 1", rep);
            free(rep);
        } else {
            free(path);
            return m;
        }
    }
    jv_free(m);
    free(path);
    return NULL;
}

static void check_file_digest(const char *root, const char *label, const char *rel, const char *want, fd_report *r)
{
    if (!rel || !want) return;
    char *full = fd_path_join(root, rel);
    char got[65];
    fd_err e;
    if (fd_is_file(full) && !fd_sha256_file(full, got, &e) && strcmp(got, want))
        fd_report_error(r, "digest_mismatch", "SEAL-1", rel, "%s: %s != %s", label, got, want);
    free(full);
}

typedef struct { int64_t v; size_t pos; } ipos;

static int cmp_ipos(const void *a, const void *b)
{
    const ipos *x = a, *y = b;
    if (x->v != y->v) return (x->v > y->v) - (x->v < y->v);
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* dup[i] = 1 when record i repeats the index of an earlier record. */
static char *mark_duplicates(const jv *records, size_t n)
{
    char *dup = fd_xcalloc(n + 1, 1);
    ipos *t = fd_xmalloc((n + 1) * sizeof *t);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const jv *ix = jv_get(records->u.a.v[i], "index");
        if (ix && ix->t == JV_INT) t[k++] = (ipos){ix->u.i, i};
        else /* rare non-integer indices: compare pairwise */
            for (size_t j = 0; j < i; j++)
                if (jv_equal(jv_get(records->u.a.v[j], "index"), ix ? ix : &(jv){.t = JV_NULL})) { dup[i] = 1; break; }
    }
    qsort(t, k, sizeof *t, cmp_ipos);
    for (size_t i = 1; i < k; i++)
        if (t[i].v == t[i - 1].v) dup[t[i].pos] = 1;
    free(t);
    return dup;
}

static void check_records(const jv *capture, const jv *cm, fd_report *r)
{
    const jv *records = jv_get(cm, "records");
    size_t n = records && records->t == JV_ARR ? records->u.a.n : 0;
    char got[65];
    fd_err e;
    if (fd_capture_content_digest(records, got, &e)) fd_report_error(r, e.code, "5.2", "", "%s", e.msg);
    else {
        const char *want = jv_get_str(capture, "capture_content_digest");
        const char *own = str_truthy(cm, "capture_content_digest");
        if (!want || strcmp(got, want))
            fd_report_error(r, "digest_mismatch", "5.2", "", "capture_content_digest %s != manifest %s", got, want ? want : "None");
        if (own && strcmp(got, own))
            fd_report_error(r, "digest_mismatch", "5.2", "", "capture/manifest.json disagrees with its own records");
    }
    fd_report_ok(r, "digest.capture_content");
    char *dup = mark_duplicates(records, n);
    const jv *tensor_key = jv_get(cm, "tensor_key");
    const char *form = jv_get_str(capture, "form");
    const jv *want_width = jv_get(cm, form && !strcmp(form, "hidden") ? "hidden_width" : "vocab_size");
    for (size_t i = 0; i < n; i++) {
        const jv *rec = records->u.a.v[i], *index = jv_get(rec, "index");
        char *ir = py_repr(index);
        if (dup[i]) fd_report_error(r, "digest_mismatch", "REC-1", "", "duplicate record index %s", ir);
        int64_t iv;
        if (!is_int_value(index, &iv) || iv < 0)
            fd_report_error(r, "schema_invalid", "REC-1", "", "record index %s is not >= 0", ir);
        if (!jv_equal(jv_get(rec, "key"), tensor_key)) {
            char *a = py_repr(jv_get(rec, "key")), *b = py_repr(tensor_key);
            fd_report_error(r, "schema_invalid", "REC-2", "", "record %s key %s != header tensor_key %s", ir, a, b);
            free(a); free(b);
        }
        const jv *shape = jv_get(rec, "shape");
        if (shape && shape->t == JV_ARR && shape->u.a.n == 2) {
            const jv *rows = jv_get(rec, "scored_rows");
            if (!jv_equal(shape->u.a.v[0], rows ? rows : &(jv){.t = JV_NULL}))
                fd_report_error(r, "schema_invalid", "REC-3", "", "record %s shape[0] != scored_rows", ir);
            if (want_width && want_width->t != JV_NULL && !jv_equal(shape->u.a.v[1], want_width))
                fd_report_error(r, "schema_invalid", "REC-3", "", "record %s shape[1] does not match the width", ir);
        }
        const jv *raw = jv_get(rec, "raw_chunks_retained");
        if (raw && raw->t == JV_BOOL && raw->u.b)
            fd_report_error(r, "path_escape", "REC-4", "", "record %s retains host-local chunk keys (PATH-2)", ir);
        free(ir);
    }
    free(dup);
    fd_report_ok(r, "records");
}

static void check_coverage(const jv *coverage, const jv *records, int allow_partial, fd_report *r)
{
    size_t present = records && records->t == JV_ARR ? records->u.a.n : 0;
    const jv *declared = jv_get(coverage, "declared_records");
    int complete = 0;
    if (declared && declared->t != JV_NULL) {
        int64_t d = -1;
        is_int_value(declared, &d);
        /* indices == list(range(declared)), over the integer indices, sorted */
        int64_t *idx = fd_xmalloc((present + 1) * sizeof *idx);
        size_t ni = 0;
        for (size_t i = 0; i < present; i++) {
            int64_t v;
            if (is_int_value(jv_get(records->u.a.v[i], "index"), &v)) idx[ni++] = v;
        }
        qsort(idx, ni, sizeof *idx, cmp_i64);
        int contiguous = d >= 0 && (int64_t)ni == d;
        for (size_t i = 0; contiguous && i < ni; i++) contiguous = idx[i] == (int64_t)i;
        free(idx);
        complete = d >= 0 && (int64_t)present == d && contiguous;
        if (py_truthy(jv_get(coverage, "complete")) != complete)
            fd_report_error(r, "incomplete", "COV-1", "", "coverage.complete is %s but present=%zu declared=%lld contiguous=%s",
                            py_truthy(jv_get(coverage, "complete")) ? "True" : "False", present, (long long)d,
                            contiguous ? "True" : "False");
        const jv *pr = jv_get(coverage, "present_records");
        if (!pr || !jv_equal(pr, &(jv){.t = JV_INT, .u.i = (int64_t)present}))
            fd_report_error(r, "incomplete", "COV-1", "", "coverage.present_records != %zu records in the capture manifest", present);
        if (!complete && !py_truthy(jv_get(coverage, "shard_of")) && !py_truthy(jv_get(coverage, "subset_detail")))
            fd_report_error(r, "incomplete", "COV-2", "", "an incomplete capture needs shard_of or subset_detail");
        if (!complete && !allow_partial)
            fd_report_error(r, "incomplete", "COV-3", "", "incomplete dataset; pass --allow-partial to accept it as a shard");
    }
    fd_report_ok(r, "coverage");
}

static const char *const LANES[] = {"sealed-ep8", "streaming", "local-mps", "local-cuda-budget", "other", NULL};

/* A dataset is a directory; a path to a manifest file is accepted too (its
 * directory is then the root), so a lone published manifest can be checked
 * with --manifest-only. */
void fd_validate_dataset(const char *path, const fd_validate_opts *o, fd_report *r)
{
    memset(r, 0, sizeof *r);
    char *abs = realpath(path, NULL);
    r->subject = abs ? abs : fd_xstrdup(path);
    char *root_buf = NULL, *mpath;
    const char *root = path;
    if (fd_is_file(path)) {
        root_buf = fd_xstrdup(path);
        char *slash = strrchr(root_buf, '/');
        if (slash) *slash = 0; else strcpy(root_buf, ".");
        root = root_buf;
        mpath = fd_xstrdup(path);
    } else mpath = fd_path_join(path, "fidelity-dataset.json");
    jv *manifest = load_manifest(mpath, r);
    free(mpath);
    if (!manifest) { free(root_buf); return; }
    r->manifest = manifest;
    check_schema(manifest, r);
    char want[65];
    fd_err e;
    const char *claimed = jv_get_str(manifest, "dataset_sha256");
    if (jv_seal(manifest, "dataset_sha256", want, &e) || !claimed || strcmp(claimed, want))
        fd_report_error(r, "seal_failed", "SEAL-1(a)", "fidelity-dataset.json",
                        "dataset_sha256 does not recompute over the self-blanked manifest");
    fd_report_ok(r, "seal.manifest");
    walk_paths(manifest, r, "fidelity-dataset.json", 0);
    if (o->manifest_only) goto done;

    const jv *seal = obj_or_empty(manifest, "seal");
    const char *cfile = str_truthy(seal, "checksums_file");
    char *cpath = fd_path_join(root, cfile ? cfile : "checksums.txt");
    if (!fd_is_file(cpath)) fd_report_error(r, "seal_failed", "SEAL-1(b)", "", "checksums.txt is missing");
    else {
        char got[65];
        const char *cw = jv_get_str(seal, "checksums_sha256");
        if (fd_sha256_file(cpath, got, &e) || !cw || strcmp(got, cw))
            fd_report_error(r, "seal_failed", "SEAL-1(b)", "", "sha256(checksums.txt) != seal.checksums_sha256");
        if (fd_checksums_verify(root, o->allow_partial, &e)) fd_report_error(r, e.code, "SEAL-1(c)/SEAL-2", "", "%s", e.msg);
        else fd_report_ok(r, "seal.checksums");
    }
    free(cpath);

    const jv *capture = obj_or_empty(manifest, "capture"), *panel = obj_or_empty(manifest, "panel");
    const jv *head = obj_or_empty(manifest, "head"), *runtime = obj_or_empty(manifest, "runtime");
    const jv *coverage = obj_or_empty(manifest, "coverage"), *det = obj_or_empty(manifest, "determinism");
    const jv *dataset = obj_or_empty(manifest, "dataset"), *scope = obj_or_empty(manifest, "scope");
    const char *cap_rel = str_truthy(capture, "manifest_file"), *panel_rel = str_truthy(panel, "panel_file");
    const char *head_rel = str_truthy(head, "head_json"), *rt_rel = str_truthy(runtime, "file");
    jv *cm = fd_load_sub(root, cap_rel ? cap_rel : "capture/manifest.json", r, "CAPTURE");
    jv *pd = fd_load_sub(root, panel_rel ? panel_rel : "panel/panel.json", r, "PANEL");
    jv *hd = head_rel ? fd_load_sub(root, head_rel, r, "HEAD") : NULL;
    jv *rd = fd_load_sub(root, rt_rel ? rt_rel : "runtime/capture-runtime.json", r, "RUNTIME");
    const jv *docs[4] = {cm, pd, hd, rd};
    const char *rels[4] = {cap_rel, panel_rel, head_rel, rt_rel};
    for (int i = 0; i < 4; i++)
        if (docs[i] && rels[i]) { fd_check_sub_seal(docs[i], rels[i], r); walk_paths(docs[i], r, rels[i], 0); }
    fd_report_ok(r, "seal.submanifests");
    check_file_digest(root, "capture.manifest_file_sha256", cap_rel, str_truthy(capture, "manifest_file_sha256"), r);
    check_file_digest(root, "panel.panel_file_sha256", panel_rel, str_truthy(panel, "panel_file_sha256"), r);
    check_file_digest(root, "runtime.file_sha256", rt_rel, str_truthy(runtime, "file_sha256"), r);

    const jv *records = cm ? jv_get(cm, "records") : NULL;
    if (cm) check_records(capture, cm, r);
    if (pd) fd_validate_panel(root, manifest, pd, cm, r, o->allow_partial);
    check_coverage(coverage, records, o->allow_partial, r);
    fd_validate_head(head, capture, dataset, r);
    fd_validate_determinism(manifest, det, panel, r);
    fd_validate_role(root, dataset, scope, head, capture, r);
    fd_validate_scope_vocabulary(scope, r);
    const char *lane = jv_get_str(runtime, "lane");
    int lane_ok = 0;
    for (const char *const *l = LANES; lane && *l; l++) lane_ok |= !strcmp(*l, lane);
    if (!lane_ok) {
        char *rep = py_repr(jv_get(runtime, "lane"));
        fd_report_error(r, "schema_invalid", "9.3", "", "lane %s is not a registry lane", rep);
        free(rep);
    }
    if (str_truthy(panel, "remap_file")) fd_validate_remap(root, panel, r);
    if (o->verify_tensors && cm) fd_verify_tensors(root, capture, cm, head, r);
    /* last, so the specific digest and header findings above come first */
    fd_validate_meaning(root, manifest, cm, pd, hd, rd, o->allow_partial, r);
    jv_free(cm);
    jv_free(pd);
    jv_free(hd);
    jv_free(rd);
done:
    free(root_buf);
    if (o->strict && r->n_warnings) {
        for (size_t i = 0; i < r->n_warnings; i++) {
            fd_finding *w = &r->warnings[i];
            fd_report_error(r, w->code, w->rule, w->where, "%s", w->message);
        }
        free_findings(r->warnings, r->n_warnings);
        r->warnings = NULL;
        r->n_warnings = r->cap_warnings = 0;
    }
}
