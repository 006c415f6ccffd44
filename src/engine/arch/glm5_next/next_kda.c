/* KDA linear attention of glm5_next (Glm5NextTextLinearAttention with the
 * torch fallbacks causal_conv1d_fn and chunk_kimi_delta_attention, which is
 * what runs on CPU without the fla / kernels packages).  Rounding points in
 * docs/MODEL-GLM5-NEXT.md §3.3. */
#include "engine/arch/glm5_next/next_internal.h"
#include "kernels/mkl_vml.h"
#include "kernels/torch_ops.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CH = 64 }; /* chunk_size of chunk_kimi_delta_attention */

/* x / sqrt(sum(x*x) + 1e-6) in place (FLA's l2norm: + eps, not max). */
static void l2norm(float *x, size_t n)
{
    float sq[1024] = {0};
    for (size_t i = 0; i < n; i++) sq[i] = x[i] * x[i];
    float r = fd_mkl_sqrtf(fd_op_sum_aten(sq, n) + 1e-6f); /* torch.sqrt: MKL vsSqrt */
    for (size_t i = 0; i < n; i++) x[i] = x[i] / r;
}

/* One head of chunk_kimi_delta_attention: q, k, v, g [S][d] fp32 (q, k
 * already l2-normalised), beta [S]; out [S][d] fp32. */
