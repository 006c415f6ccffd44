/* The comparison receipt (COMPARE.md §4), block by block
 * (compare_internal.h fd_cmp_build_receipt). */
#include "compare_internal.h"
#include "stats.h"
#include "observed.h"
#include "tokstats.h"
#include "format/npy.h"
#include "format/sha.h"
#include "format/version.h"
#include "mpi/dist.h"
#include "util/fsio.h"
#include "util/utc.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static jv *str_or_null(const char *s) { return s ? jv_str(s) : jv_null(); }
static jv *copy_or_null(const jv *v) { return v ? jv_copy(v) : jv_null(); }
static jv *num_or_null(double d) { return d == d ? jv_float(d) : jv_null(); }

static jv *side_block(const fd_side *s)
{
    const jv *m = s->manifest, *h = jv_get(m, "head"), *w = jv_get(m, "weights"), *d = jv_get(m, "dataset");
    jv *o = jv_obj(), *head = jv_obj(), *wt = jv_obj();
    jv_set(o, "label", jv_str(s->label));
    jv_set(o, "dataset_id", copy_or_null(jv_get(d, "id")));
    jv_set(o, "dataset_sha256", jv_str(s->dataset_sha256));
    jv_set(o, "capture_content_digest", jv_str(s->capture_content_digest));
    jv_set(o, "role", str_or_null(s->role));
    jv_set(o, "form", str_or_null(s->form));
    jv_set(o, "lane", str_or_null(s->lane));
    jv_set(o, "repository", copy_or_null(jv_get(d, "repository")));
    jv_set(o, "revision", copy_or_null(jv_get(d, "revision")));
    jv_set(head, "tensor_content_sha256", copy_or_null(jv_get(h, "tensor_content_sha256")));
    jv_set(head, "raw_tensor_sha256", copy_or_null(jv_get(h, "raw_tensor_sha256")));
    jv_set(head, "quantized", copy_or_null(jv_get(h, "quantized")));
    jv_set(head, "bits", copy_or_null(jv_get(h, "bits")));
    jv_set(head, "source", copy_or_null(jv_get(h, "source")));
    jv_set(o, "head", head);
    jv_set(o, "stack_fingerprint_sha256", copy_or_null(jv_get(jv_get(m, "runtime"), "stack_fingerprint_sha256")));
    jv_set(o, "lane_identity_sha256", copy_or_null(jv_get(jv_get(m, "runtime"), "lane_identity_sha256")));
    /* the manifest's weights block verbatim (the Python tool's side_block copies it whole),
     * with the fields the receipt schema requires made present */
    if (w && w->t == JV_OBJ) {
        jv_free(wt);
        wt = jv_copy(w);
    }
    const jv *repo = jv_get(w, "repository");
    jv_set(wt, "repository", repo && repo->t == JV_STR && repo->u.s.n ? jv_copy(repo) : jv_str("unknown"));
    jv_set(wt, "revision", copy_or_null(jv_get(w, "revision")));
    jv_set(wt, "model_revision", copy_or_null(jv_get(w, "model_revision")));
    const jv *q = jv_get(w, "quantized");
    jv_set(wt, "quantized", q && q->t == JV_BOOL ? jv_copy(q) : jv_bool(0));
    jv_set(wt, "checkpoint_identity_sha256", copy_or_null(jv_get(w, "checkpoint_identity_sha256")));
    jv_set(o, "weights", wt);
    jv_set(o, "scope_digest", copy_or_null(jv_get(jv_get(m, "scope"), "scope_digest")));
    return o;
}

static jv *stats_block(double mean, double median, double p95, double p99, double p999, double max)
{
    jv *k = jv_obj();
    jv_set(k, "mean", jv_float(mean));
    jv_set(k, "median", jv_float(median));
    jv_set(k, "p95", jv_float(p95));
    jv_set(k, "p99", jv_float(p99));
    jv_set(k, "p99_9", jv_float(p999));
    jv_set(k, "max", jv_float(max));
    return k;
}

