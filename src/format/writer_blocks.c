/* The manifest blocks, mirroring dsmanifest.py + hf_capture.py key for key
 * (writer_internal.h). */
#include "writer_internal.h"
#include "digest.h"
#include "sha.h"
#include "version.h"
#include "../util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const DIVERGENCES[][3] = {
    {"D-1", "head", "every capture declares its OWN head identity by tensor content digest; the comparator refuses a hidden-form comparison across differing heads."},
    {"D-2", "runtime.lane", "lane is required and gated at compare time so registry BIAS-006 is checked before a number exists, not at submission."},
    {"D-3", "panel.scoring_window", "scoring_window is part of panel identity, not a comparator flag: a score_from=1024 number is a different panel, not a variant."},
    {"D-4", "comparison_kind", "self-compare is a first-class mode asserting exactly 0.0."},
    {"D-5", "estimator.accumulation_dtype", "required, fp64 default; an fp32 estimator lands in a different comparability class on the same data and that must be visible."},
    {"D-6", "coverage", "declared vs present record counts with shard_of; fixes our own manifest that claimed 5,120 captures in a 512-file repository."},
    {"D-7", "panel", "the panel is a separately referenceable object, which is what makes a candidate capture publishable standalone."},
    {"D-8", "capture.lossy_codec", "lets a llama.cpp .kld be ingested without laundering a lossy capture as exact."},
    {"D-9", "capture.records[].attention_mask_sha256", "our packed and streaming lanes vary mask construction; a single-request capture path makes it invariant and has no equivalent field."},
    {"D-10", "capture.head_separable", "hidden form is the default; logit form must declare head_separable:false with a reason."},
};

static jv *disclosure(const char *code, const char *severity, int affects, const char *detail)
{
    jv *d = jv_obj();
    jv_set(d, "code", jv_str(code));
    jv_set(d, "severity", jv_str(severity));
    jv_set(d, "affects_comparability", jv_bool(affects));
    jv_set(d, "detail", jv_str(detail));
    return d;
}

static const char SCORING_POLICY[] = "every causal prediction position of every window is scored; nothing is dropped";

int64_t fd_dsw_total_rows(const fd_dsw *w)
{
    int64_t t = 0;
    for (size_t i = 0; i < w->cap_records->u.a.n; i++) t += jv_get(w->cap_records->u.a.v[i], "scored_rows")->u.i;
    return t;
}

const char *fd_dsw_panel_id(const fd_dsw *w) { return w->id.panel_id ? w->id.panel_id : "panel--fidelity.synthetic"; }

static jv *scoring_window(const fd_dsw *w)
{
    if (w->id.scoring_window) return jv_copy(w->id.scoring_window);
    jv *s = jv_obj();
    jv_set(s, "score_from", jv_int(0));
    jv_set(s, "windowed", jv_bool(0));
    jv_set(s, "min_left_context_tokens", jv_int(1));
    jv_set(s, "dropped_positions_total", jv_int(0));
    jv_set(s, "policy", jv_str(SCORING_POLICY));
    return s;
}

static jv *tokenizer_block(const fd_dsw *w)
{
    if (w->id.tokenizer) return jv_copy(w->id.tokenizer);
    const char *repo = w->id.weights_repository;
    jv *t = jv_obj();
    jv_set(t, "id", str_or_null(repo));
    jv_set(t, "repository", str_or_null(repo));
    jv_set(t, "revision", jv_null());
    jv_set(t, "vocab_size", jv_int(w->id.vocab));
    jv_set(t, "add_special_tokens", jv_bool(0));
    jv_set(t, "chat_template_applied", jv_bool(0));
    return t;
}

static jv *contamination(void)
{
    jv *c = jv_obj();
    jv_set(c, "checked", jv_bool(0));
    jv_set(c, "method", jv_str("not established"));
    jv_set(c, "hits", jv_null());
    jv_set(c, "receipt", jv_null());
    return c;
}

static void suite_hashes(const fd_dsw *w, char suite[65], char legacy[65])
{
    size_t n = w->panel_records->u.a.n;
    char **per = fd_xmalloc((n + 1) * sizeof *per);
    for (size_t i = 0; i < n; i++) per[i] = (char *)jv_get_str(w->panel_records->u.a.v[i], "token_ids_json_sha256");
    fd_suite_token_hash(per, n, 0, suite);
    fd_suite_token_hash(per, n, 1, legacy);
    free(per);
}

