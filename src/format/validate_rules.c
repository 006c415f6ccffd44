/* The dataset rules a JSON Schema cannot express (dsvalidate.py's helpers):
 * panel binding, head, determinism, role, scope vocabulary, remap, tensors. */
#include "validate_util.h"
#include "digest.h"
#include "paths.h"
#include "safetensors.h"
#include "sha.h"
#include "../util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const jv JNULL = {.t = JV_NULL};
static const jv *or_null(const jv *v) { return v ? v : &JNULL; }

typedef struct { int64_t index; const jv *rec; } prec;

static int cmp_prec(const void *a, const void *b)
{
    const prec *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

/* Reads a token file as a JSON list of ints (any ints: Python hashes what it reads). */
static int read_ids(const char *full, int64_t **ids, size_t *n, fd_err *e)
{
    jv *v = jv_parse_file(full, e);
    if (!v) return -1;
    if (v->t != JV_ARR) { jv_free(v); return fd_fail(e, "bad_schema", "BIND-6", "%s: not a JSON list", full); }
    *n = v->u.a.n;
    *ids = fd_xmalloc((*n + 1) * sizeof **ids);
    for (size_t i = 0; i < *n; i++) {
        if (v->u.a.v[i]->t != JV_INT) {
            jv_free(v);
            free(*ids);
            return fd_fail(e, "bad_schema", "BIND-6", "%s: element %zu is not a 64-bit integer", full, i);
        }
        (*ids)[i] = v->u.a.v[i]->u.i;
    }
    jv_free(v);
    return 0;
}

/* BIND-6 / 5.1: the suite token hash recomputed from the records' digests (index order) */
static void panel_aggregate(const jv *panel, const jv *panel_doc, const jv *precs, size_t n, fd_report *r)
{
    prec *sorted = fd_xmalloc((n + 1) * sizeof *sorted);
    for (size_t i = 0; i < n; i++) {
        int64_t ix = 0;
        is_int_value(jv_get(precs->u.a.v[i], "index"), &ix);
        sorted[i] = (prec){ix, precs->u.a.v[i]};
    }
    qsort(sorted, n, sizeof *sorted, cmp_prec); /* Python's sort is stable; qsort ties are equal indices */
    char **per = fd_xcalloc(n + 1, sizeof *per);
    int all = n > 0;
    for (size_t i = 0; i < n; i++) {
        const char *d = str_truthy(sorted[i].rec, "token_ids_json_sha256");
        per[i] = (char *)(d ? d : "");
        all &= d != NULL;
    }
    if (all) {
        char agg[65], leg[65];
        fd_suite_token_hash(per, n, 0, agg);
        const char *a1 = jv_get_str(panel_doc, "suite_token_hash_sha256"), *a2 = jv_get_str(panel, "suite_token_hash_sha256");
        if (!a1 || strcmp(agg, a1))
            fd_report_error(r, "panel_digest_mismatch", "BIND-6", "", "suite_token_hash_sha256 does not recompute from the record digests");
        if (!a2 || strcmp(agg, a2))
            fd_report_error(r, "panel_digest_mismatch", "BIND-6", "", "manifest panel.suite_token_hash_sha256 disagrees with panel.json");
        const char *legacy = str_truthy(panel_doc, "panel_token_sha256_legacy");
        fd_suite_token_hash(per, n, 1, leg);
        if (legacy && strcmp(leg, legacy) && py_truthy(jv_get(panel_doc, "token_digest_algorithm")))
            fd_report_warn(r, "panel_digest_mismatch", "5.1", "",
                           "panel_token_sha256_legacy does not recompute under the legacy join; it is a historical value carried for cross-check only");
    }
    free(per);
    free(sorted);
    fd_report_ok(r, "panel.aggregate");
}

/* BIND-6: each record's token file hashes to its digests and holds num_tokens ids */
static void panel_token_files(const char *root, const jv *precs, size_t n, fd_report *r, int allow_partial)
{
    int checked = 0;
    for (size_t i = 0; i < n; i++) {
        const jv *rec = precs->u.a.v[i];
        const char *tf = str_truthy(rec, "token_file");
        if (!tf) continue;
        char *full = fd_path_join(root, tf);
        fd_err e;
        int64_t *ids = NULL;
        size_t nid = 0;
        if (!fd_is_file(full)) {
            if (!allow_partial) fd_report_error(r, "missing_file", "3", "", "panel token file %s is missing", tf);
        } else if (read_ids(full, &ids, &nid, &e)) {
            fd_report_error(r, "bad_schema", "BIND-6", tf, "unparseable token file: %s", e.msg);
        } else {
            char got[65];
            fd_token_ids_sha256(ids, nid, 0, got);
            const char *want = jv_get_str(rec, "token_ids_json_sha256");
            if (!want || strcmp(got, want))
                fd_report_error(r, "panel_digest_mismatch", "BIND-6", "", "%s hashes to %s, record says %s", tf, got, want ? want : "None");
            const char *legacy = str_truthy(rec, "token_ids_sha256_legacy");
            fd_token_ids_sha256(ids, nid, 1, got);
            if (legacy && strcmp(got, legacy))
                fd_report_error(r, "panel_digest_mismatch", "5.1/P8", "", "%s legacy digest does not recompute", tf);
            const jv *nt = jv_get(rec, "num_tokens");
            if (nt && nt->t != JV_NULL && !jv_equal(nt, &(jv){.t = JV_INT, .u.i = (int64_t)nid}))
                fd_report_error(r, "panel_binding", "BIND-6", "", "%s has %zu tokens, record says otherwise", tf, nid);
            checked++;
            free(ids);
        }
        free(full);
    }
    fd_report_ok(r, "panel.tokens(%d)", checked);
}

/* BIND-1..5: the capture's records against the panel's (by index), the scored total */
static void panel_capture_binding(const jv *manifest, const jv *panel, const jv *precs, size_t n, const jv *cm,
                                  fd_report *r)
{
    const jv *crecs = jv_get(cm, "records");
    size_t nc = crecs && crecs->t == JV_ARR ? crecs->u.a.n : 0;
    prec *byix = fd_xmalloc((n + 1) * sizeof *byix);
    size_t nb = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t ix;
        if (!is_int_value(jv_get(precs->u.a.v[i], "index"), &ix))
            fd_report_error(r, "schema_invalid", "REC-1", "", "panel record without an integer index");
        else {
            size_t j = 0; /* dict semantics: a later record with the same index wins */
            while (j < nb && byix[j].index != ix) j++;
            byix[j] = (prec){ix, precs->u.a.v[i]};
            if (j == nb) nb++;
        }
    }
    qsort(byix, nb, sizeof *byix, cmp_prec);
    int64_t total = 0;
    for (size_t i = 0; i < nc; i++) {
        const jv *rec = crecs->u.a.v[i], *index = jv_get(rec, "index");
        char *ir = py_repr(index);
        const prec *cp = NULL;
        if (index && index->t == JV_INT) {
            prec key = {index->u.i, NULL};
            cp = bsearch(&key, byix, nb, sizeof *byix, cmp_prec);
        }
        if (!cp) {
            fd_report_error(r, "panel_binding", "BIND-1", "", "capture record %s has no panel record", ir);
            free(ir);
            continue;
        }
        if (!jv_equal(or_null(jv_get(rec, "token_ids_json_sha256")), or_null(jv_get(cp->rec, "token_ids_json_sha256"))))
            fd_report_error(r, "panel_binding", "BIND-2", "", "record %s token digest differs between capture and panel", ir);
        const jv *a = jv_get(rec, "attention_mask_sha256"), *b = jv_get(cp->rec, "attention_mask_sha256");
        if (a && b && a->t != JV_NULL && b->t != JV_NULL && !jv_equal(a, b))
            fd_report_error(r, "panel_binding", "BIND-3", "", "record %s attention_mask_sha256 differs", ir);
        if (!jv_equal(or_null(jv_get(rec, "scored_rows")), or_null(jv_get(cp->rec, "prediction_positions"))))
            fd_report_error(r, "panel_binding", "BIND-4", "", "record %s scored_rows != panel prediction_positions", ir);
        int64_t sr = 0;
        if (is_int_value(jv_get(rec, "scored_rows"), &sr)) total += sr;
        free(ir);
    }
    free(byix);
    if (py_truthy(jv_get(obj_or_empty(manifest, "coverage"), "complete")) &&
        !jv_equal(&(jv){.t = JV_INT, .u.i = total}, or_null(jv_get(panel, "scored_positions_total"))))
        fd_report_error(r, "panel_binding", "BIND-5", "", "sum(scored_rows) %lld != panel.scored_positions_total", (long long)total);
    fd_report_ok(r, "panel.binding");
}