static void chunk_kda_head(const float *q0, const float *k0, const float *v0, const float *g0, const float *beta0, size_t S,
                           size_t d, float *out)
{
    size_t nc = (S + CH - 1) / CH, T = nc * CH;
    float scale = (float)(1.0 / sqrt((double)d));
    float *q = fd_xcalloc(T * d, 4), *k = fd_xcalloc(T * d, 4), *kb = fd_xcalloc(T * d, 4), *vb = fd_xcalloc(T * d, 4),
          *G = fd_xcalloc(T * d, 4);
    for (size_t t = 0; t < S; t++)
        for (size_t j = 0; j < d; j++) {
            q[t * d + j] = q0[t * d + j] * scale;
            k[t * d + j] = k0[t * d + j];
            vb[t * d + j] = v0[t * d + j] * beta0[t];
            kb[t * d + j] = k0[t * d + j] * beta0[t];
            G[t * d + j] = g0[t * d + j];
        }
    for (size_t c = 0; c < nc; c++) /* cumsum within the chunk: ATen accumulates fp32 in double */
        for (size_t j = 0; j < d; j++) {
            double acc = 0.0;
            for (size_t i = 0; i < CH; i++) {
                acc += G[(c * CH + i) * d + j];
                G[(c * CH + i) * d + j] = (float)acc;
            }
        }
    float *dm = fd_xmalloc(CH * CH * d * 4), *A = fd_xmalloc(CH * CH * 4), *tmp = fd_xmalloc(d * 4 + 4),
          *row = fd_xmalloc(CH * 4), *val = fd_xmalloc(CH * d * 4), *kcd = fd_xmalloc(CH * d * 4),
          *kbg = fd_xmalloc(CH * d * 4), *st = fd_xcalloc(d * d, 4), *vn = fd_xmalloc(CH * d * 4),
          *qg = fd_xmalloc(CH * d * 4), *ai = fd_xmalloc(CH * CH * 4), *kk = fd_xmalloc(CH * d * 4), *ns = fd_xmalloc(d * d * 4), *prod = fd_xmalloc(CH * CH * 4),
          *eG = fd_xmalloc(CH * d * 4);
    for (size_t c = 0; c < nc; c++) {
        const float *Gc = G + c * CH * d, *kc = k + c * CH * d, *kbc = kb + c * CH * d, *qc = q + c * CH * d,
                    *vbc = vb + c * CH * d;
        for (size_t i = 0; i < CH; i++)
            for (size_t j = 0; j < CH; j++) {
                float *dij = dm + (i * CH + j) * d;
                for (size_t x = 0; x < d; x++) dij[x] = Gc[i * d + x] - Gc[j * d + x];
                fd_mkl_expf_n(dij, dij, d);
            }
        /* attn = -(k_beta_i * k_j * decay).sum(-1), zero on and above the diagonal */
        for (size_t i = 0; i < CH; i++)
            for (size_t j = 0; j < CH; j++) {
                if (j >= i) { A[i * CH + j] = 0.0f; continue; }
                for (size_t x = 0; x < d; x++) tmp[x] = kbc[i * d + x] * kc[j * d + x] * dm[(i * CH + j) * d + x];
                A[i * CH + j] = -fd_op_sum_aten(tmp, d);
            }
        for (size_t i = 1; i < CH; i++) { /* row + (row[j] * A[j][:i]).sum over j (an outer reduction) */
            memcpy(row, A + i * CH, i * 4);
            for (size_t j = 0; j < i; j++)
                for (size_t mm = 0; mm < i; mm++) prod[j * CH + mm] = row[j] * A[j * CH + mm];
            for (size_t mm = 0; mm < i; mm++) A[i * CH + mm] = row[mm] + fd_op_sum_outer(prod + mm, CH, i, mm, i);
        }
        for (size_t i = 0; i < CH; i++) A[i * CH + i] += 1.0f;
        fd_mkl_expf_n(Gc, eG, CH * d); /* exp(G), used twice below */
        for (size_t t = 0; t < CH; t++)
            for (size_t x = 0; x < d; x++) kbg[t * d + x] = kbc[t * d + x] * eG[t * d + x];
        for (size_t i = 0; i < CH; i++)
            for (size_t x = 0; x < d; x++) {
                val[i * d + x] = fd_op_chain32(A + i * CH, 1, vbc + x, d, CH);
                kcd[i * d + x] = fd_op_chain32(A + i * CH, 1, kbg + x, d, CH);
            }
        /* inter/intra chunk with the running state st [d_k][d_v] */
        for (size_t t = 0; t < CH; t++)
            for (size_t x = 0; x < d; x++) qg[t * d + x] = qc[t * d + x] * eG[t * d + x];
        for (size_t i = 0; i < CH; i++)
            for (size_t j = 0; j < CH; j++) {
                if (j > i) { ai[i * CH + j] = 0.0f; continue; }
                for (size_t x = 0; x < d; x++) tmp[x] = qc[i * d + x] * kc[j * d + x] * dm[(i * CH + j) * d + x];
                ai[i * CH + j] = fd_op_sum_aten(tmp, d);
            }
        for (size_t t = 0; t < CH; t++)
            for (size_t x = 0; x < d; x++) vn[t * d + x] = val[t * d + x] - fd_op_chain32(kcd + t * d, 1, st + x, d, d);
        for (size_t t = 0; t < CH; t++) {
            size_t gt = c * CH + t;
            for (size_t x = 0; x < d; x++) {
                float inter = fd_op_chain32(qg + t * d, 1, st + x, d, d);
                float intra = fd_op_chain32(ai + t * CH, 1, vn + x, d, CH);
                if (gt < S) out[gt * d + x] = inter + intra;
            }
        }
        const float *gl = Gc + (CH - 1) * d;
        for (size_t t = 0; t < CH; t++) {
            for (size_t x = 0; x < d; x++) eG[t * d + x] = gl[x] - Gc[t * d + x];
            fd_mkl_expf_n(eG + t * d, eG + t * d, d);
            for (size_t x = 0; x < d; x++) kk[t * d + x] = kc[t * d + x] * eG[t * d + x];
        }
        fd_mkl_expf_n(gl, eG, d);
        for (size_t a = 0; a < d; a++)
            for (size_t b = 0; b < d; b++) ns[a * d + b] = st[a * d + b] * eG[a] + fd_op_chain32(kk + a, d, vn + b, d, CH);
        memcpy(st, ns, d * d * 4);
    }
    free(q); free(k); free(kb); free(vb); free(G); free(dm); free(A); free(tmp); free(row); free(val); free(kcd);
    free(kbg); free(st); free(vn); free(qg); free(ai); free(kk); free(ns); free(prod); free(eG);
}

typedef struct kda_job {
    const float *qkv, *g, *beta;
    float *core;
    size_t S, d, nh, Q;
} kda_job;

/* head h: its q, k, v, g columns gathered, l2norm(q), l2norm(k), the
 * chunked delta rule; writes core's columns of head h only */
