/* The llama / qwen3 forward (llama_internal.h for every rounding point):
 * begin (embedding, RoPE tables, the causal selection), one decoder layer,
 * end (final RMSNorm).  Only the op library does arithmetic here. */
#include "engine/arch/llama/llama_internal.h"
#include "engine/ops/ops.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct llama_fwd {
    size_t S;
    uint16_t *x;
    unsigned char *sel;
    fd_rope R;
} llama_fwd;

void fd_llama_free(void *st)
{
    llama_fwd *f = st;
    if (!f) return;
    free(f->x); free(f->sel); fd_rope_free(&f->R);
    free(f);
}

uint16_t *fd_llama_stream(const fd_glm_config *c, void *st, size_t *n)
{
    llama_fwd *f = st;
    *n = f->S * (size_t)c->hidden_size;
    return f->x;
}

void *fd_llama_begin(const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, d = (size_t)c->head_dim;
    uint16_t *x0 = fd_op_embed(W, "model.embed_tokens.weight", V, H, ids, S, e);
    if (!x0) return NULL;
    llama_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->x = x0;
    float *inv = fd_xmalloc(d / 2 * sizeof *inv + 4);
    fd_rope_inv_default(inv, d, c->rope_theta);
    const fd_llama_ext *x = LX(c);
    if (!strcmp(c->rope_type, "llama3")) fd_rope_inv_llama3(inv, d, x->factor, x->low_ff, x->high_ff, x->orig_max);
    fd_rope_init_freqs(&f->R, S, d, inv, 1.0); /* attention_scaling 1 (default, llama3) */
    free(inv);
    f->sel = fd_xcalloc(S * S + 1, 1);
    for (size_t t = 0; t < S; t++) memset(f->sel + t * S, 1, t + 1);
    return f;
}

/* x += o_proj(attention(RMSNorm(x))) */
static int attention(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, llama_fwd *f, fd_err *e)
{
    size_t S = f->S, H = (size_t)c->hidden_size, d = (size_t)c->head_dim, nh = (size_t)c->num_attention_heads,
           nkv = (size_t)c->num_key_value_heads;
    int b = c->attention_bias, rc = -1;
    fd_lin qp = {0}, kp = {0}, vp = {0}, op = {0};
    uint16_t *h = NULL, *q = NULL, *k = NULL, *v = NULL, *qn = NULL, *kn = NULL;
    char nm[256];
#define LL(var, n, kk, suffix)                                                \
    snprintf(nm, sizeof nm, "model.layers.%lld.self_attn." suffix, L);        \
    if (fd_lin_load(m, &var, W, e, n, kk, S, b, nm)) goto out;
    LL(qp, nh * d, H, "q_proj")
    LL(kp, nkv * d, H, "k_proj")
    LL(vp, nkv * d, H, "v_proj")
    LL(op, H, nh * d, "o_proj")
#undef LL
    const fd_tensor *ln = fd_op_get(W, e, 1, H, 0, 0, "model.layers.%lld.input_layernorm.weight", L);
    if (!ln) goto out;
    if (LX(c)->qk_norm) {
        const fd_tensor *a = fd_op_get(W, e, 1, d, 0, 0, "model.layers.%lld.self_attn.q_norm.weight", L);
        const fd_tensor *bb = a ? fd_op_get(W, e, 1, d, 0, 0, "model.layers.%lld.self_attn.k_norm.weight", L) : NULL;
        if (!bb) goto out;
        qn = fd_op_vec_bf16(a, 0, d);
        kn = fd_op_vec_bf16(bb, 0, d);
    }
    uint16_t *lw = fd_op_vec_bf16(ln, 0, H);
    h = fd_xmalloc(S * H * 2);
    fd_op_rmsnorm_mm(m, f->x, S, H, lw, (float)c->rms_norm_eps, h);
    free(lw);
    fd_op_dump(L, "attn_in", "bf16", h, S * H * 2);
    q = fd_xmalloc(S * nh * d * 2);
    k = fd_xmalloc(S * nkv * d * 2);
    v = fd_xmalloc(S * nkv * d * 2);
    fd_lin_apply(m, &qp, h, S, q);
    fd_lin_apply(m, &kp, h, S, k);
    fd_lin_apply(m, &vp, h, S, v);
    fd_op_dump(L, "q", "bf16", q, S * nh * d * 2);
    fd_op_dump(L, "k", "bf16", k, S * nkv * d * 2);
    fd_op_dump(L, "v", "bf16", v, S * nkv * d * 2);
    if (qn) { /* qwen3: RMSNorm of each head's head_dim, before RoPE */
        fd_op_rmsnorm_mm(m, q, S * nh, d, qn, (float)c->rms_norm_eps, q);
        fd_op_rmsnorm_mm(m, k, S * nkv, d, kn, (float)c->rms_norm_eps, k);
        fd_op_dump(L, "q_norm", "bf16", q, S * nh * d * 2);
        fd_op_dump(L, "k_norm", "bf16", k, S * nkv * d * 2);
    }
    fd_op_gqa_tail(m, q, k, v, &f->R, f->sel, &op, S, nh, nkv, d, H, f->x, h, L); /* h: the o_proj output */
    rc = 0;
out:
    fd_lin_free(&qp); fd_lin_free(&kp); fd_lin_free(&vp); fd_lin_free(&op);
    free(h); free(q); free(k); free(v); free(qn); free(kn);
    return rc;
}

int fd_llama_layer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    llama_fwd *f = st;
    size_t S = f->S, H = (size_t)c->hidden_size;
    if (attention(m, W, c, L, f, e)) return -1;
    const fd_tensor *pn = fd_op_get(W, e, 1, H, 0, 0, "model.layers.%lld.post_attention_layernorm.weight", L);
    if (!pn) return -1;
    uint16_t *pw = fd_op_vec_bf16(pn, 0, H), *h2 = fd_xmalloc(S * H * 2), *y = fd_xmalloc(S * H * 2);
    fd_op_rmsnorm_mm(m, f->x, S, H, pw, (float)c->rms_norm_eps, h2);
    fd_op_dump(L, "post_ln", "bf16", h2, S * H * 2);
    char pre[128];
    snprintf(pre, sizeof pre, "model.layers.%lld.mlp.", L);
    int rc = c->mlp_sparse[L] ? fd_op_moe_softmax(m, W, pre, H, (size_t)c->n_routed_experts, (size_t)c->moe_intermediate_size,
                                                  (size_t)c->num_experts_per_tok, c->norm_topk_prob, h2, S, y, e)
                              : fd_op_mlp_swiglu(m, W, H, (size_t)c->intermediate_size, LX(c)->mlp_bias, pre, h2, S, y, e);
    if (!rc) {
        fd_op_dump(L, "mlp", "bf16", y, S * H * 2);
        fd_op_residual_add(m, f->x, y, S * H);
        fd_op_dump(L, "layer_out", "bf16", f->x, S * H * 2);
    }
    free(pw); free(h2); free(y);
    return rc;
}

int fd_llama_end(const fd_weights *W, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    llama_fwd *f = st;
    size_t H = (size_t)c->hidden_size;
    const fd_tensor *nrm = fd_op_get(W, e, 1, H, 0, 0, "model.norm.weight");
    if (!nrm) return -1;
    uint16_t *lw = fd_op_vec_bf16(nrm, 0, H);
    fd_op_rmsnorm_mm(NULL, f->x, f->S, H, lw, (float)c->rms_norm_eps, out);
    fd_op_dump(-1, "final", "bf16", out, f->S * H * 2);
    free(lw);
    return 0;
}