/* A shard: its [base, base+n) of the declared panel; the missing sample
 * lists the first 8 indices outside it. */
static jv *shard_coverage(const fd_dsw *w)
{
    int64_t n = (int64_t)w->cap_records->u.a.n, base = w->id.index_base, declared = w->id.declared_records;
    jv *c = jv_obj(), *range = jv_arr(), *missing = jv_arr();
    jv_push(range, jv_int(base));
    jv_push(range, jv_int(base + n - 1));
    for (int64_t i = 0, k = 0; i < declared && k < 8; i++)
        if (i < base || i >= base + n) { jv_push(missing, jv_int(i)); k++; }
    jv_set(c, "declared_records", jv_int(declared));
    jv_set(c, "present_records", jv_int(n));
    jv_set(c, "complete", jv_bool(base == 0 && n == declared));
    jv_set(c, "index_range", range);
    jv_set(c, "shard_of", jv_copy(w->id.shard_of));
    jv_set(c, "subset_detail", str_or_null(w->id.subset_detail));
    jv_set(c, "missing_indices_sample", missing);
    return c;
}

jv *fd_dsw_coverage_block(const fd_dsw *w)
{
    if (w->id.shard_of) return shard_coverage(w);
    int64_t n = (int64_t)w->cap_records->u.a.n;
    int64_t declared = w->id.declared_records > 0 ? w->id.declared_records : n;
    int complete = declared == n;
    jv *c = jv_obj(), *range = jv_arr(), *missing = jv_arr();
    jv_push(range, jv_int(n ? 0 : 0));
    jv_push(range, jv_int(n - 1));
    for (int64_t i = n; !complete && i < declared && i < n + 8; i++) jv_push(missing, jv_int(i));
    jv_set(c, "declared_records", jv_int(declared));
    jv_set(c, "present_records", jv_int(n));
    jv_set(c, "complete", jv_bool(complete));
    jv_set(c, "index_range", range);
    jv_set(c, "shard_of", jv_null());
    jv_set(c, "subset_detail", str_or_null(w->id.subset_detail));
    jv_set(c, "missing_indices_sample", missing);
    return c;
}

jv *fd_dsw_panel_binding_doc(const fd_dsw *w)
{
    char suite[65], legacy[65];
    suite_hashes(w, suite, legacy);
    jv *d = jv_obj(), *alg = jv_obj();
    jv_set(d, "schema", jv_str("malaiwah.fidelity-panel-binding.v1"));
    jv_set(d, "format_version", jv_int(1));
    jv_set(d, "receipt_sha256", jv_str(""));
    jv_set(d, "panel_id", jv_str(fd_dsw_panel_id(w)));
    jv_set(d, "name", jv_str(w->id.panel_name ? w->id.panel_name : fd_dsw_panel_id(w)));
    jv_set(d, "suite_token_hash_sha256", jv_str(suite));
    jv_set(d, "panel_token_sha256_legacy", jv_str(legacy));
    jv_set(alg, "per_record", jv_str("sha256(json.dumps(ids, separators=(',',':')).encode('utf-8'))"));
    jv_set(alg, "aggregate", jv_str("sha256('\\n'.join(per_record_hex).encode('ascii'))"));
    jv_set(alg, "legacy_per_record", jv_str("sha256(json.dumps(ids).encode('utf-8'))"));
    jv_set(alg, "legacy_aggregate", jv_str("sha256(''.join(per_record_hex).encode('utf-8'))"));
    jv_set(d, "token_digest_algorithm", alg);
    jv_set(d, "repository", str_or_null(w->id.panel_repository));
    jv_set(d, "revision", str_or_null(w->id.panel_revision));
    jv_set(d, "panel_receipt_sha256", str_or_null(w->id.panel_receipt_sha256));
    jv_set(d, "contexts", jv_int((int64_t)w->panel_records->u.a.n));
    jv_set(d, "context_length", jv_int(w->id.context_length));
    jv_set(d, "positions_per_context", jv_copy(jv_get(w->panel_records->u.a.v[0], "prediction_positions")));
    jv_set(d, "scored_positions_total", jv_int(fd_dsw_total_rows(w)));
    jv_set(d, "scoring_window", scoring_window(w));
    jv_set(d, "tokenizer", tokenizer_block(w));
    jv_set(d, "contamination", contamination());
    jv_set(d, "strata", jv_obj());
    jv_set(d, "records", jv_copy(w->panel_records));
    return d;
}

