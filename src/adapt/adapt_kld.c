/* adapt --source llamacpp-kld: a llama.cpp --kl-divergence-base file into a
 * sealed LOGIT-form dataset.  Nothing is fabricated silently: the stored
 * values are the file's uint16 codes decoded exactly as llama.cpp's reader
 * decodes them (lossy_codec declared, dtype_lossless false), the panel is
 * the file's own tokens with score_from = n_ctx/2 (a different panel from a
 * score_from = 0 capture, PANEL-D3), and every field the file cannot answer
 * is listed in interop.adapted_from.inferred_fields. */
#include "adapt.h"
#include "format/scoring_window.h"
#include "format/digest.h"
#include "util/buf.h"
#include "kld.h"
#include "compare/side.h"
#include "format/safetensors.h"
#include "format/sha.h"
#include "format/writer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jv *strs(const char *const *v)
{
    jv *a = jv_arr();
    for (; *v; v++) jv_push(a, jv_str(*v));
    return a;
}

/* The declared head: any BF16 [n_vocab, hidden] safetensors tensor
 * (lm_head.weight or weight, as compare reads heads). */
static int load_head(const char *path, int64_t vocab, uint16_t **head, int64_t *hidden, fd_err *e)
{
    fd_st_file st;
    if (fd_st_open(path, &st, e)) return -1;
    const fd_st_tensor *t = fd_st_find(&st, "lm_head.weight");
    if (!t) t = fd_st_find(&st, "weight");
    int rc = 0;
    if (!t || t->ndim != 2) rc = fd_fail(e, "bad_tensor_file", "", "%s: no 2-D lm_head.weight or weight tensor", path);
    else if ((int64_t)t->shape[0] != vocab)
        rc = fd_fail(e, "kld_vocab_mismatch", "KLD-3", "%s: the head has %llu rows, the .kld's n_vocab is %lld", path,
                     (unsigned long long)t->shape[0], (long long)vocab);
    else *hidden = (int64_t)t->shape[1];
    char key[64];
    snprintf(key, sizeof key, "%s", rc ? "" : t->name);
    fd_st_close(&st);
    if (rc) return -1;
    return fd_read_head(path, key, vocab, *hidden, head, e);
}

/* The quantization scope of a .kld's producer: the file says nothing of it,
 * so every class is "unknown" (format "unknown", bits null), as the Python
 * tool records a recipe it was not told, never a guessed native bf16. */
static jv *unknown_scope(fd_err *e)
{
    jv *s = jv_obj(), *as = jv_arr();
    for (size_t i = 0; i < FD_N_SCOPE_CLASSES; i++) {
        jv *a = jv_obj();
        jv_set(a, "tensor_class", jv_str(FD_SCOPE_CLASSES[i]));
        jv_set(a, "treatment", jv_str("unknown"));
        jv_set(a, "format", jv_str("unknown"));
        jv_set(a, "bits_per_weight", jv_null());
        jv_set(a, "layer_range", jv_null());
        jv_set(a, "note", jv_str("a llama.cpp .kld records no quantization recipe"));
        jv_push(as, a);
    }
    jv_set(s, "policy", jv_str("unknown"));
    jv_set(s, "head_policy", jv_str("unknown"));
    jv_set(s, "kv_cache_dtype", jv_str("unknown"));
    jv_set(s, "assignments", as);
    fd_buf d = {0};
    if (fd_scope_digest(s, &d, e)) { fd_buf_free(&d); jv_free(s); return NULL; }
    jv_set(s, "scope_digest", jv_strn(d.p, d.n));
    fd_buf_free(&d);
    return s;
}

/* adapted_from: the source file and the fields the translation infers */
static jv *adapted_from_json(const fd_kld_reader *r, const char *file_sha, int head)
{
    static const char *const inferred_common[] = {
        "capture.dtype_lossless (false: F32 decodes of uint16 codes)", "determinism (one file, no repeat evidence)",
        "panel.records[].attention_mask_sha256 (all-ones: llama.cpp decodes each chunk as one causal sequence)",
        "panel.tokenizer (the file names none)", "runtime.lane", "runtime.stack_fingerprint_sha256",
        "weights.quantized (the file does not say)", "weights.repository", "weights.revision", NULL};
    jv *inferred = strs(inferred_common);
    jv_push(inferred, jv_str(head ? "head (declared by the adapter's user: the .kld records no head)"
                                  : "head.shape (placeholder [n_vocab, 1]: the .kld records no head)"));
    if (head) jv_push(inferred, jv_str("weights.declared_head_bits (16: the declared head is BF16; the .kld records no head)"));
    jv *from = jv_obj();
    jv_set(from, "source_format", jv_str("llamacpp-kld"));
    jv_set(from, "adapter", jv_str("fidelity adapt --source llamacpp-kld (src/adapt/adapt_kld.c)"));
    jv_set(from, "inferred_fields", inferred);
    jv_set(from, "source_schema", jv_str("llama.cpp tools/perplexity --kl-divergence-base (_logits_)"));
    jv_set(from, "source_sha256", jv_str(file_sha));
    jv_set(from, "source_bytes", jv_int((int64_t)r->k.size));
    jv_set(from, "n_ctx", jv_int(r->k.n_ctx));
    jv_set(from, "n_vocab", jv_int(r->k.n_vocab));
    jv_set(from, "n_chunk", jv_int(r->k.n_chunk));
    return from;
}

