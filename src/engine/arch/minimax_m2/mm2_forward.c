/* The minimax_m2 forward (mm2.h for every rounding point): begin
 * (embedding, the partial RoPE tables, the causal selection), one decoder
 * layer, end (final RMSNorm).  Only the op library does arithmetic here. */
#include "engine/arch/minimax_m2/mm2.h"
#include "engine/ops/ops.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mm2_fwd {
    size_t S;
    uint16_t *x;
    unsigned char *sel;
    fd_rope R; /* over rotary_dim */
} mm2_fwd;

uint16_t *fd_mm2_stream(const fd_glm_config *c, void *st, size_t *n)
{
    mm2_fwd *f = st;
    *n = f->S * (size_t)c->hidden_size;
    return f->x;
}

void fd_mm2_free(void *st)
{
    mm2_fwd *f = st;
    if (!f) return;
    free(f->x); free(f->sel); fd_rope_free(&f->R);
    free(f);
}

void *fd_mm2_begin(const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, rd = (size_t)MM2(c)->rotary_dim;
    uint16_t *x0 = fd_op_embed(W, "model.embed_tokens.weight", V, H, ids, S, e);
    if (!x0) return NULL;
    mm2_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->x = x0;
    float *inv = fd_xmalloc(rd / 2 * sizeof *inv + 4);
    fd_rope_inv_default(inv, rd, c->rope_theta); /* dim = rotary_dim */
    fd_rope_init_freqs(&f->R, S, rd, inv, 1.0);
    free(inv);
    f->sel = fd_xcalloc(S * S + 1, 1);
    for (size_t t = 0; t < S; t++) memset(f->sel + t * S, 1, t + 1);
    return f;
}

/* x += o_proj(attention(RMSNorm(x))) */
static int attention(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, mm2_fwd *f, fd_err *e)
{
    size_t S = f->S, H = (size_t)c->hidden_size, d = (size_t)c->head_dim, nh = (size_t)c->num_attention_heads,
           nkv = (size_t)c->num_key_value_heads;
    int rc = -1;
    fd_lin qp = {0}, kp = {0}, vp = {0}, op = {0};
    uint16_t *h = NULL, *q = NULL, *k = NULL, *v = NULL, *qn = NULL, *kn = NULL;
    char nm[256];
#define LL(var, n, kk, suffix)                                                \
    snprintf(nm, sizeof nm, "model.layers.%lld.self_attn." suffix, L);        \
    if (fd_lin_load(m, &var, W, e, n, kk, S, 0, nm)) goto out;
    LL(qp, nh * d, H, "q_proj")
    LL(kp, nkv * d, H, "k_proj")
    LL(vp, nkv * d, H, "v_proj")
    LL(op, H, nh * d, "o_proj")
#undef LL
    const fd_tensor *ln = fd_op_get(W, e, 1, H, 0, 0, "model.layers.%lld.input_layernorm.weight", L);
    const fd_tensor *qw = ln ? fd_op_get(W, e, 1, nh * d, 0, 0, "model.layers.%lld.self_attn.q_norm.weight", L) : NULL;
    const fd_tensor *kw = qw ? fd_op_get(W, e, 1, nkv * d, 0, 0, "model.layers.%lld.self_attn.k_norm.weight", L) : NULL;
    if (!kw) goto out;
    qn = fd_op_vec_bf16(qw, 0, nh * d);
    kn = fd_op_vec_bf16(kw, 0, nkv * d);
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
    /* q_norm / k_norm: one RMSNorm over all heads of a token */
    fd_op_rmsnorm_mm(m, q, S, nh * d, qn, (float)c->rms_norm_eps, q);
    fd_op_rmsnorm_mm(m, k, S, nkv * d, kn, (float)c->rms_norm_eps, k);
    fd_op_dump(L, "q_norm", "bf16", q, S * nh * d * 2);
    fd_op_dump(L, "k_norm", "bf16", k, S * nkv * d * 2);
    fd_op_gqa_tail(m, q, k, v, &f->R, f->sel, &op, S, nh, nkv, d, H, f->x, h, L); /* h: the o_proj output */
    rc = 0;
out:
    fd_lin_free(&qp); fd_lin_free(&kp); fd_lin_free(&vp); fd_lin_free(&op);
    free(h); free(q); free(k); free(v); free(qn); free(kn);
    return rc;
}

int fd_mm2_layer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    mm2_fwd *f = st;
    size_t S = f->S, H = (size_t)c->hidden_size, E = (size_t)c->n_routed_experts, k = (size_t)c->num_experts_per_tok;
    if (attention(m, W, c, L, f, e)) return -1;
    const fd_tensor *pn = fd_op_get(W, e, 1, H, 0, 0, "model.layers.%lld.post_attention_layernorm.weight", L);
    if (!pn) return -1;
    uint16_t *pw = fd_op_vec_bf16(pn, 0, H), *h2 = fd_xmalloc(S * H * 2), *y = fd_xmalloc(S * H * 2);
    fd_op_rmsnorm_mm(m, f->x, S, H, pw, (float)c->rms_norm_eps, h2);
    fd_op_dump(L, "post_ln", "bf16", h2, S * H * 2);
    char pre[128];
    snprintf(pre, sizeof pre, "model.layers.%lld.block_sparse_moe.", L);
    static const char *const part[3] = {"w1", "w3", "w2"};
    uint16_t *lg = fd_xmalloc(S * E * 2 + 2);
    size_t *sx = fd_xmalloc(S * k * sizeof *sx + 8);
    int rc = fd_op_moe_sigmoid(m, W, pre, part, H, E, (size_t)c->moe_intermediate_size, k, h2, S, y, lg, sx, e);
    if (!rc) {
        fd_op_dump(L, "router_logits", "bf16", lg, S * E * 2);
        fd_op_dump(L, "experts", "i64", sx, S * k * sizeof *sx); /* the top-k experts, slot order */
        fd_op_dump(L, "mlp", "bf16", y, S * H * 2);
        fd_op_residual_add(m, f->x, y, S * H);
        fd_op_dump(L, "layer_out", "bf16", f->x, S * H * 2);
    }
    free(pw); free(h2); free(y); free(lg); free(sx);
    return rc;
}

int fd_mm2_end(const fd_weights *W, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    mm2_fwd *f = st;
    size_t H = (size_t)c->hidden_size;
    const fd_tensor *nrm = fd_op_get(W, e, 1, H, 0, 0, "model.norm.weight");
    if (!nrm) return -1;
    uint16_t *lw = fd_op_vec_bf16(nrm, 0, H);
    fd_op_rmsnorm_mm(NULL, f->x, f->S, H, lw, (float)c->rms_norm_eps, out);
    fd_op_dump(-1, "final", "bf16", out, f->S * H * 2);
    free(lw);
    return 0;
}
