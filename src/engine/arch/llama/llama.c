/* model_types llama and qwen3: two entries of the architecture table
 * (engine/model.h) over one forward (llama_internal.h). */
#include "engine/arch/llama/llama_internal.h"

/* per window between layers: the residual stream and the output rows
 * (bf16), the causal selection, the RoPE tables */
static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    return S * (uint64_t)c->hidden_size * 4 + S * S + 2 * S * (uint64_t)c->head_dim;
}

/* the widest activation row of a layer: hidden, the MLP, the query heads,
 * the routed experts of a token (qwen3_moe) */
static uint64_t wide(const fd_glm_config *c)
{
    uint64_t H = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size,
             A = (uint64_t)c->num_attention_heads * (uint64_t)c->head_dim,
             X = (uint64_t)c->moe_intermediate_size * (uint64_t)c->num_experts_per_tok;
    uint64_t w = H > I ? H : I;
    w = w > A ? w : A;
    return w > X ? w : X;
}

const fd_arch FD_ARCH_LLAMA = {
    .info = {"llama", "LlamaForCausalLM",
             "Llama: GQA attention with rotate_half RoPE (default, llama3), SwiGLU MLP, RMSNorm; tied or untied head",
             "docs/MODEL-LLAMA-QWEN.md", "bf16"},
    .prefix = "model.",
    .parse = fd_llama_parse,
    .free_ext = fd_llama_ext_free,
    .tensors = fd_llama_tensors,
    .begin = fd_llama_begin,
    .layer = fd_llama_layer,
    .end = fd_llama_end,
    .free_state = fd_llama_free,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_LLAMA_PRESETS,
};

const fd_arch FD_ARCH_QWEN3 = {
    .info = {"qwen3", "Qwen3ForCausalLM",
             "Qwen3 dense: Llama's block with per-head q_norm / k_norm (RMSNorm over head_dim) before RoPE",
             "docs/MODEL-LLAMA-QWEN.md", "bf16"},
    .prefix = "model.",
    .parse = fd_qwen3_parse,
    .free_ext = fd_llama_ext_free,
    .tensors = fd_llama_tensors,
    .begin = fd_llama_begin,
    .layer = fd_llama_layer,
    .end = fd_llama_end,
    .free_state = fd_llama_free,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_QWEN3_PRESETS,
};

const fd_arch FD_ARCH_QWEN3_MOE = {
    .info = {"qwen3_moe", "Qwen3MoeForCausalLM",
             "Qwen3-MoE: qwen3 attention, softmax-routed top-k experts (norm_topk_prob, no shared expert), dense mlp_only_layers",
             "docs/MODEL-LLAMA-QWEN.md", "bf16"},
    .prefix = "model.",
    .parse = fd_qwen3_moe_parse,
    .free_ext = fd_llama_ext_free,
    .tensors = fd_llama_tensors,
    .begin = fd_llama_begin,
    .layer = fd_llama_layer,
    .end = fd_llama_end,
    .free_state = fd_llama_free,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_QWEN3_MOE_PRESETS,
};