void fd_validate_panel(const char *root, const jv *manifest, const jv *panel_doc, const jv *cm,
                       fd_report *r, int allow_partial)
{
    const jv *panel = obj_or_empty(manifest, "panel");
    const jv *precs = jv_get(panel_doc, "records");
    size_t n = precs && precs->t == JV_ARR ? precs->u.a.n : 0;
    panel_aggregate(panel, panel_doc, precs, n, r);
    panel_token_files(root, precs, n, r, allow_partial);

    const char *rd = str_truthy(panel, "panel_receipt_sha256"), *sh = jv_get_str(panel, "suite_token_hash_sha256");
    if (rd && sh && !strcmp(rd, sh))
        fd_report_error(r, "schema_invalid", "PANEL-D2", "", "panel_receipt_sha256 reused as the token identity");
    if (!cm) return;

    panel_capture_binding(manifest, panel, precs, n, cm, r);
}

void fd_validate_head(const jv *head, const jv *capture, const jv *dataset, fd_report *r)
{
    const char *form = jv_get_str(capture, "form");
    if (form && !strcmp(form, "hidden")) {
        if (py_truthy(jv_get(head, "applied_in_capture")))
            fd_report_error(r, "schema_invalid", "HEAD-5", "", "hidden form declares the cut BEFORE the head, but head.applied_in_capture is true");
        if (!py_truthy(jv_get(head, "tensor_content_sha256")))
            fd_report_error(r, "head_mismatch", "HEAD-4", "",
                            "a hidden-form dataset with a null head content digest cannot be scored through anyone's head; there is no override");
    }
    const jv *aic = jv_get(head, "applied_in_capture");
    if (form && !strcmp(form, "logit") && py_truthy(jv_get(head, "present")) && aic && aic->t == JV_BOOL && !aic->u.b)
        fd_report_error(r, "schema_invalid", "4.2", "", "logit form must declare head.applied_in_capture true");
    const jv *raw = jv_get(head, "raw_tensor_sha256"), *content = jv_get(head, "tensor_content_sha256");
    const jv *file = jv_get(head, "file_sha256");
    if (py_truthy(raw) && py_truthy(content) && !jv_equal(raw, content))
        fd_report_error(r, "schema_invalid", "HEAD-IDENT", "", "raw_tensor_sha256 is a REQUIRED byte-equal alias of tensor_content_sha256; they differ");
    if (py_truthy(file) && py_truthy(content) && jv_equal(file, content))
        fd_report_warn(r, "schema_invalid", "HEAD-IDENT/O-6", "",
                       "head file_sha256 equals tensor_content_sha256; a container digest and a content digest coinciding is almost certainly one convention pasted twice");
    const char *sp = jv_get_str(capture, "semantic_point");
    if (sp && !strcmp(sp, "after_final_rmsnorm_before_lm_head") &&
        py_truthy(jv_get(obj_or_empty(head, "final_norm"), "applied_at_replay")))
        fd_report_error(r, "schema_invalid", "HEAD-7", "", "the capture is already after the final norm; replay applies the head only");
    const char *role = jv_get_str(dataset, "role");
    if (role && !strcmp(role, "root") && !py_truthy(jv_get(head, "present")))
        fd_report_error(r, "schema_invalid", "HEAD-6", "", "a root that ships no head cannot be replayed against");
    fd_report_ok(r, "head");
}

