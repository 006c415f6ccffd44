/* The checks by meaning (issue 16.11).  A forger can edit any file and then
 * recompute every digest, every sub-manifest seal, checksums.txt and the
 * manifest seal: the seal chain then proves only that nothing changed AFTER
 * the forger.  What it cannot prove is checked here, from the bytes the seal
 * covers: every pointer leads to a regular file, the sub-manifests are what
 * they say they are, the declared geometry (context_length, records_count,
 * scored_rows_total, size_bytes, score_from, head shape and bits ...) is the
 * geometry of the files, token ids are inside the vocabulary, and each mask
 * is a 0/1 vector of its window's length that gives the declared number of
 * prediction positions.  The Python tool's validator has none of these rules;
 * their codes are ours (README "Refusal codes", docs/FORMAT-IMPL.md). */
#include "validate_util.h"
#include "npy.h"
#include "paths.h"
#include "sha.h"
#include "../util/fsio.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

enum { TOKEN_FILE_MAX = 64u << 20, MASK_HEADER_MAX = 1u << 16 };

static const jv JNULL = {.t = JV_NULL};
static const jv *or_null(const jv *v) { return v ? v : &JNULL; }

/* 0: a regular file (not a symlink); 1: absent; 2: something else is there. */
static int pointer_state(const char *full)
{
    struct stat st;
    if (lstat(full, &st)) return errno == ENOENT || errno == ENOTDIR ? 1 : 2;
    return S_ISREG(st.st_mode) ? 0 : 2;
}

/* A pointer that must lead to a regular file: refused when it leads to a
 * directory (or any non-regular thing) always, when it leads nowhere unless
 * allow_missing.  Returns 1 when the file is there. */
static int check_pointer(const char *root, const char *rel, const char *what, int allow_missing, fd_report *r,
                         char **full_out)
{
    fd_err e;
    if (fd_check_relpath(rel, "POINTER", 0, &e)) {
        fd_report_error(r, e.code, "PATH-1/PATH-3", rel, "%s %s: %s", what, rel, e.msg);
        return 0;
    }
    char *full = fd_path_join(root, rel);
    int st = pointer_state(full);
    if (st == 2) fd_report_error(r, "missing_file", "POINTER", rel, "%s %s is not a regular file", what, rel);
    else if (st == 1 && !allow_missing)
        fd_report_error(r, "missing_file", "POINTER", rel, "%s %s is missing", what, rel);
    if (st == 0 && full_out) *full_out = full;
    else free(full);
    return st == 0;
}

static void sub_identity(const jv *doc, const char *rel, const char *want, fd_report *r)
{
    if (!doc) return;
    const char *schema = jv_get_str(doc, "schema");
    const jv *fv = jv_get(doc, "format_version");
    if (!schema || strcmp(schema, want)) {
        char *rep = py_repr(jv_get(doc, "schema"));
        fd_report_error(r, "bad_schema", "SUB-SCHEMA", rel, "%s: schema is %s, expected '%s'", rel, rep, want);
        free(rep);
    }
    if (!fv || fv->t != JV_INT || fv->u.i != 1) {
        char *rep = py_repr(fv);
        fd_report_error(r, "bad_schema", "SUB-SCHEMA", rel, "%s: format_version is %s, expected 1", rel, rep);
        free(rep);
    }
}

/* Declared value `a` (at `wa`) must equal `b` (at `wb`) when both are given. */
static void same(const jv *a, const char *wa, const jv *b, const char *wb, fd_report *r)
{
    if (!a || !b || jv_equal(a, b)) return;
    char *ra = py_repr(a), *rb = py_repr(b);
    fd_report_error(r, "geometry_mismatch", "GEOM", "", "%s is %s but %s is %s", wa, ra, wb, rb);
    free(ra);
    free(rb);
}

static void same_i(const jv *a, const char *wa, int64_t b, const char *wb, fd_report *r)
{
    jv v = {.t = JV_INT, .u.i = b};
    same(a, wa, &v, wb, r);
}

