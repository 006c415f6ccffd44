/* model_type kimi_k25 (Kimi_K25ForConditionalGeneration, transformers 5.25:
 * Kimi K2.5 / K2.6): its text model is deepseek_v3 (text_config, model_type
 * deepseek_v3 or the hub's kimi_k2), run by engine/arch/deepseek_v3/'s
 * forward under the prefix language_model.model.; the vision tower and the
 * projector are skipped by name (we capture the text model's final norm
 * output).  On disk: the hub checkpoints spell the layers
 * language_model.model.layers.N., transformers' save_pretrained
 * language_model.model.blocks.N. (the reverse of its blocks -> layers
 * rename), the head language_model.lm_head.weight; the tie of the head is
 * the top-level tie_word_embeddings (default true), not text_config's.
 * docs/MODEL-DEEPSEEK.md §8. */
#include "engine/arch/deepseek_v3/ds3.h"
#include "engine/config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

static int parse(const jv *d, fd_glm_config *c, fd_err *e)
{
    const jv *tc = jv_get(d, "text_config");
    if (!tc || tc->t == JV_NULL) return bad(e, "text_config", "is missing (kimi_k25's text model is its text_config)");
    if (tc->t != JV_OBJ) return bad(e, "text_config", "is not an object");
    const jv *mt = jv_get(tc, "model_type");
    if (mt && mt->t != JV_NULL &&
        (mt->t != JV_STR || (strcmp(mt->u.s.p, "deepseek_v3") && strcmp(mt->u.s.p, "kimi_k2"))))
        return bad(e, "text_config.model_type", "only deepseek_v3 (or the hub's kimi_k2, read as deepseek_v3) is implemented");
    if (fd_ds3_parse(tc, c, e)) {
        if (!strcmp(e->code, "bad_config")) fd_err_prefix(e, "text_config");
        return -1;
    }
    /* Kimi_K25ForConditionalGeneration ties lm_head to the embedding by the top-level field */
    return fd_cfg_bool(d, "tie_word_embeddings", 1, &c->tie_word_embeddings, e);
}

static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    return S * (uint64_t)c->hidden_size * 4 + S * S;
}

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

/* the vision tower and projector of the fixture's vision_config (fixture
 * presets: hidden 32, 1 layer, MLP 64, patch 14, pos_emb 4 x 4, projector
 * 2 x 2 merge), as save_pretrained spells them */
enum { VH = 32, VI = 64, VP = 14, VPOS = 4, VMERGE = 4 };

static void spec(fd_tensor_fn f, void *ctx, const char *name, int init, int ndim, uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
    fd_tensor_spec t = {name, "BF16", init, 0, ndim, {a, b, c, d, 0}};
    f(ctx, &t);
}

static void extra(const fd_glm_config *c, fd_tensor_fn f, void *ctx)
{
    const int N = FD_INIT_NORMAL, O = FD_INIT_ONES, Z = FD_INIT_ZEROS;
    uint64_t H = (uint64_t)c->hidden_size, M = VH * VMERGE;
    spec(f, ctx, "mm_projector.proj.0.weight", N, 2, M, M, 0, 0);
    spec(f, ctx, "mm_projector.proj.0.bias", Z, 1, M, 0, 0, 0);
    spec(f, ctx, "mm_projector.proj.2.weight", N, 2, H, M, 0, 0);
    spec(f, ctx, "mm_projector.proj.2.bias", Z, 1, H, 0, 0, 0);
    spec(f, ctx, "model.mm_projector.pre_norm.weight", O, 1, VH, 0, 0, 0);
    spec(f, ctx, "model.mm_projector.pre_norm.bias", Z, 1, VH, 0, 0, 0);
    const char *b = "vision_tower.encoder.blocks.0.";
    char nm[128];
#define V(suffix, init, nd, a0, a1)                          \
    snprintf(nm, sizeof nm, "%s%s", b, suffix);              \
    spec(f, ctx, nm, init, nd, a0, a1, 0, 0);
    V("mlp.fc0.weight", N, 2, VI, VH)
    V("mlp.fc0.bias", Z, 1, VI, 0)
    V("mlp.fc1.weight", N, 2, VH, VI)
    V("mlp.fc1.bias", Z, 1, VH, 0)
    V("norm0.weight", O, 1, VH, 0)
    V("norm0.bias", Z, 1, VH, 0)
    V("norm1.weight", O, 1, VH, 0)
    V("norm1.bias", Z, 1, VH, 0)
    V("wo.weight", N, 2, VH, VH)
    V("wo.bias", Z, 1, VH, 0)
    V("wqkv.weight", N, 2, 3 * VH, VH)
    V("wqkv.bias", Z, 1, 3 * VH, 0)
#undef V
    spec(f, ctx, "vision_tower.encoder.final_layernorm.weight", O, 1, VH, 0, 0, 0);
    spec(f, ctx, "vision_tower.encoder.final_layernorm.bias", Z, 1, VH, 0, 0, 0);
    spec(f, ctx, "vision_tower.encoder.patch_embed.proj.weight", N, 4, VH, 3, VP, VP);
    spec(f, ctx, "vision_tower.encoder.patch_embed.proj.bias", Z, 1, VH, 0, 0, 0);
    spec(f, ctx, "vision_tower.patch_embed.pos_emb.weight", N, 3, VPOS, VPOS, VH, 0);
}

static const char *const RENAMES[] = {"language_model.model.blocks.", "language_model.model.layers.",
                                       "language_model.lm_head.", "lm_head.", NULL};
static const char *const SKIPPED[] = {"vision_tower.", "mm_projector.", "model.mm_projector.", NULL};

const fd_arch FD_ARCH_KIMI_K25 = {
    .info = {"kimi_k25", "Kimi_K25ForConditionalGeneration",
             "Kimi K2.5: the deepseek_v3 text model of text_config (language_model.model.); vision tower and "
             "projector skipped by name",
             "docs/MODEL-DEEPSEEK.md", "bf16, fp8-block, nvfp4"},
    .prefix = "language_model.model.",
    .parse = parse,
    .free_ext = free_ext,
    .tensors = fd_ds3_tensors,
    .begin = fd_ds3_begin,
    .layer = fd_ds3_layer,
    .end = fd_ds3_end,
    .free_state = fd_ds3_free,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_KIMI_K25_PRESETS,
    .renames = RENAMES,
    .skipped = SKIPPED,
    .extra = extra,
};
