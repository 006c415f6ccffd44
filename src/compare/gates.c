/* The gate ladder (COMPARE.md §3), in order, stopping at the first refusal. */
#include "gates.h"
#include "format/sha.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const jv JNULL = {.t = JV_NULL};
static const jv *nn(const jv *v) { return v ? v : &JNULL; }

static void gate(fd_gates *g, const char *name, int passed, const char *detail, const char *overridden_by)
{
    jv *o = jv_obj();
    jv_set(o, "passed", jv_bool(passed));
    jv_set(o, "detail", detail ? jv_str(detail) : jv_null());
    jv_set(o, "overridden_by", overridden_by ? jv_str(overridden_by) : jv_null());
    jv_set(g->gates, name, o);
}

static void disclose(fd_gates *g, const char *code, const char *severity, int affects, const char *detail)
{
    jv *d = jv_obj();
    jv_set(d, "code", jv_str(code));
    jv_set(d, "severity", jv_str(severity));
    jv_set(d, "affects_comparability", jv_bool(affects));
    jv_set(d, "detail", jv_str(detail));
    jv_push(g->disclosures, d);
}

/* The receipt's single bias block; a later finding (cross_stack) replaces an earlier one. */
static void set_bias(fd_gates *g, const char *kind, const char *detail)
{
    jv_free(g->bias);
    g->bias = jv_obj();
    jv_set(g->bias, "kind", jv_str(kind));
    jv_set(g->bias, "direction", jv_str("unknown"));
    jv_set(g->bias, "detail", jv_str(detail));
    jv_set(g->bias, "estimated_magnitude", jv_null());
    jv_set(g->bias, "floor_measurement_ref", jv_null());
}

static int refuse(fd_err *e, const char *gate_name, const char *code, const char *fmt, const char *a)
{
    return fd_fail(e, code, gate_name, fmt, a);
}

static const char *const TOKENIZER_KEYS[] = {"id", "repository", "revision", "vocab_size", "add_special_tokens",
                                             "chat_template_applied", NULL};

/* PANEL-D6: a null on either side is unknown, not different. */
static int tokenizers_differ(const jv *a, const jv *b)
{
    for (const char *const *k = TOKENIZER_KEYS; *k; k++) {
        const jv *x = jv_get(a, *k), *y = jv_get(b, *k);
        if (!x || !y || x->t == JV_NULL || y->t == JV_NULL) continue;
        if (!jv_equal(x, y)) return 1;
    }
    return 0;
}

static int weights_identity(const jv *m, const jv **rev, const jv **ckpt, const jv **scope)
{
    *rev = jv_get(jv_get(m, "weights"), "model_revision");
    *ckpt = jv_get(jv_get(m, "weights"), "checkpoint_identity_sha256");
    *scope = jv_get(jv_get(m, "scope"), "scope_digest");
    return *rev && *ckpt && *scope && (*rev)->t != JV_NULL && (*ckpt)->t != JV_NULL && (*scope)->t != JV_NULL;
}

/* HEAD-2 (logit vs logit) and HEAD-3 (mixed hidden <-> logit), as the
 * Python comparator's _head_gate: a logit side applied its own head inside
 * the capture, so a mixed pair is legal only when the head replayed onto
 * the hidden side is content-identical to the head that produced the
 * logits. */
