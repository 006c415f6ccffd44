/* Scalar C replicas of torch 2.11's CPU kernels as the x86-64 PyPI wheel
 * runs them on an AVX-512 host, so the forward reproduces transformers bit
 * for bit.  Which ISA build of a kernel runs is torch's choice: kernels
 * registered with ALSO_REGISTER_AVX512_DISPATCH run their AVX-512 build
 * (16 fp32 lanes: softmax, silu, sigmoid), the others their AVX2 build
 * (8 fp32 lanes: sum, LayerNorm).  Each was identified by measurement
 * (tests/parity/torch_ops_vectors.py).
 *
 * Each function is the exact sequence of fp32 operations of the vector
 * kernel, one lane at a time: every FMA is an explicit fmaf (the build has
 * -ffp-contract=off; where torch's compiler contracted a*b+c, so do we),
 * every reduction follows torch's lane order.  The vector paths use no libm
 * transcendental, so their bits are the same on every host; the *_tail
 * functions are torch's scalar loop for the elements past the last full
 * vector pair, which calls libm expf exactly as torch does.
 * tests/parity/torch_ops_vectors.py writes the reference vectors that
 * tests/c/test_torch_ops.c checks. */
#ifndef FD_ENGINE_TORCH_OPS_H
#define FD_ENGINE_TORCH_OPS_H
#include <stddef.h>
#include <stdint.h>

/* Sleef_expf16_u10 (Sleef 3.x xexpf, FMA build) on one lane: the
 * Vectorized<float>::exp() of every ATen kernel below. */
float fd_torch_expf(float x);
/* y[i] = fd_torch_expf(x[i]) / fd_torch_silu(x[i]) for i < n, 16 lanes at
 * a time where AVX-512 is there, 8 where AVX2 + FMA are (same bits: the lane
 * code is the scalar one) */
void fd_torch_expf_n(const float *x, float *y, size_t n);
void fd_torch_silu_n(const float *x, float *y, size_t n);

/* silu on fp32 (vector path of silu_kernel): x / (1 + exp(-x)).  The
 * kernel works in blocks of 2 vectors (64 bf16 / 32 fp32 elements) of each
 * contiguous run; the rest of the run takes fd_torch_silu_tail (libm). */
float fd_torch_silu(float x);
float fd_torch_silu_tail(float x);

/* sigmoid on fp32 (vector path of sigmoid_kernel): 1 / ((0 - x).exp() + 1);
 * blocks of 32 elements, the rest 1 / (1 + expf(-x)). */
float fd_torch_sigmoid(float x);
float fd_torch_sigmoid_tail(float x);

/* Sleef_log1pf16_u10 (AVX-512 build) on one lane. */
float fd_torch_log1pf(float x);
/* softplus on fp32, beta 1, threshold 20 (softplus_kernel): the vector path
 * log1p(exp(x)) with Sleef's exp and log1p (blocks of 32 elements), the
 * scalar tail libm's log1pf(expf(x)); x > 20 passes x through. */
float fd_torch_softplus(float x);
float fd_torch_softplus_tail(float x);
/* Elements [0, fd_torch_vec_end(n, block)) of a contiguous run of n take
 * the vector path of a cpu_kernel_vec loop working in blocks of `block`. */
static inline size_t fd_torch_vec_end(size_t n, size_t block) { return n - n % block; }

/* torch 2.11's CPU sum of fp32 values (cascade_sum in ATen's
 * SumKernel.cpp, AVX2 build: 8 lanes), measured for the glm5_next forward:
 * multi_row_sum: one lane's cascade over `size` rows `stride` apart (levels
 * of 16 rows once a lane passes 16 x 4 values); row_sum: 4 interleaved
 * multi_row_sums + the rest; fd_torch_sum: a contiguous row of n
 * (vectorized_inner_sum: the scalar tail first, then the 8 lanes). */
float fd_torch_multi_row_sum(const float *x, size_t stride, size_t size);
float fd_torch_row_sum(const float *x, size_t stride, size_t size);
float fd_torch_sum(const float *x, size_t n);

/* The 16-lane sum of vec::reduce_all (functional_base.h) over a row of
 * `len` fp32 values: lane l adds the elements j = l (mod 16) in index order
 * (the tail lanes included), then the AVX-512 butterfly (lanes i+8, i+4,
 * i+2, i+1); rows shorter than 16 are summed sequentially. */
float fd_torch_reduce_sum(const float *x, size_t len);

/* In-place softmax of one fp32 row of length `len` (torch's dim size; it
 * fixes the lane layout) as _vec_softmax_lastdim<float>: m = max,
 * e_j = exp(x_j - m), s = reduce_sum(e), p_j = e_j * (1 / s).  Only the
 * first `nk` entries with keep[j] != 0 are live; every other entry is a
 * masked score (bf16 finfo.min) whose exp is exactly 0, so it is written as
 * 0 and only its lane position matters.  keep may be NULL (all live). */
void fd_torch_softmax_masked(float *x, const unsigned char *keep, size_t nk, size_t len);

/* RowwiseMoments (moments_utils.h, AVX2 build) of n bf16 values as torch's
 * LayerNorm kernel computes them: Welford over 16-element bf16 vectors
 * (two 8-lane fp32 halves) in chunks of 16 with the cascade merge, the 8
 * accumulator lanes merged in lane order by the scalar AddMoments (its
 * a*b+c contracted to FMAs), the scalar Welford tail (not contracted).
 * *mean, *var (biased). */
void fd_torch_moments_bf16(const uint16_t *x, size_t n, float *mean, float *var);

/* LayerNorm of one bf16 row with bf16 gamma/beta (all-bf16 module):
 * rstd = 1/sqrt(var + eps), y = bf(fma(fma(x, rstd, -rstd*mean), g, b))
 * (torch's (x*scale + bias)*gamma + beta, contracted by its compiler). */
void fd_torch_layernorm_bf16(const uint16_t *x, size_t n, const uint16_t *gamma, const uint16_t *beta, float eps,
                             uint16_t *y);

/* The builds of the row kernels above: each dispatcher runs AVX-512F's
 * (16 lanes) where the CPU has it, else AVX2 + FMA's (8 lanes), else the
 * one-lane loops (_scalar), by CPU features only; all give the same bits.
 * Exported so that tests/c/test_rowops_avx2.c checks the AVX2 builds on any AVX2
 * host, AVX-512 ones included; the caller checks the CPU. */
float fd_torch_sum_scalar(const float *x, size_t n);
void fd_torch_softmax_masked_scalar(float *x, const unsigned char *keep, size_t nk, size_t len);
#if defined(__x86_64__)
float fd_torch_sum_avx2(const float *x, size_t n);
void fd_torch_softmax_masked_avx2(float *x, const unsigned char *keep, size_t nk, size_t len);
void fd_torch_expf_n_avx2(const float *x, float *y, size_t n);
void fd_torch_silu_n_avx2(const float *x, float *y, size_t n);
#endif

#endif
