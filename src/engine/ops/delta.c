/* The gated delta rule's shared pieces (ops.h): the depthwise causal conv1d
 * of the linear-attention layers (glm5_next's KDA, qwen3_5's gated delta
 * net) and transformers' torch_chunk_gated_delta_rule (qwen3_5) for one
 * value head, in the fp32 order of torch's CPU kernels. */
#include "engine/ops/ops.h"
#include "engine/ops/reduce.h"
#include "kernels/mkl_vml.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define F fd_bf16_to_f32

void fd_op_causal_conv1d(const uint16_t *x, size_t S, size_t C, const float *w, size_t K, float *acc)
{
    for (size_t ch = 0; ch < C; ch++) {
        const float *wc = w + ch * K;
        for (size_t t = 0; t < S; t++) {
            float a = 0.0f;
            for (size_t j = 0; j < K; j++) {
                long long src = (long long)t + (long long)j - (long long)(K - 1);
                if (src >= 0) a = fmaf(wc[j], F(x[(size_t)src * C + ch]), a);
            }
            acc[t * C + ch] = a;
        }
    }
}

/* l2norm of the FLA library as transformers writes it: x * rsqrt(sum(x*x) + 1e-6) */
static void l2norm(float *x, size_t n, float *sq)
{
    for (size_t i = 0; i < n; i++) sq[i] = x[i] * x[i];
    float r = 1.0f / sqrtf(fd_op_sum_aten(sq, n) + 1e-6f); /* torch.rsqrt: 1 / sqrt */
    for (size_t i = 0; i < n; i++) x[i] = x[i] * r;
}

enum { CH = 64 }; /* chunk_size */

/* X = L^-1 B for the unit lower-triangular L (strict part l, CH x CH) and
 * B [CH][n] in place: torch.linalg.solve_triangular(upper=False,
 * unitriangular=True), i.e. MKL's strsm.  Its order is not reproduced
 * exactly: x_i = b_i - sum_{j<i} bf32(l_ij x_j), the products rounded and
 * added in increasing j without FMA, is the closest of the orders measured
 * (docs/MODEL-QWEN35.md §3: rows 0-3 exact, 0.4 % of the elements 1 ulp
 * apart beyond) */
static void solve_unit_lower(const float *l, float *b, size_t n)
{
    for (size_t i = 1; i < CH; i++)
        for (size_t x = 0; x < n; x++) {
            float s = l[i * CH] * b[x];
            for (size_t j = 1; j < i; j++) {
                float p = l[i * CH + j] * b[j * n + x];
                s = s + p;
            }
            b[i * n + x] = b[i * n + x] - s;
        }
}

