/* The tensor set of a qwen4_exp checkpoint as save_pretrained writes it
 * (bf16): qwen3_5_moe's list (arch/qwen3_5/q35_tensors.c) without its
 * RMSNorms (the gated residuals read the streams instead), plus per layer
 * attn_hyper_connection.* and mlp_hyper_connection.*, the QSA indexer of
 * each attention layer, and the final hyper_connection_mixer.* in place of
 * norm.weight. */
#include "engine/arch/qwen4_exp/q4x.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct ex {
    fd_tensor_fn f;
    void *ctx;
    const char *P;
} ex;

/* qwen3_5's list less its input_layernorm, post_attention_layernorm and final norm */
static void filter(void *ctx, const fd_tensor_spec *t)
{
    const ex *x = ctx;
    char nrm[320];
    snprintf(nrm, sizeof nrm, "%snorm.weight", x->P);
    if (strstr(t->name, ".input_layernorm.") || strstr(t->name, ".post_attention_layernorm.") || !strcmp(t->name, nrm))
        return;
    x->f(x->ctx, t);
}

__attribute__((format(printf, 7, 8)))
static void T(const ex *x, int init, int ndim, uint64_t a, uint64_t b, uint64_t cc, const char *fmt, ...)
{
    char name[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    fd_tensor_spec t = {name, "BF16", init, 0, ndim, {a, b, cc, 0, 0}};
    x->f(x->ctx, &t);
}

/* a gated residual under pre (inject: with block_inject_weight) */
static void hc(const ex *x, const fd_q4x_ext *q, uint64_t H, int inject, const char *pre)
{
    uint64_t n = (uint64_t)q->hc, nH = n * H, r = (uint64_t)q->hc_rank;
    T(x, FD_INIT_NORMAL, 1, nH, 0, 0, "%shc_norm.weight", pre);
    T(x, FD_INIT_NORMAL, 2, r, nH, 0, "%sinput_mix_weight_down.weight", pre);
    T(x, FD_INIT_NORMAL, 2, nH, r, 0, "%sinput_mix_weight_up.weight", pre);
    if (inject) T(x, FD_INIT_NORMAL, 2, n, nH, 0, "%sblock_inject_weight.weight", pre);
}

void fd_q4x_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx)
{
    const fd_q4x_ext *q = Q4X(c);
    ex x = {f, ctx, q->q.prefix};
    const char *P = q->q.prefix;
    uint64_t H = (uint64_t)c->hidden_size, di = (uint64_t)q->ix_dim;
    fd_q35_tensors(c, w, filter, &x);
    char pre[360];
    snprintf(pre, sizeof pre, "%shyper_connection_mixer.", P);
    hc(&x, q, H, 0, pre);
    for (long long l = 0; l < c->num_hidden_layers; l++) {
        snprintf(pre, sizeof pre, "%slayers.%lld.attn_hyper_connection.", P, l);
        hc(&x, q, H, 1, pre);
        snprintf(pre, sizeof pre, "%slayers.%lld.mlp_hyper_connection.", P, l);
        hc(&x, q, H, 1, pre);
        if (q->q.linear[l]) continue;
        T(&x, FD_INIT_NORMAL, 2, ((uint64_t)q->ix_heads + 1) * di, H, 0, "%slayers.%lld.self_attn.indexer.index_qk_proj.weight", P, l);
        T(&x, FD_INIT_NORMAL, 1, di, 0, 0, "%slayers.%lld.self_attn.indexer.q_layernorm.weight", P, l);
        T(&x, FD_INIT_NORMAL, 1, di, 0, 0, "%slayers.%lld.self_attn.indexer.k_layernorm.weight", P, l);
    }
}