static jv *stack_fingerprint(const fd_dsw *w)
{
    if (w->id.stack_fingerprint) return jv_copy(w->id.stack_fingerprint);
    jv *f = jv_obj();
    jv_set(f, "schema", jv_str("malaiwah.stack-fingerprint.v1"));
    jv_set(f, "engine", jv_str(FD_ENGINE_NAME));
    jv_set(f, "fidelity_version", jv_str(FD_VERSION));
    jv_set(f, "torch_version", jv_null());
    jv_set(f, "transformers_version", jv_null());
    jv_set(f, "device", jv_str("cpu"));
    jv_set(f, "device_name", jv_null());
    jv_set(f, "cuda_runtime_version", jv_null());
    jv_set(f, "numeric_policy", jv_str("canonical fixed-order numerics (docs/NUMERICS.md)"));
    jv_set(f, "attention_backend", jv_str("model default"));
    return f;
}

/* hf_capture recipes: ensure_ascii left at its default (True). */
static void fingerprint_sha(const jv *f, char hex[65])
{
    fd_buf b = {0};
    fd_err e;
    jv_dump(f, &JV_CANON_ASCII, &b, &e);
    fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
}

static void lane_identity(const fd_dsw *w, const jv *fp, char hex[65])
{
    const char *ver = jv_get_str(fp, "torch_version");
    const char *dev = jv_get_str(fp, "device_name");
    fd_buf b = {0};
    fd_buf_printf(&b, "%s|%s|%s", w->id.lane, ver ? ver : FD_ENGINE_NAME "/" FD_VERSION, dev ? dev : "None");
    fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
}

jv *fd_dsw_runtime_doc_new(const fd_dsw *w)
{
    jv *fp = stack_fingerprint(w);
    char fps[65], lane[65];
    fingerprint_sha(fp, fps);
    lane_identity(w, fp, lane);
    jv *d = jv_obj(), *inputs = jv_arr(), *cont = jv_obj(), *env = jv_obj(), *tool = jv_obj(), *wt = jv_obj();
    static const char *const li[] = {"torch_version", "cuda_runtime_version", "device_name", "grouped_mm_kernel",
        "numeric_policy", "attention_backend", "experts_implementation", "parallelism", "ep_emulate", "reduce_order"};
    for (size_t i = 0; i < 10; i++) jv_push(inputs, jv_str(li[i]));
    jv_set(d, "schema", jv_str("malaiwah.fidelity-capture-runtime.v1"));
    jv_set(d, "format_version", jv_int(1));
    jv_set(d, "receipt_sha256", jv_str(""));
    jv_set(d, "lane", jv_str(w->id.lane));
    jv_set(d, "lane_inferred", jv_bool(w->id.lane_inferred));
    jv_set(d, "lane_identity_sha256", jv_str(lane));
    jv_set(d, "lane_identity_inputs", inputs);
    jv_set(d, "stack_fingerprint", fp);
    jv_set(d, "stack_fingerprint_sha256", jv_str(fps));
    jv_set(cont, "image_digest", jv_null());
    jv_set(cont, "image_reference", jv_null());
    jv_set(cont, "image_repository_digest", jv_null());
    jv_set(d, "container", cont);
    jv_set(env, "engine", jv_str(FD_ENGINE_NAME "/" FD_VERSION));
    jv_set(env, "cold_run", jv_str(w->cold_run));
    jv_set(d, "runtime_environment", env);
    jv_set(d, "source_files", jv_obj());
    jv_set(tool, "file", jv_null());
    jv_set(tool, "sha256", jv_null());
    jv_set(tool, "version", jv_str(w->id.engine ? w->id.engine : FD_ENGINE_NAME "/" FD_VERSION));
    jv_set(tool, "wraps", jv_arr());
    jv_set(tool, "schedule", jv_str("window-outer"));
    jv_set(tool, "unexpected_tensor_allowlist", jv_null());
    jv_set(tool, "weights_license", jv_null());
    jv_set(tool, "resolved_panel_binding", w->id.resolved_panel_binding ? jv_copy(w->id.resolved_panel_binding) : jv_null());
    jv_set(tool, "parallel_plan_dropped", jv_bool(0));
    jv_set(tool, "layer_residency", jv_null());
    jv_set(tool, "mechanism", jv_str(w->id.mechanism ? w->id.mechanism : "fidelity C engine; hidden state captured after the final RMSNorm, before the head"));
    jv_set(d, "capture_tool", tool);
    jv_set(wt, "repository", str_or_null(w->id.weights_repository));
    jv_set(wt, "revision", str_or_null(w->id.weights_revision));
    jv_set(wt, "model_revision", str_or_null(w->id.weights_revision));
    jv_set(wt, "checkpoint_identity_sha256", str_or_null(w->id.checkpoint_identity_sha256));
    jv_set(wt, "checkpoint_identity_algorithm", jv_null());
    jv_set(wt, "checkpoint_files", w->id.checkpoint_files ? jv_copy(w->id.checkpoint_files) : jv_arr());
    jv_set(d, "weights", wt);
    jv_set(d, "upstream_receipts", jv_arr());
    return d;
}

