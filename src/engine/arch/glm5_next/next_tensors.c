/* glm5_next expected tensors (next_tensors.h). */
#include "engine/arch/glm5_next/next_tensors.h"
#include "engine/arch/glm5_next/next_config.h"
#include <stdarg.h>
#include <stdio.h>

typedef struct ex {
    fd_tensor_fn f;
    void *ctx;
} ex;

#define N FD_INIT_NORMAL
#define ONE FD_INIT_ONES
#define Z FD_INIT_ZEROS
#define B "BF16"

/* dtype: what save_pretrained writes (the modules transformers keeps in fp32
 * are F32); f32only: the loader accepts nothing else; init: the fixture's */
__attribute__((format(printf, 6, 7)))
static void put(const ex *x, int f32only, const char *dtype, int init, const uint64_t *s, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int nd = 0;
    while (nd < 5 && s[nd]) nd++;
    fd_tensor_spec t = {name, dtype, init, f32only, nd, {0}};
    for (int d = 0; d < nd; d++) t.shape[d] = s[d];
    x->f(x->ctx, &t);
}

#define S(...) ((const uint64_t[6]){__VA_ARGS__, 0})

static void kda(const ex *x, const fd_glm_config *c, const fd_next_ext *n, const char *P)
{
    uint64_t H = (uint64_t)c->hidden_size, nl = (uint64_t)n->lin_heads, dl = (uint64_t)n->lin_dim, Q = nl * dl;
    static const char *const qkv[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) {
        put(x, 0, B, N, S(Q, H), "%sself_attn.%s_proj.weight", P, qkv[i]);
        put(x, 0, "F32", N, S(Q, 1, (uint64_t)n->conv_k), "%sself_attn.%s_conv1d.weight", P, qkv[i]);
    }
    put(x, 0, B, N, S(dl, H), "%sself_attn.f_a_proj.weight", P);
    put(x, 0, B, N, S(Q, dl), "%sself_attn.f_b_proj.weight", P);
    put(x, 0, "F32", FD_INIT_DT_BIAS, S(Q), "%sself_attn.dt_bias", P);
    put(x, 0, "F32", Z, S(nl), "%sself_attn.A_log", P);
    put(x, 0, B, N, S(nl, H), "%sself_attn.b_proj.weight", P);
    put(x, 0, B, N, S(dl, H), "%sself_attn.g_a_proj.weight", P);
    put(x, 0, B, N, S(Q, dl), "%sself_attn.g_b_proj.weight", P);
    put(x, 0, B, ONE, S(dl), "%sself_attn.o_norm.weight", P);
    put(x, 0, B, N, S(H, Q), "%sself_attn.o_proj.weight", P);
}

static void dsa(const ex *x, const fd_glm_config *c, const fd_next_ext *n, const char *P, int full)
{
    uint64_t H = (uint64_t)c->hidden_size, rq = (uint64_t)c->q_lora_rank, rkv = (uint64_t)c->kv_lora_rank,
             nh = (uint64_t)c->num_attention_heads, dn = (uint64_t)c->qk_nope_head_dim, dv = (uint64_t)c->v_head_dim,
             Hi = (uint64_t)c->index_n_heads, Di = (uint64_t)c->index_head_dim;
    put(x, 0, B, N, S(rq, H), "%sself_attn.q_a_proj.weight", P);
    put(x, 0, B, ONE, S(rq), "%sself_attn.q_a_layernorm.weight", P);
    put(x, 0, B, N, S(nh * dn, rq), "%sself_attn.q_b_proj.weight", P);
    put(x, 0, B, N, S(rkv, H), "%sself_attn.kv_a_proj_with_mqa.weight", P);
    put(x, 0, B, ONE, S(rkv), "%sself_attn.kv_a_layernorm.weight", P);
    put(x, 0, B, N, S(nh * (dn + dv), rkv), "%sself_attn.kv_b_proj.weight", P);
    put(x, 0, B, N, S(H, nh * dv), "%sself_attn.o_proj.weight", P);
    if (c->attention_bias) {
        put(x, 0, B, Z, S(rq), "%sself_attn.q_a_proj.bias", P);
        put(x, 0, B, Z, S(rkv), "%sself_attn.kv_a_proj_with_mqa.bias", P);
        put(x, 0, B, Z, S(H), "%sself_attn.o_proj.bias", P);
    }
    if (!full) return;
    put(x, 0, B, N, S(Hi * Di, rq), "%sself_attn.indexer.wq_b.weight", P);
    put(x, 0, B, N, S(Di, H), "%sself_attn.indexer.wk.weight", P);
    put(x, 0, B, ONE, S(Di), "%sself_attn.indexer.k_norm.weight", P);
    put(x, 0, B, Z, S(Di), "%sself_attn.indexer.k_norm.bias", P);
    put(x, 0, B, N, S(Hi, H), "%sself_attn.indexer.weights_proj.weight", P);
    put(x, 0, B, Z, S((uint64_t)n->kpool, Di), "%sself_attn.indexer.index_kpool_compress_ape", P);
    put(x, 0, B, ONE, S(Di, H), "%sself_attn.indexer.index_kpool_compress_gate", P);
}