static const char *const CONTAINER_KEYS[] = {"file_sha256", "sha256", "manifest_file_sha256", "panel_file_sha256",
                                             "checksums_sha256", "receipt_sha256", NULL};

static int in_containers(const jv *node, const char *value, int depth)
{
    if (!node || depth > 600) return 0;
    if (node->t == JV_OBJ) {
        for (size_t i = 0; i < node->u.o.n; i++) {
            const jv *v = node->u.o.m[i].v;
            for (const char *const *k = CONTAINER_KEYS; *k; k++)
                if (!strcmp(*k, node->u.o.m[i].k) && v->t == JV_STR && !strcmp(v->u.s.p, value)) return 1;
            if (in_containers(v, value, depth + 1)) return 1;
        }
    } else if (node->t == JV_ARR) {
        for (size_t i = 0; i < node->u.a.n; i++)
            if (in_containers(node->u.a.v[i], value, depth + 1)) return 1;
    }
    return 0;
}

static const char *const CONTENT_KINDS[] = {"hidden_state_tensor_sha256", "logits_tensor_sha256",
                                            "tokenwise_kld_sha256", "sealed_tokenwise_digest", NULL};

void fd_validate_determinism(const jv *manifest, const jv *det, const jv *panel, fd_report *r)
{
    const jv *hashes = jv_get(det, "evidence_hashes");
    size_t nh = hashes && hashes->t == JV_ARR && py_truthy(hashes) ? hashes->u.a.n : 0;
    int64_t distinct = 0;
    for (size_t i = 0; i < nh; i++) {
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) seen = jv_equal(hashes->u.a.v[i], hashes->u.a.v[j]);
        distinct += !seen;
    }
    const jv *dc = jv_get(det, "distinct_evidence_hash_count");
    if (dc && dc->t != JV_NULL && !jv_equal(dc, &(jv){.t = JV_INT, .u.i = distinct}))
        fd_report_error(r, "schema_invalid", "DET-D1", "", "distinct_evidence_hash_count != %lld distinct hashes", (long long)distinct);
    const jv *rc = jv_get(det, "run_count");
    int64_t runs = 0;
    if (rc && rc->t == JV_INT) runs = rc->u.i;
    else if (rc && rc->t == JV_FLOAT) runs = (int64_t)rc->u.f;
    if (py_truthy(jv_get(det, "identical_across_runs"))) {
        const char *kind = jv_get_str(det, "evidence_kind");
        int content = 0;
        for (const char *const *k = CONTENT_KINDS; kind && *k; k++) content |= !strcmp(*k, kind);
        if (!content) fd_report_error(r, "schema_invalid", "DET-D1", "", "identical_across_runs requires content-level evidence");
        if (runs < 2) fd_report_error(r, "schema_invalid", "DET-D1", "", "identical_across_runs requires run_count >= 2");
        if (distinct != 1)
            fd_report_error(r, "schema_invalid", "DET-D1", "", "identical_across_runs with %lld distinct evidence hashes", (long long)distinct);
    }
    for (size_t i = 0; i < nh; i++) {
        const jv *h = hashes->u.a.v[i];
        if (h->t == JV_STR && in_containers(manifest, h->u.s.p, 0))
            fd_report_error(r, "schema_invalid", "DET-D2", "",
                            "evidence hash %.12s is a container (file) digest; file digests differ between bitwise-identical runs", h->u.s.p);
    }
    const jv *prd = jv_get(panel, "panel_receipt_sha256");
    for (size_t i = 0; i < nh; i++)
        if (jv_equal(hashes->u.a.v[i], or_null(prd))) {
            fd_report_error(r, "schema_invalid", "DET-D3", "", "panel_receipt_sha256 may never be determinism evidence");
            break;
        }
    if (runs < 5) {
        const jv *ds = jv_get(manifest, "disclosures");
        int declared = 0;
        for (size_t i = 0; ds && ds->t == JV_ARR && i < ds->u.a.n; i++) {
            const char *code = jv_get_str(ds->u.a.v[i], "code");
            declared |= code && !strcmp(code, "reduced_run_count");
        }
        if (!declared)
            fd_report_warn(r, "reduced_run_count", "DET-D4", "",
                           "run_count %lld < 5 and no reduced_run_count disclosure is present; a published dataset carries one", (long long)runs);
    }
    fd_report_ok(r, "determinism");
}

