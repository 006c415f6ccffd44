/* The qwen3_5 / qwen3_5_moe forward (q35.h for every rounding point):
 * begin (embedding, the partial RoPE tables, the causal selection), one
 * decoder layer (gated attention or the gated delta net, then the MLP),
 * end (final zero-centred RMSNorm).  Only the op library does arithmetic. */
#include "engine/arch/qwen3_5/q35.h"
#include "engine/ops/ops.h"
#include "engine/ops/reduce.h"
#include "kernels/torch_ops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

typedef struct q35_fwd {
    size_t S;
    uint16_t *x;
    unsigned char *sel;
    fd_rope R;
} q35_fwd;

void fd_q35_free(void *st)
{
    q35_fwd *f = st;
    if (!f) return;
    free(f->x); free(f->sel); fd_rope_free(&f->R);
    free(f);
}

void *fd_q35_begin(const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    const fd_q35_ext *qx = QX(c);
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, rd = (size_t)qx->rot;
    if (S < 1) { fd_fail(e, "bad_usage", "", "empty token sequence"); return NULL; }
    const fd_tensor *emb = fd_op_get(W, e, 2, V, H, 0, "%sembed_tokens.weight", qx->prefix);
    if (!emb) return NULL;
    for (size_t t = 0; t < S; t++)
        if (ids[t] < 0 || (uint64_t)ids[t] >= V) {
            fd_fail(e, "bad_token", "", "token id %lld at position %zu is outside the vocab (%zu)", (long long)ids[t], t, V);
            return NULL;
        }
    q35_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->x = fd_xmalloc(S * H * 2);
    for (size_t t = 0; t < S; t++)
        for (size_t i = 0; i < H; i++) f->x[t * H + i] = fd_tensor_bf16_at(emb, (uint64_t)ids[t] * H + i);
    fd_op_dump(-1, "ids", "i64", ids, S * 8);
    fd_op_dump(-1, "embed", "bf16", f->x, S * H * 2);
    /* inv_freq over the rotary dims only (dim = int(head_dim * partial_rotary_factor)) */
    float *inv = fd_xmalloc(rd / 2 * sizeof *inv + 4);
    fd_rope_inv_default(inv, rd, c->rope_theta);
    fd_rope_init_freqs(&f->R, S, rd, inv, 1.0);
    free(inv);
    f->sel = fd_xcalloc(S * S + 1, 1);
    for (size_t t = 0; t < S; t++) memset(f->sel + t * S, 1, t + 1);
    return f;
}

/* y = o_proj(attention(h) * sigmoid(gate)) (Qwen3_5Attention) under the
 * selection sel (S x S; causal here, causal and QSA-chosen in qwen4_exp) */
void fd_q35_norm(const fd_mm *m, const fd_weights *W, const fd_tensor *t, const uint16_t *x, size_t rows, size_t n, float eps,
                 uint16_t *y)
{
    if (W->gstored) { /* a GGUF's stored 1 + w: the multiplier as the file holds it */
        float *mul = fd_op_vec_f32(t, n);
        fd_op_rmsnorm_mul_mm(m, x, rows, n, mul, eps, y);
        free(mul);
        return;
    }
    uint16_t *w = fd_op_vec_bf16(t, 0, n);
    fd_op_rmsnorm_zc_mm(m, x, rows, n, w, eps, y);
    free(w);
}