static void mlp(const ex *x, const fd_glm_config *c, fd_weights *w, long long l, const char *P)
{
    uint64_t H = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size, Im = (uint64_t)c->moe_intermediate_size,
             E = (uint64_t)c->n_routed_experts, Is = Im * (uint64_t)c->n_shared_experts;
    if (!c->mlp_sparse[l]) {
        put(x, 0, B, N, S(I, H), "%smlp.gate_proj.weight", P);
        put(x, 0, B, N, S(I, H), "%smlp.up_proj.weight", P);
        put(x, 0, B, N, S(H, I), "%smlp.down_proj.weight", P);
        return;
    }
    put(x, 0, B, N, S(E, H), "%smlp.gate.weight", P);
    put(x, 1, "F32", Z, S(E), "%smlp.gate.e_score_correction_bias", P);
    char probe[300];
    snprintf(probe, sizeof probe, "%smlp.experts.gate_up_proj", P);
    int fused = w && fd_weights_get(w, probe) != NULL;
    if (w) w->fused[l] = (unsigned char)fused;
    if (fused) {
        put(x, 0, B, N, S(E, 2 * Im, H), "%smlp.experts.gate_up_proj", P);
        put(x, 0, B, N, S(E, H, Im), "%smlp.experts.down_proj", P);
    } else
        for (uint64_t k = 0; k < E; k++) {
            put(x, 0, B, N, S(Im, H), "%smlp.experts.%llu.gate_proj.weight", P, (unsigned long long)k);
            put(x, 0, B, N, S(Im, H), "%smlp.experts.%llu.up_proj.weight", P, (unsigned long long)k);
            put(x, 0, B, N, S(H, Im), "%smlp.experts.%llu.down_proj.weight", P, (unsigned long long)k);
        }
    put(x, 0, B, N, S(Is, H), "%smlp.shared_experts.gate_proj.weight", P);
    put(x, 0, B, N, S(Is, H), "%smlp.shared_experts.up_proj.weight", P);
    put(x, 0, B, N, S(H, Is), "%smlp.shared_experts.down_proj.weight", P);
}