void fd_validate_role(const char *root, const jv *dataset, const jv *scope, const jv *head, const jv *capture,
                      fd_report *r)
{
    const char *role = jv_get_str(dataset, "role"), *status = jv_get_str(dataset, "structural_status");
    int sealed = status && !strcmp(status, "sealed");
    static const char *const req[2][2] = {
        {"validation/structural-validation.json", "the validator's own verdict, sealed with the dataset"},
        {"README.md", "the dataset card carrying x_fidelity"}};
    for (int i = 0; i < 2; i++) {
        char *full = fd_path_join(root, req[i][0]);
        if (!fd_is_file(full)) {
            if (sealed) fd_report_error(r, "missing_file", "3", req[i][0], "%s is missing (%s)", req[i][0], req[i][1]);
            else fd_report_warn(r, "missing_file", "3", req[i][0], "%s is missing (%s)", req[i][0], req[i][1]);
        }
        free(full);
    }
    if (role && !strcmp(role, "root")) {
        const char *policy = jv_get_str(scope, "policy");
        int native = policy && !strcmp(policy, "native");
        const jv *as = jv_get(scope, "assignments");
        for (size_t i = 0; py_truthy(as) && as->t == JV_ARR && i < as->u.a.n; i++) {
            const char *t = jv_get_str(as->u.a.v[i], "treatment");
            native &= t && !strcmp(t, "native");
        }
        if (!native)
            fd_report_error(r, "schema_invalid", "ROOT-1", "",
                            "a root declares scope.policy native with every tensor class native; a quantized-weight capture is a quant dataset even if its author calls it a reference");
        if (py_truthy(jv_get(head, "quantized"))) fd_report_error(r, "schema_invalid", "ROOT-1", "", "a root's head is not quantized");
        const jv *bc = jv_get(dataset, "base_capture"), *lc = jv_get(capture, "lossy_codec");
        if (bc && bc->t != JV_NULL) fd_report_error(r, "schema_invalid", "3", "", "a root's base_capture must be null");
        if (lc && lc->t != JV_NULL) fd_report_error(r, "schema_invalid", "3", "", "a root's lossy_codec must be null");
        const char *hf = str_truthy(head, "file");
        if (hf) {
            char *full = fd_path_join(root, hf);
            if (!fd_is_file(full)) fd_report_warn(r, "missing_file", "3", "", "root declares head.file %s but it is not present", hf);
            free(full);
        }
    }
    const jv *bc = jv_get(dataset, "base_capture");
    if (role && !strcmp(role, "derived") && (!bc || bc->t == JV_NULL))
        fd_report_error(r, "schema_invalid", "3", "", "a derived dataset must name its base_capture");
    fd_report_ok(r, "role");
}