int fd_q35_attention(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const fd_rope *R,
                     const unsigned char *sel, size_t S, const uint16_t *h, uint16_t *y, fd_err *e)
{
    const fd_q35_ext *qx = QX(c);
    size_t H = (size_t)c->hidden_size, d = (size_t)c->head_dim, nh = (size_t)c->num_attention_heads,
           nkv = (size_t)c->num_key_value_heads, Q = nh * d;
    int b = c->attention_bias, rc = -1;
    fd_lin qp = {0}, kp = {0}, vp = {0}, op = {0};
    uint16_t *qg = NULL, *q = NULL, *k = NULL, *v = NULL, *o = NULL;
    char nm[300];
#define LL(var, n, kk, suffix)                                                        \
    snprintf(nm, sizeof nm, "%slayers.%lld.self_attn." suffix, qx->prefix, L);       \
    if (fd_lin_load(m, &var, W, e, n, kk, S, b, nm)) goto out;
    LL(qp, 2 * Q, H, "q_proj")
    LL(kp, nkv * d, H, "k_proj")
    LL(vp, nkv * d, H, "v_proj")
    LL(op, H, Q, "o_proj")
#undef LL
    const fd_tensor *a = fd_op_get(W, e, 1, d, 0, 0, "%slayers.%lld.self_attn.q_norm.weight", qx->prefix, L);
    const fd_tensor *bb = a ? fd_op_get(W, e, 1, d, 0, 0, "%slayers.%lld.self_attn.k_norm.weight", qx->prefix, L) : NULL;
    if (!bb) goto out;
    qg = fd_xmalloc(S * 2 * Q * 2);
    q = fd_xmalloc(S * Q * 2);
    uint16_t *gate = fd_xmalloc(S * Q * 2);
    k = fd_xmalloc(S * nkv * d * 2);
    v = fd_xmalloc(S * nkv * d * 2);
    fd_lin_apply(m, &qp, h, S, qg);
    for (size_t t = 0; t < S; t++) /* [S, nh, 2d] chunked: the query, then its gate */
        for (size_t hh = 0; hh < nh; hh++) {
            memcpy(q + (t * nh + hh) * d, qg + (t * nh + hh) * 2 * d, d * 2);
            memcpy(gate + (t * nh + hh) * d, qg + (t * nh + hh) * 2 * d + d, d * 2);
        }
    fd_lin_apply(m, &kp, h, S, k);
    fd_lin_apply(m, &vp, h, S, v);
    fd_q35_norm(m, W, a, q, S * nh, d, (float)c->rms_norm_eps, q);
    fd_q35_norm(m, W, bb, k, S * nkv, d, (float)c->rms_norm_eps, k);
    fd_op_dump(L, "q_norm", "bf16", q, S * Q * 2);
    fd_op_dump(L, "k_norm", "bf16", k, S * nkv * d * 2);
    fd_op_rope_heads(m, q, nh, k, nkv, d, R, S); /* the first rotary dims of each head, the rest passed */
    fd_op_dump(L, "q_rope", "bf16", q, S * Q * 2);
    fd_op_dump(L, "k_rope", "bf16", k, S * nkv * d * 2);
    o = fd_xmalloc(S * Q * 2);
    fd_op_attention_gqa(m, q, k, v, sel, o, S, nh, nkv, d);
    fd_op_dump(L, "attn_core", "bf16", o, S * Q * 2);
    for (size_t i = 0; i < S * Q; i++) { /* o * sigmoid(gate), both bf16 */
        float g = F(gate[i]);
        float s = F(BF(fd_op_torch_vec(i, S * Q, 64) ? fd_torch_sigmoid(g) : fd_torch_sigmoid_tail(g)));
        o[i] = BF(F(o[i]) * s);
    }
    free(gate);
    fd_op_dump(L, "attn_gated", "bf16", o, S * Q * 2);
    fd_lin_apply(m, &op, o, S, y);
    rc = 0;
out:
    fd_lin_free(&qp); fd_lin_free(&kp); fd_lin_free(&vp); fd_lin_free(&op);
    free(qg); free(q); free(k); free(v); free(o);
    return rc;
}

/* Qwen3_5MoeSparseMoeBlock: the routed experts (fd_op_moe_softmax,
 * renormalised) + bf(bf(sigmoid(shared_expert_gate(h))) * shared_expert(h)) */
