/* model_types llama (LlamaForCausalLM) and qwen3 (Qwen3ForCausalLM): the
 * dense GQA decoder of transformers 5.25, eager attention, bf16 load
 * (docs/MODEL-LLAMA-QWEN.md).  Both are entries of the architecture table
 * (engine/model.h); qwen3 is llama plus a per-head RMSNorm of q and k
 * before RoPE (q_norm / k_norm over head_dim) and no mlp_bias; qwen3_moe
 * (Qwen3MoeForCausalLM) is qwen3 with the softmax-routed MoE block
 * (fd_op_moe_softmax: top-k, norm_topk_prob, no shared expert) on the layers
 * not in mlp_only_layers whose (index + 1) % decoder_sparse_step == 0.
 *
 * Rounding points (each as torch's CPU kernel, the same contract as
 * engine/ops/ops.h):
 *   h = RMSNorm(x) (fd_op_rmsnorm_mm); q, k, v = bf16 Linears (+bias);
 *   qwen3: q, k = RMSNorm over each head's head_dim;
 *   RoPE rotate_half: bf(bf(q*cos) + bf(rotate_half(q)*sin)), cos/sin bf16
 *     tables from transformers' inv_freq (default or llama3) in fp32;
 *   eager attention with repeat_kv: bf(bf(q.k) * head_dim^-0.5), causal,
 *     torch's fp32 softmax -> bf16, bf(P.V) (fd_op_attention_gqa);
 *   o_proj, residual add in bf16; the same for the SwiGLU MLP
 *     (fd_op_mlp_swiglu); final RMSNorm = the lm_head input.
 * Refusals by name (bad_config naming the field): rope types other than
 * default / llama3, nested per-layer-type rope_parameters,
 * partial_rotary_factor != 1, hidden_act other than silu, sliding-window
 * layers, num_attention_heads not a multiple of num_key_value_heads, an odd
 * head_dim. */
#ifndef FD_ENGINE_ARCH_LLAMA_H
#define FD_ENGINE_ARCH_LLAMA_H
#include "engine/model.h"

typedef struct fd_llama_ext {
    int qk_norm;                 /* qwen3: q_norm / k_norm */
    int mlp_bias;                /* llama: mlp_bias */
    int moe;                     /* qwen3_moe: sparse layers (c->mlp_sparse) run fd_op_moe_softmax */
    double factor, low_ff, high_ff, orig_max; /* rope_type llama3 */
} fd_llama_ext;

#define LX(c) ((const fd_llama_ext *)(c)->ext)

/* the fixture presets (llama_fixture.c) */
extern const fd_fixture_preset FD_LLAMA_PRESETS[], FD_QWEN3_PRESETS[], FD_QWEN3_MOE_PRESETS[];

int fd_llama_parse(const jv *doc, fd_glm_config *c, fd_err *e);
int fd_qwen3_parse(const jv *doc, fd_glm_config *c, fd_err *e);
int fd_qwen3_moe_parse(const jv *doc, fd_glm_config *c, fd_err *e);
void fd_llama_ext_free(void *ext);
void fd_llama_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);
void *fd_llama_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_llama_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
int fd_llama_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
void fd_llama_free(void *st);

#endif
