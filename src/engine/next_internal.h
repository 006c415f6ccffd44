/* Helpers shared by the glm5_next forward files (next_forward.h). */
#ifndef FD_ENGINE_NEXT_INTERNAL_H
#define FD_ENGINE_NEXT_INTERNAL_H
#include "engine/next_config.h"
#include "engine/next_forward.h"
#include "engine/next_weights.h"
#include "engine/ops.h"
#include "util/bf16.h"

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

/* A tensor of exactly this shape (ndim <= 3; BF16 or F32); else checkpoint_mismatch. */
const fd_tensor *nx_get(const fd_weights *w, fd_err *e, int ndim, uint64_t d0, uint64_t d1, uint64_t d2, const char *fmt,
                        ...) __attribute__((format(printf, 7, 8)));
/* A Linear [N, K] named by the format (".weight" appended), no bias. */
int nx_lin(const fd_mm *m, size_t M, fd_lin *L, const fd_weights *w, fd_err *e, size_t N, size_t K, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
/* A 1-D tensor as fp32 values / as bf16 values (caller frees). */
float *nx_vec_f32(const fd_tensor *t, size_t n);
uint16_t *nx_vec_bf16(const fd_tensor *t, size_t n);
/* torch 2.11's CPU sum of fp32 values (cascade_sum in ATen's SumKernel.cpp,
 * AVX2 build: 8 lanes).  multi_row_sum: one lane's cascade over `size` rows
 * (levels of 16 rows); row_sum: 4 interleaved multi_row_sums + the rest.
 * nx_sum_aten: a contiguous row of n (vectorized_inner_sum); nx_sum_outer:
 * output column col of ncols contiguous columns, reduced over `size` rows
 * `stride` apart (vectorized_outer_sum / scalar_outer_sum). */
float nx_multi_row_sum(const float *x, size_t stride, size_t size);
float nx_row_sum(const float *x, size_t stride, size_t size);
float nx_sum_aten(const float *x, size_t n);
float nx_sum_outer(const float *x, size_t stride, size_t size, size_t col, size_t ncols);
/* Does element i of a contiguous elementwise op over n elements take the
 * vector path of torch's cpu_kernel_vec (blocks of `block`, split in 2
 * thread chunks from 32768 elements on: the goldens' torch.set_num_threads(2))? */
int nx_torch_vec(size_t i, size_t n, size_t block);
/* torch.sigmoid of element i of a contiguous fp32 tensor of n elements */
float nx_sigmoid_at(float x, size_t i, size_t n);
/* one fp32 FMA chain in increasing k: MKL's sgemm order for the small
 * shapes measured (K <= 64; tests/parity, docs/MODEL-GLM5-NEXT.md §6) */
float nx_chain32(const float *a, size_t as, const float *b, size_t bs, size_t n);
/* swap the pairs (2i, 2i+1) of a bf16 array (n even): fd_dot_canonical's
 * odd-then-even chain then runs in increasing k */
void nx_swap_pairs(uint16_t *v, size_t n);
/* FIDELITY_FORWARD_DUMP (forward.c's format): DIR/<stage>[.L<layer>].<ext>, first call kept. */
#define nx_dump fd_op_dump /* engine/ops.h */

/* One mHC site (attn or ffn) of layer L: fn [(2+m)m, mH] (bf16 values),
 * base [(2+m)m], scale [3]. */
typedef struct nx_hc {
    float *fn;
    float base[64 * 66], scale[3];
} nx_hc;
int nx_hc_load(nx_hc *h, const fd_weights *W, const fd_glm_config *c, long long L, const char *site, fd_err *e);
/* For every token of X [S][m][H]: post [S][m], comb [S][m][m] (fp32),
 * collapsed [S][H] (bf16); mixdump (or NULL): the raw mix logits [S][(2+m)m]. */
void nx_hc_apply(const fd_mm *mm, const nx_hc *h, const fd_glm_config *c, const uint16_t *X, size_t S, float *post,
                 float *comb, uint16_t *collapsed, float *mixdump);
/* X <- bf(bf(post) * out) + bf(comb^T @ X) per token. */
void nx_hc_combine(const fd_mm *mm, const fd_glm_config *c, const float *post, const float *comb, const uint16_t *out,
                   uint16_t *X, size_t S);

/* Layer sublayers: x rows of H (bf16, after input_layernorm) -> y rows of H. */
int nx_kda(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, const uint16_t *x, size_t S,
           uint16_t *y, fd_err *e);
/* sel: S x S bytes, in/out: a full layer writes it, a shared layer reads it. */
int nx_dsa(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, const uint16_t *x, size_t S,
           unsigned char *sel, uint16_t *y, fd_err *e);

#endif
