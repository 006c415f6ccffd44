/* model_types qwen3_5 / qwen3_5_text (Qwen3_5ForConditionalGeneration's
 * text model / Qwen3_5ForCausalLM) and qwen3_5_moe / qwen3_5_moe_text: the
 * hybrid decoder of transformers 5.25 (docs/MODEL-QWEN35.md), bf16 load,
 * eager attention, the torch fallbacks of the gated delta net (no fla / no
 * causal_conv1d package: what runs on CPU).
 *
 * Per layer (layer_types: linear_attention | full_attention):
 *   h = zero-centred RMSNorm(x): bf(fp32(x) * rsqrt(mean(x^2) + eps) * (1 + w))
 *       (fd_op_rmsnorm_zc_mm);
 *   full_attention: q_proj gives [query | gate] per head (2 head_dim), q_norm
 *     / k_norm zero-centred over head_dim, rotate_half RoPE on the first
 *     head_dim * partial_rotary_factor dims (the text positions of mrope are
 *     one grid: plain RoPE), eager GQA, bf(o * bf(sigmoid(gate))), o_proj;
 *   linear_attention (Qwen3_5GatedDeltaNet): in_proj_qkv, bf16 depthwise
 *     causal conv1d + silu, beta = sigmoid(in_proj_b), g = -exp(A_log) *
 *     softplus(in_proj_a + dt_bias) (fp32), torch_chunk_gated_delta_rule
 *     (ops/delta.c), the gated RMSNorm with silu(in_proj_z), out_proj;
 *   x += that (bf16); x += MLP(post_attention_layernorm(x)): SwiGLU
 *     (qwen3_5) or the softmax-routed top-k experts (renormalised) plus the
 *     shared expert gated by sigmoid(shared_expert_gate) (qwen3_5_moe).
 * Final zero-centred RMSNorm = the lm_head input.
 * Refusals by name: rope types other than default, partial_rotary_factor
 * giving an odd or zero rotary dim, hidden_act other than silu,
 * linear_num_value_heads not a multiple of linear_num_key_heads, layer_types
 * entries other than linear_attention / full_attention. */
#ifndef FD_ENGINE_ARCH_QWEN3_5_H
#define FD_ENGINE_ARCH_QWEN3_5_H
#include "engine/model.h"

typedef struct fd_q35_ext {
    int moe;                     /* qwen3_5_moe: every layer's MLP is the sparse block */
    int composite;               /* qwen3_5 / qwen3_5_moe: text_config, tensors under model.language_model. */
    unsigned char *linear;       /* [num_hidden_layers]: 1 linear_attention, 0 full_attention */
    int64_t rot;                 /* rotary dims: int(head_dim * partial_rotary_factor) */
    int64_t conv_k, dk, dv, nk, nv;
    int64_t shared_inter;        /* shared_expert_intermediate_size */
    const char *prefix;          /* "model.language_model." | "model." */
} fd_q35_ext;

#define QX(c) ((const fd_q35_ext *)(c)->ext)

int fd_q35_parse(const jv *doc, fd_glm_config *c, fd_err *e);
int fd_q35_text_parse(const jv *doc, fd_glm_config *c, fd_err *e);
int fd_q35_moe_parse(const jv *doc, fd_glm_config *c, fd_err *e);
int fd_q35_moe_text_parse(const jv *doc, fd_glm_config *c, fd_err *e);
void fd_q35_ext_free(void *ext);
void fd_q35_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);
void *fd_q35_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_q35_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
int fd_q35_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
void fd_q35_free(void *st);
/* the gated full attention of layer L under the selection sel (S x S), R
 * the rotary tables; the sparse MoE block under the prefix pre
 * (q35_forward.c; qwen4_exp reuses both) */
struct fd_rope;
int fd_q35_attention(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const struct fd_rope *R,
                     const unsigned char *sel, size_t S, const uint16_t *h, uint16_t *y, fd_err *e);
int fd_q35_moe(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const char *pre, const uint16_t *h,
               size_t S, uint16_t *y, fd_err *e);
/* Qwen3_5TextConfig / Qwen3_5MoeTextConfig's fields into c and x (the text
 * model's dict d); indexed: layer_types may also say indexed_attention (an
 * attention layer, qwen4_exp) (q35_config.c) */
int fd_q35_text_config(const jv *d, fd_glm_config *c, fd_q35_ext *x, int moe, int indexed, fd_err *e);
/* the zero-centred RMSNorm of rows x [rows][n] with weight t (q35_forward.c):
 * bf(fp32(x) * rsqrt(mean(x^2) + eps) * (1 + fp32(w))) as transformers, or,
 * from a GGUF read as stored (W->gstored: the converter wrote 1 + w), with
 * the stored fp32 multiplier in place of 1 + w */
void fd_q35_norm(const fd_mm *m, const fd_weights *W, const fd_tensor *t, const uint16_t *x, size_t rows, size_t n, float eps,
                 uint16_t *y);
/* llama.cpp's qwen35 / qwen35moe metadata as the config.json document it
 * implies (q35_gguf.c; qwen4exp's hook adds its own keys), and the
 * value-head reorder's parameters (fd_gguf_stored.vheads; c->ext starts with
 * an fd_q35_ext) */
struct fd_gguf_set;
jv *fd_q35_gguf_config(const struct fd_gguf_set *s, const char *arch, int moe, fd_err *e);
void fd_q35_gguf_vheads(const fd_glm_config *c, uint64_t p[4]);
/* the fixture presets (qwen3_5_fixture.c): qwen35-tiny, qwen35-small; qwen35-moe-tiny */
extern const fd_fixture_preset FD_Q35_TEXT_PRESETS[], FD_Q35_MOE_TEXT_PRESETS[];
/* the linear-attention token mixer of layer L on S rows of h (q35_delta.c) */
int fd_q35_gdn(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *h, size_t S,
               uint16_t *y, fd_err *e);

#endif
