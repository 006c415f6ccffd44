/* model_type deepseek_v4 (DeepseekV4ForCausalLM, transformers 5.25): the
 * fd_arch of engine/model.h (docs/MODEL-DEEPSEEK.md §11). */
#include "engine/arch/deepseek_v4/dsv4.h"
#include "engine/gguf_model.h"

extern const fd_fixture_preset FD_DEEPSEEK_V4_PRESETS[]; /* deepseek_v4_fixture.c */
extern const fd_gguf_arch FD_GGUF_DEEPSEEK4;             /* dsv4_gguf.c */

/* the hub's release spelling -> save_pretrained's (the logical names of
 * dsv4_tensors.c); both spellings of one tensor are refused by the loader */
static const char *const RENAMES[] = {
    "^embed.weight", "model.embed_tokens.weight",
    "^norm.weight", "model.norm.weight",
    "^hc_head_", "model.hc_head.hc_",
    "^layers.", "model.layers.",
    /* the release's attention kv norm (transformers reads both: its `.norm.` -> `.kv_norm.` rename) */
    ".attn.kv_norm.weight", ".attn.norm.weight",
    "^head.weight", "lm_head.weight",
    NULL, NULL,
};

/* the MTP block transformers does not instantiate (_keys_to_ignore_on_load_unexpected) */
static const char *const SKIPPED[] = {"mtp.", "model.mtp.", NULL};

/* per window between layers: the hc_mult streams, the collapsed input and
 * the sublayer output, mHC post / comb, the attention's rows (q, kv, the
 * compressed entries, the output heads) */
static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    uint64_t H = (uint64_t)c->hidden_size, M = (uint64_t)V4X(c)->hc_mult, hd = (uint64_t)c->head_dim;
    uint64_t nh = (uint64_t)c->num_attention_heads;
    return S * M * H * 2 + 2 * S * H * 2 + S * M * 4 + S * M * M * 4 + 2 * S * nh * hd * 2 + 4 * S * hd * 2 + S * S;
}

static uint64_t wide(const fd_glm_config *c)
{
    const fd_v4_ext *x = V4X(c);
    uint64_t v[5] = {(uint64_t)c->hidden_size * (uint64_t)x->hc_mult,
                     (uint64_t)c->num_attention_heads * (uint64_t)c->head_dim,
                     (uint64_t)c->moe_intermediate_size * (uint64_t)(c->num_experts_per_tok + 1),
                     (uint64_t)c->index_n_heads * (uint64_t)c->index_head_dim, (uint64_t)x->o_groups * (uint64_t)x->o_lora};
    uint64_t w = v[0];
    for (int i = 1; i < 5; i++)
        if (v[i] > w) w = v[i];
    return w;
}

const fd_arch FD_ARCH_DEEPSEEK_V4 = {
    .info = {"deepseek_v4", "DeepseekV4ForCausalLM",
             "DeepSeek V4: sliding / CSA / HCA attention with compressors and the lightning indexer, mHC streams, "
             "hash and sqrtsoftplus MoE",
             "docs/MODEL-DEEPSEEK.md", "bf16, fp8-block, nvfp4, fp8 + fp4 experts (release), gguf"},
    .prefix = "model.",
    .parse = fd_v4_config_parse,
    .free_ext = fd_v4_ext_free,
    .tensors = fd_v4_tensors,
    .begin = fd_v4_begin,
    .layer = fd_v4_layer,
    .end = fd_v4_end,
    .free_state = fd_v4_free,
    .stream = fd_v4_stream,
    .state_bytes = state_bytes,
    .wide = wide,
    .gguf = &FD_GGUF_DEEPSEEK4,
    .renames = RENAMES,
    .skipped = SKIPPED,
    .presets = FD_DEEPSEEK_V4_PRESETS,
};
