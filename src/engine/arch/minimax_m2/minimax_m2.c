/* model_type minimax_m2: its entry of the architecture table (mm2.h). */
#include "engine/arch/minimax_m2/mm2.h"
#include "engine/gguf_model.h"

extern const fd_gguf_arch FD_GGUF_MINIMAX_M2; /* mm2_gguf.c */

/* per window between layers: the residual stream and the output rows
 * (bf16), the causal selection, the RoPE tables */
static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    return S * (uint64_t)c->hidden_size * 4 + S * S + 2 * S * (uint64_t)c->head_dim;
}

/* the widest activation row of a layer: hidden, the query heads, the
 * routed experts of a token */
static uint64_t wide(const fd_glm_config *c)
{
    uint64_t H = (uint64_t)c->hidden_size, A = (uint64_t)c->num_attention_heads * (uint64_t)c->head_dim,
             X = (uint64_t)c->moe_intermediate_size * (uint64_t)c->num_experts_per_tok;
    uint64_t w = H > A ? H : A;
    return w > X ? w : X;
}

const fd_arch FD_ARCH_MINIMAX_M2 = {
    .info = {"minimax_m2", "MiniMaxM2ForCausalLM",
             "MiniMax-M2: GQA attention with q/k RMSNorm over all heads, partial rotate_half RoPE (rotary_dim), "
             "every layer a sigmoid-routed MoE with e_score_correction_bias (top-k renormalised, no shared expert)",
             "docs/MODEL-MINIMAX-QWEN4.md", "bf16, gguf"},
    .prefix = "model.",
    .parse = fd_mm2_parse,
    .free_ext = fd_mm2_ext_free,
    .tensors = fd_mm2_tensors,
    .begin = fd_mm2_begin,
    .layer = fd_mm2_layer,
    .end = fd_mm2_end,
    .free_state = fd_mm2_free,
    .stream = fd_mm2_stream,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_MM2_PRESETS,
    .gguf = &FD_GGUF_MINIMAX_M2,
};