static void utc(char out[32], const char *pinned)
{
    if (pinned) snprintf(out, 32, "%s", pinned);
    else fd_utc_now(out, 32, "%Y-%m-%dT%H:%M:%SZ");
}

/* The comparability key of the registry (provisional: it recomputes it). */
static void comparability_key(const char *const in[7], char out[32])
{
    fd_buf b = {0};
    for (int i = 0; i < 7; i++) fd_buf_printf(&b, "%s%s", i ? "|" : "", in[i] ? in[i] : "None");
    char hex[65];
    fd_sha256_hex(b.p, b.n, hex);
    snprintf(out, 32, "cmp--%.16s", hex);
    fd_buf_free(&b);
}

static const char *const BUCKET_NAMES[FD_DEPTH_BUCKETS] = {"0000-0255", "0256-0511", "0512-1023", "1024-1535", "1536-2046"};

static jv *context_entry(const fd_side *ref, const cand_run *c, const fd_kl_stats *st, size_t i)
{
    const fd_ctx *x = fd_side_find(ref, c->g.shared[i]);
    const fd_kl_context *k = &st->per_context[i];
    jv *o = jv_obj();
    jv_set(o, "index", jv_int(x->index));
    jv_set(o, "window_id", copy_or_null(jv_get(x->rec, "window_id")));
    jv_set(o, "scored_rows", jv_int(x->rows));
    jv_set(o, "mean", jv_float(k->mean));
    jv_set(o, "max", jv_float(k->max));
    const jv *dom = jv_get(x->rec, "domain"), *strat = jv_get(x->rec, "allocation_stratum");
    if ((!dom || dom->t == JV_NULL) && x->panel_rec) dom = jv_get(x->panel_rec, "domain");
    if ((!strat || strat->t == JV_NULL) && x->panel_rec) strat = jv_get(x->panel_rec, "allocation_stratum");
    jv_set(o, "domain", copy_or_null(dom));
    jv_set(o, "allocation_stratum", copy_or_null(strat));
    jv_set(o, "top1_agreement", num_or_null(k->top1_agreement));
    return o;
}

/* The js statistics block (--js): zeros under the SC-1 hash proof. */
static jv *js_block(const fd_cmp_opts *o, const cand_run *c)
{
    if (!o->js) return jv_null();
    double *v = fd_xcalloc(c->npos + 1, sizeof *v);
    if (c->compute && c->r.js) memcpy(v, c->r.js, c->npos * sizeof *v);
    double mean = fd_np_mean(v, c->npos), max = fd_np_max(v, c->npos);
    fd_sort_doubles(v, c->npos);
    jv *b = stats_block(mean, fd_np_quantile(v, c->npos, 0.5), fd_np_quantile(v, c->npos, 0.95),
                        fd_np_quantile(v, c->npos, 0.99), fd_np_quantile(v, c->npos, 0.999), max);
    free(v);
    return b;
}

/* a side's capture.dtype lower-cased ("BF16" -> "bf16"), NULL when absent */
static const char *lower_dtype(const fd_side *s, char out[16])
{
    const char *d = jv_get_str(jv_get(s->manifest, "capture"), "dtype");
    if (!d || strlen(d) >= 16) return NULL;
    size_t i = 0;
    for (; d[i]; i++) out[i] = (char)tolower((unsigned char)d[i]);
    out[i] = 0;
    return out;
}

