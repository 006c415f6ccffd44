/* model_type deepseek_v32 (DeepseekV32ForCausalLM, transformers 5.25:
 * DeepSeek V3.2): deepseek_v3's forward (engine/arch/deepseek_v3/ds3.h)
 * with the DSA indexer (ops/indexer.h, rotate_half RoPE) selecting each
 * layer's keys; docs/MODEL-DEEPSEEK.md. */
#include "engine/arch/deepseek_v3/ds3.h"
#include <stdlib.h>

/* per window between layers: the residual stream and the output rows (bf16), the selection bitmap */
static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    return S * (uint64_t)c->hidden_size * 4 + S * S;
}

static uint64_t wide(const fd_glm_config *c)
{
    uint64_t H = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size,
             Im = (uint64_t)c->moe_intermediate_size * (uint64_t)c->num_experts_per_tok,
             A = (uint64_t)c->num_attention_heads * (uint64_t)(c->qk_nope_head_dim + c->qk_rope_head_dim + c->v_head_dim),
             X = (uint64_t)c->index_n_heads * (uint64_t)c->index_head_dim;
    uint64_t w = H;
    if (I > w) w = I;
    if (Im > w) w = Im;
    if (A > w) w = A;
    if (X > w) w = X;
    return w;
}

static void free_ext(void *x) { free(x); }

const fd_arch FD_ARCH_DEEPSEEK_V32 = {
    .info = {"deepseek_v32", "DeepseekV32ForCausalLM",
             "DeepSeek V3.2: deepseek_v3 with the DSA lightning indexer (top-k keys per query) on every layer",
             "docs/MODEL-DEEPSEEK.md", "bf16, fp8-block, nvfp4"},
    .prefix = "model.",
    .parse = fd_ds32_parse,
    .free_ext = free_ext,
    .tensors = fd_ds3_tensors,
    .begin = fd_ds3_begin,
    .layer = fd_ds3_layer,
    .end = fd_ds3_end,
    .free_state = fd_ds3_free,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_DEEPSEEK_V32_PRESETS,
};