static void check_validation_doc(const char *root, const jv *dataset, fd_report *r)
{
    const char *rel = "validation/structural-validation.json";
    char *full = fd_path_join(root, rel);
    int st = pointer_state(full);
    free(full);
    if (st == 1) return; /* its absence is rule 3's (validate_role) */
    if (st == 2) { fd_report_error(r, "missing_file", "POINTER", rel, "%s is not a regular file", rel); return; }
    jv *doc = fd_load_sub(root, rel, r, "VALIDATION");
    if (!doc) return;
    sub_identity(doc, rel, "malaiwah.fidelity-structural-validation.v1", r);
    fd_check_sub_seal(doc, rel, r);
    const jv *errs = jv_get(doc, "errors"), *warns = jv_get(doc, "warnings");
    const char *status = jv_get_str(doc, "structural_status");
    size_t ne = errs && errs->t == JV_ARR ? errs->u.a.n : 0, nw = warns && warns->t == JV_ARR ? warns->u.a.n : 0;
    if (!errs || errs->t != JV_ARR || !warns || warns->t != JV_ARR)
        fd_report_error(r, "validation_mismatch", "VALIDATION", rel, "%s: errors and warnings must be lists", rel);
    if (!jv_equal(or_null(jv_get(doc, "error_count")), &(jv){.t = JV_INT, .u.i = (int64_t)ne}) ||
        !jv_equal(or_null(jv_get(doc, "warning_count")), &(jv){.t = JV_INT, .u.i = (int64_t)nw}))
        fd_report_error(r, "validation_mismatch", "VALIDATION", rel, "%s: error_count/warning_count disagree with its lists", rel);
    if (!status || strcmp(status, ne ? "invalid" : "sealed"))
        fd_report_error(r, "validation_mismatch", "VALIDATION", rel, "%s: structural_status %s with %zu error(s)", rel,
                        status ? status : "None", ne);
    const char *ds = jv_get_str(dataset, "structural_status");
    if (ds && !strcmp(ds, "sealed") && (ne || !status || strcmp(status, "sealed")))
        fd_report_error(r, "validation_mismatch", "VALIDATION", rel,
                        "the dataset claims structural_status sealed but its own sealed verdict is not");
    jv_free(doc);
    fd_report_ok(r, "meaning.validation");
}

static int head_bits_of(const char *dtype)
{
    static const struct { const char *d; int bits; } T[] = {{"BF16", 16}, {"F16", 16}, {"F32", 32}, {"F64", 64},
        {"F8_E4M3", 8}, {"F8_E5M2", 8}, {"FLOAT8_E4M3FN", 8}, {"FLOAT8_E5M2", 8}, {"BFLOAT16", 16},
        {"FLOAT16", 16}, {"FLOAT32", 32}, {NULL, 0}};
    for (int i = 0; dtype && T[i].d; i++)
        if (!strcasecmp(dtype, T[i].d)) return T[i].bits;
    return 0;
}

