/* The model card of one candidate from its comparison receipts: layer 1
 * `model-index` (GEN-1..4, GEN-7, GEN-9) and layer 2 `x_fidelity`, with the
 * receipt's values copied, never recomputed or rounded. */
#include "card.h"
#include "compare/compare.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_URL "https://github.com/malaiwah/quant-fidelity-suite/blob/main/docs/FIDELITY-DATASET-SPEC.md"
#define TASK_NAME "Distribution fidelity (KL divergence vs BF16 reference)"

static jv *cp(const jv *v) { return v ? jv_copy(v) : jv_null(); }
static const jv *at(const jv *o, const char *a, const char *b)
{
    const jv *x = jv_get(o, a);
    return b ? jv_get(x, b) : x;
}
static jv *str_or_null(const char *s) { return s ? jv_str(s) : jv_null(); }

/* GEN-9: args never carry a null (the Hub's round-trip drops them). */
static void set_nn(jv *o, const char *k, const jv *v)
{
    if (v && v->t != JV_NULL) jv_set(o, k, jv_copy(v));
}

/* "rcpt--" + the first 16 hex of the receipt seal: the measurement id of an
 * unregistered receipt (the registry would assign its own). */
static void measurement_id(const jv *r, char out[32])
{
    snprintf(out, 32, "rcpt--%.16s", jv_get_str(r, "receipt_sha256"));
}

static int load_receipts(const fd_card_opts *o, jv ***out, fd_err *e)
{
    if (!o->nreceipts) return fd_fail(e, "card_invalid", "CLI", "at least one --receipt is needed");
    jv **rs = fd_xcalloc(o->nreceipts, sizeof *rs);
    *out = rs;
    for (size_t i = 0; i < o->nreceipts; i++) {
        fd_err pe;
        if (!(rs[i] = jv_parse_file(o->receipts[i], &pe)))
            return fd_fail(e, "receipt_invalid", "SEAL", "%s: %s", o->receipts[i], pe.msg);
        int n = fd_validate_receipt(rs[i], NULL, NULL);
        if (n) return fd_fail(e, "receipt_invalid", "SEAL", "%s: %d finding(s) from validate --receipt", o->receipts[i], n);
        const char *kind = jv_get_str(rs[i], "comparison_kind");
        if (!kind || strcmp(kind, "measurement"))
            return fd_fail(e, "not_a_measurement", "SC-3", "%s: comparison_kind %s is not a measurement; only "
                           "measurements go on a model card", o->receipts[i], kind ? kind : "None");
        const char *c0 = jv_get_str(jv_get(rs[0], "candidate"), "dataset_sha256");
        const char *ci = jv_get_str(jv_get(rs[i], "candidate"), "dataset_sha256");
        if (!c0 || !ci || strcmp(c0, ci))
            return fd_fail(e, "mixed_candidates", "GEN-2", "%s: a model card describes one candidate; this receipt's "
                           "candidate dataset differs from %s's", o->receipts[i], o->receipts[0]);
    }
    return 0;
}

static jv *panel_args(const jv *r)
{
    jv *a = jv_obj();
    const jv *p = jv_get(r, "panel"), *tok = jv_get(p, "tokenizer");
    set_nn(a, "panel_id", jv_get(p, "panel_id"));
    set_nn(a, "panel_token_sha256", jv_get(p, "suite_token_hash_sha256"));
    set_nn(a, "contexts", jv_get(p, "contexts"));
    set_nn(a, "scored_positions", jv_get(p, "scored_positions"));
    set_nn(a, "context_length", jv_get(p, "context_length"));
    const char *trepo = jv_get_str(tok, "repository"), *trev = jv_get_str(tok, "revision");
    if (trepo) {
        char buf[512];
        snprintf(buf, sizeof buf, "%s@%s", trepo, trev ? trev : "None");
        jv_set(a, "tokenizer", jv_str(buf));
    }
    set_nn(a, "vocab_size", jv_get(tok, "vocab_size"));
    set_nn(a, "reference_id", at(r, "reference", "dataset_id"));
    return a;
}