static int head_gate_logit(const fd_side *ref, const fd_side *cand, fd_gates *g, fd_err *e)
{
    const char *da = ref->head_content, *db = cand->head_content;
    const fd_side *hs = !ref->logit ? ref : !cand->logit ? cand : NULL;
    const jv *ha = jv_get(jv_get(ref->manifest, "head"), "file_sha256"), *hb = jv_get(jv_get(cand->manifest, "head"), "file_sha256");
    if (hs && !hs->head_content)
        return refuse(e, "head", "head_mismatch", "HEAD-4: the %s is hidden-form with a null head content digest; there is no override",
                      hs == ref ? "reference" : "candidate");
    if (hs && ha && hb && ha->t == JV_STR && jv_equal(ha, hb) && (!da || !db || strcmp(da, db)))
        return refuse(e, "head", "head_mismatch", "%s", "HEAD-IDENT/O-6: equal head file digests but different tensor content");
    g->heads_equal = 1;     /* HEAD-1c concerns hidden form only */
    g->head_policy = "native_head";
    g->head_ref = da;
    g->head_cand = db;
    if (!hs) {
        if (da && db) {
            gate(g, "head", 1, strcmp(da, db) ? "HEAD-2: both sides are logit form; each applied its own head, so head error is inside the measurement (heads differ, correctly)"
                                              : "HEAD-2: both sides are logit form; each applied its own head, so head error is inside the measurement (heads are identical)", NULL);
        } else {
            g->advisory = 1;
            disclose(g, "estimator_unknown", "caveat", 1, "a logit-form capture did not record its head identity; the comparison is advisory (HEAD-2)");
            gate(g, "head", 1, "HEAD-2: both sides are logit form; each applied its own head, so head error is inside the measurement (at least one head digest is unrecorded)", NULL);
        }
        return 0;
    }
    if (!da || !db || strcmp(da, db)) {
        char m[256];
        snprintf(m, sizeof m, "HEAD-3: a hidden<->logit comparison needs the replay head to equal the head that produced the logits (%.12s vs %.12s)",
                 da ? da : "null", db ? db : "null");
        return refuse(e, "head", "head_mismatch", "%s", m);
    }
    char d[256];
    snprintf(d, sizeof d, "HEAD-3: the hidden side was replayed through the same head (%.12s) that produced the logit side.", da);
    disclose(g, "no_known_deviations", "info", 0, d);
    gate(g, "head", 1, "HEAD-3: mixed form, identical head content digest", NULL);
    return 0;
}

/* 3. panel: suite token hash, scoring window, tokenizer, per-context digests; the shared contexts */
static int gate_panel(const fd_side *ref, const fd_side *cand, const fd_gate_opts *o, fd_gates *g, fd_err *e)
{
    (void)o;
    const jv *rm = ref->manifest, *cm = cand->manifest;
    char msg[512];
    /* 3. panel */
    const jv *rp = jv_get(rm, "panel"), *cp = jv_get(cm, "panel");
    if (!jv_equal(nn(jv_get(rp, "suite_token_hash_sha256")), nn(jv_get(cp, "suite_token_hash_sha256"))) ||
        !jv_equal(nn(jv_get(rp, "scoring_window")), nn(jv_get(cp, "scoring_window"))))
        return refuse(e, "panel", "panel_mismatch", "%s", "the two datasets were captured on different panels (suite token hash or scoring window differ; PANEL-D3, no override)");
    g->tokenizer_equal = !tokenizers_differ(jv_get(rp, "tokenizer"), jv_get(cp, "tokenizer"));
    if (!g->tokenizer_equal)
        return refuse(e, "panel", "panel_mismatch", "%s", "tokenizer identities differ (PANEL-D6)");
    g->shared = fd_xmalloc((ref->n + 1) * sizeof *g->shared);
    for (size_t i = 0; i < ref->n; i++) {
        const fd_ctx *a = &ref->ctx[i], *b = fd_side_find(cand, a->index);
        if (!b) continue;
        const jv *ta = jv_get(a->rec, "token_ids_json_sha256"), *tb = jv_get(b->rec, "token_ids_json_sha256");
        const jv *ma = jv_get(a->rec, "attention_mask_sha256"), *mb = jv_get(b->rec, "attention_mask_sha256");
        if (!jv_equal(nn(ta), nn(tb)) || a->rows != b->rows ||
            (ma && mb && ma->t != JV_NULL && mb->t != JV_NULL && !jv_equal(ma, mb))) {
            snprintf(msg, sizeof msg, "context %lld differs between the sides (token digest, mask digest or scored rows)",
                     (long long)a->index);
            return refuse(e, "panel", "panel_mismatch", "%s", msg);
        }
        g->shared[g->nshared++] = a->index;
    }
    if (!g->nshared) return refuse(e, "panel", "empty_intersection", "%s", "the two datasets share no context");
    gate(g, "panel", 1, "same suite token hash, scoring window, tokenizer and per-record digests", NULL);

    return 0;
}