void fd_op_gated_delta_chunk(const float *q0, const float *k0, const float *v0, const float *g0, const float *beta0,
                             size_t S, size_t dk, size_t dv, float *out)
{
    size_t nc = (S + CH - 1) / CH, T = nc * CH, dm = dk > dv ? dk : dv;
    float scale = (float)(1.0 / sqrt((double)dk));
    float *q = fd_xcalloc(T * dk, 4), *k = fd_xcalloc(T * dk, 4), *kb = fd_xcalloc(T * dk, 4),
          *vb = fd_xcalloc(T * dv, 4), *G = fd_xcalloc(T, 4), *sq = fd_xmalloc(dm * 4 + 4);
    for (size_t t = 0; t < S; t++) {
        memcpy(q + t * dk, q0 + t * dk, dk * 4);
        memcpy(k + t * dk, k0 + t * dk, dk * 4);
        l2norm(q + t * dk, dk, sq);
        l2norm(k + t * dk, dk, sq);
        for (size_t j = 0; j < dk; j++) {
            q[t * dk + j] = q[t * dk + j] * scale;
            kb[t * dk + j] = k[t * dk + j] * beta0[t];
        }
        for (size_t j = 0; j < dv; j++) vb[t * dv + j] = v0[t * dv + j] * beta0[t];
        G[t] = g0[t];
    }
    for (size_t c = 0; c < nc; c++) { /* cumsum within the chunk: ATen accumulates fp32 in double */
        double a = 0.0;
        for (size_t i = 0; i < CH; i++) { a += G[c * CH + i]; G[c * CH + i] = (float)a; }
    }
    float *P = fd_xmalloc(CH * CH * 4), *ut = fd_xmalloc(CH * CH * 4), *ia = fd_xmalloc(CH * CH * 4),
          *eg = fd_xmalloc(T * 4), *dkb = fd_xmalloc(CH * dk * 4), *st = fd_xcalloc(dk * dv, 4),
          *vn = fd_xmalloc(CH * dv * 4), *kd = fd_xmalloc(CH * dk * 4), *qd = fd_xmalloc(CH * dk * 4),
          *ns = fd_xmalloc(dk * dv * 4), *tl = fd_xmalloc(CH * 4);
    fd_mkl_expf_n(G, eg, T); /* cum_decay.exp() */
    for (size_t c = 0; c < nc; c++) {
        const float *Gc = G + c * CH, *ec = eg + c * CH, *qc = q + c * CH * dk, *kc = k + c * CH * dk,
                    *kbc = kb + c * CH * dk;
        float *vbc = vb + c * CH * dv;
        for (size_t i = 0; i < CH; i++)
            for (size_t j = 0; j < CH; j++) P[i * CH + j] = j <= i ? fd_mkl_expf(Gc[i] - Gc[j]) : 0.0f;
        for (size_t i = 0; i < CH; i++)
            for (size_t j = 0; j < CH; j++) {
                ut[i * CH + j] = fd_op_chain32(kbc + i * dk, 1, kc + j * dk, 1, dk) * P[i * CH + j];
                ia[i * CH + j] = fd_op_chain32(qc + i * dk, 1, kc + j * dk, 1, dk) * P[i * CH + j];
            }
        for (size_t t = 0; t < CH; t++)
            for (size_t x = 0; x < dk; x++) dkb[t * dk + x] = kbc[t * dk + x] * ec[t];
        solve_unit_lower(ut, vbc, dv);  /* new_values, in place of v_beta */
        solve_unit_lower(ut, dkb, dk);  /* k_cumdecay */
        /* query * exp(cum), key * exp(cum_last - cum), chunk decay exp(cum_last) */
        for (size_t t = 0; t < CH; t++) tl[t] = Gc[CH - 1] - Gc[t];
        fd_mkl_expf_n(tl, tl, CH);
        for (size_t t = 0; t < CH; t++)
            for (size_t x = 0; x < dk; x++) {
                qd[t * dk + x] = qc[t * dk + x] * ec[t];
                kd[t * dk + x] = kc[t * dk + x] * tl[t];
            }
        float cd = ec[CH - 1];
        for (size_t t = 0; t < CH; t++)
            for (size_t x = 0; x < dv; x++)
                vn[t * dv + x] = vbc[t * dv + x] - fd_op_chain32(dkb + t * dk, 1, st + x, dv, dk);
        for (size_t t = 0; t < CH; t++) {
            size_t gt = c * CH + t;
            for (size_t x = 0; x < dv; x++) {
                float inter = fd_op_chain32(qd + t * dk, 1, st + x, dv, dk);
                float intra = fd_op_chain32(ia + t * CH, 1, vn + x, dv, CH);
                if (gt < S) out[gt * dv + x] = inter + intra;
            }
        }
        for (size_t a = 0; a < dk; a++)
            for (size_t b = 0; b < dv; b++)
                ns[a * dv + b] = st[a * dv + b] * cd + fd_op_chain32(kd + a, dk, vn + b, dv, CH);
        memcpy(st, ns, dk * dv * 4);
    }
    free(q); free(k); free(kb); free(vb); free(G); free(sq); free(P); free(ut); free(ia); free(eg); free(dkb);
    free(st); free(vn); free(kd); free(qd); free(ns); free(tl);
}
