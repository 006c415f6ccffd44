/* torch's MKL VML functions on fp32 CPU tensors (ATen's vml.h maps exp,
 * sqrt and log to MKL's vsExp / vsSqrt / vsLn, HA mode), replicated one lane
 * at a time from MKL's kernels in the torch wheels (mkl_vml.c), so the bits
 * are the same on every host.  Which kernel MKL runs depends on the torch
 * host's CPU: on AVX-512 Intel hosts (the torch 2.11 goldens) the AVX-512
 * "Z0" kernels (the unsuffixed exp and sqrt); on the AMD Zen 4 host of the
 * torch 2.15 goldens, MKL 2024.2 dispatches its SSE "EX" kernels (_ex, and
 * the log).  enum fd_vml picks one family where an op takes it. */
#ifndef FD_ENGINE_MKL_VML_H
#define FD_ENGINE_MKL_VML_H
#include <stddef.h>

enum fd_vml { FD_VML_Z0, FD_VML_EX };

/* torch.exp, the Z0 kernel mkl_vml_kernel_sExp_Z0HAynn: range reduction by
 * 32ths of ln 2 (truncating FMA), a 32-entry two-part table, a degree-3
 * polynomial, vscalefps.  |x| >= 87.33654 takes MKL's scalar callout, for
 * which libm expf stands in (subnormal / overflow results only: the callout
 * is not replicated). */
float fd_mkl_expf(float x);
/* y[i] = fd_mkl_expf(x[i]), 16 lanes at a time on AVX-512 (x == y allowed). */
void fd_mkl_expf_n(const float *x, float *y, size_t n);

/* torch.exp, the EX kernel mkl_vml_kernel_sExp_EXHAynn (SSE): n =
 * round(x 128 / ln 2), a 128-entry two-part table, r^2 / 2 + r, float
 * multiplies and adds (no FMA).  1 ulp from fd_mkl_expf on ~1.7 % of
 * inputs.  |x| > 87.33654 and NaN: MKL's scalar callout (exp in double, a
 * 64-entry table, one rounding to float), replicated.  _n: x == y
 * allowed. */
float fd_mkl_expf_ex(float x);
void fd_mkl_expf_ex_n(const float *x, float *y, size_t n);

/* torch.sqrt, the Z0 kernel: y0 = VRSQRT14(x) (fd_rsqrt14), s = y0 x, one
 * Newton step s + (x - s^2)(y0 / 2) in FMAs (x < 2^-78 scaled as the kernel
 * does); zero, infinity, negative and NaN inputs: sqrtf. */
float fd_mkl_sqrtf(float x);

/* torch.sqrt, the EX kernel mkl_vml_kernel_sSqrt_EXHAynn: y = RSQRTPS(x) as
 * AMD Zen 4 computes it (fd_rsqrtps_zen4), two Newton steps in float
 * multiplies and adds; the callout's results: NaN 0x7fc00000 for x < 0,
 * sqrtf for zero, subnormal, the largest 4095 floats, +inf and NaN. */
float fd_mkl_sqrtf_ex(float x);
/* RSQRTPS of a positive normal x as AMD Zen 4 computes it (a measured
 * 8192-entry table, kernels/rsqrtps_zen4.inc; Intel's instruction differs). */
float fd_rsqrtps_zen4(float x);

/* torch.log, the EX kernel mkl_vml_kernel_sLn_EXHAynn: x = 2^k m with m in
 * [2/3, 4/3), a degree-9 polynomial in m - 1 in float multiplies and adds,
 * k ln2 in two parts; the scalar callout's results for zero, negative,
 * infinite, NaN and subnormal x.  Checked against torch 2.15's torch.log on
 * every float (tests/parity/vsln_exhaustive.py).  The Z0 vsLn is not
 * replicated. */
float fd_mkl_logf(float x);

/* the family's exp / sqrt */
static inline float fd_vml_expf(enum fd_vml v, float x) { return v == FD_VML_EX ? fd_mkl_expf_ex(x) : fd_mkl_expf(x); }
static inline void fd_vml_expf_n(enum fd_vml v, const float *x, float *y, size_t n)
{
    if (v == FD_VML_EX) fd_mkl_expf_ex_n(x, y, n);
    else fd_mkl_expf_n(x, y, n);
}
static inline float fd_vml_sqrtf(enum fd_vml v, float x) { return v == FD_VML_EX ? fd_mkl_sqrtf_ex(x) : fd_mkl_sqrtf(x); }

/* VRSQRT14SS of a positive finite x (nonzero, DAZ off): the 14-bit
 * reciprocal square root approximation, bit for bit (a linear piece per
 * 1/32 of [1, 2) and 1/16 of [2, 4) on 17 significant bits of x, truncated
 * to 17 bits; coefficients measured from the instruction on this host and
 * checked exhaustively over [1, 4)). */
float fd_rsqrt14(float x);

#endif