static jv *metric_args(const jv *r, const char *lane, const char *mid)
{
    jv *a = jv_obj();
    const jv *m = jv_get(r, "metric"), *est = jv_get(r, "estimator"), *det = jv_get(r, "determinism");
    set_nn(a, "units", jv_get(m, "units"));
    set_nn(a, "higher_is_better", jv_get(m, "higher_is_better"));
    set_nn(a, "direction", jv_get(m, "direction"));
    jv_set(a, "estimator", jv_str("full_vocabulary_fp64"));
    set_nn(a, "accumulation_dtype", jv_get(est, "accumulation_dtype"));
    set_nn(a, "logits_dtype", jv_get(est, "logits_dtype"));
    set_nn(a, "head_policy", jv_get(est, "head_policy"));
    set_nn(a, "stack_relation", jv_get(est, "stack_relation"));
    jv_set(a, "lane", jv_str(lane));
    set_nn(a, "run_count", jv_get(det, "run_count"));
    set_nn(a, "population_stddev_of_run_means", jv_get(det, "population_stddev_of_run_means"));
    const jv *ident = jv_get(det, "identical_across_runs");
    jv_set(a, "determinism", jv_str(ident && ident->t == JV_BOOL && ident->u.b ? "bitwise_identical_across_runs"
                                                                              : "not_established"));
    jv_set(a, "measurement_id", jv_str(mid));
    set_nn(a, "comparability_key", at(r, "comparability", "key"));
    return a;
}

static jv *measurement_entry(const jv *r, const char *lane, const char *mid)
{
    jv *m = jv_obj();
    const jv *met = jv_get(r, "metric"), *det = jv_get(r, "determinism");
    jv_set(m, "id", jv_str(mid));
    jv_set(m, "lane", jv_str(lane));
    jv_set(m, "status", jv_str("unsubmitted"));
    jv_set(m, "comparability_key", cp(at(r, "comparability", "key")));
    jv_set(m, "panel_id", cp(at(r, "panel", "panel_id")));
    jv_set(m, "reference_id", cp(at(r, "reference", "dataset_id")));
    jv_set(m, "pipeline_id", jv_null());
    jv_set(m, "metric_name", cp(jv_get(met, "name")));
    jv_set(m, "value", cp(jv_get(met, "value")));
    jv_set(m, "units", cp(jv_get(met, "units")));
    jv_set(m, "direction", cp(jv_get(met, "direction")));
    jv_set(m, "run_count", cp(jv_get(det, "run_count")));
    jv *d = jv_obj();
    jv_set(d, "evidence_kind", cp(jv_get(det, "evidence_kind")));
    jv_set(d, "distinct_evidence_hash_count", cp(jv_get(det, "distinct_evidence_hash_count")));
    jv_set(d, "identical_across_runs", cp(jv_get(det, "identical_across_runs")));
    const jv *eh = jv_get(det, "evidence_hashes");
    jv_set(d, "evidence_hashes", eh && eh->t == JV_ARR ? jv_copy(eh) : jv_arr());
    jv_set(m, "determinism", d);
    jv_set(m, "floor_measurement_id", jv_null());
    jv_set(m, "excess_over_control", jv_null());
    jv_set(m, "excess_over_control_withheld", jv_null());
    jv_set(m, "measured_by", jv_null());
    jv *codes = jv_arr();
    const jv *ds = jv_get(r, "disclosures");
    for (size_t i = 0; ds && ds->t == JV_ARR && i < ds->u.a.n; i++) {
        const char *c = jv_get_str(ds->u.a.v[i], "code");
        if (c) jv_push(codes, jv_str(c));
    }
    jv_set(m, "disclosures", codes);
    jv_set(m, "receipt_sha256", cp(jv_get(r, "receipt_sha256")));
    return m;
}