/* the receipt's "panel" block */
static jv *panel_block(const fd_side *ref, const cand_run *c)
{
    const jv *rp = jv_get(ref->manifest, "panel");
    jv *p = jv_obj();
    /* the dataset's whole block (dropped_positions_total included), as the Python tool copies it */
    const jv *rsw = jv_get(rp, "scoring_window");
    jv *sw = rsw && rsw->t == JV_OBJ ? jv_copy(rsw) : jv_obj();
    jv_set(p, "panel_id", copy_or_null(jv_get(rp, "panel_id")));
    jv_set(p, "suite_token_hash_sha256", copy_or_null(jv_get(rp, "suite_token_hash_sha256")));
    jv_set(p, "panel_token_sha256_legacy", copy_or_null(jv_get(rp, "panel_token_sha256_legacy")));
    jv_set(p, "contexts", jv_int((int64_t)c->g.nshared));
    jv_set(p, "scored_positions", jv_int((int64_t)c->npos));
    jv_set(p, "context_length", copy_or_null(jv_get(rp, "context_length")));
    jv_set(p, "scoring_window", sw);
    jv_set(p, "tokenizer", copy_or_null(jv_get(rp, "tokenizer")));
    jv_set(p, "tokenizer_reference", copy_or_null(jv_get(rp, "tokenizer")));
    jv_set(p, "tokenizer_candidate", copy_or_null(jv_get(jv_get(c->side.manifest, "panel"), "tokenizer")));
    jv_set(p, "tokenizer_identity_equal", jv_bool(c->g.tokenizer_equal));
    return p;
}

/* The applied heads, spelled as the Python tool spells them (dscompare.build_receipt):
 * two logit-form sides apply no head (all three null); under --own-heads (HEAD-1d)
 * each side goes through its own head, so the single field is null and the two
 * per-side fields name them (null too under the hash proof, which applies none);
 * otherwise one head is applied and all three name it. */
static void applied_heads(jv *cmp, const fd_side *ref, const cand_run *c, int hashed)
{
    const char *applied = NULL, *applied_ref = NULL, *applied_cand = NULL;
    int own_heads = !ref->logit && !c->side.logit && !strcmp(c->g.head_policy, "native_head");
    if (own_heads && !hashed) {
        applied_ref = ref->head_content;
        applied_cand = c->head_applied;
    } else if (!own_heads && !(ref->logit && c->side.logit))
        applied = applied_ref = applied_cand = !hashed && c->head_applied ? c->head_applied : ref->head_content;
    jv_set(cmp, "head_applied_tensor_content_sha256", str_or_null(applied));
    jv_set(cmp, "head_applied_reference_tensor_content_sha256", str_or_null(applied_ref));
    jv_set(cmp, "head_applied_candidate_tensor_content_sha256", str_or_null(applied_cand));
}