static const char *const NUMERIC_FORMATS[] = {"fp64", "bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2", "nvfp4", "mxfp4",
    "int8", "int4", "exl3-mcg", "exl3-mul1", "exl3-trellis", "gguf-k-quant", "gguf-i-quant", "awq", "gptq",
    "mlx-affine", "hqq", "mixed", "unknown", NULL};

/* SCOPE-004 findings are warnings on a sealed dataset, as in the reference:
 * published datasets that predate the rule must keep verifying. */
void fd_validate_scope_vocabulary(const jv *scope, fd_report *r)
{
    const jv *as = jv_get(scope, "assignments");
    size_t n = as && as->t == JV_ARR && py_truthy(as) ? as->u.a.n : 0;
    for (size_t i = 0; i < n; i++) {
        const jv *a = as->u.a.v[i];
        int count = 0, first = 1;
        for (size_t j = 0; j < n; j++) {
            const jv *b = as->u.a.v[j];
            if (jv_equal(or_null(jv_get(a, "tensor_class")), or_null(jv_get(b, "tensor_class"))) &&
                jv_equal(or_null(jv_get(a, "layer_range")), or_null(jv_get(b, "layer_range")))) {
                count++;
                if (j < i) first = 0;
            }
        }
        if (count > 1 && first) {
            char *tc = py_repr(jv_get(a, "tensor_class"));
            fd_report_warn(r, "scope_duplicate_assignment", "SCOPE-004", "",
                           "scope.assignments has %d rows for (tensor_class=%s, layer_range); the registry admits one row per class and layer_range", count, tc);
            free(tc);
        }
    }
    static const char *const keys[] = {"tensor_class", "treatment", "format", "bits_per_weight", "layer_range", "note", NULL};
    for (size_t i = 0; i < n; i++) {
        const jv *a = as->u.a.v[i];
        for (size_t k = 0; a->t == JV_OBJ && k < a->u.o.n; k++) {
            int ok = 0;
            for (const char *const *s = keys; *s; s++) ok |= !strcmp(*s, a->u.o.m[k].k);
            if (!ok) {
                fd_report_warn(r, "scope_assignment_keys", "SCOPE-004", "",
                               "scope assignment carries a key the registry schema does not admit: %s", a->u.o.m[k].k);
            }
        }
    }
    int has_embed = 0, has_head = 0, has_attn = 0, has_mlp = 0;
    for (size_t i = 0; i < n; i++) {
        const char *c = jv_get_str(as->u.a.v[i], "tensor_class");
        if (!c) continue;
        has_embed |= !strcmp(c, "embed_tokens");
        has_head |= !strcmp(c, "lm_head");
        has_attn |= fd_starts(c, "attn.");
        has_mlp |= fd_starts(c, "mlp.") || fd_starts(c, "moe.");
    }
    if (!has_embed) fd_report_warn(r, "scope_coverage", "SCOPE-004", "", "scope.assignments does not cover embed_tokens");
    if (!has_head) fd_report_warn(r, "scope_coverage", "SCOPE-004", "", "scope.assignments does not cover lm_head");
    if (!has_attn) fd_report_warn(r, "scope_coverage", "SCOPE-004", "", "scope.assignments covers no attention class");
    if (!has_mlp) fd_report_warn(r, "scope_coverage", "SCOPE-004", "", "scope.assignments covers no mlp/moe class");
    for (size_t i = 0; i < n; i++) {
        const jv *f = jv_get(as->u.a.v[i], "format");
        if (!f || f->t == JV_NULL) continue;
        int ok = 0;
        for (const char *const *s = NUMERIC_FORMATS; *s && f->t == JV_STR; s++) ok |= !strcmp(*s, f->u.s.p);
        if (!ok) {
            char *rep = py_repr(f);
            fd_report_warn(r, "scope_format_unknown", "SCOPE-VOCAB", "",
                           "scope assignment declares format %s, which is not in the registry's numeric_format enum", rep);
            free(rep);
        }
    }
    fd_report_ok(r, "scope_vocabulary");
}

