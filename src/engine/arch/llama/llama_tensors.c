/* The tensor set of a llama / qwen3 checkpoint as save_pretrained writes it
 * (bf16): the one list the loader's check and the fixture writer read
 * (engine/model.h). */
#include "engine/arch/llama/llama_internal.h"
#include <stdarg.h>
#include <stdio.h>

typedef struct ex {
    fd_tensor_fn f;
    void *ctx;
} ex;

__attribute__((format(printf, 6, 7)))
static void T(const ex *x, int init, int ndim, uint64_t a, uint64_t b, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    fd_tensor_spec t = {name, "BF16", init, 0, ndim, {a, b, 0, 0, 0}};
    x->f(x->ctx, &t);
}

#define N FD_INIT_NORMAL
#define ONE FD_INIT_ONES
#define Z FD_INIT_ZEROS

void fd_llama_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx)
{
    ex x = {f, ctx};
    const fd_llama_ext *lx = LX(c);
    uint64_t H = (uint64_t)c->hidden_size, V = (uint64_t)c->vocab_size, I = (uint64_t)c->intermediate_size,
             d = (uint64_t)c->head_dim, Q = (uint64_t)c->num_attention_heads * d, K = (uint64_t)c->num_key_value_heads * d;
    T(&x, N, 2, V, H, "model.embed_tokens.weight");
    T(&x, ONE, 1, H, 0, "model.norm.weight");
    if (!c->tie_word_embeddings) T(&x, N, 2, V, H, "lm_head.weight");
    for (long long l = 0; l < c->num_hidden_layers; l++) {
        const char *p = "model.layers.";
        T(&x, ONE, 1, H, 0, "%s%lld.input_layernorm.weight", p, l);
        T(&x, ONE, 1, H, 0, "%s%lld.post_attention_layernorm.weight", p, l);
        static const char *const proj[3] = {"q", "k", "v"};
        for (int i = 0; i < 3; i++) {
            uint64_t n = i ? K : Q;
            T(&x, N, 2, n, H, "%s%lld.self_attn.%s_proj.weight", p, l, proj[i]);
            if (c->attention_bias) T(&x, Z, 1, n, 0, "%s%lld.self_attn.%s_proj.bias", p, l, proj[i]);
        }
        T(&x, N, 2, H, Q, "%s%lld.self_attn.o_proj.weight", p, l);
        if (c->attention_bias) T(&x, Z, 1, H, 0, "%s%lld.self_attn.o_proj.bias", p, l);
        if (lx->qk_norm) {
            T(&x, ONE, 1, d, 0, "%s%lld.self_attn.q_norm.weight", p, l);
            T(&x, ONE, 1, d, 0, "%s%lld.self_attn.k_norm.weight", p, l);
        }
        static const char *const mlp[3] = {"gate", "up", "down"};
        if (c->mlp_sparse[l]) { /* qwen3_moe: the router and the experts (either on-disk spelling) */
            uint64_t E = (uint64_t)c->n_routed_experts, Im = (uint64_t)c->moe_intermediate_size;
            T(&x, N, 2, E, H, "%s%lld.mlp.gate.weight", p, l);
            char probe[160];
            snprintf(probe, sizeof probe, "%s%lld.mlp.experts.gate_up_proj", p, l);
            int fused = w && fd_weights_get(w, probe) != NULL;
            if (w) w->fused[l] = (unsigned char)fused;
            if (fused) {
                fd_tensor_spec gu = {probe, "BF16", N, 0, 3, {E, 2 * Im, H, 0, 0}};
                f(ctx, &gu);
                char dn[160];
                snprintf(dn, sizeof dn, "%s%lld.mlp.experts.down_proj", p, l);
                fd_tensor_spec dp = {dn, "BF16", N, 0, 3, {E, H, Im, 0, 0}};
                f(ctx, &dp);
            } else
                for (uint64_t k = 0; k < E; k++)
                    for (int i = 0; i < 3; i++)
                        T(&x, N, 2, i == 2 ? H : Im, i == 2 ? Im : H, "%s%lld.mlp.experts.%llu.%s_proj.weight", p, l,
                          (unsigned long long)k, mlp[i]);
            continue;
        }
        for (int i = 0; i < 3; i++) {
            T(&x, N, 2, i == 2 ? H : I, i == 2 ? I : H, "%s%lld.mlp.%s_proj.weight", p, l, mlp[i]);
            if (lx->mlp_bias) T(&x, Z, 1, i == 2 ? H : I, 0, "%s%lld.mlp.%s_proj.bias", p, l, mlp[i]);
        }
    }
}
