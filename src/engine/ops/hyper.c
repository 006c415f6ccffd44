/* Qwen4-Exp's gated residual over hyper-connection streams and its QSA
 * block indexer (ops/hyper.h for every rounding point). */
#include "engine/ops/hyper.h"
#include "engine/ops/reduce.h"
#include "kernels/torch_ops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

int fd_hcres_load(const fd_mm *m, fd_hcres *g, const fd_weights *W, fd_err *e, size_t n, size_t H, size_t r, size_t S,
                  int inject, const char *prefix)
{
    memset(g, 0, sizeof *g);
    g->n = n; g->H = H; g->r = r; g->inject = inject;
    const fd_tensor *nw = fd_op_get(W, e, 1, n * H, 0, 0, "%shc_norm.weight", prefix);
    if (!nw) return -1;
    if (fd_op_lin_named(m, S, &g->down, W, e, r, n * H, "%sinput_mix_weight_down", prefix) ||
        fd_op_lin_named(m, S, &g->up, W, e, n * H, r, "%sinput_mix_weight_up", prefix) ||
        (inject && fd_op_lin_named(m, S, &g->inj, W, e, n, n * H, "%sblock_inject_weight", prefix))) {
        fd_hcres_free(g);
        return -1;
    }
    if (W->gstored) g->nm = fd_op_vec_f32(nw, n * H); /* a GGUF's stored 1 + w */
    else g->nw = fd_op_vec_bf16(nw, 0, n * H);
    return 0;
}

void fd_hcres_free(fd_hcres *g)
{
    fd_lin_free(&g->down); fd_lin_free(&g->up); fd_lin_free(&g->inj);
    free(g->nw); free(g->nm);
    g->nw = NULL;
    g->nm = NULL;
}

/* bf16 unary op over a contiguous bf16 tensor of n elements: torch's vector
 * path in blocks of 64, the rest the scalar tail */
static float sig_at(float x, size_t i, size_t n) { return fd_op_torch_vec(i, n, 64) ? fd_torch_sigmoid(x) : fd_torch_sigmoid_tail(x); }
static float silu_at(float x, size_t i, size_t n) { return fd_op_torch_vec(i, n, 64) ? fd_torch_silu(x) : fd_torch_silu_tail(x); }

void fd_hcres_apply(const fd_mm *m, const fd_hcres *g, const uint16_t *X, size_t S, float eps, uint16_t *mixed,
                    uint16_t *inj)
{
    size_t n = g->n, H = g->H, r = g->r, nH = n * H;
    float inv_n = 1.0f / (float)n; /* n a power of two: x * inv_n == x / n exactly */
    uint16_t *hn = fd_xmalloc(S * nH * 2), *tmp = fd_xmalloc(S * H * 2), *d = fd_xmalloc(S * r * 2 + 2),
             *u = fd_xmalloc(S * nH * 2);
    /* the grouped norm: each stream's rows over H with its slice of the weight */
    for (size_t s = 0; s < n; s++) {
        for (size_t t = 0; t < S; t++) memcpy(tmp + t * H, X + t * nH + s * H, H * 2);
        if (g->nm) fd_op_rmsnorm_mul_mm(m, tmp, S, H, g->nm + s * H, eps, tmp);
        else fd_op_rmsnorm_zc_mm(m, tmp, S, H, g->nw + s * H, eps, tmp);
        for (size_t t = 0; t < S; t++) memcpy(hn + t * nH + s * H, tmp + t * H, H * 2);
    }
    fd_lin_apply(m, &g->down, hn, S, d);
    for (size_t i = 0; i < S * r; i++) d[i] = BF(silu_at(F(BF(F(d[i]) * inv_n)), i, S * r));
    fd_lin_apply(m, &g->up, d, S, u);
    for (size_t i = 0; i < S * nH; i++) u[i] = BF(sig_at(F(u[i]), i, S * nH));
    for (size_t t = 0; t < S; t++)
        for (size_t i = 0; i < H; i++) {
            float acc = 0.0f;
            for (size_t s = 0; s < n; s++) {
                size_t k = t * nH + s * H + i;
                acc += F(BF(F(u[k]) * F(hn[k])));
            }
            mixed[t * H + i] = BF(acc / (float)n);
        }
    if (g->inject) {
        uint16_t *k = fd_xmalloc(S * n * 2);
        fd_lin_apply(m, &g->inj, hn, S, k);
        for (size_t i = 0; i < S * n; i++) inj[i] = BF(2.0f * F(BF(sig_at(F(BF(F(k[i]) * inv_n)), i, S * n))));
        free(k);
    }
    free(hn); free(tmp); free(d); free(u);
}