static void vision(const ex *x, const fd_next_ext *n)
{
    uint64_t h = (uint64_t)n->v_hidden, vi = (uint64_t)n->v_inter, o = (uint64_t)n->v_out, pi = (uint64_t)n->v_proj_inter,
             hd = h / (uint64_t)n->v_heads, m = (uint64_t)n->v_merge, p = (uint64_t)n->v_patch;
    const char *V = "model.visual.";
    put(x, 0, B, N, S(h, (uint64_t)n->v_in_ch, (uint64_t)n->v_temporal, p, p), "%spatch_embed.proj.weight", V);
    put(x, 0, B, Z, S(h), "%spatch_embed.proj.bias", V);
    for (long long b = 0; b < n->v_depth; b++) {
        put(x, 0, B, ONE, S(h), "%sblocks.%lld.norm1.weight", V, b);
        put(x, 0, B, ONE, S(h), "%sblocks.%lld.norm2.weight", V, b);
        put(x, 0, B, N, S(3 * h, h), "%sblocks.%lld.attn.qkv.weight", V, b);
        put(x, 0, B, N, S(h, h), "%sblocks.%lld.attn.proj.weight", V, b);
        put(x, 0, B, ONE, S(hd), "%sblocks.%lld.attn.q_norm.weight", V, b);
        put(x, 0, B, ONE, S(hd), "%sblocks.%lld.attn.k_norm.weight", V, b);
        put(x, 0, B, N, S(vi, h), "%sblocks.%lld.mlp.gate_proj.weight", V, b);
        put(x, 0, B, N, S(vi, h), "%sblocks.%lld.mlp.up_proj.weight", V, b);
        put(x, 0, B, N, S(h, vi), "%sblocks.%lld.mlp.down_proj.weight", V, b);
        if (n->v_bias) {
            put(x, 0, B, Z, S(3 * h), "%sblocks.%lld.attn.qkv.bias", V, b);
            put(x, 0, B, Z, S(h), "%sblocks.%lld.attn.proj.bias", V, b);
            put(x, 0, B, Z, S(vi), "%sblocks.%lld.mlp.gate_proj.bias", V, b);
            put(x, 0, B, Z, S(vi), "%sblocks.%lld.mlp.up_proj.bias", V, b);
            put(x, 0, B, Z, S(h), "%sblocks.%lld.mlp.down_proj.bias", V, b);
        }
    }
    put(x, 0, B, ONE, S(h), "%spost_layernorm.weight", V);
    put(x, 0, B, N, S(o, h, m, m), "%sdownsample.weight", V);
    put(x, 0, B, Z, S(o), "%sdownsample.bias", V);
    put(x, 0, B, N, S(o, o), "%smerger.proj.weight", V);
    put(x, 0, B, ONE, S(o), "%smerger.post_projection_norm.weight", V);
    put(x, 0, B, Z, S(o), "%smerger.post_projection_norm.bias", V);
    put(x, 0, B, N, S(pi, o), "%smerger.gate_proj.weight", V);
    put(x, 0, B, N, S(pi, o), "%smerger.up_proj.weight", V);
    put(x, 0, B, N, S(o, pi), "%smerger.down_proj.weight", V);
}

void fd_next_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx)
{
    const fd_next_ext *n = NX(c);
    ex x = {f, ctx};
    uint64_t H = (uint64_t)c->hidden_size, V = (uint64_t)c->vocab_size, m = (uint64_t)n->hc_mult;
    put(&x, 0, B, N, S(V, H), "%s", FD_NEXT_PREFIX "embed_tokens.weight");
    put(&x, 0, B, ONE, S(H), "%s", FD_NEXT_PREFIX "norm.weight");
    if (!c->tie_word_embeddings) put(&x, 0, B, N, S(V, H), "%s", "lm_head.weight");
    for (long long l = 0; l < c->num_hidden_layers; l++) {
        char P[128];
        snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.", l);
        static const char *const site[2] = {"attn", "ffn"};
        for (int s = 0; s < 2; s++) {
            put(&x, 0, B, N, S((2 + m) * m, m * H), "%shc_%s_fn", P, site[s]);
            put(&x, 0, B, Z, S((2 + m) * m), "%shc_%s_base", P, site[s]);
            put(&x, 0, B, ONE, S(3), "%shc_%s_scale", P, site[s]);
        }
        put(&x, 0, B, ONE, S(H), "%sinput_layernorm.weight", P);
        put(&x, 0, B, ONE, S(H), "%spost_attention_layernorm.weight", P);
        if (n->kda[l]) kda(&x, c, n, P);
        else dsa(&x, c, n, P, c->indexer_full[l]);
        mlp(&x, c, w, l, P);
    }
    if (!n->text_only) vision(&x, n);
}