/* the receipt's "comparator" block */
static jv *comparator_block(const fd_cmp_opts *o, const fd_side *ref, const cand_run *c, fd_path path)
{
    jv *cmp = jv_obj(), *env = jv_obj(), *tool = jv_obj();
    int hashed = !c->compute;
    char backend[96];
    snprintf(backend, sizeof backend, "fidelity-c:cpu:%s:bf16-canonical", fd_path_name(path));
    jv_set(cmp, "device", jv_str(hashed ? "none" : "cpu"));
    jv_set(cmp, "accumulation_dtype", jv_str("float64"));
    jv_set(cmp, "logprob_dtype", jv_str("float64"));
    jv_set(cmp, "two_pass", jv_bool(0));
    /* the hash proof runs no arithmetic: no vocab chunk, no position block (null, as the Python tool writes) */
    jv_set(cmp, "vocab_chunk", o->vocab_chunk && !hashed ? jv_int((int64_t)o->vocab_chunk) : jv_null());
    jv_set(cmp, "kl_vocab_chunk", jv_int(FD_KL_CHUNK));
    jv_set(cmp, "position_block", hashed ? jv_null() : jv_int((int64_t)(o->position_block ? o->position_block : FD_CMP_POSITION_BLOCK)));
    jv_set(cmp, "replay_backend", jv_str(hashed ? "none" : backend));
    jv_set(env, "kernel_path", jv_str(fd_path_name(path)));
    jv_set(env, "threads", jv_int(fd_cmp_pick_threads(o->threads)));
    jv_set(env, "numerics", jv_str("docs/NUMERICS.md: canonical bf16 pair order (odd then even, FTZ/DAZ), fp64 8-lane chunked KL, exp by a 16-entry table and fmas"));
    jv_set(env, "tool_version", jv_str(FD_ENGINE_NAME "/" FD_VERSION));
    jv_set(cmp, "replay_env", env);
    jv_set(cmp, "replay_peak_device_bytes", jv_null());
    jv_set(cmp, "tf32", jv_bool(0));
    jv_set(cmp, "deterministic_algorithms", jv_bool(1));
    jv_set(cmp, "bf16_reduced_precision_reduction", jv_bool(0));
    jv_set(cmp, "cublas_workspace_config", jv_null());
    applied_heads(cmp, ref, c, hashed);
    jv_set(cmp, "tensor_content_digests_verified", jv_bool(o->verify_tensors));
    jv_set(cmp, "source_file_hashes_verified", jv_bool(o->verify_tensors));
    jv_set(cmp, "short_circuited", jv_bool(c->short_circuited));
    jv_set(cmp, "estimator_backend", jv_str(hashed ? "hash_proof" : "fidelity-c:online_chunked_fp64"));
    jv_set(tool, "entrypoint", jv_str("fidelity compare"));
    jv_set(tool, "note", jv_str("C reimplementation of the malaiwah.fidelity-dataset.v1 comparator"));
    jv_set(cmp, "tool", tool);
    return cmp;
}

/* metric, kl, js, the means, per stratum/domain, depth buckets, the per-context lists */
static void statistics_into(jv *r, const fd_cmp_opts *o, const fd_side *ref, const cand_run *c, const fd_kl_stats *st,
                            const double *rkl_mean_entropy)
{
    jv *metric = jv_obj();
    jv_set(metric, "name", jv_str("mean_tokenwise_kld"));
    jv_set(metric, "value", jv_float(st->mean));
    jv_set(metric, "units", jv_str("nats"));
    jv_set(metric, "direction", jv_str("reference_to_candidate"));
    jv_set(metric, "direction_label", jv_str("KL(reference || candidate)"));
    jv_set(metric, "higher_is_better", jv_bool(0));
    jv_set(r, "metric", metric);
    jv_set(r, "kl", stats_block(st->mean, st->median, st->p95, st->p99, st->p99_9, st->max));
    jv_set(r, "js", js_block(o, c));
    jv_set(r, "top1_agreement", jv_float(st->top1_agreement));
    jv_set(r, "kl_micro_token_mean", jv_float(st->mean));
    jv_set(r, "kl_reverse_mean", rkl_mean_entropy ? jv_float(rkl_mean_entropy[0]) : jv_float(0.0));
    jv_set(r, "reference_entropy_mean", rkl_mean_entropy ? jv_float(rkl_mean_entropy[1]) : jv_null());
    jv_set(r, "kl_macro_stratum_mean", st->n_strata ? num_or_null(st->macro_stratum_mean) : jv_null());
    /* null when there is none (not {}), as the Python tool writes it */
    jv *ps = st->n_strata ? jv_obj() : jv_null(), *pd = st->n_domains ? jv_obj() : jv_null();
    for (size_t i = 0; i < st->n_strata; i++) jv_set(ps, st->per_stratum[i].key, jv_float(st->per_stratum[i].mean));
    for (size_t i = 0; i < st->n_domains; i++) jv_set(pd, st->per_domain[i].key, jv_float(st->per_domain[i].mean));
    jv_set(r, "per_stratum", ps);
    jv_set(r, "per_domain", pd);
    if (!strcmp(c->g.kind, "reproduction_confirmation")) jv_set(r, "context_depth_buckets", jv_null());
    else {
        jv *b = jv_obj();
        for (int i = 0; i < FD_DEPTH_BUCKETS; i++)
            jv_set(b, BUCKET_NAMES[i], st->buckets[i].present ? jv_float(st->buckets[i].mean) : jv_null());
        jv_set(r, "context_depth_buckets", b);
    }
    jv *pc = jv_arr(), *high = jv_arr(), *disc = jv_arr();
    for (size_t i = 0; i < st->n_contexts; i++) jv_push(pc, context_entry(ref, c, st, i));
    for (size_t i = 0; i < st->n_high; i++) jv_push(high, context_entry(ref, c, st, st->high_kld[i]));
    for (size_t i = 0; i < st->n_discordant; i++) jv_push(disc, context_entry(ref, c, st, st->discordant[i]));
    jv_set(r, "per_context", pc);
    jv_set(r, "high_kld_contexts", high);
    jv_set(r, "top1_discordant_contexts", disc);
}