static void kda_head_task(void *ctx, size_t h, int worker)
{
    (void)worker;
    const kda_job *J = ctx;
    size_t S = J->S, d = J->d, nh = J->nh, Q = J->Q;
    float *hq = fd_xmalloc(S * d * 4), *hk = fd_xmalloc(S * d * 4), *hv = fd_xmalloc(S * d * 4), *hg = fd_xmalloc(S * d * 4),
          *hb = fd_xmalloc(S * 4), *ho = fd_xmalloc(S * d * 4);
    for (size_t t = 0; t < S; t++) {
        memcpy(hq + t * d, J->qkv + t * 3 * Q + h * d, d * 4);
        memcpy(hk + t * d, J->qkv + t * 3 * Q + Q + h * d, d * 4);
        memcpy(hv + t * d, J->qkv + t * 3 * Q + 2 * Q + h * d, d * 4);
        memcpy(hg + t * d, J->g + t * Q + h * d, d * 4);
        hb[t] = J->beta[t * nh + h];
        l2norm(hq + t * d, d);
        l2norm(hk + t * d, d);
    }
    chunk_kda_head(hq, hk, hv, hg, hb, S, d, ho);
    for (size_t t = 0; t < S; t++) memcpy(J->core + t * Q + h * d, ho + t * d, d * 4);
    free(hq); free(hk); free(hv); free(hg); free(hb); free(ho);
}