/* A logit-form dataset's head is the one that PRODUCED the logits: when it
 * is shipped its identity is recorded (HEAD-3 needs it for a mixed-form
 * compare), otherwise the block says absent with null digests.  The schema
 * wants a two-entry positive shape even then: [vocab, 1] is a placeholder
 * the adapter lists in interop.adapted_from.inferred_fields. */
static jv *logit_head_block(const fd_dsw *w)
{
    jv *h = jv_obj(), *shape = jv_arr();
    int have = w->have_head;
    jv_push(shape, jv_int(w->id.vocab));
    jv_push(shape, jv_int(have ? w->id.hidden : 1));
    jv_set(h, "present", jv_bool(have));
    jv_set(h, "file", have ? jv_str("head/weight.safetensors") : jv_null());
    jv_set(h, "tensor_key", jv_str("lm_head.weight"));
    jv_set(h, "compat_tensor_key", jv_str("weight"));
    jv_set(h, "shape", shape);
    jv_set(h, "dtype", jv_str("BF16"));
    jv_set(h, "bias", jv_null());
    jv_set(h, "file_sha256", have ? jv_str(w->head_file_sha) : jv_null());
    jv_set(h, "raw_tensor_sha256", have ? jv_str(w->head_content_sha) : jv_null());
    jv_set(h, "tensor_content_sha256", have ? jv_str(w->head_content_sha) : jv_null());
    jv_set(h, "quantized", jv_null());
    jv_set(h, "bits", jv_null());
    jv_set(h, "source", jv_str("unknown"));
    jv_set(h, "applied_in_capture", jv_bool(1));
    jv_set(h, "final_norm", jv_null());
    jv_set(h, "equality_receipt", jv_null());
    return h;
}

static jv *head_block(const fd_dsw *w)
{
    if (w->logit) return logit_head_block(w);
    jv *h = jv_obj(), *shape = jv_arr(), *fn = jv_obj();
    jv_push(shape, jv_int(w->id.vocab));
    jv_push(shape, jv_int(w->id.hidden));
    jv_set(h, "present", jv_bool(1));
    jv_set(h, "file", jv_str("head/weight.safetensors"));
    jv_set(h, "tensor_key", jv_str("lm_head.weight"));
    jv_set(h, "compat_tensor_key", jv_str("weight"));
    jv_set(h, "shape", shape);
    jv_set(h, "dtype", jv_str("BF16"));
    jv_set(h, "bias", jv_null());
    jv_set(h, "file_sha256", jv_str(w->head_file_sha));
    jv_set(h, "raw_tensor_sha256", jv_str(w->head_content_sha));
    jv_set(h, "tensor_content_sha256", jv_str(w->head_content_sha));
    if (w->id.head_tied_to) { /* the head IS the embedding: say which tensor was shipped */
        jv_set(h, "tied_word_embeddings", jv_bool(1));
        jv_set(h, "source_tensor", jv_str(w->id.head_tied_to));
    }
    int unk = w->id.head_unknown;  /* D-1: the source never says whether its head was quantized */
    jv_set(h, "quantized", unk ? jv_null() : jv_bool(0));
    jv_set(h, "bits", unk ? jv_null() : jv_int(16));
    jv_set(h, "source", jv_str(unk ? "unknown" : "native"));
    jv_set(h, "applied_in_capture", jv_bool(0));
    static const char *const nulls[] = {"file", "tensor_key", "shape", "dtype", "file_sha256", "tensor_content_sha256"};
    for (size_t i = 0; i < 6; i++) jv_set(fn, nulls[i], jv_null());
    jv_set(fn, "applied_in_capture", jv_bool(1));
    jv_set(fn, "applied_at_replay", jv_bool(0));
    if (unk) { jv_free(fn); fn = jv_null(); }
    jv_set(h, "final_norm", fn);
    jv_set(h, "equality_receipt", jv_null());
    return h;
}

