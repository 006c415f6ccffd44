/* The linear-attention token mixer of qwen3_5 (Qwen3_5GatedDeltaNet with
 * the torch fallbacks causal_conv1d_fn and torch_chunk_gated_delta_rule, what
 * runs on CPU without the fla / causal_conv1d packages); rounding points in
 * q35.h and docs/MODEL-QWEN35.md. */
#include "engine/arch/qwen3_5/q35.h"
#include "engine/ops/ops.h"
#include "engine/ops/reduce.h"
#include "kernels/mkl_vml.h"
#include "kernels/torch_ops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

typedef struct gdn_job {
    const float *qkv, *g, *beta;
    float *core;
    size_t S, dk, dv, nv, rep, C, kd;
} gdn_job;

/* value head h: its q / k (key head h / rep, repeat_interleave), v, g and
 * beta columns gathered, the chunked rule; writes core's columns of head h */
static void gdn_head(void *ctx, size_t h, int worker)
{
    (void)worker;
    const gdn_job *J = ctx;
    size_t S = J->S, dk = J->dk, dv = J->dv, kh = h / J->rep, C = J->C;
    float *q = fd_xmalloc(S * dk * 4), *k = fd_xmalloc(S * dk * 4), *v = fd_xmalloc(S * dv * 4), *g = fd_xmalloc(S * 4),
          *b = fd_xmalloc(S * 4), *o = fd_xmalloc(S * dv * 4);
    for (size_t t = 0; t < S; t++) {
        memcpy(q + t * dk, J->qkv + t * C + kh * dk, dk * 4);
        memcpy(k + t * dk, J->qkv + t * C + J->kd + kh * dk, dk * 4);
        memcpy(v + t * dv, J->qkv + t * C + 2 * J->kd + h * dv, dv * 4);
        g[t] = J->g[t * J->nv + h];
        b[t] = J->beta[t * J->nv + h];
    }
    fd_op_gated_delta_chunk(q, k, v, g, b, S, dk, dv, o);
    for (size_t t = 0; t < S; t++) memcpy(J->core + (t * J->nv + h) * dv, o + t * dv, dv * 4);
    free(q); free(k); free(v); free(g); free(b); free(o);
}