/* every chunk of the .kld as one window of decoded log-probabilities */
static int write_chunks(fd_dsw *w, fd_kld_reader *r, fd_err *e)
{
    int rc = 0;
    int64_t *ids = fd_xmalloc((size_t)r->k.n_ctx * 8);
    float *lp = fd_xmalloc((size_t)(r->k.rows * r->k.n_vocab) * 4);
    for (int64_t c = 0; c < r->k.n_chunk && !rc; c++) {
        int wn;
        rc = fd_kld_read_chunk(r, c, &wn, e);
        for (int64_t j = 0; !rc && j < r->k.rows; j++) fd_kld_decode_row(&r->k, r->chunk + j * r->k.nv, lp + j * r->k.n_vocab);
        for (int64_t t = 0; t < r->k.n_ctx; t++) ids[t] = r->tokens[c * r->k.n_ctx + t];
        char wid[32];
        snprintf(wid, sizeof wid, "chunk-%04lld", (long long)c);
        fd_ds_window win = {.ids = ids, .n_ids = (size_t)r->k.n_ctx, .window_id = wid, .role = "final",
                            .scored_rows = (size_t)r->k.rows};
        if (!rc) rc = fd_dsw_add_window_logits(w, &win, lp, e);
    }
    free(ids);
    free(lp);
    return rc;
}

