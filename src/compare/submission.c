/* dscompare.emit_submission + receipt.build_submission, from what COMPARE.md
 * §7 pins: the three refusal axes, projections through allow-lists, float32
 * spelled fp32, evidence by dataset seal, disclosures lane-first, sealed with
 * the receipt recipe.  Where the Python module is not public (field order of
 * produced_by, the seal field name) the choice is documented in docs/CARDS.md. */
#include "submission.h"
#include "format/digest.h"
#include "format/sha.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const DETERMINISM_FIELDS[] = {"run_count", "cold_start_per_run", "run_means", "identical_across_runs",
                                                 "evidence_kind", "evidence_hashes", "distinct_evidence_hash_count",
                                                 "per_run_report_sha256", "note", NULL};
static const char *const ESTIMATOR_FIELDS[] = {"accumulation_dtype", "head_policy", "logits_dtype", "padded_columns_masked",
                                               "softmax_note", "stack_relation", "two_pass", "vocab_chunk",
                                               "vocab_masking_policy", "zero_handling", NULL};
static const char *const SCOPE_FIELDS[] = {"calibration_overlap_scan", "contexts", "covers_full_panel", "position_filter",
                                           "positions_per_context", "scope_name", "scope_selection_file",
                                           "scope_selection_sha256", "scored_positions", "subset_detail", NULL};

static jv *project(const jv *block, const char *const *fields)
{
    jv *o = jv_obj();
    for (; *fields; fields++) {
        const jv *v = jv_get(block, *fields);
        if (v) jv_set(o, *fields, jv_copy(v));
    }
    return o;
}

static jv *cp(const jv *v) { return v ? jv_copy(v) : jv_null(); }

jv *fd_provenance_template(void)
{
    jv *t = jv_obj(), *a = jv_obj(), *p = jv_obj(), *r = jv_obj(), *m = jv_obj();
    jv_set(t, "_note", jv_str("fill every empty string: these name registry records and cannot be derived from a "
                              "fidelity dataset (SC-4). artifact.revision is the 40-hex commit of the quant's HF "
                              "repository; artifact.scope is its quantization scope block (assignments, head_policy, "
                              "kv_cache_dtype); panel_ref / reference_ref must already exist in the registry."));
    jv_set(m, "handle", jv_str(""));
    jv_set(m, "contact", jv_null());
    jv_set(t, "measurer", m);
    static const char *const ak[] = {"repository", "revision", "container", "codec", "producer"};
    for (size_t i = 0; i < 5; i++) jv_set(a, ak[i], jv_str(""));
    jv_set(a, "scope", jv_obj());
    jv_set(t, "artifact", a);
    jv_set(p, "panel_ref", jv_str(""));
    jv_set(p, "panel_token_sha256", jv_str(""));
    jv_set(t, "panel", p);
    jv_set(r, "reference_ref", jv_str(""));
    jv_set(r, "teacher_receipt_sha256", jv_str(""));
    jv_set(t, "reference", r);
    jv_set(t, "environment", jv_null());
    jv_set(t, "cost", jv_null());
    return t;
}

static int present(const jv *v)
{
    if (!v || v->t == JV_NULL) return 0;
    if (v->t == JV_STR) return v->u.s.n > 0;
    if (v->t == JV_OBJ) return v->u.o.n > 0;
    if (v->t == JV_ARR) return v->u.a.n > 0;
    return 1;
}

/* receipt.assert_submittable: preview schemas, not_submittable, teacher captures. */
static const char *unsubmittable(const jv *v, fd_buf *path)
{
    if (!v) return NULL;
    if (v->t == JV_OBJ) {
        for (size_t i = 0; i < v->u.o.n; i++) {
            const char *k = v->u.o.m[i].k;
            const jv *c = v->u.o.m[i].v;
            size_t n = path->n;
            fd_buf_printf(path, ".%s", k);
            if (!strcmp(k, "schema") && c->t == JV_STR && strstr(c->u.s.p, "-preview.")) return "a -preview. schema";
            if (!strcmp(k, "not_submittable") && c->t == JV_BOOL && c->u.b) return "not_submittable: true";
            if (!strcmp(k, "capture_role") && c->t == JV_STR && !strcmp(c->u.s.p, "bf16_teacher"))
                return "capture_role: bf16_teacher";
            const char *why = unsubmittable(c, path);
            if (why) return why;
            path->n = n;
        }
    } else if (v->t == JV_ARR)
        for (size_t i = 0; i < v->u.a.n; i++) {
            size_t n = path->n;
            fd_buf_printf(path, "[%zu]", i);
            const char *why = unsubmittable(v->u.a.v[i], path);
            if (why) return why;
            path->n = n;
        }
    return NULL;
}

