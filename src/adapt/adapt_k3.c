/* adapt --source k3v1 | k3v0-window: a kimi-k3 distribution-fidelity
 * artifact (or the compat/ view of a v1 dataset) into a sealed dataset, as
 * the Python tool's dsadapt.adapt_k3 + _emit_k3_dataset do: role derived
 * (root refused, ROOT-1/D-1), head quantization unknown (null), lane
 * inferred, weights.quantized read from checkpoint.tensor_format, every
 * synthesized field named in interop.adapted_from.inferred_fields.  The
 * payload is re-encoded bit for bit (content digests equal the source's);
 * every digest the artifact declares is checked against the bytes first. */
#include "adapt.h"
#include "k3.h"
#include "k3_artifact.h"
#include "compare/side.h"
#include "format/digest.h"
#include "format/safetensors.h"
#include "format/sha.h"
#include "format/writer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int hex_revision(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n < 7 || n > 64) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* dsadapt.QUANTIZED_FORMAT_TOKENS, matched in the lower-cased tensor_format */
static int format_says_quantized(const char *fmt)
{
    static const char *const tok[] = {"mxfp4", "nvfp4", "fp8", "int8", "int4", "awq", "gptq", "exl3", "exl2", "gguf",
                                      "q4", "q5", "q6", "q8", "bnb", NULL};
    char low[512];
    size_t n = 0;
    for (; fmt && fmt[n] && n + 1 < sizeof low; n++) low[n] = (char)(fmt[n] >= 'A' && fmt[n] <= 'Z' ? fmt[n] + 32 : fmt[n]);
    low[n] = 0;
    for (const char *const *t = tok; *t; t++)
        if (strstr(low, *t)) return 1;
    return 0;
}

/* _k3_tokenizer; a suite that already carries a v1 tokenizer block (the
 * compat/ view of a v1 dataset: `id`, no `class`) keeps it verbatim. */
static jv *tokenizer_block(const fd_k3_artifact *a, const char *override_id, int64_t vocab, jv *inferred)
{
    const jv *b = jv_get(a->suite, "tokenizer");
    const jv *ck = a->checkpoint;
    if (b && b->t == JV_OBJ && jv_get_str(b, "id") && !jv_get(b, "class") && !override_id) return jv_copy(b);
    const char *id = override_id ? override_id : b ? jv_get_str(b, "class") : NULL;
    if (!id && b) id = jv_get_str(b, "id");
    if (!id) id = jv_get_str(ck, "repository");
    if (!b || b->t != JV_OBJ)
        jv_push(inferred, jv_str("panel.tokenizer (the source names none; id from checkpoint.repository, vocab_size from the head)"));
    jv *t = jv_obj();
    jv_set(t, "id", jv_str(id ? id : "unknown"));
    const char *repo = jv_get_str(ck, "repository");
    jv_set(t, "repository", repo ? jv_str(repo) : jv_null());
    const char *rev = b ? jv_get_str(b, "checkpoint_revision") : NULL;
    if (!rev) rev = jv_get_str(ck, "revision");
    jv_set(t, "revision", rev ? jv_str(rev) : jv_null());
    jv_set(t, "vocab_size", jv_int(vocab));
    jv_set(t, "add_special_tokens", jv_null());
    const jv *gp = jv_get(jv_get(a->suite, "chat_rendering"), "add_generation_prompt");
    jv_set(t, "chat_template_applied", gp && gp->t == JV_BOOL && !gp->u.b ? jv_bool(0) : jv_null());
    const jv *files = b ? jv_get(b, "files") : NULL;
    jv_set(t, "source_files", files ? jv_copy(files) : jv_null());
    return t;
}

