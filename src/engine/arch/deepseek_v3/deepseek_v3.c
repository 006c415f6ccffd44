/* model_type deepseek_v3 (DeepseekV3ForCausalLM): the fd_arch of engine/model.h (ds3.h). */
#include "engine/arch/deepseek_v3/ds3.h"
#include <stdlib.h>

/* per window between layers: the residual stream and the output rows (bf16), the causal selection */
static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    return S * (uint64_t)c->hidden_size * 4 + S * S;
}

/* the widest activation row of a layer: hidden, the MLP, the routed experts of a token, the heads */
static uint64_t wide(const fd_glm_config *c)
{
    uint64_t H = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size,
             Im = (uint64_t)c->moe_intermediate_size * (uint64_t)c->num_experts_per_tok,
             A = (uint64_t)c->num_attention_heads * (uint64_t)(c->qk_nope_head_dim + c->qk_rope_head_dim + c->v_head_dim);
    uint64_t w = H;
    if (I > w) w = I;
    if (Im > w) w = Im;
    if (A > w) w = A;
    return w;
}

static void free_ext(void *x) { free(x); }

const fd_arch FD_ARCH_DEEPSEEK_V3 = {
    .info = {"deepseek_v3", "DeepseekV3ForCausalLM",
             "DeepSeek V3 / Kimi K2: MLA attention (optional q LoRA, yarn), sigmoid-routed group-limited MoE, "
             "dense-then-MoE MLP schedule",
             "docs/MODEL-DEEPSEEK.md", "bf16, fp8-block, nvfp4"},
    .prefix = "model.",
    .parse = fd_ds3_parse,
    .free_ext = free_ext,
    .tensors = fd_ds3_tensors,
    .begin = fd_ds3_begin,
    .layer = fd_ds3_layer,
    .end = fd_ds3_end,
    .free_state = fd_ds3_free,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_DEEPSEEK_V3_PRESETS,
};
