/* model_type glm_moe_dsa (GlmMoeDsaForCausalLM): the fd_arch of engine/model.h. */
#include "engine/arch/glm_moe_dsa/dsa_config.h"
#include "engine/arch/glm_moe_dsa/dsa_forward.h"
#include "engine/model.h"
#include "engine/gguf_model.h"

extern const fd_gguf_arch FD_GGUF_GLM_DSA; /* dsa_gguf.c */
extern const fd_fixture_preset FD_GLM_MOE_DSA_PRESETS[]; /* glm_moe_dsa_fixture.c */

void fd_dsa_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);

/* per window between layers: the residual stream and the output rows (bf16), the selection bitmap */
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

const fd_arch FD_ARCH_GLM_MOE_DSA = {
    .info = {"glm_moe_dsa", "GlmMoeDsaForCausalLM",
             "GLM-5 MoE with DeepSeek sparse attention (MLA + indexer), dense-then-MoE MLP schedule",
             "docs/CAPTURE.md", "bf16, fp8-block, nvfp4, ct-pack, gptq, awq"},
    .prefix = "model.",
    .parse = fd_glm_moe_dsa_parse,
    .free_ext = NULL,
    .tensors = fd_dsa_tensors,
    .begin = fd_dsa_begin,
    .layer = fd_dsa_layer,
    .end = fd_dsa_end,
    .free_state = fd_dsa_free,
    .state_bytes = state_bytes,
    .wide = wide,
    .gguf = &FD_GGUF_GLM_DSA,
    .presets = FD_GLM_MOE_DSA_PRESETS,
};