/* determinism from validation/artifact-validation.json.sentinel_repeat_mean_kld */
static jv *determinism_block(const fd_k3_artifact *a)
{
    const jv *rep = jv_get(a->validation, "sentinel_repeat_mean_kld");
    size_t n = rep && rep->t == JV_OBJ ? rep->u.o.n : 0;
    double lo = 0, hi = 0;
    jv *d = jv_obj(), *repeats = jv_arr(), *names = jv_arr();
    for (size_t i = 0; i < n; i++) {
        const jv *v = rep->u.o.m[i].v;
        double x = v->t == JV_FLOAT ? v->u.f : v->t == JV_INT ? (double)v->u.i : 0;
        if (!i || x < lo) lo = x;
        if (!i || x > hi) hi = x;
        /* dsadapt writes {name, dir: null, capture_content_digest: null} here, which the
         * dataset schema refuses (both must be strings): the repeats' tensors are not in
         * this dataset, so the list stays empty and the names go into the note */
        jv_push(names, jv_str(rep->u.o.m[i].k));
    }
    jv_set(d, "run_count", jv_int(n ? 3 : 1));
    jv_set(d, "cold_start_per_run", jv_null());
    jv_set(d, "evidence_kind", jv_str(a->logit ? "logits_tensor_sha256" : "hidden_state_tensor_sha256"));
    jv_set(d, "identical_across_runs", n ? jv_bool(0) : jv_null());
    jv_set(d, "repeats", repeats);
    if (n) {
        jv *rn = jv_obj();
        jv_set(rn, "kl_canonical_to_repeat_mean", jv_float(hi));
        jv_set(rn, "kl_repeat_to_canonical_mean", jv_float(lo));
        jv_set(rn, "js_mean", jv_null());
        jv_set(rn, "interpretation", jv_str("Sentinel repeats of IDENTICAL weights on the same serving stack disagree at this "
                                            "magnitude; treat changes at or below it as runtime noise unless confirmed with "
                                            "repeated captures."));
        fd_buf nb = {0};
        fd_err de;
        jv_dump(names, &JV_CANON, &nb, &de);
        fd_buf_printf(&nb, " (sentinel repeat pairs of the source; their tensors are not in this dataset)");
        jv_set(rn, "source_repeat_pairs", jv_strn(nb.p, nb.n));
        fd_buf_free(&nb);
        jv_set(d, "repeat_noise", rn);
    } else jv_set(d, "repeat_noise", jv_null());
    jv_free(names);
    jv_set(d, "note", jv_str("imported from validation/artifact-validation.json.sentinel_repeat_mean_kld when present. The "
                             "evidence hash is this dataset's capture_content_digest, recomputed by the adapter from the "
                             "tensor bytes (the source's per-file digests are container hashes)."));
    return d;
}

static jv *disclosure(const char *code, const char *severity, int affects, const char *detail)
{
    jv *d = jv_obj();
    jv_set(d, "code", jv_str(code));
    jv_set(d, "severity", jv_str(severity));
    jv_set(d, "affects_comparability", jv_bool(affects));
    jv_set(d, "detail", jv_str(detail));
    return d;
}

static int add_windows(fd_dsw *w, const fd_k3_artifact *a, size_t n, fd_err *e)
{
    int rc = 0;
    int64_t width = a->logit ? a->vocab : a->hidden;
    for (size_t i = 0; i < n && !rc; i++) {
        const fd_k3_ctx *c = &a->k.ctx[i];
        const fd_k3_window *kw = &a->win[i];
        fd_map m = {0};
        rc = a->logit ? fd_map_tensor(kw->tensor_path, "logits", kw->dtype, kw->rows, width, &m, e)
                      : fd_map_hidden(kw->tensor_path, "hidden_states", kw->rows, width, &m, e);
        if (rc) break;
        char wid[32];
        snprintf(wid, sizeof wid, "context-%04zu", i);
        fd_ds_window win = {.ids = kw->ids, .n_ids = kw->n_ids, .window_id = c->window_id ? c->window_id : wid,
                            .role = "final", .domain = c->domain, .document_id = c->document_id,
                            .scored_rows = (size_t)kw->rows, .allocation_stratum = c->allocation_stratum,
                            .semantic_class = c->semantic_class, .source_cluster_id = c->source_cluster_id,
                            .partition = c->partition, .sentinel = c->sentinel};
        size_t count = (size_t)kw->rows * (size_t)width;
        if (!a->logit) {
            uint16_t *h = fd_xmalloc(count * 2);
            memcpy(h, m.data, count * 2);
            rc = fd_dsw_add_window(w, &win, h, e);
            free(h);
        } else {
            float *f = fd_xmalloc(count * 4);
            if (!strcmp(kw->dtype, "F32")) memcpy(f, m.data, count * 4);
            else for (size_t j = 0; j < count; j++) { /* BF16 -> F32 is exact */
                uint32_t bits = (uint32_t)(m.data[2 * j] | m.data[2 * j + 1] << 8) << 16;
                memcpy(&f[j], &bits, 4);
            }
            rc = fd_dsw_add_window_logits(w, &win, f, e);
            free(f);
        }
        fd_unmap(&m);
    }
    return rc;
}

/* the fields the translation infers (sorted by adapted_from_json after the tokenizer adds its own); the
 * panel id (--panel-id, the suite's, else named after the suite token hash into pid) */