void fd_validate_remap(const char *root, const jv *panel, fd_report *r)
{
    const char *rel = jv_get_str(panel, "remap_file");
    jv *remap = fd_load_sub(root, rel, r, "REMAP");
    if (!remap) return;
    fd_check_sub_seal(remap, rel, r);
    const jv *entries = obj_or_empty(remap, "entries");
    for (size_t i = 0; i < entries->u.o.n; i++) {
        const char *digest = entries->u.o.m[i].k;
        const jv *target = entries->u.o.m[i].v;
        fd_err e;
        if (target->t != JV_STR || fd_check_relpath(target->u.s.p, "REMAP-2", 0, &e)) {
            fd_report_error(r, "remap_invalid", "REMAP-2", "", "remap target is not a dataset path");
            continue;
        }
        char *full = fd_path_join(root, target->u.s.p);
        char got[65];
        if (!fd_is_file(full)) fd_report_error(r, "remap_invalid", "REMAP-2", "", "remap target %s is missing", target->u.s.p);
        else if (fd_sha256_file(full, got, &e) || strcmp(got, digest))
            fd_report_error(r, "remap_invalid", "REMAP-2", "", "remap target %s does not hash to its key %.12s", target->u.s.p, digest);
        free(full);
    }
    const char *for_file = str_truthy(remap, "for_receipt_file");
    if (for_file) {
        char dir[1024], joined[4096];
        fd_dirname(rel, dir, sizeof dir);
        if (fd_starts(for_file, "panel/")) snprintf(joined, sizeof joined, "%s", for_file);
        else snprintf(joined, sizeof joined, "%s%s%s", dir, *dir ? "/" : "", for_file);
        jv *sealed = fd_load_sub(root, joined, r, "REMAP-3");
        if (sealed) {
            char want[65];
            fd_err e;
            const char *claimed = jv_get_str(sealed, "receipt_sha256");
            if (jv_seal(sealed, "receipt_sha256", want, &e) || !claimed || strcmp(want, claimed))
                fd_report_error(r, "remap_invalid", "REMAP-3", "", "the copied sealed receipt no longer verifies; it must be verbatim");
            const jv *arts = jv_get(sealed, "artifacts");
            size_t missing = 0;
            for (size_t i = 0; arts && arts->t == JV_ARR && i < arts->u.a.n; i++) {
                const char *d = str_truthy(arts->u.a.v[i], "sha256");
                if (d && !jv_get(entries, d)) missing++;
            }
            if (missing)
                fd_report_error(r, "remap_invalid", "REMAP-1", "", "%zu sealed artifact digest(s) have no remap entry", missing);
            jv_free(sealed);
        }
    }
    jv_free(remap);
    fd_report_ok(r, "remap");
}