/* the receipt's "uncertainty" block (the cluster bootstrap, or nulls) */
static jv *uncertainty_block(const fd_bootstrap *bs)
{
    jv *u = jv_obj();
    jv_set(u, "method", jv_str(bs->method));
    jv_set(u, "ci95_low", bs->computed ? jv_float(bs->ci95_low) : jv_null());
    jv_set(u, "ci95_high", bs->computed ? jv_float(bs->ci95_high) : jv_null());
    jv_set(u, "clusters", bs->computed ? jv_int((int64_t)bs->clusters) : jv_null());
    jv_set(u, "samples", bs->computed ? jv_int((int64_t)bs->samples) : jv_null());
    jv_set(u, "cluster_unit", bs->computed ? jv_str(bs->cluster_unit) : jv_null());
    jv_set(u, "seed", bs->computed ? jv_int((int64_t)bs->seed) : jv_null());
    jv_set(u, "generator", bs->computed ? jv_str(bs->generator) : jv_null());
    jv_set(u, "interval_kind", bs->computed ? jv_str(bs->interval_kind) : jv_null());
    return u;
}

/* the receipt's "estimator" block */
static jv *estimator_block(const fd_side *ref, const cand_run *c)
{
    jv *est = jv_obj();
    jv_set(est, "accumulation_dtype", jv_str("float64"));
    /* The Python tool's spellings: logits_dtype is what the estimator consumed, the replay's
     * float32 when a hidden side was replayed, else the reference capture's dtype lower-cased
     * ("bf16", "f32"); hidden_dtype is the first hidden side's capture dtype lower-cased. */
    char cap_dtype[16], hid_dtype[16];
    int replayed = c->compute && !(ref->logit && c->side.logit);
    const fd_side *hs = !ref->logit ? ref : !c->side.logit ? &c->side : NULL;
    jv_set(est, "logits_dtype", replayed ? jv_str("float32") : str_or_null(lower_dtype(ref, cap_dtype)));
    jv_set(est, "hidden_dtype", hs ? str_or_null(lower_dtype(hs, hid_dtype)) : jv_null());
    jv_set(est, "two_pass", jv_bool(0));
    jv_set(est, "vocab_chunk", jv_int(FD_KL_CHUNK));
    jv_set(est, "stack_relation", jv_str(c->g.stack_relation));
    jv_set(est, "head_policy", jv_str(c->g.head_policy));
    jv_set(est, "softmax_note", jv_str("full-vocabulary fp64 log-softmax by online max rescaling over fixed 2048-column chunks; exp/log are fixed polynomials (docs/NUMERICS.md)"));
    jv_set(est, "zero_handling", jv_str("none needed: probabilities are exp of finite log-probabilities; non-finite logits are refused"));
    return est;
}