jv *fd_dsw_head_doc_new(const fd_dsw *w)
{
    jv *d = head_block(w);
    jv_set(d, "schema", jv_str("malaiwah.fidelity-head-identity.v1"));
    jv_set(d, "format_version", jv_int(1));
    jv_set(d, "receipt_sha256", jv_str(""));
    jv_set(d, "note", jv_str(w->logit ? (w->have_head ? "the head DECLARED to have produced these logits (the source format records none); shipped so a hidden-form side can be replayed through the same head (HEAD-3)"
                                                      : "no head: the source format records none, so only a logit-form partner can be compared (HEAD-2)")
                                     : "the head is shipped verbatim from the checkpoint so a third party can replay logits = hidden @ head^T without the weights"));
    return d;
}

static void capture_form_fields(const fd_dsw *w, jv *d)
{
    jv_set(d, "form", jv_str(w->logit ? "logit" : "hidden"));
    jv_set(d, "semantic_point", jv_str(w->logit ? semantic_point(w) : "after_final_rmsnorm_before_lm_head"));
    jv_set(d, "tensor_key", jv_str(w->logit ? "logits" : "hidden_states"));
    jv_set(d, "dtype", jv_str(w->logit ? "F32" : "BF16"));
    jv_set(d, "dtype_lossless", jv_bool(!(w->logit && w->id.dtype_lossy)));
    jv_set(d, "hidden_width", w->logit ? jv_null() : jv_int(w->id.hidden));
}

jv *fd_dsw_capture_doc_new(const fd_dsw *w, const jv *coverage, const char *content_digest)
{
    jv *d = jv_obj();
    jv_set(d, "schema", jv_str("malaiwah.fidelity-capture-manifest.v1"));
    jv_set(d, "format_version", jv_int(1));
    jv_set(d, "receipt_sha256", jv_str(""));
    jv_set(d, "created_utc", jv_str(w->created));
    jv_set(d, "run_name", jv_str(w->id.run_name ? w->id.run_name : "fidelity-capture"));
    capture_form_fields(w, d);
    jv_set(d, "vocab_size", jv_int(w->id.vocab));
    jv_set(d, "context_length", jv_int(w->id.context_length));
    jv_set(d, "scored_rows_per_context", jv_copy(jv_get(w->cap_records->u.a.v[0], "scored_rows")));
    jv_set(d, "total_scored_rows", jv_int(fd_dsw_total_rows(w)));
    jv_set(d, "total_size_bytes", jv_int(w->total_size));
    jv_set(d, "capture_content_digest", jv_str(content_digest));
    jv_set(d, "runtime_manifest", jv_str("../runtime/capture-runtime.json"));
    jv_set(d, "runtime_manifest_sha256", jv_null());
    jv_set(d, "coverage", jv_copy(coverage));
    jv_set(d, "records", jv_copy(w->cap_records));
    return d;
}

jv *fd_dsw_seal_block(const char *checksums_sha)
{
    jv *s = jv_obj(), *covers = jv_arr(), *ex = jv_arr();
    jv_set(s, "method", jv_str("self_blanked_canonical_json_sha256"));
    jv_set(s, "seal_field", jv_str("dataset_sha256"));
    jv_set(s, "checksums_file", jv_str("checksums.txt"));
    jv_set(s, "checksums_format", jv_str("sha256sum"));
    jv_set(s, "checksums_sha256", jv_str(checksums_sha));
    jv_push(covers, jv_str("every published file except checksums.txt and fidelity-dataset.json, via checksums.txt"));
    jv_push(covers, jv_str("fidelity-dataset.json itself, via the self-blanked seal"));
    jv_push(covers, jv_str("every capture tensor a second time by CONTENT, via capture.capture_content_digest"));
    jv_set(s, "covers", covers);
    jv_push(ex, jv_str("checksums.txt"));
    jv_push(ex, jv_str("fidelity-dataset.json"));
    jv_set(s, "excludes", ex);
    jv_set(s, "external_anchor", jv_null());
    return s;
}

