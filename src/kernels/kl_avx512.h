/* The AVX-512 hooks of the canonical exp (kl_impl.inc, kl_exp.inc), each the
 * same value as the generic step it replaces (docs/NUMERICS.md §2); included
 * by kl.c before its AVX-512 build of kl_impl.inc, and by bench/fused_bench.c.
 * Macros only: they expand inside a function compiled for AVX-512F. */
#ifndef FD_KERNELS_KL_AVX512_H
#define FD_KERNELS_KL_AVX512_H
#include <immintrin.h>
#define KL_FMA(a, b, c) ((v8d)_mm512_fmadd_pd((__m512d)(a), (__m512d)(b), (__m512d)(c)))
/* vmaxpd(lo, x) is lo > x ? lo : x, the blend's result for every x (NaN kept) */
#define KL_CLAMP_LO(lo, x) ((v8d)_mm512_max_pd((__m512d)(lo), (__m512d)(x)))
#define KL_LOOKUP(out, tb) \
    ((out) = (v8d)_mm512_permutex2var_pd(_mm512_loadu_pd(fd_exp2_16), (__m512i)(tb), _mm512_loadu_pd(fd_exp2_16 + 8)))
/* y * 2^e rounded once: the correctly rounded y * 2^e of the generic two
 * steps, subnormal results included.  vscalefpd scales by 2^floor of its
 * second operand, kd = k/16 (exact: the reduction computes t/16 and k/16,
 * kl_impl.inc), so floor(kd) = e with no operation of its own (it had been
 * one fma of t; from t's bits by a shift and a conversion, three). */
#define KL_SCALE(y, kd) ((v8d)_mm512_scalef_pd((__m512d)(y), (__m512d)(kd)))
#endif
