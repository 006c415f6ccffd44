/* fp32 products with an F32 weight (docs/NUMERICS.md §5b): torch's
 * F.linear(x.float(), W.float()) on an F32 router weight, which MKL's sgemm
 * computes as one FMA chain in increasing k per output.  The definition,
 * per output:
 *     acc = +0
 *     for k = 0 .. K-1:  acc = ftz(fmaf(daz(a[k]), daz(w[k]), acc))
 * (a: the bf16 activations widened to fp32; w: the weight row as stored).
 * On a weight whose values are all bf16 values this is, bit for bit, the
 * pair kernel's chain on pair-swapped operands (fd_mm_run_seq), so a BF16
 * weight and its exact F32 spelling give one result.
 *
 * Packed weight: for each tile of 16 output columns, for each k, 16 fp32
 * words (column t*16 + j at word j); columns past N are +0. */
#ifndef FD_KERNELS_GEMM_F32_H
#define FD_KERNELS_GEMM_F32_H
#include <stddef.h>
#include "gemm.h"

/* out[p*ostride + j] for p < np, j < ntiles*16; a: np rows of K floats. */
typedef void (*fd_gemm_f32_fn)(const float *a, size_t np, size_t K, const float *packed, size_t ntiles, float *out,
                               size_t ostride);

/* The definition (scalar, explicit DAZ/FTZ): one output. */
float fd_dot_f32seq(const float *a, const float *b, size_t K, size_t bstride);
/* The kernel of a pair-order path (avx512bf16 runs the avx512f one; amx
 * has none: NULL).  The SIMD kernels need MXCSR FTZ+DAZ (fd_ftz_daz_enter). */
fd_gemm_f32_fn fd_gemm_f32_for(fd_path p);

#endif
