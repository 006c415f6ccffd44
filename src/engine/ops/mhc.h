/* Manifold-constrained hyper-connections (mHC), shared by glm5_next
 * (Glm5NextTextHyperConnection) and deepseek_v4 (DeepseekV4HyperConnection,
 * DeepseekV4HyperHead): line for line the same torch code
 * (docs/MODEL-GLM5-NEXT.md §3.1, §6; docs/MODEL-DEEPSEEK.md §11.1).  Every
 * token is independent, so rows run on m's threads with no effect on bits;
 * the fp32 F.linear of the mixing weights is MKL's sgemm order for the whole
 * call's S rows (fd_kplan_mkl). */
#ifndef FD_ENGINE_OPS_MHC_H
#define FD_ENGINE_OPS_MHC_H
#include <stddef.h>
#include <stdint.h>
#include "engine/ops/matmul.h"

/* One mHC site: m streams of H; fn [(2+m)m][m*H] fp32 (the values the
 * module multiplies with), base [(2+m)m], scale [3]; rms_eps the input
 * norm's epsilon, hc_eps, Sinkhorn iterations. */
typedef struct fd_mhc {
    size_t m, H;
    int64_t iters;
    float rms_eps, hc_eps;
    const float *fn, *base, *scale;
} fd_mhc;

/* For every token of X [S][m][H] bf16: post [S][m], comb [S][m][m] (fp32),
 * collapsed [S][H] (bf16); mixdump (or NULL): the raw mix logits [S][(2+m)m]. */
void fd_op_mhc_apply(const fd_mm *mm, const fd_mhc *h, const uint16_t *X, size_t S, float *post, float *comb,
                     uint16_t *collapsed, float *mixdump);
/* X <- bf(bf(post) * out) + bf(bf(comb)^T @ X) per token (bf16 matmul, canonical dot). */
void fd_op_mhc_combine(const fd_mm *mm, size_t m, size_t H, const float *post, const float *comb, const uint16_t *out,
                       uint16_t *X, size_t S);
/* deepseek_v4's weighted head collapse: pre = sigmoid(fn . rmsnorm(flat) *
 * scale[0] + base) + hc_eps over m outputs (fn [m][m*H]), out [S][H] =
 * bf(sum_j pre_j X_j) in fp32. */
void fd_op_mhc_head(const fd_mm *mm, size_t m, size_t H, const float *fn, const float *base, float scale, float rms_eps,
                    float hc_eps, const uint16_t *X, size_t S, uint16_t *out);

#endif