static void check_head(const char *root, const jv *m, const jv *hd, const char *hd_rel, int allow_partial,
                       fd_report *r)
{
    const jv *head = obj_or_empty(m, "head"), *capture = obj_or_empty(m, "capture");
    if (hd) { /* head/head.json restates the manifest head block: its identity keys, where both carry them */
        static const char *const keys[] = {"present", "file", "tensor_key", "compat_tensor_key", "shape", "dtype", "bias",
            "file_sha256", "raw_tensor_sha256", "tensor_content_sha256", "quantized", "bits", "source",
            "applied_in_capture", "final_norm", NULL};
        for (const char *const *kp = keys; *kp; kp++) {
            const char *k = *kp;
            const jv *v = jv_get(hd, k), *w = jv_get(head, k);
            if (v && w && !jv_equal(v, w))
                fd_report_error(r, "head_mismatch", "HEAD-DOC", hd_rel, "%s disagrees with the manifest head block on '%s'",
                                hd_rel, k);
        }
    }
    const char *form = jv_get_str(capture, "form");
    const jv *shape = jv_get(head, "shape");
    if (form && !strcmp(form, "hidden") && py_truthy(jv_get(head, "present")) && shape && shape->t != JV_NULL) {
        const jv *v = jv_get(capture, "vocab_size"), *h = jv_get(capture, "hidden_width");
        if (shape->t != JV_ARR || shape->u.a.n != 2 || (v && !jv_equal(shape->u.a.v[0], v)) ||
            (h && !jv_equal(shape->u.a.v[1], h))) {
            char *rs = py_repr(shape), *rv = py_repr(v), *rh = py_repr(h);
            fd_report_error(r, "geometry_mismatch", "GEOM", "", "head.shape %s is not [capture.vocab_size %s, capture.hidden_width %s]",
                            rs, rv, rh);
            free(rs); free(rv); free(rh);
        }
    }
    const jv *bits = jv_get(head, "bits");
    int want = head_bits_of(jv_get_str(head, "dtype"));
    if (want && bits && bits->t != JV_NULL && !py_truthy(jv_get(head, "quantized")) &&
        !jv_equal(bits, &(jv){.t = JV_INT, .u.i = want})) {
        char *rb = py_repr(bits);
        fd_report_error(r, "geometry_mismatch", "GEOM", "", "head.bits %s but an unquantized %s head has %d bits", rb,
                        jv_get_str(head, "dtype"), want);
        free(rb);
    }
    const jv *dhb = jv_get(obj_or_empty(m, "weights"), "declared_head_bits");
    if (bits && bits->t == JV_INT && dhb && dhb->t == JV_INT) same(dhb, "weights.declared_head_bits", bits, "head.bits", r);
    const char *hf = str_truthy(head, "file");
    if (hf && py_truthy(jv_get(head, "present"))) check_pointer(root, hf, "head.file", allow_partial, r, NULL);
    else if (py_truthy(jv_get(head, "present")))
        fd_report_error(r, "missing_file", "POINTER", "", "head.present is true but head.file names no file");
    fd_report_ok(r, "meaning.head");
}