/* 4. head */
static int gate_head(const fd_side *ref, const fd_side *cand, const fd_gate_opts *o, fd_gates *g, fd_err *e)
{
    const jv *rm = ref->manifest, *cm = cand->manifest;
    /* 4. head */
    const jv *rh = jv_get(rm, "head"), *ch = jv_get(cm, "head");
    const char *rc_ = ref->head_content, *cc = cand->head_content;
    if (ref->logit || cand->logit) {
        if (head_gate_logit(ref, cand, g, e)) return -1;
    } else {
        if (!rc_ || !cc)
            return refuse(e, "head", "head_mismatch", "%s", "a hidden-form side has a null head content digest (HEAD-4; no override)");
        const char *rf = jv_get_str(rh, "file_sha256"), *cf = jv_get_str(ch, "file_sha256");
        if (rf && cf && !strcmp(rf, cf) && strcmp(rc_, cc))
            return refuse(e, "head", "head_mismatch", "%s", "equal head file digests but different content digests (O-6)");
        g->head_ref = rc_;
        g->head_cand = cc;
        if (o->own_heads) {
            /* HEAD-1d first, as the Python tool orders it: the same procedure whether or not the heads are equal */
            g->head_policy = "native_head";
            g->heads_equal = !strcmp(rc_, cc);
            disclose(g, "native_head_replay", "info", 0, g->heads_equal
                     ? "each side is replayed through its own head (--own-heads, HEAD-1d); the heads are content-identical"
                     : "each side is replayed through its own head (--own-heads, HEAD-1d); the heads differ in content");
            gate(g, "head", 1, g->heads_equal ? "HEAD-1d: own heads on both sides (content-identical)"
                                              : "heads differ; each side replayed through its own head", "--own-heads");
        } else if (!strcmp(rc_, cc)) {
            g->head_policy = "shared_reference_head";
            g->heads_equal = 1;
            disclose(g, "shared_reference_head", "info", 0, "both captures ship the same head (equal tensor content digests); it is applied to both sides");
            gate(g, "head", 1, "equal head content digests (HEAD-1a)", NULL);
        } else if (o->disclose_head_substitution) {
            g->head_policy = "shared_reference_head";
            g->head_substituted = 1;
            g->advisory = 1;
            set_bias(g, "other", "one head was substituted for both sides (HEAD-1b): the number mixes the weights' divergence with the head difference");
            disclose(g, "head_substituted", "blocking", 1, "the heads differ and one head was substituted for both sides (HEAD-1b)");
            gate(g, "head", 1, "heads differ; one head substituted for both sides", "--disclose-head-substitution");
        } else
            return refuse(e, "head", "head_mismatch", "%s",
                          "the two datasets ship different heads (HEAD-1b); pass --own-heads or --disclose-head-substitution --head PATH");
    }

    return 0;
}

/* 5. lane, 6. stack */
static int gate_lane_stack(const fd_side *ref, const fd_side *cand, const fd_gate_opts *o, fd_gates *g, fd_err *e)
{
    const jv *rm = ref->manifest, *cm = cand->manifest;
    char msg[512];
    /* 5. lane */
    g->same_lane = ref->lane && cand->lane && !strcmp(ref->lane, cand->lane);
    if (!g->same_lane) {
        if (!o->allow_cross_lane) {
            snprintf(msg, sizeof msg, "lanes differ (%s vs %s); pass --allow-cross-lane for an advisory receipt",
                     ref->lane ? ref->lane : "null", cand->lane ? cand->lane : "null");
            return refuse(e, "lane", "lane_mismatch", "%s", msg);
        }
        g->advisory = 1;
        g->floor_ok = 0;
        disclose(g, "cross_engine_capture", "caveat", 1, "the two captures come from different lanes (BIAS-006: never a floor)");
        gate(g, "lane", 0, "lanes differ", "--allow-cross-lane");
    } else gate(g, "lane", 1, "same lane", NULL);

    /* 6. stack */
    const jv *rr = jv_get(rm, "runtime"), *cr = jv_get(cm, "runtime");
    const jv *rl = jv_get(rr, "lane_identity_sha256"), *cl = jv_get(cr, "lane_identity_sha256");
    const jv *rs = jv_get(rr, "stack_fingerprint_sha256"), *cs = jv_get(cr, "stack_fingerprint_sha256");
    int same_seal = ref->dataset_sha256 && cand->dataset_sha256 && !strcmp(ref->dataset_sha256, cand->dataset_sha256);
    int same_stack = same_seal || (rl && cl && rs && cs && rl->t == JV_STR && rs->t == JV_STR && jv_equal(rl, cl) && jv_equal(rs, cs));
    g->stack_relation = same_stack ? "same_stack" : "cross_stack";
    if (!same_stack) {
        g->advisory = 1;
        g->floor_ok = 0;
        set_bias(g, "cross_stack_capture_replay", "the two captures come from different stacks (lane identity or stack fingerprint differ): part of the divergence may be the stack, not the weights");
        disclose(g, "cross_stack_capture", "caveat", 1, "lane identity or stack fingerprint differ: part of the number may be the stack, not the weights");
        gate(g, "stack", 0, "cross_stack", "advisory");
    } else gate(g, "stack", 1, "same lane identity and stack fingerprint", NULL);

    return 0;
}