int fd_q35_gdn(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *x, size_t S,
               uint16_t *y, fd_err *e)
{
    const fd_q35_ext *qx = QX(c);
    size_t H = (size_t)c->hidden_size, dk = (size_t)qx->dk, dv = (size_t)qx->dv, nk = (size_t)qx->nk, nv = (size_t)qx->nv,
           K = (size_t)qx->conv_k, kd = nk * dk, vd = nv * dv, C = 2 * kd + vd;
    char P[200];
    snprintf(P, sizeof P, "%slayers.%lld.linear_attn", qx->prefix, L);
    fd_lin pq = {0}, pz = {0}, pb = {0}, pa = {0}, op = {0};
    float *cw = NULL, *dt = NULL, *Alog = NULL, *qkv = NULL, *g = NULL, *beta = NULL, *core = NULL;
    uint16_t *nw = NULL, *mix = NULL, *z = NULL, *b16 = NULL, *a16 = NULL, *o = NULL;
    int rc = -1;
    if (fd_op_lin_named(m, S, &pq, W, e, C, H, "%s.in_proj_qkv", P) ||
        fd_op_lin_named(m, S, &pz, W, e, vd, H, "%s.in_proj_z", P) ||
        fd_op_lin_named(m, S, &pb, W, e, nv, H, "%s.in_proj_b", P) ||
        fd_op_lin_named(m, S, &pa, W, e, nv, H, "%s.in_proj_a", P) ||
        fd_op_lin_named(m, S, &op, W, e, H, vd, "%s.out_proj", P))
        goto out;
    const fd_tensor *tc = fd_op_get(W, e, 3, C, 1, K, "%s.conv1d.weight", P);
    const fd_tensor *tdt = tc ? fd_op_get(W, e, 1, nv, 0, 0, "%s.dt_bias", P) : NULL;
    const fd_tensor *tal = tdt ? fd_op_get(W, e, 1, nv, 0, 0, "%s.A_log", P) : NULL;
    const fd_tensor *tnw = tal ? fd_op_get(W, e, 1, dv, 0, 0, "%s.norm.weight", P) : NULL;
    if (!tnw) goto out;
    cw = fd_op_vec_f32(tc, C * K);
    dt = fd_op_vec_f32(tdt, nv);
    Alog = fd_op_vec_f32(tal, nv);
    nw = fd_op_vec_bf16(tnw, 0, dv);
    mix = fd_xmalloc(S * C * 2);
    fd_lin_apply(m, &pq, x, S, mix);
    fd_op_dump(L, "gdn_mixed_qkv", "bf16", mix, S * C * 2);
    /* F.conv1d in bf16 (fp32 accumulation, one rounding), then silu on the
     * bf16 [C, S] slice: rows of S, vector blocks of 64, the rest scalar */
    qkv = fd_xmalloc(S * C * 4);
    fd_op_causal_conv1d(mix, S, C, cw, K, qkv);
    for (size_t t = 0; t < S; t++) {
        int vec = t < S - S % 64;
        for (size_t ch = 0; ch < C; ch++) {
            float a = F(BF(qkv[t * C + ch]));
            qkv[t * C + ch] = F(BF(vec ? fd_torch_silu(a) : fd_torch_silu_tail(a)));
        }
    }
    fd_op_dump(L, "gdn_conv", "f32", qkv, S * C * 4);
    /* beta = sigmoid(b) (bf16); g = -exp(A_log) * softplus(a + dt_bias) (fp32); from a GGUF read as
     * stored (W->gstored) the A_log view holds the converter's ssm_a = -exp(A_log): A itself */
    b16 = fd_xmalloc(S * nv * 2 + 2);
    a16 = fd_xmalloc(S * nv * 2 + 2);
    fd_lin_apply(m, &pb, x, S, b16);
    fd_lin_apply(m, &pa, x, S, a16);
    beta = fd_xmalloc(S * nv * 4);
    g = fd_xmalloc(S * nv * 4);
    for (size_t i = 0; i < S * nv; i++) {
        float bb = F(b16[i]);
        beta[i] = F(BF(fd_op_torch_vec(i, S * nv, 64) ? fd_torch_sigmoid(bb) : fd_torch_sigmoid_tail(bb)));
        float A = W->gstored ? Alog[i % nv] : -fd_mkl_expf(Alog[i % nv]); /* a GGUF's ssm_a: A as stored */
        float sa = F(a16[i]) + dt[i % nv]; /* F.softplus on the [S, nv] fp32 sum: vector blocks of 32 */
        g[i] = A * (fd_op_torch_vec(i, S * nv, 32) ? fd_torch_softplus(sa) : fd_torch_softplus_tail(sa));
    }
    fd_op_dump(L, "gdn_beta", "f32", beta, S * nv * 4);
    fd_op_dump(L, "gdn_g", "f32", g, S * nv * 4);
    core = fd_xmalloc(S * vd * 4);
    gdn_job J = {qkv, g, beta, core, S, dk, dv, nv, nv / nk, C, kd};
    fd_mm_for(m, nv, gdn_head, &J); /* value heads are independent: one task each */
    fd_op_dump(L, "gdn_core", "f32", core, S * vd * 4);
    /* Qwen3_5RMSNormGated per head: bf(w * bf(x * rsqrt(mean(x^2) + eps))) * silu(fp32(z)), then bf16 */
    z = fd_xmalloc(S * vd * 2);
    fd_lin_apply(m, &pz, x, S, z);
    o = fd_xmalloc(S * vd * 2);
    float *sq = fd_xmalloc(dv * 4 + 4), *xs = fd_xmalloc(dv * 4 + 4);
    for (size_t r = 0; r < S * nv; r++) {
        const float *cr = core + r * dv;
        for (size_t j = 0; j < dv; j++) { xs[j] = F(BF(cr[j])); sq[j] = xs[j] * xs[j]; }
        float rs = 1.0f / sqrtf(fd_op_sum_aten(sq, dv) / (float)dv + (float)c->rms_norm_eps);
        for (size_t j = 0; j < dv; j++) {
            size_t i = r * dv + j;
            float hn = F(BF(F(nw[j]) * F(BF(xs[j] * rs))));
            float zf = F(z[i]);
            float sz = fd_op_torch_vec(i, S * vd, 32) ? fd_torch_silu(zf) : fd_torch_silu_tail(zf);
            o[i] = BF(hn * sz);
        }
    }
    free(sq);
    free(xs);
    fd_op_dump(L, "gdn_o", "bf16", o, S * vd * 2);
    fd_lin_apply(m, &op, o, S, y);
    rc = 0;
out:
    fd_lin_free(&pq); fd_lin_free(&pz); fd_lin_free(&pb); fd_lin_free(&pa); fd_lin_free(&op);
    free(cw); free(dt); free(Alog); free(qkv); free(g); free(beta); free(core); free(nw); free(mix); free(z);
    free(b16); free(a16); free(o);
    return rc;
}