/* the receipt's "determinism" block: one run, its evidence hashes */
static jv *determinism_block(const fd_side *ref, const cand_run *c, const fd_kl_stats *st)
{
    jv *det = jv_obj(), *runs = jv_arr(), *ev = jv_arr();
    jv_push(runs, jv_float(st->mean));
    jv_set(det, "run_count", jv_int(1));
    jv_set(det, "run_means", runs);
    jv_set(det, "population_stddev_of_run_means", jv_float(0.0));
    jv_set(det, "min_run_mean", jv_float(st->mean));
    jv_set(det, "max_run_mean", jv_float(st->mean));
    jv_set(det, "identical_across_runs", jv_null());
    jv_set(det, "cold_start_per_run", jv_null());
    jv_set(det, "evidence_kind", jv_str(ref->logit ? "logits_tensor_sha256" : "hidden_state_tensor_sha256"));
    const char *a = ref->capture_content_digest, *b = c->side.capture_content_digest;
    jv_push(ev, jv_str(strcmp(a, b) <= 0 ? a : b));
    if (strcmp(a, b)) jv_push(ev, jv_str(strcmp(a, b) <= 0 ? b : a));
    jv_set(det, "distinct_evidence_hash_count", jv_int(strcmp(a, b) ? 2 : 1));
    jv_set(det, "evidence_hashes", ev);
    jv_set(det, "note", jv_str("one comparison run; the replay is deterministic by construction (any thread count, block size or kernel path gives the same bits)"));
    return det;
}

/* the receipt's "measurement_scope" block */
static jv *scope_block(const fd_side *ref, const cand_run *c)
{
    jv *ms = jv_obj();
    int64_t ppc = fd_side_find(ref, c->g.shared[0])->rows;
    for (size_t i = 1; i < c->g.nshared; i++)
        if (fd_side_find(ref, c->g.shared[i])->rows != ppc) ppc = -1;
    jv_set(ms, "scored_positions", jv_int((int64_t)c->npos));
    jv_set(ms, "contexts", jv_int((int64_t)c->g.nshared));
    jv_set(ms, "positions_per_context", ppc > 0 ? jv_int(ppc) : jv_null());
    jv_set(ms, "covers_full_panel", jv_bool(c->g.covers_full));
    jv_set(ms, "subset_detail", c->g.covers_full ? jv_null() : jv_str("the contexts both datasets share"));
    jv_set(ms, "position_filter", jv_str("all"));
    return ms;
}

/* the receipt's "comparability" block (a key only for a measurement) */
static jv *comparability_block(const fd_side *ref, const cand_run *c)
{
    const jv *rm = ref->manifest, *rp = jv_get(rm, "panel");
    jv *cb = jv_obj();
    jv_set(cb, "class", jv_str(c->g.advisory ? "advisory" : "strict"));
    jv_set(cb, "usable_as_floor", jv_bool(c->g.floor_ok && c->g.same_lane && !c->g.advisory));
    jv_set(cb, "same_lane", jv_bool(c->g.same_lane));
    if (!strcmp(c->g.kind, "measurement")) {
        const char *in[7] = {jv_get_str(rp, "panel_id"), jv_get_str(jv_get(rm, "dataset"), "id"), "mean_tokenwise_kld",
                             "reference_to_candidate", "float64", c->g.stack_relation, c->g.head_policy};
        char key[32];
        comparability_key(in, key);
        jv *ki = jv_obj();
        static const char *const names[7] = {"panel_id", "reference_id", "metric_name", "direction", "accumulation_dtype",
                                             "stack_relation", "head_policy"};
        for (int i = 0; i < 7; i++) jv_set(ki, names[i], str_or_null(in[i]));
        jv_set(ki, "note", jv_str("provisional: the registry recomputes the key from its own reference id (CMP-001)"));
        jv_set(cb, "key", jv_str(key));
        jv_set(cb, "key_inputs", ki);
    } else {
        jv_set(cb, "key", jv_null());
        jv_set(cb, "key_inputs", jv_null());
    }
    jv_set(cb, "bias", c->g.bias ? jv_copy(c->g.bias) : jv_null());
    return cb;
}

