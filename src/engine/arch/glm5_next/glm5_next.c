/* model_type glm5_next (GLM-5.3-Flash, Glm5NextForConditionalGeneration's
 * text forward): the fd_arch of engine/model.h. */
#include "engine/model.h"
#include "engine/arch/glm5_next/next_config.h"
#include "engine/arch/glm5_next/next_forward.h"
#include "engine/arch/glm5_next/next_tensors.h"
#include "engine/gguf_model.h"

extern const fd_gguf_arch FD_GGUF_GLM5_NEXT; /* next_gguf.c */
extern const fd_gguf_stored FD_GGUF_NEXT_STORED;

extern const fd_fixture_preset FD_GLM5_NEXT_PRESETS[]; /* glm5_next_fixture.c */

/* per window between layers: hc_mult residual streams, the output rows,
 * the collapsed input and sublayer output, mHC post / comb, the selection */
static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    uint64_t H = (uint64_t)c->hidden_size, M = (uint64_t)NX(c)->hc_mult;
    return S * M * H * 2 + S * H * 2 + 2 * S * H * 2 + S * M * 4 + S * M * M * 4 + S * S;
}

/* the widest activation row of a layer: hidden x hc_mult, the MLP, the
 * routed experts of a token, the MLA heads, the KDA projections */
static uint64_t wide(const fd_glm_config *c)
{
    const fd_next_ext *x = NX(c);
    uint64_t v[5] = {(uint64_t)c->hidden_size * (uint64_t)x->hc_mult, (uint64_t)c->intermediate_size,
                     (uint64_t)c->moe_intermediate_size * (uint64_t)c->num_experts_per_tok,
                     (uint64_t)c->num_attention_heads * (uint64_t)(c->qk_nope_head_dim + c->v_head_dim),
                     3 * (uint64_t)x->lin_heads * (uint64_t)x->lin_dim};
    uint64_t w = v[0];
    for (int i = 1; i < 5; i++)
        if (v[i] > w) w = v[i];
    return w;
}

const fd_arch FD_ARCH_GLM5_NEXT = {
    .info = {"glm5_next", "Glm5NextForConditionalGeneration (text forward)",
             "GLM-5.3-Flash: NoPE DSA and KDA layers, hyper-connections; text fields under text_config",
             "docs/MODEL-GLM5-NEXT.md", "bf16, gguf"},
    .prefix = FD_NEXT_PREFIX,
    .parse = fd_next_config_parse,
    .gguf = &FD_GGUF_GLM5_NEXT,
    .gguf_stored = &FD_GGUF_NEXT_STORED,
    .free_ext = fd_next_ext_free,
    .tensors = fd_next_tensors,
    .begin = fd_next_begin,
    .layer = fd_next_layer,
    .end = fd_next_end,
    .free_state = fd_next_free,
    .stream = fd_next_stream,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_GLM5_NEXT_PRESETS,
};