void fd_hcres_write(const fd_mm *m, uint16_t *X, const uint16_t *y, const uint16_t *inj, size_t S, size_t n, size_t H)
{
    (void)m;
    for (size_t t = 0; t < S; t++)
        for (size_t s = 0; s < n; s++) {
            float w = F(inj[t * n + s]);
            uint16_t *x = X + (t * n + s) * H;
            for (size_t i = 0; i < H; i++) x[i] = BF(F(x[i]) + F(BF(F(y[t * H + i]) * w)));
        }
}

typedef struct qsa_job {
    const uint16_t *q;
    const float *bk;   /* [B][d] the block keys (normed, rotated) as fp32 */
    size_t S, nh, d, cr, topb;
    unsigned char *sel;
} qsa_job;

static void qsa_rows(void *ctx, size_t lo, size_t hi)
{
    const qsa_job *j = ctx;
    size_t d = j->d, nh = j->nh;
    float *qf = fd_xmalloc(nh * d * 4);
    fd_keyscore *ks = fd_xmalloc((j->S / j->cr + 1) * sizeof *ks);
    float sq = (float)sqrt((double)d); /* math.sqrt(d) as an fp32 divisor */
    for (size_t t = lo; t < hi; t++) {
        unsigned char *row = j->sel + t * j->S;
        memset(row, 0, j->S);
        size_t nb = (t + 1) / j->cr;
        for (size_t i = 0; i < nh * d; i++) qf[i] = F(j->q[t * nh * d + i]);
        for (size_t b = 0; b < nb; b++) {
            float s = 0.0f;
            for (size_t h = 0; h < nh; h++) {
                float v = fd_op_chain32(qf + h * d, 1, j->bk + b * d, 1, d);
                s += v > 0.0f ? v : 0.0f;
            }
            ks[b].s = s / sq;
            ks[b].j = b;
        }
        size_t k = nb < j->topb ? nb : j->topb;
        if (k > 0 && k < nb) fd_op_topk_select(ks, nb, k);
        for (size_t i = 0; i < k; i++) memset(row + ks[i].j * j->cr, 1, j->cr);
        for (size_t p = nb * j->cr; p <= t; p++) row[p] = 1; /* the incomplete tail */
    }
    free(qf); free(ks);
}

void fd_op_qsa_select(const fd_mm *m, const uint16_t *q, const uint16_t *rk, const uint16_t *kw, const float *km, const fd_rope *R,
                      size_t S, size_t nh, size_t d, size_t cr, size_t budget, float eps, unsigned char *sel)
{
    size_t B = S / cr;
    uint16_t *pk = fd_xmalloc(B * d * 2 + 2);
    float *grp = fd_xmalloc(cr * d * 4), *bk = fd_xmalloc(B * d * 4 + 4);
    for (size_t b = 0; b < B; b++) {
        for (size_t i = 0; i < cr * d; i++) grp[i] = F(rk[b * cr * d + i]);
        for (size_t c = 0; c < d; c++) pk[b * d + c] = BF(fd_op_sum_outer(grp + c, d, cr, c, d) / (float)cr);
    }
    if (B && kw) fd_op_rmsnorm_zc_mm(m, pk, B, d, kw, eps, pk);
    else if (B) fd_op_rmsnorm_mul_mm(m, pk, B, d, km, eps, pk);
    for (size_t b = 0; b < B; b++) {
        fd_rope_rot_half(pk + b * d, R, b * cr);
        for (size_t c = 0; c < d; c++) bk[b * d + c] = F(pk[b * d + c]);
    }
    qsa_job j = {q, bk, S, nh, d, cr, budget / cr, sel};
    fd_mm_range(m, S, 16, qsa_rows, &j);
    free(pk); free(grp); free(bk);
}