int nx_kda(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *x, size_t S, uint16_t *y,
           fd_err *e)
{
    const fd_next_ext *nx = NX(c);
    size_t H = (size_t)c->hidden_size, nh = (size_t)nx->lin_heads, d = (size_t)nx->lin_dim, Q = nh * d, K = (size_t)nx->conv_k;
    if (d > 1024) return fd_fail(e, "bad_config", "", "glm5_next: linear_head_dim > 1024 is not supported");
    char P[160];
    snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.self_attn", L);
    fd_lin lq = {0}, lk = {0}, lv = {0}, fa = {0}, fb = {0}, bp = {0}, ga = {0}, gb = {0}, op = {0};
    float *cw = NULL, *dt = NULL, *Alog = NULL, *qkv = NULL, *g = NULL, *beta = NULL, *core = NULL;
    uint16_t *ow = NULL, *mix = NULL, *t16 = NULL, *gate = NULL, *o = NULL;
    int rc = -1;
    if (fd_op_lin_named(m, S, &lq, W, e, Q, H, "%s.q_proj", P) ||
        fd_op_lin_named(m, S, &lk, W, e, Q, H, "%s.k_proj", P) ||
        fd_op_lin_named(m, S, &lv, W, e, Q, H, "%s.v_proj", P) ||
        fd_op_lin_named(m, S, &fa, W, e, d, H, "%s.f_a_proj", P) ||
        fd_op_lin_named(m, S, &fb, W, e, Q, d, "%s.f_b_proj", P) ||
        fd_op_lin_named(m, S, &bp, W, e, nh, H, "%s.b_proj", P) ||
        fd_op_lin_named(m, S, &ga, W, e, d, H, "%s.g_a_proj", P) ||
        fd_op_lin_named(m, S, &gb, W, e, Q, d, "%s.g_b_proj", P) ||
        fd_op_lin_named(m, S, &op, W, e, H, Q, "%s.o_proj", P))
        goto out;
    cw = fd_xmalloc(3 * Q * K * 4);
    static const char *const nm[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) { /* conv1d is kept in fp32 (_keep_in_fp32_modules_strict) */
        const fd_tensor *t = fd_op_get(W, e, 3, Q, 1, K, "%s.%s_conv1d.weight", P, nm[i]);
        if (!t) goto out;
        for (size_t j = 0; j < Q * K; j++) cw[i * Q * K + j] = fd_tensor_f32_at(t, j);
    }
    const fd_tensor *tdt = fd_op_get(W, e, 1, Q, 0, 0, "%s.dt_bias", P);
    const fd_tensor *tal = tdt ? fd_op_get(W, e, 1, nh, 0, 0, "%s.A_log", P) : NULL;
    const fd_tensor *tow = tal ? fd_op_get(W, e, 1, d, 0, 0, "%s.o_norm.weight", P) : NULL;
    if (!tow) goto out;
    dt = fd_op_vec_f32(tdt, Q);
    Alog = fd_op_vec_f32(tal, nh);
    ow = fd_op_vec_bf16(tow, 0, d);
    /* q/k/v projections, causal depthwise conv (fp32: one FMA chain over the taps in
     * order, oneDNN's order, measured), silu, bf16 */
    mix = fd_xmalloc(S * 3 * Q * 2);
    t16 = fd_xmalloc(S * Q * 2 + 2);
    const fd_lin *pr[3] = {&lq, &lk, &lv};
    for (int i = 0; i < 3; i++) {
        fd_lin_apply(m, pr[i], x, S, t16);
        for (size_t t = 0; t < S; t++) memcpy(mix + (t * 3 + (size_t)i) * Q, t16 + t * Q, Q * 2);
    }
    qkv = fd_xmalloc(S * 3 * Q * 4);
    fd_op_causal_conv1d(mix, S, 3 * Q, cw, K, qkv);
    for (size_t ch = 0; ch < 3 * Q; ch++)
        for (size_t t = 0; t < S; t++) {
            /* silu on the [3Q, S] (channel-major) fp32 conv output */
            float acc = qkv[t * 3 * Q + ch];
            float a = fd_op_torch_vec(ch * S + t, 3 * Q * S, 32) ? fd_torch_silu(acc) : fd_torch_silu_tail(acc);
            qkv[t * 3 * Q + ch] = F(BF(a));
        }
    fd_op_dump(L, "kda_qkv", "f32", qkv, S * 3 * Q * 4);
    /* forget gate (safe lower bound): lower * sigmoid(exp(A_log) * (f_b(f_a(x)) + dt_bias)), fp32 */
    uint16_t *fa16 = fd_xmalloc(S * d * 2 + 2);
    fd_lin_apply(m, &fa, x, S, fa16);
    fd_lin_apply(m, &fb, fa16, S, t16);
    free(fa16);
    g = fd_xmalloc(S * Q * 4);
    for (size_t t = 0; t < S; t++)
        for (size_t ch = 0; ch < Q; ch++) {
            float A = fd_mkl_expf(Alog[ch / d]); /* torch.exp: MKL vsExp */
            g[t * Q + ch] = (float)nx->lower * fd_op_sigmoid_at(A * (F(t16[t * Q + ch]) + dt[ch]), t * Q + ch, S * Q);
        }
    fd_op_dump(L, "kda_g", "f32", g, S * Q * 4);
    uint16_t *b16 = fd_xmalloc(S * nh * 2 + 2);
    fd_lin_apply(m, &bp, x, S, b16);
    beta = fd_xmalloc(S * nh * 4);
    for (size_t i = 0; i < S * nh; i++) /* bf16 sigmoid kernel: vector blocks of 64 */
        beta[i] = F(BF(fd_op_torch_vec(i, S * nh, 64) ? fd_torch_sigmoid(F(b16[i])) : fd_torch_sigmoid_tail(F(b16[i]))));
    free(b16);
    fd_op_dump(L, "kda_beta", "f32", beta, S * nh * 4);
    /* per head: l2norm(q), l2norm(k), chunked delta rule */
    core = fd_xmalloc(S * Q * 4);
    kda_job kj = {qkv, g, beta, core, S, d, nh, Q};
    fd_mm_for(m, nh, kda_head_task, &kj); /* heads are independent: one task each */
    /* gated RMSNorm per head (fp32, weight not downcast), o_proj */
    uint16_t *ga16 = fd_xmalloc(S * d * 2 + 2);
    gate = fd_xmalloc(S * Q * 2);
    fd_lin_apply(m, &ga, x, S, ga16);
    fd_lin_apply(m, &gb, ga16, S, gate);
    free(ga16);
    o = fd_xmalloc(S * Q * 2);
    float sq[1024], xs[1024];
    for (size_t t = 0; t < S; t++)
        for (size_t h = 0; h < nh; h++) {
            const float *cr = core + t * Q + h * d;
            for (size_t j = 0; j < d; j++) { xs[j] = F(BF(cr[j])); sq[j] = xs[j] * xs[j]; }
            float r = 1.0f / sqrtf(fd_op_sum_aten(sq, d) / (float)d + (float)c->rms_norm_eps);
            for (size_t j = 0; j < d; j++) {
                float v = F(ow[j]) * (xs[j] * r);
                o[t * Q + h * d + j] = BF(v * fd_op_sigmoid_at(F(gate[t * Q + h * d + j]), t * Q + h * d + j, S * Q));
            }
        }
    fd_op_dump(L, "kda_core", "f32", core, S * Q * 4);
    fd_op_dump(L, "kda_gate", "bf16", gate, S * Q * 2);
    fd_op_dump(L, "kda_o", "bf16", o, S * Q * 2);
    fd_lin_apply(m, &op, o, S, y);
    rc = 0;
out:
    fd_lin_free(&lq); fd_lin_free(&lk); fd_lin_free(&lv); fd_lin_free(&fa); fd_lin_free(&fb); fd_lin_free(&bp);
    fd_lin_free(&ga); fd_lin_free(&gb); fd_lin_free(&op);
    free(cw); free(dt); free(Alog); free(qkv); free(g); free(beta); free(core); free(ow); free(mix); free(t16); free(gate);
    free(o);
    return rc;
}
