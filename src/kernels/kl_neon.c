/* The KL pass on aarch64 (issue 24.3): kl_impl.inc compiled for ASIMD, with
 * the target hooks written as float64x2_t operations.  GCC already maps the
 * generic build's 8 x fp64 arithmetic onto four float64x2_t registers, but
 * lowers its 8-lane compare-and-blend lane by lane (FCMPE + CSEL); here the
 * exp clamp is FCMGT + BSL on each half-pair, the blend's result for every x
 * (NaN included: the compare is false, x is kept), each fma of the exp is one
 * FMLA (one rounding, as C fma()); the one-pass ref_pair_chunk is built.  Lane-wise IEEE operations in the same order:
 * the bits of the generic build (kernel-selftest compares them). */
#include "kl.h"
#include <string.h>

const fd_kl_ops *fd_kl_neon_ops(void);

#if defined(__aarch64__)
#include <arm_neon.h>
#pragma GCC diagnostic ignored "-Wpsabi"

#define KL_ATTR
#define KL_NAME(x) generic_unused_##x
#define FD_KL_NEON_TYPES_ONLY
#include "kl_impl.inc" /* the types, constants and table (the generic functions are unused here) */
#undef KL_ATTR
#undef KL_NAME

/* lo > x ? lo : x per lane */
static inline __attribute__((always_inline)) v8d neon_clamp8(v8d lo, v8d x)
{
    float64x2_t l[4], v[4];
    memcpy(l, &lo, sizeof l);
    memcpy(v, &x, sizeof v);
    for (int i = 0; i < 4; i++) v[i] = vbslq_f64(vcgtq_f64(l[i], v[i]), l[i], v[i]);
    memcpy(&x, v, sizeof x);
    return x;
}
/* a*b + c with one rounding per lane (FMLA: C fma()'s bits) */
static inline __attribute__((always_inline)) v8d neon_fma8(v8d a, v8d b, v8d c)
{
    float64x2_t x[4], y[4], z[4];
    memcpy(x, &a, sizeof x);
    memcpy(y, &b, sizeof y);
    memcpy(z, &c, sizeof z);
    for (int i = 0; i < 4; i++) z[i] = vfmaq_f64(z[i], x[i], y[i]);
    memcpy(&c, z, sizeof c);
    return c;
}
#define KL_ATTR
#define KL_NAME(x) neon_##x
#define KL_CLAMP_LO(lo, x) neon_clamp8(lo, x)
#define KL_FMA(a, b, c) neon_fma8(a, b, c)
#define KL_ONE_PASS 1 /* the reference and first candidate folded in one loop, as the x86 builds */
#include "kl_impl.inc"

const fd_kl_ops *fd_kl_neon_ops(void) { return &neon_ops; }
#else
const fd_kl_ops *fd_kl_neon_ops(void) { return NULL; }
#endif