int fd_adapt_llamacpp_kld(const fd_adapt_opts *o, char summary[512], fd_err *e)
{
    const char *role = o->role ? o->role : "derived";
    if (!strcmp(role, "root"))
        return fd_fail(e, "role_refused", "ROOT-1", "--role root is refused for a .kld translation: ROOT-1 requires lossy_codec "
                       "null and a shipped head, and a .kld stores uint16-packed log-probabilities with a floor (D-8). Use "
                       "--role derived (the default) or quant");
    fd_kld_reader r;
    if (fd_kld_open(o->in, o->vocab, &r, e)) return -1;
    char file_sha[65];
    int rc = fd_sha256_file(o->in, file_sha, e);
    uint16_t *head = NULL;
    int64_t hidden = 0;
    if (!rc && o->head) rc = load_head(o->head, r.k.n_vocab, &head, &hidden, e);
    /* the floor window is a property of the whole file: scan it first so
     * the lossy_codec block (written at the end) can name it */
    int window = 16;
    for (int64_t c = 0; c < r.k.n_chunk && !rc; c++) {
        int w;
        rc = fd_kld_read_chunk(&r, c, &w, e);
        if (w > window) window = w;
    }
    if (rc) { free(head); fd_kld_close(&r); return -1; }

    char clamp[32], desc[512], base_note[512];
    snprintf(clamp, sizeof clamp, "max_logit - %d", window);
    snprintf(desc, sizeof desc, "llama.cpp --kl-divergence-base rows: per position a float scale and min_log_prob and one "
             "uint16 code per vocabulary entry; log p = scale*code + min_log_prob (step <= %d/65535 nats), every entry at or "
             "below max_logit - %d collapses to min_log_prob, rows are not renormalized. The stored F32 values are those "
             "decodes, NOT the model's values (D-8).", window, window);
    snprintf(base_note, sizeof base_note, "translated from a llama.cpp --kl-divergence-base file (sha256 %s, %llu bytes), "
             "which records no dataset identity, model, tokenizer or runtime", file_sha, (unsigned long long)r.k.size);

    jv *codec = jv_obj();
    jv_set(codec, "kind", jv_str("llamacpp-kld-uint16"));
    jv_set(codec, "bits", jv_int(16));
    jv_set(codec, "clamp", jv_str(clamp));
    jv_set(codec, "description", jv_str(desc));
    jv_set(codec, "window_nats", jv_int(window));
    jv_set(codec, "source_sha256", jv_str(file_sha));
    jv *sw = fd_scoring_window_block(r.k.first, r.k.n_ctx, r.k.n_chunk);   /* first = n_ctx/2: llama.cpp's text */
    jv *base = jv_obj();
    jv_set(base, "dataset_sha256", jv_null());
    jv_set(base, "capture_content_digest", jv_null());
    jv_set(base, "repository", jv_null());
    jv_set(base, "revision", jv_null());
    jv_set(base, "note", jv_str(base_note));
    jv *from = adapted_from_json(&r, file_sha, head != NULL);
    jv *tokz = jv_obj();
    jv_set(tokz, "id", jv_str(o->tokenizer_id ? o->tokenizer_id : "unknown"));
    jv_set(tokz, "repository", jv_null());
    jv_set(tokz, "revision", jv_null());
    jv_set(tokz, "vocab_size", jv_int(r.k.n_vocab));
    jv_set(tokz, "add_special_tokens", jv_null());
    jv_set(tokz, "chat_template_applied", jv_null());
    jv *fp = jv_obj();
    jv_set(fp, "schema", jv_str("malaiwah.stack-fingerprint.v1"));
    jv_set(fp, "origin", jv_str("llamacpp-kld"));
    jv_set(fp, "raw", jv_null());
    jv *discl = jv_arr(), *d = jv_obj();
    jv_set(d, "code", jv_str("lossy_capture_codec"));
    jv_set(d, "severity", jv_str("caveat"));
    jv_set(d, "affects_comparability", jv_bool(1));
    jv_set(d, "detail", jv_str(desc));
    jv_push(discl, d);

    jv *scope = unknown_scope(e);
    if (!scope) { jv_free(codec); jv_free(sw); jv_free(base); jv_free(from); jv_free(tokz); jv_free(fp); jv_free(discl);
                  free(head); fd_kld_close(&r); return -1; }
    fd_ds_identity id = {0};
    id.scope = scope;
    id.weights_quantized = -1; /* unchanged (listed in inferred_fields: the file does not say) */
    id.dataset_id = o->dataset_id ? o->dataset_id : "fidelity--adapted.llamacpp-kld";
    id.dataset_name = o->name ? o->name : "adapted llama.cpp --kl-divergence-base file";
    id.role = role;
    id.lane = o->lane ? o->lane : "other";
    id.run_name = "llamacpp-kld";
    id.created_utc = o->created_utc;
    id.author = NULL;
    id.weights_repository = o->weights_repository ? o->weights_repository : "unknown";
    id.panel_id = o->panel_id ? o->panel_id : "panel--llamacpp-kld";
    id.panel_name = "the token chunks carried inside the llama.cpp .kld file";
    id.tokenizer = tokz;
    id.stack_fingerprint = fp;
    id.engine = "fidelity adapt --source llamacpp-kld";
    id.extra_disclosures = discl;
    id.hidden = hidden;
    id.vocab = r.k.n_vocab;
    id.context_length = r.k.n_ctx;
    id.force = o->force;
    id.form = "logit";
    id.semantic_point = "lm_head_output_before_sampling";
    id.head_not_separable_reason = "llama.cpp stores quantized log-probabilities; there is no separable head in the artifact";
    id.lossy_codec = codec;
    id.dtype_lossy = 1;
    id.scoring_window = sw;
    id.base_capture = base;
    id.adapted_from = from;
    id.interop_note = "translated from a llama.cpp .kld; the lossy codec and every inferred field make any comparison advisory";
    id.runtime_source = "llamacpp-kld";
    id.mechanism = "llama.cpp llama-perplexity --kl-divergence-base; uint16 codes decoded to F32 by fidelity adapt";
    id.card_note = desc;
    fd_dsw *w = fd_dsw_begin(o->out, &id, e);
    if (!w) rc = -1;
    if (!rc && head) rc = fd_dsw_set_head(w, head, e);
    if (!rc) rc = write_chunks(w, &r, e);
    if (w) {
        if (rc) fd_dsw_abort(w);
        else rc = fd_dsw_finish(w, NULL, e);
    }
    if (!rc)
        snprintf(summary, 512, "n_ctx %lld, n_vocab %lld, n_chunk %lld, %lld scored rows per chunk, %d-nat floor, head %s",
                 (long long)r.k.n_ctx, (long long)r.k.n_vocab, (long long)r.k.n_chunk, (long long)r.k.rows, window,
                 head ? "declared" : "absent");
    jv_free(codec); jv_free(sw); jv_free(base); jv_free(from); jv_free(tokz); jv_free(fp); jv_free(discl);
    jv_free(scope);
    free(head);
    fd_kld_close(&r);
    return rc;
}