/* One panel window: its token file, ids inside the vocabulary, its length, its mask. */
static void check_window(const char *root, const jv *rec, int64_t vocab, int64_t ctx_len, int64_t score_from,
                         int allow_partial, fd_report *r)
{
    const jv *ix = jv_get(rec, "index");
    char *ir = py_repr(ix);
    const char *tf = jv_get_str(rec, "token_file");
    char *full = NULL;
    int64_t nid = -1;
    if (!tf || !*tf) {
        fd_report_error(r, "missing_file", "POINTER", "", "panel record %s has no token_file", ir);
    } else if (check_pointer(root, tf, "token file", allow_partial, r, &full)) {
        fd_err e;
        fd_buf tb = {0};
        jv *ids = NULL;
        if (fd_read_file(full, TOKEN_FILE_MAX, &tb, &e))
            fd_report_error(r, e.code, "POINTER", tf, "%s", e.msg);
        else
            ids = tb.n ? jv_parse(tb.p, tb.n, &e) : NULL; /* unparseable: BIND-6 reports it */
        free(tb.p);
        if (ids && ids->t == JV_ARR) {
            nid = (int64_t)ids->u.a.n;
            for (size_t i = 0; i < ids->u.a.n; i++) {
                const jv *t = ids->u.a.v[i];
                if (t->t != JV_INT) continue; /* BIND-6 reports non-integers */
                if (t->u.i < 0 || (vocab > 0 && t->u.i >= vocab)) {
                    fd_report_error(r, "token_out_of_range", "VOCAB", tf, "%s: token %lld at position %zu is outside [0, %lld)",
                                    tf, (long long)t->u.i, i, (long long)vocab);
                    break;
                }
            }
            if (ctx_len > 0 && nid != ctx_len)
                fd_report_error(r, "geometry_mismatch", "GEOM", tf, "%s has %lld tokens but panel.context_length is %lld", tf,
                                (long long)nid, (long long)ctx_len);
        }
        jv_free(ids);
        free(full);
        full = NULL;
    }
    /* the mask: the file its digest names, a 0/1 vector of the window's length */
    const char *mf = jv_get_str(rec, "attention_mask_file");
    const char *msha = str_truthy(rec, "attention_mask_sha256");
    int64_t causal = nid > 0 ? nid - 1 : -1;
    if ((!mf || !*mf) && msha) {
        fd_report_error(r, "missing_file", "POINTER", "", "panel record %s declares attention_mask_sha256 but no attention_mask_file", ir);
        causal = -1;
    } else if (mf && *mf && check_pointer(root, mf, "attention mask", allow_partial, r, &full)) {
        fd_buf b = {0};
        fd_err e;
        char got[65], descr[16];
        uint64_t shape[4];
        int ndim = 0;
        size_t off = 0;
        size_t max = (nid > 0 ? (size_t)nid * 8 : 0) + MASK_HEADER_MAX;
        causal = -1;
        if (fd_read_file(full, max, &b, &e)) {
            fd_report_error(r, "mask_invalid", "MASK", mf, "%s", e.msg);
        } else if ((fd_sha256_hex(b.p, b.n, got), msha) && strcmp(got, msha)) {
            fd_report_error(r, "panel_digest_mismatch", "MASK", mf, "%s hashes to %s, record says %s", mf, got, msha);
        } else if (fd_npy_parse((const unsigned char *)b.p, b.n, descr, shape, &ndim, &off, &e)) {
            fd_report_error(r, "mask_invalid", "MASK", mf, "%s: %s", mf, e.msg);
        } else {
            size_t w = !strcmp(descr, "<i8") ? 8 : !strcmp(descr, "<i4") ? 4 : (!strcmp(descr, "|b1") || !strcmp(descr, "|u1")) ? 1 : 0;
            if (!w || ndim != 1)
                fd_report_error(r, "mask_invalid", "MASK", mf, "%s: a mask is a 1-D <i8, <i4, |b1 or |u1 array (got %s, %d-D)", mf,
                                descr, ndim);
            else if (shape[0] > (b.n - off) / w || (b.n - off) != shape[0] * w)
                fd_report_error(r, "mask_invalid", "MASK", mf, "%s: the data is not %llu elements of %zu bytes", mf,
                                (unsigned long long)shape[0], w);
            else if (nid >= 0 && shape[0] != (uint64_t)nid)
                fd_report_error(r, "mask_invalid", "MASK", mf, "%s: mask length %llu != %lld tokens", mf,
                                (unsigned long long)shape[0], (long long)nid);
            else {
                const unsigned char *d = (const unsigned char *)b.p + off;
                int ok = 1;
                int64_t c = 0, prev = 0;
                for (uint64_t i = 0; ok && i < shape[0]; i++) {
                    int64_t v = 0;
                    if (w == 8) { uint64_t u = 0; for (int k = 7; k >= 0; k--) u = u << 8 | d[i * 8 + (uint64_t)k]; v = (int64_t)u; }
                    else if (w == 4) { uint32_t u = 0; for (int k = 3; k >= 0; k--) u = u << 8 | d[i * 4 + (uint64_t)k]; v = (int32_t)u; }
                    else v = d[i];
                    if (v != 0 && v != 1) ok = 0;
                    if (i > 0) c += prev && v;
                    prev = v;
                }
                if (!ok) fd_report_error(r, "mask_invalid", "MASK", mf, "%s: a mask holds only 0 and 1", mf);
                else causal = c;
            }
        }
        free(b.p);
        free(full);
    }
    /* prediction_positions = causal positions (mask[:-1] & mask[1:]) from score_from on */
    const jv *pp = jv_get(rec, "prediction_positions");
    if (causal >= 0 && pp && pp->t != JV_NULL && !jv_equal(pp, &(jv){.t = JV_INT, .u.i = causal - score_from})) {
        char *rp = py_repr(pp);
        fd_report_error(r, "geometry_mismatch", "GEOM", "", "panel record %s declares %s prediction positions; its mask and "
                        "score_from %lld give %lld", ir, rp, (long long)score_from, (long long)(causal - score_from));
        free(rp);
    }
    free(ir);
}