static jv *inferred_fields(const fd_k3_artifact *a, const fd_adapt_opts *o, const char *fmt, const char **panel_id,
                           char pid[96])
{
    jv *inferred = jv_arr();
    if (!a->k.semantic_point) jv_push(inferred, jv_str("capture.semantic_point"));
    static const char *const common[] = {
        "head.quantized", "head.source",
        "panel.records[].attention_mask_sha256 (all-ones: the source has no mask field, his single-request path makes "
        "the mask invariant, D-9)",
        "runtime.lane", NULL};
    for (const char *const *s = common; *s; s++) jv_push(inferred, jv_str(*s));
    char qnote[600];
    snprintf(qnote, sizeof qnote, "weights.quantized (read from checkpoint.tensor_format %s%.400s%s)", fmt ? "'" : "",
             fmt ? fmt : "None", fmt ? "'" : "");
    jv_push(inferred, jv_str(qnote));
    if (a->logit && a->logit_bf16) jv_push(inferred, jv_str("capture.dtype (F32: the source's BF16 logits widened exactly)"));
    *panel_id = o->panel_id ? o->panel_id : jv_get_str(a->suite, "x_malaiwah_panel_id");
    if (!*panel_id) {
        snprintf(pid, 96, "panel--kimi-k3.suite-%.16s", a->k.suite_hash);
        *panel_id = pid;
        jv_push(inferred, jv_str("panel.panel_id (the source has no panel id; named after its suite token hash)"));
    }
    return inferred;
}

/* adapted_from, its inferred_fields sorted(set(...)) */
static jv *adapted_from_json(const fd_k3_artifact *a, const char *source, jv *inferred)
{
    /* sorted(set(inferred)) */
    for (size_t i = 1; i < inferred->u.a.n; i++)
        for (size_t j = i; j > 0 && strcmp(inferred->u.a.v[j - 1]->u.s.p, inferred->u.a.v[j]->u.s.p) > 0; j--) {
            jv *t = inferred->u.a.v[j];
            inferred->u.a.v[j] = inferred->u.a.v[j - 1];
            inferred->u.a.v[j - 1] = t;
        }
    jv *from = jv_obj();
    jv_set(from, "source_format", jv_str(source));
    jv_set(from, "adapter", jv_str("fidelity adapt --source k3v1 (src/adapt/adapt_k3.c)"));
    jv_set(from, "inferred_fields", inferred);
    jv_set(from, "source_schema", jv_str("kimi-k3-distribution-fidelity/1"));
    jv_set(from, "suite_manifest_sha256", jv_str(a->suite_sha));
    jv_set(from, "tensor_manifest_sha256", jv_str(a->tensor_manifest_sha));
    jv_set(from, "tensor_manifest", jv_str(a->logit ? "ref/manifest.json" : "reference-hidden/manifest.json"));
    return from;
}

/* base_capture: the source has no dataset identity */
static jv *base_json(const fd_k3_artifact *a, const char *rev)
{
    char base_note[512];
    snprintf(base_note, sizeof base_note, "translated from a kimi-k3-distribution-fidelity/1 artifact, which predates this "
             "format and therefore has no dataset_sha256 of its own. Its manifest.json digest is %.16s and its suite token "
             "hash is %.16s.", a->top_sha[0] ? a->top_sha : "unavailable", a->k.suite_hash);
    jv *base = jv_obj();
    jv_set(base, "dataset_sha256", jv_null());
    jv_set(base, "capture_content_digest", jv_null());
    jv_set(base, "repository", jv_null());
    jv_set(base, "revision", rev ? jv_str(rev) : jv_null());
    jv_set(base, "note", jv_str(base_note));
    return base;
}

static jv *fingerprint_json(const fd_k3_artifact *a)
{
    jv *fp = jv_obj();
    jv_set(fp, "schema", jv_str("malaiwah.stack-fingerprint.v1"));
    jv_set(fp, "origin", jv_str("kimi-k3-capture-runtime"));
    const jv *raw = jv_get(a->runtime, "runtime");
    jv_set(fp, "raw", raw ? jv_copy(raw) : jv_null());
    return fp;
}