/* the manifest's "dataset" block */
static jv *dataset_block(const fd_dsw *w)
{
    jv *ds = jv_obj(), *author = jv_obj();
    jv_set(ds, "id", jv_str(w->id.dataset_id));
    jv_set(ds, "name", jv_str(w->id.dataset_name));
    jv_set(ds, "role", jv_str(w->id.role));
    jv_set(ds, "structural_status", jv_str("sealed"));
    jv_set(ds, "qualification", jv_null());
    jv_set(author, "name", jv_str(w->id.author ? w->id.author : "fidelity"));
    jv_set(author, "role", jv_str("capture-author"));
    jv_set(author, "handle", str_or_null(w->id.author));
    jv_set(author, "url", jv_null());
    jv_set(author, "is_registry_maintainer", jv_bool(0));
    jv_set(ds, "author", author);
    jv_set(ds, "license", jv_str(w->id.license ? w->id.license : "mit"));
    jv_set(ds, "repository", str_or_null(w->id.repository));
    jv_set(ds, "revision", jv_null());
    jv_set(ds, "base_capture", w->id.base_capture ? jv_copy(w->id.base_capture) : jv_null());
    return ds;
}

/* the manifest's "weights" block (quantized unless the scope's policy is native) */
static jv *weights_block(const fd_dsw *w, const jv *scope)
{
    jv *wt = jv_obj();
    const char *policy = jv_get_str(scope, "policy");
    jv_set(wt, "repository", str_or_null(w->id.weights_repository));
    jv_set(wt, "revision", str_or_null(w->id.weights_revision));
    jv_set(wt, "model_revision", str_or_null(w->id.weights_revision));
    jv_set(wt, "quantized", jv_bool(w->id.weights_quantized ? w->id.weights_quantized > 0 : !policy || strcmp(policy, "native")));
    jv_set(wt, "checkpoint_identity_sha256", str_or_null(w->id.checkpoint_identity_sha256));
    jv_set(wt, "config_sha256", str_or_null(w->id.config_sha256));
    jv_set(wt, "index_sha256", jv_null());
    jv_set(wt, "artifact_ref", jv_null());
    jv_set(wt, "model_ref", jv_null());
    jv_set(wt, "codec", str_or_null(w->id.codec));
    jv_set(wt, "declared_bits", w->id.declared_bits ? jv_copy(w->id.declared_bits) : jv_null());
    /* a logit-form dataset without a head (an adapted .kld) knows no head bits */
    jv_set(wt, "declared_head_bits", w->logit && !w->have_head ? jv_null() : jv_int(16));
    return wt;
}

static const char ZERO64[] = "0000000000000000000000000000000000000000000000000000000000000000";

/* the manifest's "panel" block (panel_file_sha256 filled in once panel.json is written) */
static jv *manifest_panel(const fd_dsw *w, const jv *panel_doc)
{
    jv *p = jv_obj();
    jv_set(p, "panel_id", jv_str(fd_dsw_panel_id(w)));
    jv_set(p, "panel_file", jv_str("panel/panel.json"));
    jv_set(p, "panel_file_sha256", jv_str(ZERO64));
    jv_set(p, "suite_token_hash_sha256", jv_copy(jv_get(panel_doc, "suite_token_hash_sha256")));
    jv_set(p, "panel_token_sha256_legacy", jv_copy(jv_get(panel_doc, "panel_token_sha256_legacy")));
    jv_set(p, "panel_receipt_sha256", str_or_null(w->id.panel_receipt_sha256));
    if (w->id.panel_receipt_file) jv_set(p, "panel_receipt_file", jv_str(w->id.panel_receipt_file));
    jv_set(p, "repository", str_or_null(w->id.panel_repository));
    jv_set(p, "revision", str_or_null(w->id.panel_revision));
    jv_set(p, "contexts", jv_int((int64_t)w->panel_records->u.a.n));
    jv_set(p, "context_length", jv_int(w->id.context_length));
    jv_set(p, "scored_positions_total", jv_int(fd_dsw_total_rows(w)));
    jv_set(p, "scoring_window", scoring_window(w));
    jv_set(p, "tokenizer", tokenizer_block(w));
    jv_set(p, "remap_file", jv_null());
    jv_set(p, "contamination", contamination());
    return p;
}