/* the capture records: dtype, file pointers and sizes, the counts and sums the manifest states, coverage */
static void check_records(const char *root, const jv *m, const jv *cm, const jv *records, const char *cap_rel,
                          int allow_partial, fd_report *r)
{
    const jv *capture = obj_or_empty(m, "capture");
    size_t n = records->u.a.n;
    int64_t rows = 0, bytes = 0;
    int rows_ok = 1, bytes_ok = 1;
    const char *mf = cap_rel ? cap_rel : "capture/manifest.json";
    char dir[1024];
    fd_dirname(mf, dir, sizeof dir);
    const char *dtype = jv_get_str(capture, "dtype");
    for (size_t i = 0; i < n; i++) {
        const jv *rec = records->u.a.v[i];
        int64_t v;
        if (!jv_get_i64(rec, "scored_rows", &v) && v >= 0 && rows <= INT64_MAX - v) rows += v;
        else rows_ok = 0;
        int64_t sz = -1;
        if (!jv_get_i64(rec, "size_bytes", &sz) && sz >= 0 && bytes <= INT64_MAX - sz) bytes += sz;
        else bytes_ok = 0;
        char *ir = py_repr(jv_get(rec, "index"));
        const char *rd_ = jv_get_str(rec, "dtype");
        if (dtype && rd_ && strcasecmp(dtype, rd_))
            fd_report_error(r, "geometry_mismatch", "GEOM", "", "record %s dtype %s != capture.dtype %s", ir, rd_, dtype);
        const char *file = jv_get_str(rec, "file");
        if (!file || !*file) {
            fd_report_error(r, "missing_file", "POINTER", "", "capture record %s has no file", ir);
        } else {
            char rel[4096], *full = NULL;
            snprintf(rel, sizeof rel, "%s%s%s", dir, *dir ? "/" : "", file);
            if (check_pointer(root, rel, "capture tensor", allow_partial, r, &full)) {
                struct stat st;
                if (sz >= 0 && !stat(full, &st) && (int64_t)st.st_size != sz)
                    fd_report_error(r, "geometry_mismatch", "GEOM", rel, "record %s size_bytes %lld but %s has %lld bytes",
                                    ir, (long long)sz, rel, (long long)st.st_size);
            }
            free(full);
        }
        free(ir);
    }
    same_i(jv_get(capture, "records_count"), "capture.records_count", (int64_t)n, "the capture record count", r);
    /* coverage: index_range is [min, max] of the present indices; the missing sample is not present */
    const jv *cov = obj_or_empty(m, "coverage"), *range = jv_get(cov, "index_range");
    int64_t lo = INT64_MAX, hi = INT64_MIN, ixv;
    for (size_t i = 0; i < n; i++)
        if (!jv_get_i64(records->u.a.v[i], "index", &ixv)) { lo = ixv < lo ? ixv : lo; hi = ixv > hi ? ixv : hi; }
    if (n && lo <= hi && range && range->t == JV_ARR && range->u.a.n == 2) {
        same_i(range->u.a.v[0], "coverage.index_range[0]", lo, "the lowest record index", r);
        same_i(range->u.a.v[1], "coverage.index_range[1]", hi, "the highest record index", r);
    }
    const jv *miss = jv_get(cov, "missing_indices_sample");
    for (size_t j = 0; miss && miss->t == JV_ARR && j < miss->u.a.n; j++)
        for (size_t i = 0; i < n; i++)
            if (miss->u.a.v[j]->t == JV_INT && !jv_get_i64(records->u.a.v[i], "index", &ixv) && ixv == miss->u.a.v[j]->u.i) {
                fd_report_error(r, "geometry_mismatch", "GEOM", "", "coverage.missing_indices_sample lists index %lld, "
                                "which is present", (long long)ixv);
                break;
            }
    if (cm) same(jv_get(cm, "coverage"), "capture/manifest.json coverage", jv_get(m, "coverage"), "the manifest coverage", r);
    if (rows_ok) same_i(jv_get(capture, "scored_rows_total"), "capture.scored_rows_total", rows, "sum(records[].scored_rows)", r);
    if (bytes_ok) same_i(jv_get(capture, "total_size_bytes"), "capture.total_size_bytes", bytes, "sum(records[].size_bytes)", r);
}