/* 7. geometry, 8. coverage */
static int gate_geometry_coverage(const fd_side *ref, const fd_side *cand, const fd_gate_opts *o, fd_gates *g, fd_err *e)
{
    char msg[512];
    /* 7. geometry */
    if (ref->vocab != cand->vocab || (!ref->logit && !cand->logit && ref->hidden != cand->hidden)) {
        snprintf(msg, sizeof msg, "vocab %lld/%lld, hidden %lld/%lld", (long long)ref->vocab, (long long)cand->vocab,
                 (long long)ref->hidden, (long long)cand->hidden);
        return refuse(e, "geometry", "geometry_mismatch", "%s", msg);
    }
    gate(g, "geometry", 1, "same vocab and hidden width", NULL);

    /* 8. coverage */
    g->covers_full = ref->complete && cand->complete && ref->n == cand->n && g->nshared == ref->n;
    if (!g->covers_full) {
        if (!o->allow_partial)
            return refuse(e, "coverage", "coverage_mismatch", "%s",
                          "the sides do not both cover the full panel with equal index sets; pass --allow-partial to compare the shared contexts");
        disclose(g, "subset_of_panel", "caveat", 1, "only the shared contexts were compared (SCOPE-010)");
        gate(g, "coverage", 0, "subset of the panel", "--allow-partial");
    } else gate(g, "coverage", 1, "both complete, equal index sets", NULL);

    return 0;
}

/* 9. lossy, 9b decode */
static int gate_lossy_decode(const fd_side *ref, const fd_side *cand, const fd_gate_opts *o, fd_gates *g, fd_err *e)
{
    (void)e;
    const jv *rm = ref->manifest, *cm = cand->manifest;
    /* 9. lossy, 9b decode */
    const jv *rlc = jv_get(jv_get(rm, "capture"), "lossy_codec"), *clc = jv_get(jv_get(cm, "capture"), "lossy_codec");
    int lossy = 0;
    if ((rlc && rlc->t != JV_NULL) || (clc && clc->t != JV_NULL)) {
        lossy = 1;
        g->advisory = 1;
        g->floor_ok = 0;
        disclose(g, "lossy_capture_codec", "caveat", 1, "a side was captured through a lossy codec");
    }
    const jv *rdl = jv_get(jv_get(rm, "capture"), "dtype_lossless"), *cdl = jv_get(jv_get(cm, "capture"), "dtype_lossless");
    if ((rdl && rdl->t == JV_BOOL && !rdl->u.b) || (cdl && cdl->t == JV_BOOL && !cdl->u.b)) {
        lossy = 1;
        g->advisory = 1;
        g->floor_ok = 0;
        disclose(g, "quantized_capture_dtype", "caveat", 1, "a side's capture dtype is not lossless");
    }
    gate(g, "lossy", !lossy, lossy ? "lossy capture" : "lossless captures", lossy ? "advisory" : NULL);
    const char *codec = jv_get_str(jv_get(cm, "weights"), "codec");
    int reconstructed = !o->self_compare && codec && !strncmp(codec, "exl3-trellis", 12);
    if (reconstructed) {
        g->advisory = 1;
        disclose(g, "weights_reconstructed", "caveat", 1, "the candidate's weights were decoded (exl3-trellis) before capture");
    }
    /* 9b. decode: recorded in the receipt as the Python tool records it (the current schema admits it);
     * never a refusal, a reconstruction only makes the receipt advisory */
    if (o->self_compare)
        gate(g, "decode", 1, "self-compare: both sides are the same artifact; the weights-decode caveats apply to a "
                             "measurement against a reference, not to SC-1", NULL);
    else
        gate(g, "decode", 1, reconstructed ? "weights decode: the candidate's weights were reconstructed (exl3-trellis) before capture; advisory"
                                           : "no weights decode declared (weights.codec) on the candidate", NULL);

    return 0;
}