/* the manifest's "capture" block (manifest_file_sha256 filled in later) */
static jv *manifest_capture(const fd_dsw *w, const char *content_digest)
{
    jv *c = jv_obj();
    jv_set(c, "manifest_file", jv_str("capture/manifest.json"));
    jv_set(c, "manifest_file_sha256", jv_str(ZERO64));
    jv_set(c, "capture_content_digest", jv_str(content_digest));
    capture_form_fields(w, c);
    jv_set(c, "vocab_size", jv_int(w->id.vocab));
    jv_set(c, "head_separable", jv_bool(!w->logit));
    jv_set(c, "head_not_separable_reason", w->logit ? jv_str(w->id.head_not_separable_reason ? w->id.head_not_separable_reason
                                                      : "logit form: the head was applied inside the capture") : jv_null());
    jv_set(c, "records_count", jv_int((int64_t)w->cap_records->u.a.n));
    jv_set(c, "scored_rows_total", jv_int(fd_dsw_total_rows(w)));
    jv_set(c, "total_size_bytes", jv_int(w->total_size));
    jv_set(c, "lossy_codec", w->logit && w->id.lossy_codec ? jv_copy(w->id.lossy_codec) : jv_null());
    return c;
}

/* the manifest's "runtime" block (file_sha256 filled in later) */
static jv *manifest_runtime(const fd_dsw *w, const jv *runtime_doc)
{
    jv *rt = jv_obj();
    jv_set(rt, "file", jv_str("runtime/capture-runtime.json"));
    jv_set(rt, "file_sha256", jv_str(ZERO64));
    jv_set(rt, "lane", jv_str(w->id.lane));
    jv_set(rt, "lane_inferred", jv_bool(w->id.lane_inferred));
    jv_set(rt, "lane_identity_sha256", jv_copy(jv_get(runtime_doc, "lane_identity_sha256")));
    jv_set(rt, "stack_fingerprint_sha256", jv_copy(jv_get(runtime_doc, "stack_fingerprint_sha256")));
    jv_set(rt, "backend_identity_sha256", jv_null());
    jv_set(rt, "runtime_reader_sha256", jv_null());
    jv_set(rt, "source", jv_str(w->id.runtime_source ? w->id.runtime_source : "native"));
    return rt;
}

/* the manifest's "determinism" block: the given one (a merge), else one cold run */
static jv *manifest_determinism(const fd_dsw *w, const char *content_digest)
{
    jv *det, *hashes = jv_arr();
    if (w->id.determinism) {
        det = jv_copy(w->id.determinism);
        jv_push(hashes, jv_str(content_digest));
        jv_set(det, "evidence_hashes", hashes);
        jv_set(det, "distinct_evidence_hash_count", jv_int(1));
        return det;
    }
    det = jv_obj();
    jv_set(det, "run_count", jv_int(1));
    jv_set(det, "cold_start_per_run", jv_bool(1));
    jv_set(det, "evidence_kind", jv_str(w->logit ? "logits_tensor_sha256" : "hidden_state_tensor_sha256"));
    jv_push(hashes, jv_str(content_digest));
    jv_set(det, "evidence_hashes", hashes);
    jv_set(det, "distinct_evidence_hash_count", jv_int(1));
    jv_set(det, "identical_across_runs", jv_null());
    jv_set(det, "repeats", jv_arr());
    jv_set(det, "repeat_noise", jv_null());
    jv_set(det, "note", jv_str("a single cold capture; cross-run determinism is NOT asserted here. Capture a second cold run and run `fidelity compare --self-compare --force-compute`: an exactly 0.0 result is the SC-1 reproduction confirmation."));
    return det;
}

/* the manifest's "interop" block (k3_compat_emitted updated when the views are written) */
static jv *manifest_interop(const fd_dsw *w)
{
    jv *interop = jv_arr(), *divs = jv_arr(), *iop = jv_obj();
    jv_push(interop, jv_str("kimi-k3-distribution-fidelity/1"));
    jv_set(iop, "compatible_with", interop);
    jv_set(iop, "k3_compat_emitted", jv_bool(0));
    jv_set(iop, "adapted_from", w->id.adapted_from ? jv_copy(w->id.adapted_from) : jv_null());
    for (size_t i = 0; i < sizeof DIVERGENCES / sizeof *DIVERGENCES; i++) {
        jv *d = jv_obj();
        jv_set(d, "id", jv_str(DIVERGENCES[i][0]));
        jv_set(d, "field", jv_str(DIVERGENCES[i][1]));
        jv_set(d, "reason", jv_str(DIVERGENCES[i][2]));
        jv_push(divs, d);
    }
    jv_set(iop, "divergences", divs);
    jv_set(iop, "note", str_or_null(w->id.interop_note));
    return iop;
}