/* tokenwise, self_compare (the two self kinds), submission (not emitted here) */
static void outputs_into(jv *r, const cand_run *c, const char *np_sha, size_t np_bytes)
{
    int sc1 = !strcmp(c->g.kind, "reproduction_confirmation"), sc2 = !strcmp(c->g.kind, "run_to_run_floor");
    jv *tw = jv_obj();
    jv_set(tw, "path", jv_str("tokenwise-kld.npy"));
    jv_set(tw, "bytes", jv_int((int64_t)np_bytes));
    jv_set(tw, "sha256", jv_str(np_sha));
    jv_set(r, "tokenwise", tw);
    if (sc1 || sc2) {
        jv *s = jv_obj();
        jv_set(s, "capture_content_digest_equal", jv_bool(c->g.digest_equal));
        jv_set(s, "weights_identity_equal", jv_bool(c->g.weights_equal));
        jv_set(s, "head_digest_equal", jv_bool(c->g.heads_equal));
        jv_set(s, "asserted_exact_zero", jv_bool(sc1));
        jv_set(s, "force_compute_agreed", sc1 && c->compute ? jv_bool(c->force_agreed) : jv_null());
        jv_set(s, "expected_tokenwise_bytes", jv_int((int64_t)np_bytes));
        jv_set(s, "expected_tokenwise_sha256", jv_str(np_sha));
        jv_set(r, "self_compare", s);
    } else jv_set(r, "self_compare", jv_null());
    jv *sub = jv_obj();
    jv_set(sub, "emitted", jv_bool(0));
    jv_set(sub, "path", jv_null());
    jv_set(sub, "receipt_sha256", jv_null());
    jv_set(sub, "submission_schema", jv_null());
    jv_set(sub, "refusal", jv_null());
    jv_set(r, "submission", sub);
}

jv *fd_cmp_build_receipt(const fd_cmp_opts *o, const fd_side *ref, const cand_run *c, const fd_kl_stats *st,
                         const fd_bootstrap *bs, const double *rkl_mean_entropy, fd_path path, const char *np_sha,
                         size_t np_bytes, const jv *interop, const jv *xfid)
{
    char created[32];
    utc(created, o->created_utc);
    jv *r = jv_obj();
    jv_set(r, "schema", jv_str("malaiwah.fidelity-comparison-receipt.v1"));
    jv_set(r, "format_version", jv_int(1));
    jv_set(r, "receipt_sha256", jv_str(""));
    jv_set(r, "created_utc", jv_str(created));
    jv_set(r, "comparison_kind", jv_str(c->g.kind));
    jv_set(r, "reference", side_block(ref));
    jv_set(r, "candidate", side_block(&c->side));
    jv_set(r, "panel", panel_block(ref, c));
    jv_set(r, "gates", jv_copy(c->g.gates));
    jv_set(r, "comparator", comparator_block(o, ref, c, path));
    statistics_into(r, o, ref, c, st, rkl_mean_entropy);
    jv_set(r, "uncertainty", uncertainty_block(bs));
    jv_set(r, "estimator", estimator_block(ref, c));
    jv_set(r, "determinism", determinism_block(ref, c, st));
    jv_set(r, "measurement_scope", scope_block(ref, c));
    jv_set(r, "comparability", comparability_block(ref, c));
    outputs_into(r, c, np_sha, np_bytes);
    jv_set(r, "disclosures", jv_copy(c->g.disclosures));
    if (interop) jv_set(r, "interop", jv_copy(interop));   /* --emit-k3-compat only */
    if (xfid) jv_set(r, "x_fidelity", jv_copy(xfid));      /* our extension block (docs/COMPARE-IMPL.md) */
    char seal[65];
    fd_err e;
    if (!jv_seal(r, "receipt_sha256", seal, &e)) jv_set(r, "receipt_sha256", jv_str(seal));
    return r;
}