int fd_adapt_k3(const fd_adapt_opts *o, const char *source, char summary[512], fd_err *e)
{
    const char *role = o->role ? o->role : "derived";
    if (!strcmp(role, "root"))
        return fd_fail(e, "role_refused", "ROOT-1", "--role root is refused for a kimi-k3 translation: ROOT-1 requires "
                       "head.quantized false and weights.quantized false, and the source artifact records no head "
                       "quantization status at all (D-1). Use --role derived (the default), which carries the same numbers "
                       "without asserting something the source never said");
    fd_k3_artifact a;
    if (fd_k3_artifact_load(o->in, o->head, o->limit, &a, e)) return -1;
    size_t n = a.n_use;
    const char *fmt = jv_get_str(a.checkpoint, "tensor_format"), *panel_id;
    char pid[96];
    jv *inferred = inferred_fields(&a, o, fmt, &panel_id, pid);
    jv *tokz = tokenizer_block(&a, o->tokenizer_id, a.vocab, inferred);
    jv *from = adapted_from_json(&a, source, inferred);
    const char *rev = jv_get_str(a.checkpoint, "revision");
    jv *base = base_json(&a, rev), *fp = fingerprint_json(&a);
    jv *det = determinism_block(&a);
    jv *discl = jv_arr();
    jv_push(discl, disclosure("head_identity_inferred_from_reference_artifact", "caveat", 1,
                              "kimi-k3 records ONE artifact-level lm_head and no per-capture head identity; quantized is "
                              "null (unknown), so any comparison against a non-k3 candidate is advisory (D-1, spec 12.4.3)."));
    char subset[160];
    if ((int64_t)n < a.k.declared) {
        snprintf(subset, sizeof subset, "%zu of %lld declared contexts are in this dataset", n, (long long)a.k.declared);
        jv_push(discl, disclosure("subset_of_panel", "caveat", 1, subset));
    }
    char name[256];
    snprintf(name, sizeof name, "kimi-k3 distribution-fidelity token suite (%zu of %lld contexts)", n, (long long)a.k.declared);
    const char *repo = jv_get_str(a.checkpoint, "repository");

    fd_ds_identity id = {0};
    id.dataset_id = o->dataset_id ? o->dataset_id : "fidelity--adapted.kimi-k3";
    id.dataset_name = o->name ? o->name : "adapted kimi-k3 capture";
    id.role = role;
    id.lane = o->lane ? o->lane : "other";
    id.lane_inferred = 1;
    id.run_name = a.k.run_name ? a.k.run_name : "kimi-k3 reference";
    id.created_utc = o->created_utc;
    id.author = "adapted from kimi-k3";
    id.license = "other";
    id.weights_repository = o->weights_repository ? o->weights_repository : repo ? repo : "unknown";
    id.weights_revision = rev && hex_revision(rev) ? rev : NULL;
    id.weights_quantized = format_says_quantized(fmt) ? 1 : -1;
    id.panel_id = panel_id;
    id.panel_name = name;
    id.tokenizer = tokz;
    id.stack_fingerprint = fp;
    id.engine = "fidelity adapt --source k3v1";
    id.extra_disclosures = discl;
    id.determinism = det;
    id.declared_records = a.k.declared;
    id.subset_detail = (int64_t)n < a.k.declared ? subset : NULL;
    id.hidden = a.logit ? (a.head ? a.hidden : 0) : a.hidden;
    id.vocab = a.vocab;
    id.context_length = a.k.context_length;
    id.force = o->force;
    id.head_unknown = 1;
    id.emit_k3_compat = o->emit_k3_compat;
    id.base_capture = base;
    id.adapted_from = from;
    id.interop_note = "translated from a kimi-k3 artifact; every inferred field forces comparability.class = advisory at compare time.";
    id.runtime_source = "kimi-k3-capture-runtime";
    id.mechanism = a.logit ? "kimi-k3 live logits (vLLM serving hook), re-encoded F32 by fidelity adapt"
                           : "kimi-k3 vLLM hook after the final RMSNorm, before lm_head; BF16 payload copied bit for bit by fidelity adapt";
    id.card_note = "Translated from a kimi-k3 distribution-fidelity artifact by `fidelity adapt --source k3v1`.";
    if (a.logit) {
        id.form = "logit";
        id.semantic_point = a.k.semantic_point ? a.k.semantic_point : "lm_head_output_before_sampling";
        id.head_not_separable_reason = "kimi-k3 live logits: the head was applied inside the serving runtime";
    }
    int rc = 0;
    fd_dsw *w = fd_dsw_begin(o->out, &id, e);
    if (!w) rc = -1;
    if (!rc && a.head) rc = fd_dsw_set_head(w, a.head, e);
    if (!rc) rc = add_windows(w, &a, n, e);
    if (w) {
        if (rc) fd_dsw_abort(w);
        else rc = fd_dsw_finish(w, NULL, e);
    }
    if (!rc)
        snprintf(summary, 512, "%s form, %zu of %lld contexts x %lld rows, vocab %lld, hidden %lld, head %s", a.logit ? "logit" : "hidden",
                 n, (long long)a.k.declared, (long long)(a.k.context_length - 1), (long long)a.vocab, (long long)a.hidden,
                 a.head ? "shipped" : "absent");
    jv_free(tokz); jv_free(from); jv_free(base); jv_free(fp); jv_free(det); jv_free(discl);
    fd_k3_artifact_free(&a);
    return rc;
}
