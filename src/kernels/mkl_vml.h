/* torch's MKL VML functions on fp32 CPU tensors (ATen's vml.h maps exp and
 * sqrt to MKL's vsExp / vsSqrt, HA mode), replicated one lane at a time from
 * the AVX-512 kernels of the torch 2.11 wheel (mkl_vml.c), so the bits are
 * the same on every host; log (vsLn) from the torch 2.15 wheel. */
#ifndef FD_ENGINE_MKL_VML_H
#define FD_ENGINE_MKL_VML_H

/* torch.exp: range reduction by 32ths of ln 2 (truncating FMA), a 32-entry
 * two-part table, a degree-3 polynomial, vscalefps.  |x| >= 87.33654 takes
 * MKL's scalar callout, for which libm expf stands in (subnormal / overflow
 * results only: the callout is not replicated). */
float fd_mkl_expf(float x);
/* y[i] = fd_mkl_expf(x[i]), 16 lanes at a time on AVX-512 (x == y allowed). */
#include <stddef.h>
void fd_mkl_expf_n(const float *x, float *y, size_t n);

/* torch.sqrt: y0 = VRSQRT14(x) (fd_rsqrt14), s = y0 x, one Newton step
 * s + (x - s^2)(y0 / 2) in FMAs (x < 2^-78 scaled as the kernel does);
 * zero, infinity, negative and NaN inputs: sqrtf. */
float fd_mkl_sqrtf(float x);

/* torch.log: MKL's vsLn as this host runs it (mkl_vml_kernel_sLn_EXHAynn):
 * x = 2^k m with m in [2/3, 4/3), a degree-9 polynomial in m - 1 in plain
 * float multiplies and adds, k ln2 in two parts; the scalar callout's
 * results for zero, negative, infinite, NaN and subnormal x.  Checked
 * against torch.log on every float (tests/parity/vsln_exhaustive.py). */
float fd_mkl_logf(float x);

/* VRSQRT14SS of a positive finite x (nonzero, DAZ off): the 14-bit
 * reciprocal square root approximation, bit for bit (a linear piece per
 * 1/32 of [1, 2) and 1/16 of [2, 4) on 17 significant bits of x, truncated
 * to 17 bits; coefficients measured from the instruction on this host and
 * checked exhaustively over [1, 4)). */
float fd_rsqrt14(float x);

#endif
