/* Manifold-constrained hyper-connections of glm5_next
 * (Glm5NextTextHyperConnection; docs/MODEL-GLM5-NEXT.md §3.1, §6). */
#include "engine/arch/glm5_next/next_internal.h"
#include "engine/ops/kblocks.h"
#include "kernels/torch_ops.h"
#include "kernels/gemm.h"
#include "util/buf.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

int nx_hc_load(nx_hc *h, const fd_weights *W, const fd_glm_config *c, long long L, const char *site, fd_err *e)
{
    size_t m = (size_t)NX(c)->hc_mult, H = (size_t)c->hidden_size, mix = (2 + m) * m;
    const fd_tensor *fn = fd_op_get(W, e, 2, mix, m * H, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_fn", L, site);
    const fd_tensor *ba = fn ? fd_op_get(W, e, 1, mix, 0, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_base", L, site) : NULL;
    const fd_tensor *sc = ba ? fd_op_get(W, e, 1, 3, 0, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_scale", L, site) : NULL;
    if (!sc) return -1;
    /* fn is a bf16 parameter (F32 on disk is cast to the bf16 load dtype,
     * and the capture discloses it); base and scale are kept in fp32 by
     * transformers (_keep_in_fp32_modules_strict since 5.23): used as stored,
     * which for BF16 on disk is the exact upcast it always was */
    h->fn = fd_xmalloc(mix * m * H * 4);
    for (size_t i = 0; i < mix * m * H; i++) h->fn[i] = F(fd_tensor_bf16_at(fn, i));
    for (size_t i = 0; i < mix; i++) h->base[i] = fd_tensor_f32_at(ba, i);
    for (size_t i = 0; i < 3; i++) h->scale[i] = fd_tensor_f32_at(sc, i);
    return 0;
}

/* Glm5NextTextHyperConnection.forward for every token: post [S][m],
 * comb [S][m][m] (fp32), collapsed [S][H] (bf16). */
typedef struct apply_job {
    const nx_hc *h;
    const fd_glm_config *c;
    const uint16_t *X;
    size_t S;
    float *post, *comb, *mixdump;
    uint16_t *collapsed;
    const fd_kplan *kp;
} apply_job;

static void apply_rows(void *ctx, size_t lo, size_t hi)
{
    const apply_job *J = ctx;
    const nx_hc *h = J->h;
    const fd_glm_config *c = J->c;
    const uint16_t *X = J->X;
    size_t S = J->S;
    float *post = J->post, *comb = J->comb, *mixdump = J->mixdump;
    uint16_t *collapsed = J->collapsed;
    size_t m = (size_t)NX(c)->hc_mult, H = (size_t)c->hidden_size, mH = m * H, mix = (2 + m) * m;
    float eps = (float)c->rms_norm_eps, heps = (float)NX(c)->hc_eps;
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
        for (int64_t it = 0; it < NX(c)->hc_iters; it++) {
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

void nx_hc_apply(const fd_mm *mm, const nx_hc *h, const fd_glm_config *c, const uint16_t *X, size_t S, float *post,
                 float *comb, uint16_t *collapsed, float *mixdump)
{
    size_t m = (size_t)NX(c)->hc_mult, H = (size_t)c->hidden_size;
    fd_kplan kp;
    fd_kplan_mkl(S, m * H, &kp); /* the blocking depends on the whole call's S */
    apply_job j = {h, c, X, S, post, comb, mixdump, collapsed, &kp};
    fd_mm_range(mm, S, 16, apply_rows, &j); /* tokens are independent */
}

/* X <- bf(bf(post) * out) + bf(comb^T @ X) per token (bf16 matmul, canonical dot). */
typedef struct combine_job {
    const fd_glm_config *c;
    const float *post, *comb;
    const uint16_t *out;
    uint16_t *X;
} combine_job;

static void combine_rows(void *ctx, size_t lo, size_t hi)
{
    const combine_job *J = ctx;
    const fd_glm_config *c = J->c;
    size_t m = (size_t)NX(c)->hc_mult, H = (size_t)c->hidden_size, kp = (m + 1) / 2;
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

void nx_hc_combine(const fd_mm *mm, const fd_glm_config *c, const float *post, const float *comb, const uint16_t *out,
                   uint16_t *X, size_t S)
{
    combine_job j = {c, post, comb, out, X};
    fd_mm_range(mm, S, 16, combine_rows, &j); /* tokens are independent */
}