static jv *evidence(const jv *side, const char *role)
{
    jv *s = jv_obj();
    const char *repo = jv_get_str(side, "repository"), *rev = jv_get_str(side, "revision");
    const char *id = jv_get_str(side, "dataset_id");
    char note[512], uri[512];
    snprintf(note, sizeof note, "%s fidelity dataset %s (malaiwah.fidelity-dataset.v1, form %s, lane %s)", role,
             id ? id : "unnamed", jv_get_str(side, "form") ? jv_get_str(side, "form") : "None",
             jv_get_str(side, "lane") ? jv_get_str(side, "lane") : "None");
    if (repo) {
        snprintf(uri, sizeof uri, "https://huggingface.co/datasets/%s/blob/%s/fidelity-dataset.json", repo, rev ? rev : "main");
        jv_set(s, "kind", jv_str("hf_file"));
    } else { /* unpublished: its own id, never a path on the measuring box */
        snprintf(uri, sizeof uri, "%s/fidelity-dataset.json", id ? id : "fidelity-dataset");
        strncat(note, " -- not published; the digest is the only pointer", sizeof note - strlen(note) - 1);
        jv_set(s, "kind", jv_str("filesystem_path"));
    }
    jv_set(s, "uri", jv_str(uri));
    jv_set(s, "sha256", cp(jv_get(side, "dataset_sha256")));
    jv_set(s, "note", jv_str(note));
    return s;
}

static jv *disclosure(const char *code, const char *severity, const char *detail)
{
    jv *d = jv_obj();
    jv_set(d, "code", jv_str(code));
    jv_set(d, "severity", jv_str(severity));
    jv_set(d, "affects_comparability", jv_bool(0));
    jv_set(d, "detail", jv_str(detail));
    return d;
}

static void self_sha(char hex[65])
{
    char path[4096];
    fd_err e;
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    hex[0] = 0;
    if (n > 0) { path[n] = 0; if (fd_sha256_file(path, hex, &e)) hex[0] = 0; }
}

/* SC-5: no blocking disclosure; SC-4: every required provenance field has a value */
static int check_submittable(const jv *ds, const jv *prov, fd_err *e)
{
    fd_buf blocking = {0};
    for (size_t i = 0; ds && ds->t == JV_ARR && i < ds->u.a.n; i++) {
        const char *sev = jv_get_str(ds->u.a.v[i], "severity"), *code = jv_get_str(ds->u.a.v[i], "code");
        if (sev && !strcmp(sev, "blocking")) fd_buf_printf(&blocking, "%s%s", blocking.n ? ", " : "", code ? code : "?");
    }
    if (blocking.n) {
        fd_fail(e, "not_a_measurement", "SC-5", "the comparison carries blocking disclosure(s) -- %s; the receipt stands "
                "as a result, it does not become a registry row", fd_buf_cstr(&blocking));
        fd_buf_free(&blocking);
        return -1;
    }
    static const char *const req[][7] = {{"artifact", "repository", "revision", "container", "codec", "scope", "producer"},
                                         {"panel", "panel_ref", "panel_token_sha256", NULL},
                                         {"reference", "reference_ref", "teacher_receipt_sha256", NULL}};
    fd_buf missing = {0};
    size_t nmiss = 0;
    for (size_t b = 0; b < 3; b++)
        for (size_t k = 1; k < 7 && req[b][k]; k++)
            if (!present(jv_get(jv_get(prov, req[b][0]), req[b][k]))) {
                fd_buf_printf(&missing, "%s%s.%s", nmiss ? ", " : "", req[b][0], req[b][k]);
                nmiss++;
            }
    if (nmiss) {
        fd_fail(e, "missing_provenance", "SC-4", "%zu required field(s) have no value -- %s; pass --submission-provenance "
                "FILE (`fidelity provenance-template` writes the skeleton)", nmiss, fd_buf_cstr(&missing));
        fd_buf_free(&missing);
        return -1;
    }
    return 0;
}

