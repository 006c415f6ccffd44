/* model_type minimax_m2 (MiniMaxM2ForCausalLM, transformers 5.25: MiniMax-M2,
 * M2.1): a GQA decoder whose every layer is a sigmoid-routed MoE
 * (docs/MODEL-MINIMAX-QWEN4.md).  An entry of the architecture table
 * (engine/model.h).
 *
 * Rounding points (each as torch's CPU kernel, the contract of
 * engine/ops/ops.h):
 *   h = RMSNorm(x) (fd_op_rmsnorm_mm); q, k, v = bf16 Linears, no bias;
 *   q = RMSNorm over the whole q_proj output (num_attention_heads x head_dim,
 *     weight q_norm), k the same over num_key_value_heads x head_dim (k_norm):
 *     one norm per token, not per head;
 *   partial RoPE: the first rotary_dim = int(head_dim x partial_rotary_factor)
 *     elements of each head get rotate_half, bf(bf(q*cos) + bf(rotate_half(q)*sin)),
 *     cos/sin bf16 tables of the default inv_freq over rotary_dim; the rest
 *     passes unchanged;
 *   eager attention with repeat_kv, scale head_dim^-0.5 (fd_op_attention_gqa);
 *   o_proj, residual add in bf16;
 *   MoE (fd_op_moe_sigmoid): bf16 router logits, fp32 sigmoid, + the
 *     correction bias (bf16 as loaded), torch.topk(sorted=False), weights
 *     renormalised in fp32, grouped_mm experts (w1 gate, w3 up, w2 down),
 *     fp32 combine in slot order, one bf16 rounding; residual add;
 *   final RMSNorm = the lm_head input.
 * Refusals by name (bad_config naming the field): a rope_type other than
 * default, nested rope_parameters, a rotary dim that is odd, zero or past
 * head_dim, hidden_act other than silu, num_attention_heads not a multiple
 * of num_key_value_heads, num_experts_per_tok past the experts. */
#ifndef FD_ENGINE_ARCH_MINIMAX_M2_H
#define FD_ENGINE_ARCH_MINIMAX_M2_H
#include "engine/model.h"

typedef struct fd_mm2_ext {
    int64_t rotary_dim; /* int(head_dim * partial_rotary_factor) */
} fd_mm2_ext;

#define MM2(c) ((const fd_mm2_ext *)(c)->ext)

int fd_mm2_parse(const jv *doc, fd_glm_config *c, fd_err *e);
void fd_mm2_ext_free(void *ext);
void fd_mm2_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);
void *fd_mm2_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_mm2_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
int fd_mm2_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
void fd_mm2_free(void *st);
/* the fixture presets (minimax_m2_fixture.c) */
extern const fd_fixture_preset FD_MM2_PRESETS[];

#endif
