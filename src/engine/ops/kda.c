/* KDA linear attention ops (kda.h): moved from glm5_next's next_kda.c, the
 * same code and bits. */
#include "engine/ops/kda.h"
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

enum { CH = 64 }; /* chunk_size of chunk_kimi_delta_attention */

/* x / sqrt(sum(x*x) + 1e-6) in place (FLA's l2norm: + eps, not max). */
static void l2norm(enum fd_vml v, float *x, size_t n)
{
    float sq[1024] = {0};
    for (size_t i = 0; i < n; i++) sq[i] = x[i] * x[i];
    float r = fd_vml_sqrtf(v, fd_op_sum_aten(sq, n) + 1e-6f); /* torch.sqrt: MKL vsSqrt */
    for (size_t i = 0; i < n; i++) x[i] = x[i] / r;
}

/* One head of chunk_kimi_delta_attention: q, k, v, g [S][d] fp32 (q, k
 * already l2-normalised), beta [S]; out [S][d] fp32. */
static void chunk_kda_head(enum fd_vml v, const float *q0, const float *k0, const float *v0, const float *g0,
                           const float *beta0, size_t S, size_t d, float *out)
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
                fd_vml_expf_n(v, dij, dij, d);
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
        fd_vml_expf_n(v, Gc, eG, CH * d); /* exp(G), used twice below */
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
            fd_vml_expf_n(v, eG + t * d, eG + t * d, d);
            for (size_t x = 0; x < d; x++) kk[t * d + x] = kc[t * d + x] * eG[t * d + x];
        }
        fd_vml_expf_n(v, gl, eG, d);
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
    enum fd_vml vml;
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
        l2norm(J->vml, hq + t * d, d);
        l2norm(J->vml, hk + t * d, d);
    }
    chunk_kda_head(J->vml, hq, hk, hv, hg, hb, S, d, ho);
    for (size_t t = 0; t < S; t++) memcpy(J->core + t * Q + h * d, ho + t * d, d * 4);
    free(hq); free(hk); free(hv); free(hg); free(hb); free(ho);
}

void fd_op_kda_chunk(const fd_mm *m, enum fd_vml vml, const float *qkv, const float *g, const float *beta, size_t S,
                     size_t d, size_t nh, float *core)
{
    kda_job kj = {qkv, g, beta, core, S, d, nh, nh * d, vml};
    fd_mm_for(m, nh, kda_head_task, &kj); /* heads are independent: one task each */
}

void fd_op_kda_conv_silu(const uint16_t *mix, const float *cw, size_t S, size_t C, size_t K, int conv_bf16, float *qkv)
{
    fd_op_causal_conv1d(mix, S, C, cw, K, qkv); /* fp32: one FMA chain over the taps in order */
    for (size_t ch = 0; ch < C; ch++)
        for (size_t t = 0; t < S; t++) {
            float acc = qkv[t * C + ch];
            /* silu on the [C, S] (channel-major) conv output: fp32, vector blocks of 32 over the
             * whole tensor; bf16 (rounded first), blocks of 64 along each channel's row of S */
            if (conv_bf16) acc = F(BF(acc));
            int vec = conv_bf16 ? fd_op_torch_vec(t, S, 64) : fd_op_torch_vec(ch * S + t, C * S, 32);
            float a = vec ? fd_torch_silu(acc) : fd_torch_silu_tail(acc);
            qkv[t * C + ch] = F(BF(a));
        }
}

void fd_op_kda_gate_softplus_decay(enum fd_vml v, const uint16_t *fg, const float *dt, const float *decay, size_t S,
                                   size_t nh, size_t d, float *g)
{
    size_t Q = nh * d;
    (void)nh;
    for (size_t t = 0; t < S; t++)
        for (size_t ch = 0; ch < Q; ch++) {
            float x = F(fg[t * Q + ch]) + dt[ch];
            float sp = x > 20.0f ? x : fd_mkl_logf(1.0f + fd_vml_expf(v, x)); /* torch.log: MKL vsLn */
            g[t * Q + ch] = -decay[ch / d] * sp;
        }
}

void fd_op_kda_gate_softplus(enum fd_vml v, const uint16_t *fg, const float *dt, const float *A_log, size_t S, size_t nh,
                             size_t d, float *g)
{
    float *decay = fd_xmalloc(nh * 4 + 4);
    for (size_t h = 0; h < nh; h++) decay[h] = fd_vml_expf(v, A_log[h]); /* torch.exp(A_log) */
    fd_op_kda_gate_softplus_decay(v, fg, dt, decay, S, nh, d, g);
    free(decay);
}

void fd_op_kda_beta(const uint16_t *b16, size_t n, float *beta)
{
    for (size_t i = 0; i < n; i++) /* bf16 sigmoid kernel: vector blocks of 64 */
        beta[i] = F(BF(fd_op_torch_vec(i, n, 64) ? fd_torch_sigmoid(F(b16[i])) : fd_torch_sigmoid_tail(F(b16[i]))));
}

void fd_op_kda_gated_norm(const float *core, const uint16_t *gate, const uint16_t *ow, size_t S, size_t nh, size_t d,
                          float eps, uint16_t *o)
{
    size_t Q = nh * d;
    float sq[1024], xs[1024];
    for (size_t t = 0; t < S; t++)
        for (size_t h = 0; h < nh; h++) {
            const float *cr = core + t * Q + h * d;
            for (size_t j = 0; j < d; j++) { xs[j] = F(BF(cr[j])); sq[j] = xs[j] * xs[j]; }
            float r = 1.0f / sqrtf(fd_op_sum_aten(sq, d) / (float)d + eps);
            for (size_t j = 0; j < d; j++) {
                float v = F(ow[j]) * (xs[j] * r);
                o[t * Q + h * d + j] = BF(v * fd_op_sigmoid_at(F(gate[t * Q + h * d + j]), t * Q + h * d + j, S * Q));
            }
        }
}