/* 10. classify */
static int gate_classify(const fd_side *ref, const fd_side *cand, const fd_gate_opts *o, fd_gates *g, fd_err *e)
{
    const jv *rm = ref->manifest, *cm = cand->manifest;
    /* 10. classify */
    g->digest_equal = ref->capture_content_digest && cand->capture_content_digest &&
                      !strcmp(ref->capture_content_digest, cand->capture_content_digest);
    const jv *r1, *r2, *r3, *c1, *c2, *c3;
    int rw = weights_identity(rm, &r1, &r2, &r3), cw = weights_identity(cm, &c1, &c2, &c3);
    g->weights_equal = rw && cw && jv_equal(r1, c1) && jv_equal(r2, c2) && jv_equal(r3, c3);
    if (g->digest_equal && !g->heads_equal) {
        if (!o->own_heads)
            return refuse(e, "classify", "head_substitution_vacuous", "%s",
                          "equal capture content with different heads measures only the head (HEAD-1c); pass --own-heads to measure that");
        g->kind = "measurement";
        disclose(g, "head_only_difference", "info", 0, "the captures are identical; the number measures the head difference only");
    } else if (g->digest_equal) g->kind = "reproduction_confirmation";
    else if (g->weights_equal) g->kind = "run_to_run_floor";
    else g->kind = "measurement";
    if (o->self_compare && strcmp(g->kind, "reproduction_confirmation"))
        return refuse(e, "classify", "not_a_self_compare", "%s",
                      "--self-compare needs equal capture_content_digest on both sides (SC-1)");
    if (!g->disclosures->u.a.n)
        disclose(g, "no_known_deviations", "info", 0, "no gate raised a finding");
    return 0;
}

int fd_gates_run(const fd_side *ref, const fd_side *cand, const fd_gate_opts *o, fd_gates *g, fd_err *e)
{
    memset(g, 0, sizeof *g);
    g->gates = jv_obj();
    g->disclosures = jv_arr();
    g->floor_ok = 1;
    const jv *rm = ref->manifest, *cm = cand->manifest;
    char msg[512];

    /* 1. seal: both sides were verified when opened */
    gate(g, "seal", 1, o->verify_tensors ? "both datasets verify (tensors recomputed)" : "both datasets verify (tensors not recomputed)", NULL);

    /* 2. form: mixed forms are allowed (the Python comparator's default
     * allow_mixed_form); the head gate decides whether they can be scored */
    int known_r = ref->form && (!strcmp(ref->form, "hidden") || ref->logit);
    int known_c = cand->form && (!strcmp(cand->form, "hidden") || cand->logit);
    if (!known_r || !known_c)
        return refuse(e, "form", "unsupported_form", "capture.form %s is neither hidden nor logit",
                      !known_r ? (ref->form ? ref->form : "null") : (cand->form ? cand->form : "null"));
    snprintf(msg, sizeof msg, "%s vs %s", ref->form, cand->form);
    gate(g, "form", 1, msg, NULL);
    /* 2b. provenance */
    int preview = jv_get(rm, "preview") || jv_get(cm, "preview") || py_true(jv_get(rm, "not_submittable")) ||
                  py_true(jv_get(cm, "not_submittable"));
    if (preview) {
        g->advisory = 1;
        g->floor_ok = 0;
        disclose(g, "preview_capture", "blocking", 1, "a preview capture (or one marked not_submittable) is on one side");
    }
    if (gate_panel(ref, cand, o, g, e) ||
        gate_head(ref, cand, o, g, e) ||
        gate_lane_stack(ref, cand, o, g, e) ||
        gate_geometry_coverage(ref, cand, o, g, e) ||
        gate_lossy_decode(ref, cand, o, g, e) ||
        gate_classify(ref, cand, o, g, e))
        return -1;
    return 0;
}

void fd_gates_free(fd_gates *g)
{
    jv_free(g->gates);
    jv_free(g->disclosures);
    jv_free(g->bias);
    free(g->shared);
    memset(g, 0, sizeof *g);
}