/* the receipt's estimator (projected), its replay fields, the logits dtype spelled fp32/fp16/bf16/fp64 */
static jv *estimator_json(const jv *r)
{
    jv *est = project(jv_get(r, "estimator"), ESTIMATOR_FIELDS);
    const jv *cmp = jv_get(r, "comparator");
    if (jv_get(cmp, "replay_backend")) jv_set(est, "replay_backend", jv_copy(jv_get(cmp, "replay_backend")));
    if (jv_get(cmp, "replay_env")) jv_set(est, "replay_env", jv_copy(jv_get(cmp, "replay_env")));
    const char *fa = jv_get_str(jv_get(r, "reference"), "form"), *fb = jv_get_str(jv_get(r, "candidate"), "form");
    if ((fa && !strcmp(fa, "hidden")) || (fb && !strcmp(fb, "hidden"))) jv_set(est, "replay_applicable", jv_bool(1));
    else if (fa && fb && !strcmp(fa, "logit") && !strcmp(fb, "logit")) jv_set(est, "replay_applicable", jv_bool(0));
    const char *ld = jv_get_str(est, "logits_dtype");
    static const char *const fmt[][2] = {{"float32", "fp32"}, {"float64", "fp64"}, {"f32", "fp32"}, {"f16", "fp16"},
                                         {"float16", "fp16"}, {"bfloat16", "bf16"}};
    for (size_t i = 0; ld && i < 6; i++)
        if (!strcasecmp(ld, fmt[i][0])) { jv_set(est, "logits_dtype", jv_str(fmt[i][1])); break; }
    return est;
}

/* the lane's caveats and the receipt's disclosures (no_known_deviations when there is none) */
static jv *disclosures_json(const jv *ds, const char *lane)
{
    jv *dl = jv_arr();
    if (lane && !strcmp(lane, "streaming"))
        jv_push(dl, disclosure("streaming_lane_offset", "caveat", "measured on the streaming lane; its floor and "
                               "offset are lane properties (BIAS-006)"));
    else if (lane && (!strcmp(lane, "local-mps") || !strcmp(lane, "local-cuda-budget")))
        jv_push(dl, disclosure("local_device_reduction_order", "caveat", "measured on a local device lane whose "
                               "reduction order differs from the sealed lane (BIAS-006)"));
    if (lane && !strcmp(lane, "local-cuda-budget"))
        jv_push(dl, disclosure("memory_budget_schedule", "info", "captured under a device memory budget schedule"));
    for (size_t i = 0; ds && ds->t == JV_ARR && i < ds->u.a.n; i++) {
        const char *code = jv_get_str(ds->u.a.v[i], "code");
        if (!code || strcmp(code, "no_known_deviations")) jv_push(dl, jv_copy(ds->u.a.v[i]));
    }
    if (!dl->u.a.n) jv_push(dl, disclosure("no_known_deviations", "info", "every gate passed with no override."));
    return dl;
}