void fd_validate_meaning(const char *root, const jv *m, const jv *cm, const jv *pd, const jv *hd, const jv *rd,
                         int allow_partial, fd_report *r)
{
    const jv *capture = obj_or_empty(m, "capture"), *panel = obj_or_empty(m, "panel");
    const jv *head = obj_or_empty(m, "head"), *runtime = obj_or_empty(m, "runtime");
    const char *cap_rel = str_truthy(capture, "manifest_file"), *panel_rel = str_truthy(panel, "panel_file");
    const char *head_rel = str_truthy(head, "head_json"), *rt_rel = str_truthy(runtime, "file");
    sub_identity(cm, cap_rel ? cap_rel : "capture/manifest.json", "malaiwah.fidelity-capture-manifest.v1", r);
    sub_identity(pd, panel_rel ? panel_rel : "panel/panel.json", "malaiwah.fidelity-panel-binding.v1", r);
    sub_identity(hd, head_rel, "malaiwah.fidelity-head-identity.v1", r);
    sub_identity(rd, rt_rel ? rt_rel : "runtime/capture-runtime.json", "malaiwah.fidelity-capture-runtime.v1", r);
    fd_report_ok(r, "meaning.submanifests");
    check_validation_doc(root, obj_or_empty(m, "dataset"), r);

    /* the capture block restates capture/manifest.json */
    if (cm) {
        static const char *const keys[] = {"vocab_size", "hidden_width", "tensor_key", "dtype", "dtype_lossless", "form",
                                           "semantic_point", NULL};
        char wa[96], wb[96];
        for (const char *const *k = keys; *k; k++) {
            snprintf(wa, sizeof wa, "capture.%s", *k);
            snprintf(wb, sizeof wb, "capture/manifest.json %s", *k);
            same(jv_get(capture, *k), wa, jv_get(cm, *k), wb, r);
        }
        same(jv_get(capture, "scored_rows_total"), "capture.scored_rows_total", jv_get(cm, "total_scored_rows"),
             "capture/manifest.json total_scored_rows", r);
        same(jv_get(capture, "total_size_bytes"), "capture.total_size_bytes", jv_get(cm, "total_size_bytes"),
             "capture/manifest.json total_size_bytes", r);
        same(jv_get(panel, "context_length"), "panel.context_length", jv_get(cm, "context_length"),
             "capture/manifest.json context_length", r);
    }
    if (pd) {
        same(jv_get(panel, "context_length"), "panel.context_length", jv_get(pd, "context_length"), "panel.json context_length", r);
        same(jv_get(panel, "contexts"), "panel.contexts", jv_get(pd, "contexts"), "panel.json contexts", r);
        same(jv_get(panel, "scored_positions_total"), "panel.scored_positions_total", jv_get(pd, "scored_positions_total"),
             "panel.json scored_positions_total", r);
        same(jv_get(panel, "scoring_window"), "panel.scoring_window", jv_get(pd, "scoring_window"), "panel.json scoring_window", r);
        same(jv_get(panel, "tokenizer"), "panel.tokenizer", jv_get(pd, "tokenizer"), "panel.json tokenizer", r);
        const jv *precs = jv_get(pd, "records");
        if (precs && precs->t == JV_ARR) same_i(jv_get(panel, "contexts"), "panel.contexts", (int64_t)precs->u.a.n, "the panel record count", r);
    }

    /* the records: counts, sums, pointers, sizes */
    const jv *records = cm ? jv_get(cm, "records") : NULL;
    if (records && records->t == JV_ARR) check_records(root, m, cm, records, cap_rel, allow_partial, r);

    /* the panel windows */
    int64_t vocab = 0, ctx_len = 0, score_from = 0;
    jv_get_i64(capture, "vocab_size", &vocab);
    jv_get_i64(panel, "context_length", &ctx_len);
    const jv *sw = jv_get(panel, "scoring_window");
    const jv *sf = jv_get(sw, "score_from");
    if (sf && (sf->t != JV_INT || sf->u.i < 0 || (ctx_len > 1 && sf->u.i > ctx_len - 2))) {
        char *rs = py_repr(sf);
        fd_report_error(r, "geometry_mismatch", "GEOM", "", "panel.scoring_window.score_from %s is not in [0, context_length - 2 = %lld]",
                        rs, (long long)(ctx_len - 2));
        free(rs);
    } else if (sf) score_from = sf->u.i;
    const jv *precs = pd ? jv_get(pd, "records") : NULL;
    for (size_t i = 0; precs && precs->t == JV_ARR && i < precs->u.a.n; i++)
        check_window(root, precs->u.a.v[i], vocab, ctx_len, score_from, allow_partial, r);
    fd_report_ok(r, "meaning.geometry");
    check_head(root, m, hd, head_rel ? head_rel : "head/head.json", allow_partial, r);
}