static int ci_equal(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if ((*a >= 'a' && *a <= 'z' ? *a - 32 : *a) != (*b >= 'a' && *b <= 'z' ? *b - 32 : *b)) return 0;
    return *a == *b;
}

void fd_verify_tensors(const char *root, const jv *capture, const jv *cm, const jv *head, fd_report *r)
{
    const jv *recs = jv_get(cm, "records");
    const char *mf = jv_get_str(capture, "manifest_file");
    char dir[1024];
    fd_dirname(mf ? mf : "capture/manifest.json", dir, sizeof dir);
    int checked = 0;
    for (size_t i = 0; recs && recs->t == JV_ARR && i < recs->u.a.n; i++) {
        const jv *rec = recs->u.a.v[i];
        const char *file = jv_get_str(rec, "file"), *key = jv_get_str(rec, "key");
        if (!file) continue;
        char rel[4096];
        snprintf(rel, sizeof rel, "%s%s%s", dir, *dir ? "/" : "", file);
        char *full = fd_path_join(root, rel);
        if (!fd_is_file(full)) { free(full); continue; }
        fd_st_file st;
        fd_err e;
        const fd_st_tensor *t = NULL;
        char content[65], payload[65], whole[65];
        if (fd_st_open(full, &st, &e)) {
            fd_report_error(r, e.code, "SEAL-1(d)", rel, "%s", e.msg);
            free(full);
            continue;
        }
        if (!key || !(t = fd_st_find(&st, key))) {
            fd_report_error(r, "bad_tensor_file", "SEAL-1(d)", rel, "%s: tensor key '%s' absent", rel, key ? key : "None");
        } else if (fd_sha256_file_range(full, 8 + st.header_len + t->start, t->end - t->start, content, &e) ||
                   fd_sha256_file_range(full, 8 + st.header_len, UINT64_MAX, payload, &e) ||
                   fd_sha256_file(full, whole, &e)) {
            fd_report_error(r, e.code, "SEAL-1(d)", rel, "%s", e.msg);
        } else {
            const char *dt = str_truthy(rec, "dtype");
            if (dt && !ci_equal(dt, t->dtype))
                fd_report_error(r, "tensor_mismatch", "SEAL-1(d)", rel, "%s declares dtype '%s' but the safetensors header says '%s'", rel, dt, t->dtype);
            const jv *shape = jv_get(rec, "shape");
            if (py_truthy(shape) && shape->t == JV_ARR) {
                int same = (int)shape->u.a.n == t->ndim;
                for (int k = 0; same && k < t->ndim; k++)
                    same = shape->u.a.v[k]->t == JV_INT && (uint64_t)shape->u.a.v[k]->u.i == t->shape[k];
                if (!same) fd_report_error(r, "tensor_mismatch", "SEAL-1(d)", rel, "%s declares a shape the safetensors header does not", rel);
            }
            const char *wc = jv_get_str(rec, "tensor_content_sha256"), *wp = str_truthy(rec, "payload_sha256");
            const char *wf = str_truthy(rec, "sha256");
            if (!wc || strcmp(wc, content))
                fd_report_error(r, "tensor_mismatch", "SEAL-1(d)", "", "%s tensor content %.12s != manifest %.12s", rel, content, wc ? wc : "");
            if (wp && strcmp(wp, payload)) fd_report_error(r, "tensor_mismatch", "SEAL-1(d)", "", "%s payload digest differs", rel);
            if (wf && strcmp(wf, whole)) fd_report_error(r, "tensor_mismatch", "SEAL-1(d)", "", "%s file digest differs", rel);
            checked++;
        }
        fd_st_close(&st);
        free(full);
    }
    const char *hf = str_truthy(head, "file");
    if (hf) {
        char *full = fd_path_join(root, hf);
        if (fd_is_file(full)) {
            fd_st_file st;
            fd_err e;
            const char *key = jv_get_str(head, "tensor_key");
            const fd_st_tensor *t;
            char got[65];
            if (fd_st_open(full, &st, &e)) fd_report_error(r, e.code, "HEAD-IDENT", hf, "%s", e.msg);
            else {
                if (!key || !(t = fd_st_find(&st, key)))
                    fd_report_error(r, "bad_tensor_file", "HEAD-IDENT", hf, "head tensor key absent from %s", hf);
                else if (fd_sha256_file_range(full, 8 + st.header_len + t->start, t->end - t->start, got, &e))
                    fd_report_error(r, e.code, "HEAD-IDENT", hf, "%s", e.msg);
                else {
                    /* the tensor is the one head.shape and head.dtype declare (16.11) */
                    const jv *hs = jv_get(head, "shape");
                    const char *hdt = str_truthy(head, "dtype");
                    if (hs && hs->t != JV_NULL) {
                        int same = hs->t == JV_ARR && (int)hs->u.a.n == t->ndim;
                        for (int k = 0; same && k < t->ndim; k++)
                            same = hs->u.a.v[k]->t == JV_INT && hs->u.a.v[k]->u.i >= 0 &&
                                   (uint64_t)hs->u.a.v[k]->u.i == t->shape[k];
                        if (!same)
                            fd_report_error(r, "geometry_mismatch", "HEAD-IDENT", hf, "head.shape is not the shape of %s in %s",
                                            key, hf);
                    }
                    if (hdt && !ci_equal(hdt, t->dtype))
                        fd_report_error(r, "tensor_mismatch", "HEAD-IDENT", hf, "head.dtype '%s' but %s in %s is '%s'", hdt, key,
                                        hf, t->dtype);
                    const char *want = jv_get_str(head, "tensor_content_sha256");
                    if (!want || strcmp(got, want))
                        fd_report_error(r, "tensor_mismatch", "HEAD-IDENT", "", "head tensor content %.12s != manifest %.12s", got, want ? want : "");
                }
                fd_st_close(&st);
            }
        }
        free(full);
    }
    fd_report_ok(r, "tensors(%d)", checked);
}