int fd_submission_build(const jv *r, const jv *prov, const char *measurer, jv **out, fd_err *e)
{
    *out = NULL;
    const char *kind = jv_get_str(r, "comparison_kind");
    if (!kind || strcmp(kind, "measurement"))
        return fd_fail(e, "not_a_measurement", "SC-3", "comparison_kind is %s. Only a measurement may become a registry "
                       "row; a reproduction confirmation or a run-to-run floor is a result, not a quantization row",
                       kind ? kind : "None");
    const jv *ds = jv_get(r, "disclosures");
    if (check_submittable(ds, prov, e)) return -1;
    jv *artifact = jv_copy(jv_get(prov, "artifact"));
    fd_buf sd = {0};
    fd_err se;
    if (fd_scope_digest(jv_get(artifact, "scope"), &sd, &se)) {
        jv_free(artifact);
        return fd_fail(e, "missing_provenance", "SC-4", "artifact.scope is not a scope block: %s", se.msg);
    }
    jv_set(artifact, "scope_digest", jv_strn(sd.p, sd.n));
    fd_buf_free(&sd);
    jv *s = jv_obj();
    jv_set(s, "schema", jv_str(FD_SUBMISSION_SCHEMA));
    jv_set(s, "receipt_sha256", jv_str(""));
    char exe[65];
    self_sha(exe);
    jv *pb = jv_obj();
    jv_set(pb, "repository", jv_str("fidelity (C toolkit)"));
    jv_set(pb, "revision", jv_null());
    jv_set(pb, "entrypoint", jv_str("fidelity compare"));
    jv_set(pb, "entrypoint_sha256", exe[0] ? jv_str(exe) : jv_null());
    jv_set(pb, "comparison_kind", jv_str(kind));
    jv_set(pb, "comparison_receipt_sha256", cp(jv_get(r, "receipt_sha256")));
    jv_set(s, "produced_by", pb);
    jv_set(s, "measured_at", cp(jv_get(r, "created_utc")));
    const char *lane = jv_get_str(jv_get(r, "candidate"), "lane");
    jv_set(s, "lane", lane ? jv_str(lane) : jv_null());
    jv *mb = present(jv_get(prov, "measurer")) ? jv_copy(jv_get(prov, "measurer")) : jv_obj();
    if (measurer) jv_set(mb, "handle", jv_str(measurer));
    jv_set(s, "measurer", mb);
    jv_set(s, "artifact", artifact);
    jv_set(s, "panel", jv_copy(jv_get(prov, "panel")));
    jv_set(s, "reference", jv_copy(jv_get(prov, "reference")));
    const jv *met = jv_get(r, "metric"), *kl = jv_get(r, "kl");
    jv *m = jv_obj();
    jv_set(m, "name", jv_str("mean_tokenwise_kld"));
    jv_set(m, "value", cp(jv_get(met, "value")));
    jv_set(m, "units", cp(jv_get(met, "units")));
    jv_set(m, "direction", cp(jv_get(met, "direction")));
    jv_set(s, "metric", m);
    jv *aux = jv_obj();
    jv_set(aux, "top1_agreement", cp(jv_get(r, "top1_agreement")));
    static const char *const am[][2] = {{"median_kld", "median"}, {"p95_kld", "p95"}, {"p99_kld", "p99"},
                                        {"p999_kld", "p99_9"}, {"max_kld", "max"}};
    for (size_t i = 0; i < 5; i++) jv_set(aux, am[i][0], cp(jv_get(kl, am[i][1])));
    jv_set(aux, "context_macro_mean_kld", cp(jv_get(r, "kl_macro_stratum_mean")));
    jv_set(s, "auxiliary_metrics", aux);
    jv *est = estimator_json(r);
    jv_set(s, "estimator", est);
    jv_set(s, "determinism", project(jv_get(r, "determinism"), DETERMINISM_FIELDS));
    jv_set(s, "measurement_scope", project(jv_get(r, "measurement_scope"), SCOPE_FIELDS));
    jv_set(s, "environment", cp(jv_get(prov, "environment")));
    jv_set(s, "cost", cp(jv_get(prov, "cost")));
    jv *ev = jv_arr();
    jv_push(ev, evidence(jv_get(r, "reference"), "reference"));
    jv_push(ev, evidence(jv_get(r, "candidate"), "candidate"));
    jv_set(s, "evidence", ev);
    jv *cb = jv_obj();
    jv_set(cb, "bias", cp(jv_get(jv_get(r, "comparability"), "bias")));
    jv_set(cb, "usable_as_floor", cp(jv_get(jv_get(r, "comparability"), "usable_as_floor")));
    jv_set(s, "comparability", cb);
    jv *dl = disclosures_json(ds, lane);
    jv_set(s, "disclosures", dl);
    fd_buf path = {0};
    fd_buf_puts(&path, "submission");
    const char *why = unsubmittable(s, &path);
    if (why) {
        fd_fail(e, "not_submittable", "SC-3", "%s at %s: a preview or teacher capture never becomes a registry row",
                why, fd_buf_cstr(&path));
        fd_buf_free(&path);
        jv_free(s);
        return -1;
    }
    fd_buf_free(&path);
    char seal[65];
    if (jv_seal(s, "receipt_sha256", seal, e)) { jv_free(s); return -1; }
    jv_set(s, "receipt_sha256", jv_str(seal));
    *out = s;
    return 0;
}
