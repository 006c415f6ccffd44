/* Manifold-constrained hyper-connections (engine/ops/mhc.h), moved here from
 * glm5_next (arch/glm5_next/next_hc.c keeps its loader and calls these:
 * the same code, the same bits) for deepseek_v4. */
#include "engine/ops/mhc.h"
#include "engine/ops/kblocks.h"
#include "engine/ops/ops.h"
#include "engine/ops/reduce.h"
#include "kernels/torch_ops.h"
#include "kernels/gemm.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

/* compiled generically and for an FMA target (fmaf one instruction): the same bits */
#define MKL_DOT_BODY                                                                    \
    float c[2] = {0.0f, 0.0f};                                                          \
    for (size_t i = 0; i < p->nb; i++) {                                                \
        float acc = 0.0f;                                                               \
        for (size_t k = p->st[i]; k < p->st[i + 1]; k++) acc = fmaf(a[k], b[k], acc);   \
        size_t hf = p->half && i >= p->half;                                            \
        c[hf] = i == (hf ? p->half : 0) ? acc : c[hf] + acc;                            \
    }                                                                                   \
    return p->half ? c[0] + c[1] : c[0];
static float mkl_dot_any(const float *a, const float *b, const fd_kplan *p) { MKL_DOT_BODY }
#if defined(__x86_64__)
__attribute__((target("fma"))) static float mkl_dot_fma(const float *a, const float *b, const fd_kplan *p) { MKL_DOT_BODY }
#endif

static float mkl_dot(const float *a, const float *b, const fd_kplan *p)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("fma")) return mkl_dot_fma(a, b, p);
#endif
    return mkl_dot_any(a, b, p);
}

/* Glm5NextTextHyperConnection.forward for every token: post [S][m],
 * comb [S][m][m] (fp32), collapsed [S][H] (bf16). */
typedef struct apply_job {
    const fd_mhc *h;
    const uint16_t *X;
    size_t S;
    float *post, *comb, *mixdump;
    uint16_t *collapsed;
    const fd_kplan *kp;
} apply_job;

static void apply_rows(void *ctx, size_t lo, size_t hi)
{
    const apply_job *J = ctx;
    const fd_mhc *h = J->h;
    const uint16_t *X = J->X;
    size_t S = J->S;
    float *post = J->post, *comb = J->comb, *mixdump = J->mixdump;
    uint16_t *collapsed = J->collapsed;
    size_t m = h->m, H = h->H, mH = m * H, mix = (2 + m) * m;
    float eps = h->rms_eps, heps = h->hc_eps;
    float *flat = fd_xmalloc(mH * 4), *sq = fd_xmalloc(mH * 4), mx[64 * 66], pre[64];
    const fd_kplan kp = *J->kp;
    for (size_t s = lo; s < hi; s++) {
        const uint16_t *xs = X + s * mH;
        for (size_t i = 0; i < mH; i++) { flat[i] = F(xs[i]); sq[i] = flat[i] * flat[i]; }
        float r = 1.0f / sqrtf(fd_op_sum_aten(sq, mH) / (float)mH + eps);
        for (size_t i = 0; i < mH; i++) flat[i] = flat[i] * r;
        for (size_t j = 0; j < mix; j++) mx[j] = mkl_dot(flat, h->fn + j * mH, &kp);
        if (mixdump) memcpy(mixdump + s * mix, mx, mix * 4);
        for (size_t i = 0; i < m; i++) {
            pre[i] = fd_op_sigmoid_at(mx[i] * h->scale[0] + h->base[i], s * m + i, S * m) + heps;
            post[s * m + i] = 2.0f * fd_op_sigmoid_at(mx[m + i] * h->scale[1] + h->base[m + i], s * m + i, S * m);
        }
        float *cb = comb + s * m * m;
        for (size_t i = 0; i < m; i++) { /* softmax over the last axis (torch's lastdim kernel), + eps */
            float *row = cb + i * m;
            for (size_t j = 0; j < m; j++) row[j] = mx[2 * m + i * m + j] * h->scale[2] + h->base[2 * m + i * m + j];
            fd_torch_softmax_masked(row, NULL, m, m);
            for (size_t j = 0; j < m; j++) row[j] += heps;
        }
        for (int64_t it = 0; it < h->iters; it++) {
            if (it) /* rows (dim -1), from the second iteration on */
                for (size_t i = 0; i < m; i++) {
                    float sum = 0.0f;
                    for (size_t j = 0; j < m; j++) sum += cb[i * m + j];
                    for (size_t j = 0; j < m; j++) cb[i * m + j] = cb[i * m + j] / (sum + heps);
                }
            for (size_t j = 0; j < m; j++) { /* columns (dim -2) */
                float sum = 0.0f;
                for (size_t i = 0; i < m; i++) sum += cb[i * m + j];
                for (size_t i = 0; i < m; i++) cb[i * m + j] = cb[i * m + j] / (sum + heps);
            }
        }
        for (size_t d = 0; d < H; d++) {
            float acc = pre[0] * F(xs[d]);
            for (size_t i = 1; i < m; i++) acc += pre[i] * F(xs[i * H + d]);
            collapsed[s * H + d] = BF(acc);
        }
    }
    free(flat);
    free(sq);
}

