/* The deepseek_v4 tensor list (docs/MODEL-DEEPSEEK.md §11.3), in the
 * spelling save_pretrained writes (transformers' conversion mapping writes
 * the release names back under `model.`; the head is head.weight, read as
 * lm_head.weight through the arch's renames); the hub's release spelling
 * (no `model.`, embed.weight, norm.weight, hc_head_fn) is renamed to it by
 * the loader (deepseek_v4.c).  Kept-in-fp32 modules are F32 on disk (a BF16
 * copy is accepted: transformers upcasts it exactly); tid2eid is an I64 table
 * bounded by n_routed_experts. */
#include "engine/arch/deepseek_v4/dsv4.h"
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
#define F "F32"

__attribute__((format(printf, 6, 7)))
static void put(const ex *x, int64_t imax, const char *dtype, int init, const uint64_t *s, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int nd = 0;
    while (nd < 5 && s[nd]) nd++;
    (void)imax; /* the loader bounds an I64 table by n_routed_experts (model.h) */
    fd_tensor_spec t = {name, dtype, init, 0, nd, {0}};
    for (int d = 0; d < nd; d++) t.shape[d] = s[d];
    x->f(x->ctx, &t);
}

#define S(...) ((const uint64_t[6]){__VA_ARGS__, 0})

/* a compressor (kv / gate projections of c x d, position bias, norm) */
static void compressor(const ex *x, const char *P, const char *what, uint64_t c, uint64_t d, uint64_t m, uint64_t H)
{
    put(x, 0, B, N, S(c * d, H), "%sattn.%swkv.weight", P, what);
    put(x, 0, B, N, S(c * d, H), "%sattn.%swgate.weight", P, what);
    put(x, 0, F, N, S(m, c * d), "%sattn.%sape", P, what);
    put(x, 0, F, ONE, S(d), "%sattn.%snorm.weight", P, what);
}

void fd_v4_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx)
{
    const fd_v4_ext *v = V4X(c);
    ex x = {f, ctx};
    uint64_t H = (uint64_t)c->hidden_size, V = (uint64_t)c->vocab_size, M = (uint64_t)v->hc_mult, mix = (2 + M) * M;
    uint64_t nh = (uint64_t)c->num_attention_heads, hd = (uint64_t)c->head_dim, qr = (uint64_t)c->q_lora_rank;
    uint64_t og = (uint64_t)v->o_groups, ol = (uint64_t)v->o_lora, E = (uint64_t)c->n_routed_experts;
    uint64_t Im = (uint64_t)c->moe_intermediate_size, K = (uint64_t)c->num_experts_per_tok;
    uint64_t ih = (uint64_t)c->index_n_heads, id = (uint64_t)c->index_head_dim;
    put(&x, 0, B, N, S(V, H), "model.embed_tokens.weight");
    put(&x, 0, F, ONE, S(H), "model.norm.weight");
    /* the head: save_pretrained writes head.weight (w NULL: the fixture writes that spelling); the
     * loader reads it as lm_head.weight (deepseek_v4.c's renames) */
    if (!c->tie_word_embeddings) put(&x, 0, B, N, S(V, H), w ? "lm_head.weight" : "head.weight");
    put(&x, 0, F, N, S(M, M * H), "model.hc_head.hc_fn");
    put(&x, 0, F, N, S(M), "model.hc_head.hc_base");
    put(&x, 0, F, ONE, S(1), "model.hc_head.hc_scale");
    for (long long l = 0; l < c->num_hidden_layers; l++) {
        char P[96];
        snprintf(P, sizeof P, "model.layers.%lld.", l);
        static const char *const site[2] = {"attn", "ffn"};
        for (int s = 0; s < 2; s++) {
            put(&x, 0, F, N, S(mix, M * H), "%shc_%s_fn", P, site[s]);
            put(&x, 0, F, N, S(mix), "%shc_%s_base", P, site[s]);
            put(&x, 0, F, ONE, S(3), "%shc_%s_scale", P, site[s]);
        }
        put(&x, 0, F, ONE, S(H), "%sattn_norm.weight", P);
        put(&x, 0, F, ONE, S(H), "%sffn_norm.weight", P);
        put(&x, 0, B, N, S(qr, H), "%sattn.wq_a.weight", P);
        put(&x, 0, F, ONE, S(qr), "%sattn.q_norm.weight", P);
        put(&x, 0, B, N, S(nh * hd, qr), "%sattn.wq_b.weight", P);
        put(&x, 0, B, N, S(hd, H), "%sattn.wkv.weight", P);
        put(&x, 0, F, ONE, S(hd), "%sattn.norm.weight", P);
        put(&x, 0, B, N, S(og * ol, nh * hd / og), "%sattn.wo_a.weight", P);
        put(&x, 0, B, N, S(H, og * ol), "%sattn.wo_b.weight", P);
        put(&x, 0, F, N, S(nh), "%sattn.attn_sink", P);
        int t = v->type[l];
        if (t != V4_SLIDING)
            compressor(&x, P, "compressor.", t == V4_CSA ? 2 : 1, hd, (uint64_t)(t == V4_CSA ? v->rate_csa : v->rate_hca), H);
        if (t == V4_CSA) {
            compressor(&x, P, "indexer.compressor.", 2, id, (uint64_t)v->rate_csa, H);
            put(&x, 0, B, N, S(ih * id, qr), "%sattn.indexer.wq_b.weight", P);
            put(&x, 0, B, N, S(ih, H), "%sattn.indexer.weights_proj.weight", P);
        }
        put(&x, 0, B, N, S(E, H), "%sffn.gate.weight", P);
        if (v->hash[l]) put(&x, (int64_t)E, "I64", N, S(V, K), "%sffn.gate.tid2eid", P);
        else put(&x, 0, F, N, S(E), "%sffn.gate.bias", P);
        for (uint64_t k = 0; k < E; k++) {
            put(&x, 0, B, N, S(Im, H), "%sffn.experts.%llu.w1.weight", P, (unsigned long long)k);
            put(&x, 0, B, N, S(H, Im), "%sffn.experts.%llu.w2.weight", P, (unsigned long long)k);
            put(&x, 0, B, N, S(Im, H), "%sffn.experts.%llu.w3.weight", P, (unsigned long long)k);
        }
        put(&x, 0, B, N, S(Im, H), "%sffn.shared_experts.w1.weight", P);
        put(&x, 0, B, N, S(H, Im), "%sffn.shared_experts.w2.weight", P);
        put(&x, 0, B, N, S(Im, H), "%sffn.shared_experts.w3.weight", P);
        if (v->mlp_bias) {
            put(&x, 0, B, Z, S(Im), "%sffn.shared_experts.w1.bias", P);
            put(&x, 0, B, Z, S(H), "%sffn.shared_experts.w2.bias", P);
            put(&x, 0, B, Z, S(Im), "%sffn.shared_experts.w3.bias", P);
        }
    }
}