static jv *head_block(const jv *cand)
{
    const jv *h = jv_get(cand, "head");
    const jv *q = jv_get(h, "quantized");
    int quant = q && q->t == JV_BOOL && q->u.b;
    const char *content = jv_get_str(h, "tensor_content_sha256");
    jv *o = jv_obj();
    jv_set(o, "policy", jv_str(quant ? "quantized" : "native"));
    jv_set(o, "quantized", jv_bool(quant));
    jv_set(o, "bits", cp(jv_get(h, "bits")));
    jv_set(o, "lm_head_tensor_content_sha256", str_or_null(content));
    jv_set(o, "lm_head_file_sha256", jv_null());
    jv_set(o, "final_norm_tensor_content_sha256", jv_null());
    jv_set(o, "final_norm_file_sha256", jv_null());
    jv_set(o, "equality_receipt", jv_null());
    jv_set(o, "replay_permitted", jv_bool(content != NULL)); /* GEN-8: never invent a head digest */
    if (!content)
        jv_set(o, "note", jv_str("lm_head_tensor_content_sha256 is null: a comparator MUST refuse to replay this "
                                 "artifact's hidden states through any other artifact's head (HEAD-4)."));
    return o;
}

int fd_card_build(const fd_card_opts *o, jv **mi_out, jv **x_out, jv **top_out, fd_err *e)
{
    jv **rs = NULL;
    *mi_out = *x_out = *top_out = NULL;
    int rc = load_receipts(o, &rs, e);
    jv *results = jv_arr(), *meas = jv_arr(), *ids = jv_arr(), *keys = jv_arr();
    const jv *r0 = rs ? rs[0] : NULL, *cand = jv_get(r0, "candidate"), *ref = jv_get(r0, "reference");
    for (size_t i = 0; !rc && i < o->nreceipts; i++) {
        const jv *r = rs[i];
        char mid[32];
        measurement_id(r, mid);
        const char *lane = jv_get_str(jv_get(r, "candidate"), "lane");
        const char *pid = jv_get_str(jv_get(r, "panel"), "panel_id");
        if (!lane || !pid) { rc = fd_fail(e, "receipt_invalid", "GEN-3", "%s: no lane or panel id", o->receipts[i]); break; }
        const char *dot = strrchr(pid, '.');
        jv *ds = jv_obj();
        jv_set(ds, "type", jv_str(o->panel_repository ? o->panel_repository : pid));
        jv_set(ds, "name", jv_str(pid));
        jv_set(ds, "config", jv_str(dot ? dot + 1 : pid));
        jv_set(ds, "split", jv_str(lane));                 /* GEN-3: the lane is in the merge key */
        jv_set(ds, "revision", str_or_null(o->panel_revision)); /* GEN-1: a string, quoted by the emitter */
        jv_set(ds, "args", panel_args(r));
        /* GEN-4: huggingface_hub merges on (task.type, dataset.type, config, split, revision) */
        jv *key = jv_arr();
        jv_push(key, jv_str("text-generation"));
        jv_push(key, jv_copy(jv_get(ds, "type")));
        jv_push(key, jv_copy(jv_get(ds, "config")));
        jv_push(key, jv_copy(jv_get(ds, "split")));
        jv_push(key, jv_copy(jv_get(ds, "revision")));
        for (size_t k = 0; k < keys->u.a.n && !rc; k++)
            if (jv_equal(keys->u.a.v[k], key))
                rc = fd_fail(e, "card_merge_key", "GEN-4", "%s and %s would share the huggingface_hub merge key "
                             "(text-generation, %s, %s, %s); the second result's args would be silently discarded",
                             o->receipts[k], o->receipts[i], jv_get_str(ds, "type"), jv_get_str(ds, "config"), lane);
        jv_push(keys, key);
        if (rc) { jv_free(ds); break; }
        jv *task = jv_obj();
        jv_set(task, "type", jv_str("text-generation"));
        jv_set(task, "name", jv_str(TASK_NAME));
        jv *metrics = jv_arr(), *kl = jv_obj();
        jv_set(kl, "type", jv_str("kl_divergence"));
        jv_set(kl, "name", jv_str("Mean tokenwise KLD (reference || candidate), nats"));
        jv_set(kl, "value", cp(at(r, "metric", "value")));
        jv_set(kl, "args", metric_args(r, lane, mid));
        jv_push(metrics, kl);
        const jv *t1 = jv_get(r, "top1_agreement");
        if (t1 && t1->t != JV_NULL) {
            jv *t = jv_obj(), *ta = jv_obj();
            jv_set(t, "type", jv_str("top1_agreement"));
            jv_set(t, "name", jv_str("Top-1 agreement with reference"));
            jv_set(t, "value", jv_copy(t1));
            jv_set(ta, "units", jv_str("fraction"));
            jv_set(ta, "higher_is_better", jv_bool(1));
            jv_set(ta, "lane", jv_str(lane));
            jv_set(t, "args", ta);
            jv_push(metrics, t);
        }
        jv *res = jv_obj();
        jv_set(res, "task", task);
        jv_set(res, "dataset", ds);
        jv_set(res, "metrics", metrics);
        jv_push(results, res);
        jv_push(meas, measurement_entry(r, lane, mid));
        jv_push(ids, jv_str(mid));
    }
    jv_free(keys);
    if (rc) goto fail;
    const char *name = o->model_name ? o->model_name : jv_get_str(jv_get(cand, "weights"), "repository");
    if (!name) name = jv_get_str(cand, "dataset_id");
    jv *entry = jv_obj(), *mi = jv_arr();
    jv_set(entry, "name", jv_str(name ? name : "unnamed"));
    jv_set(entry, "results", results);
    jv_push(mi, entry);
    results = NULL;
    const char *role = jv_get_str(cand, "role");
    jv *x = jv_obj(), *fdset = jv_obj(), *reg = jv_obj();
    jv_set(x, "spec", jv_str(SPEC_URL));
    jv_set(x, "spec_version", jv_str("fidelity-provenance/v1"));
    jv_set(x, "role", jv_str(role && !strcmp(role, "root") ? "root" : "quant"));
    jv_set(x, "reference_model", cp(at(ref, "weights", "repository")));
    jv_set(x, "reference_revision", cp(at(ref, "weights", "revision")));
    static const char *const fk[] = {"repository", "revision", "dataset_sha256", "capture_content_digest", "form", "role"};
    for (size_t i = 0; i < 6; i++) jv_set(fdset, fk[i], cp(jv_get(cand, fk[i])));
    jv_set(x, "fidelity_dataset", fdset);
    jv_set(reg, "dataset", jv_str("malaiwah/quant-fidelity-registry"));
    jv_set(reg, "schema_version", jv_str("quant-fidelity-registry/v1"));
    jv_set(reg, "artifact_id", jv_null());
    jv_set(reg, "measurement_ids", ids);
    ids = NULL;
    jv_set(reg, "snapshot", jv_null());
    jv_set(x, "registry", reg);
    jv_set(x, "scope_digest", cp(jv_get(cand, "scope_digest")));
    jv_set(x, "head", head_block(cand));
    jv_set(x, "measurements", meas);
    meas = NULL;
    jv *top = jv_obj(), *tags = jv_arr(), *dsl = jv_arr(), *ml = jv_arr();
    const char *base = o->base_model ? o->base_model : jv_get_str(jv_get(ref, "weights"), "repository");
    if (base) jv_set(top, "base_model", jv_str(base));
    const jv *wq = at(cand, "weights", "quantized");
    if (base && wq && wq->t == JV_BOOL && wq->u.b) jv_set(top, "base_model_relation", jv_str("quantized"));
    if (o->panel_repository) jv_push(dsl, jv_str(o->panel_repository));
    jv_set(top, "datasets", dsl);
    jv_push(ml, jv_str("kl_divergence"));
    jv_push(ml, jv_str("top1_agreement"));
    jv_set(top, "metrics", ml);
    static const char *const tg[] = {"fidelity", "kl-divergence", "fidelity-provenance"};
    for (size_t i = 0; i < 3; i++) jv_push(tags, jv_str(tg[i]));
    jv_set(top, "tags", tags);
    *mi_out = mi;
    *x_out = x;
    *top_out = top;
fail:
    jv_free(results);
    jv_free(meas);
    jv_free(ids);
    for (size_t i = 0; rs && i < o->nreceipts; i++) jv_free(rs[i]);
    free(rs);
    return rc;
}
