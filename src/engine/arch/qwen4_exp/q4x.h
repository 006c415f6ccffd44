/* model_types qwen4_exp / qwen4_exp_text (Qwen4ExpForConditionalGeneration's
 * text model / Qwen4ExpForCausalLM, transformers 5.25; bf16 load, eager
 * attention, torch fallbacks of the gated delta net;
 * docs/MODEL-MINIMAX-QWEN4.md §7).
 *
 * The qwen3_5_moe text model (arch/qwen3_5: gated delta-net and gated
 * attention layers, the softmax-routed experts with a sigmoid-gated shared
 * expert) with
 *   - hyper-connections (ops/hyper.h): the embedding repeated over hc_count
 *     streams; before each token mixer and each MoE a gated residual reads the
 *     streams (in place of input_layernorm / post_attention_layernorm) and the
 *     sublayer's output is written back into every stream; a final mixer in
 *     place of the final norm: its output is the lm_head input;
 *   - QSA on every indexed_attention layer (ops/hyper.h fd_op_qsa_select):
 *     the attention's causal mask narrowed to the chosen key blocks.
 * Refusals by name: ple_layer_ids (per-layer n-gram embeddings: not
 * implemented), output_gate_type other than silu, norm_topk_prob false,
 * hc_count not a power of two (or 1, or > 64), indexer_kv_heads other than
 * 1, a QSA field missing, indexer_budget not a multiple of
 * indexer_compress_ratio, rotary dims wider than indexer_head_dim, and
 * qwen3_5's own refusals. */
#ifndef FD_ENGINE_ARCH_QWEN4_EXP_H
#define FD_ENGINE_ARCH_QWEN4_EXP_H
#include "engine/arch/qwen3_5/q35.h"

typedef struct fd_q4x_ext {
    fd_q35_ext q;                 /* first: the qwen3_5 code reads it (QX) */
    int64_t hc, hc_rank;          /* hc_count, hc_lowrank */
    int64_t ix_heads, ix_dim, ix_budget, ix_cr; /* indexer_n_heads, _head_dim, _budget, _compress_ratio */
} fd_q4x_ext;

#define Q4X(c) ((const fd_q4x_ext *)(c)->ext)

int fd_q4x_parse(const jv *doc, fd_glm_config *c, fd_err *e);
int fd_q4x_text_parse(const jv *doc, fd_glm_config *c, fd_err *e);
void fd_q4x_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);
void *fd_q4x_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_q4x_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
int fd_q4x_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
void fd_q4x_free(void *st);
extern const fd_fixture_preset FD_Q4X_TEXT_PRESETS[];

#endif