int fd_q35_moe(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const char *pre, const uint16_t *h,
               size_t S, uint16_t *y, fd_err *e)
{
    size_t H = (size_t)c->hidden_size;
    if (fd_op_moe_softmax(m, W, pre, H, (size_t)c->n_routed_experts, (size_t)c->moe_intermediate_size,
                          (size_t)c->num_experts_per_tok, 1, h, S, y, e))
        return -1;
    fd_op_dump(L, "routed", "bf16", y, S * H * 2);
    char sp[320];
    snprintf(sp, sizeof sp, "%sshared_expert.", pre);
    uint16_t *sh = fd_xmalloc(S * H * 2), *g16 = fd_xmalloc(S * 2 + 2);
    fd_lin sg = {0};
    int rc = -1;
    if (fd_op_mlp_swiglu(m, W, H, (size_t)QX(c)->shared_inter, 0, sp, h, S, sh, e) ||
        fd_op_lin_named(m, S, &sg, W, e, 1, H, "%sshared_expert_gate", pre))
        goto out;
    fd_lin_apply(m, &sg, h, S, g16);
    for (size_t t = 0; t < S; t++) {
        float s = F(BF(fd_op_torch_vec(t, S, 64) ? fd_torch_sigmoid(F(g16[t])) : fd_torch_sigmoid_tail(F(g16[t]))));
        for (size_t i = 0; i < H; i++) sh[t * H + i] = BF(s * F(sh[t * H + i]));
    }
    fd_op_dump(L, "shared", "bf16", sh, S * H * 2);
    for (size_t i = 0; i < S * H; i++) y[i] = BF(F(y[i]) + F(sh[i]));
    rc = 0;
out:
    fd_lin_free(&sg);
    free(sh); free(g16);
    return rc;
}

int fd_q35_layer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    q35_fwd *f = st;
    const fd_q35_ext *qx = QX(c);
    size_t S = f->S, H = (size_t)c->hidden_size;
    const fd_tensor *ln = fd_op_get(W, e, 1, H, 0, 0, "%slayers.%lld.input_layernorm.weight", qx->prefix, L);
    const fd_tensor *pn = ln ? fd_op_get(W, e, 1, H, 0, 0, "%slayers.%lld.post_attention_layernorm.weight", qx->prefix, L) : NULL;
    if (!pn) return -1;
    uint16_t *h = fd_xmalloc(S * H * 2), *y = fd_xmalloc(S * H * 2);
    int rc = -1;
    fd_q35_norm(m, W, ln, f->x, S, H, (float)c->rms_norm_eps, h);
    fd_op_dump(L, "attn_in", "bf16", h, S * H * 2);
    if (qx->linear[L] ? fd_q35_gdn(m, W, c, L, h, S, y, e) : fd_q35_attention(m, W, c, L, &f->R, f->sel, S, h, y, e))
        goto out;
    fd_op_dump(L, "mixer", "bf16", y, S * H * 2);
    fd_op_residual_add(m, f->x, y, S * H);
    fd_op_dump(L, "attn_resid", "bf16", f->x, S * H * 2);
    fd_q35_norm(m, W, pn, f->x, S, H, (float)c->rms_norm_eps, h);
    fd_op_dump(L, "post_ln", "bf16", h, S * H * 2);
    char pre[300];
    snprintf(pre, sizeof pre, "%slayers.%lld.mlp.", qx->prefix, L);
    if (qx->moe ? fd_q35_moe(m, W, c, L, pre, h, S, y, e) : fd_op_mlp_swiglu(m, W, H, (size_t)c->intermediate_size, 0, pre, h, S, y, e))
        goto out;
    fd_op_dump(L, "mlp", "bf16", y, S * H * 2);
    fd_op_residual_add(m, f->x, y, S * H);
    fd_op_dump(L, "layer_out", "bf16", f->x, S * H * 2);
    rc = 0;
out:
    free(h); free(y);
    return rc;
}

int fd_q35_end(const fd_weights *W, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    q35_fwd *f = st;
    size_t H = (size_t)c->hidden_size;
    const fd_tensor *nrm = fd_op_get(W, e, 1, H, 0, 0, "%snorm.weight", QX(c)->prefix);
    if (!nrm) return -1;
    fd_q35_norm(NULL, W, nrm, f->x, f->S, H, (float)c->rms_norm_eps, out);
    fd_op_dump(-1, "final", "bf16", out, f->S * H * 2);
    return 0;
}