/* the manifest's "disclosures": ours, the caller's, a skipped sanity probe */
static jv *manifest_disclosures(const fd_dsw *w)
{
    jv *discl = jv_arr();
    if (!w->id.extra_disclosures || !w->id.extra_disclosures->u.a.n)
        jv_push(discl, disclosure("no_known_deviations", "info", 0, "captured by the fidelity C engine"));
    jv_push(discl, disclosure("reduced_run_count", "caveat", 0,
        "this dataset is ONE cold capture (run_count 1, the DET-D4 floor is 5). Cross-run determinism is not asserted by the dataset; it is established by a second cold capture plus `fidelity compare --self-compare`, whose exactly-0.0 result is the SC-1 reproduction confirmation."));
    for (size_t i = 0; w->id.extra_disclosures && i < w->id.extra_disclosures->u.a.n; i++)
        jv_push(discl, jv_copy(w->id.extra_disclosures->u.a.v[i]));
    const jv *probe = w->id.generation_sanity_probe;
    if (probe && jv_get_str(probe, "status") && !strcmp(jv_get_str(probe, "status"), "skipped")) {
        char detail[1600];
        const char *why = jv_get_str(probe, "reason");
        snprintf(detail, sizeof detail,
                 "the generation sanity probe did not run (%s). Tensor counts, shapes and the load report can all "
                 "be clean while a shard loaded as zeros or as randomly initialised weights; this capture carries "
                 "no evidence that the model generates sensibly.", why ? why : "no reason recorded");
        jv_push(discl, disclosure("generation_sanity_probe_skipped", "caveat", 0, detail));
    }
    return discl;
}

jv *fd_dsw_top_manifest(const fd_dsw *w, const jv *panel_doc, const jv *runtime_doc, jv *coverage,
                        const char *content_digest)
{
    jv *m = jv_obj();
    jv_set(m, "schema", jv_str("malaiwah.fidelity-dataset.v1"));
    jv_set(m, "format_version", jv_int(1));
    jv_set(m, "dataset_sha256", jv_str(""));
    jv_set(m, "created_utc", jv_str(w->created));
    jv_set(m, "dataset", dataset_block(w));
    jv *scope = w->id.scope ? jv_copy(w->id.scope) : fd_native_scope();
    jv_set(m, "weights", weights_block(w, scope));
    jv_set(m, "scope", scope);
    jv_set(m, "panel", manifest_panel(w, panel_doc));
    jv_set(m, "capture", manifest_capture(w, content_digest));
    jv *head = head_block(w);
    jv_set(head, "head_json", jv_str("head/head.json"));
    jv_set(m, "head", head);
    jv_set(m, "runtime", manifest_runtime(w, runtime_doc));
    jv_set(m, "determinism", manifest_determinism(w, content_digest));
    jv_set(m, "coverage", coverage);
    jv_set(m, "seal", fd_dsw_seal_block(ZERO64));
    jv_set(m, "interop", manifest_interop(w));
    jv_set(m, "upstream_receipts", jv_arr());
    jv_set(m, "disclosures", manifest_disclosures(w));
    /* additive top-level block, inside the self-seal (schema: additionalProperties) */
    if (w->id.generation_sanity_probe) jv_set(m, "generation_sanity_probe", jv_copy(w->id.generation_sanity_probe));
    return m;
}

jv *fd_dsw_validation_doc(const fd_dsw *w)
{
    jv *v = jv_obj(), *checks = jv_arr();
    char subject[512];
    snprintf(subject, sizeof subject, "dataset:%s", w->id.dataset_id);
    jv_push(checks, jv_str("pre-seal"));
    jv_set(v, "schema", jv_str("malaiwah.fidelity-structural-validation.v1"));
    jv_set(v, "format_version", jv_int(1));
    jv_set(v, "receipt_sha256", jv_str(""));
    jv_set(v, "subject", jv_str(subject));
    jv_set(v, "structural_status", jv_str("sealed"));
    jv_set(v, "checks_run", checks);
    jv_set(v, "errors", jv_arr());
    jv_set(v, "warnings", jv_arr());
    jv_set(v, "error_count", jv_int(0));
    jv_set(v, "warning_count", jv_int(0));
    return v;
}