void fd_op_mhc_apply(const fd_mm *mm, const fd_mhc *h, const uint16_t *X, size_t S, float *post, float *comb,
                     uint16_t *collapsed, float *mixdump)
{
    fd_kplan kp;
    fd_kplan_mkl(S, h->m * h->H, &kp); /* the blocking depends on the whole call's S */
    apply_job j = {h, X, S, post, comb, mixdump, collapsed, &kp};
    fd_mm_range(mm, S, 16, apply_rows, &j); /* tokens are independent */
}

/* X <- bf(bf(post) * out) + bf(comb^T @ X) per token (bf16 matmul, canonical dot). */
typedef struct combine_job {
    size_t m, H;
    const float *post, *comb;
    const uint16_t *out;
    uint16_t *X;
} combine_job;

static void combine_rows(void *ctx, size_t lo, size_t hi)
{
    const combine_job *J = ctx;
    size_t m = J->m, H = J->H, kp = (m + 1) / 2;
    uint32_t a[33], b[33];
    uint16_t *nx = fd_xmalloc(m * H * 2), cbt[64];
    for (size_t s = lo; s < hi; s++) {
        uint16_t *xs = J->X + s * m * H;
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j < m; j++) cbt[j] = BF(J->comb[s * m * m + j * m + i]); /* (comb^T)[i][j] */
            memset(a, 0, sizeof a);
            fd_pack_hidden(cbt, m, a);
            uint16_t pb = BF(J->post[s * m + i]);
            for (size_t d = 0; d < H; d++) {
                for (size_t k = 0; k < kp; k++) {
                    uint32_t lo16 = xs[(2 * k) * H + d], hi16 = 2 * k + 1 < m ? xs[(2 * k + 1) * H + d] : 0;
                    b[k] = lo16 | hi16 << 16;
                }
                float mm = F(BF(fd_dot_canonical(a, b, kp, 1)));
                float t1 = F(BF(F(pb) * F(J->out[s * H + d])));
                nx[i * H + d] = BF(t1 + mm);
            }
        }
        memcpy(xs, nx, m * H * 2);
    }
    free(nx);
}

void fd_op_mhc_combine(const fd_mm *mm, size_t m, size_t H, const float *post, const float *comb, const uint16_t *out,
                       uint16_t *X, size_t S)
{
    combine_job j = {m, H, post, comb, out, X};
    fd_mm_range(mm, S, 16, combine_rows, &j); /* tokens are independent */
}

/* deepseek_v4's DeepseekV4HyperHead for every token (mhc.h) */
typedef struct head_job {
    size_t m, H;
    const float *fn, *base;
    float scale, rms_eps, hc_eps;
    const uint16_t *X;
    size_t S;
    uint16_t *out;
    const fd_kplan *kp;
} head_job;

static void head_rows(void *ctx, size_t lo, size_t hi)
{
    const head_job *J = ctx;
    size_t m = J->m, H = J->H, mH = m * H;
    float *flat = fd_xmalloc(mH * 4), *sq = fd_xmalloc(mH * 4), pre[64];
    const fd_kplan kp = *J->kp;
    for (size_t s = lo; s < hi; s++) {
        const uint16_t *xs = J->X + s * mH;
        for (size_t i = 0; i < mH; i++) { flat[i] = F(xs[i]); sq[i] = flat[i] * flat[i]; }
        float r = 1.0f / sqrtf(fd_op_sum_aten(sq, mH) / (float)mH + J->rms_eps);
        for (size_t i = 0; i < mH; i++) flat[i] = flat[i] * r;
        for (size_t i = 0; i < m; i++)
            pre[i] = fd_op_sigmoid_at(mkl_dot(flat, J->fn + i * mH, &kp) * J->scale + J->base[i], s * m + i, J->S * m) + J->hc_eps;
        for (size_t d = 0; d < H; d++) {
            float acc = pre[0] * F(xs[d]);
            for (size_t i = 1; i < m; i++) acc += pre[i] * F(xs[i * H + d]);
            J->out[s * H + d] = BF(acc);
        }
    }
    free(flat);
    free(sq);
}

void fd_op_mhc_head(const fd_mm *mm, size_t m, size_t H, const float *fn, const float *base, float scale, float rms_eps,
                    float hc_eps, const uint16_t *X, size_t S, uint16_t *out)
{
    fd_kplan kp;
    fd_kplan_mkl(S, m * H, &kp);
    head_job j = {m, H, fn, base, scale, rms_eps, hc_eps, X, S, out, &kp};
    fd_mm_range(mm, S, 16, head_rows, &j);
}
