#include "kl.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <string.h>

/* The vector helpers are always inlined: no vector crosses a call boundary,
 * so GCC's note about the AVX-512 calling convention does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"

#define KL_ATTR
#define KL_NAME(x) generic_##x
#include "kl_impl.inc"
#undef KL_ATTR
#undef KL_NAME

#if defined(__x86_64__) /* the ISA builds of the same code; elsewhere the generic one runs */
/* The AVX2 table lookup: two 4-lane gathers (loads: the bits of the loop). */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) v8d avx2_gather8(v8l j)
{
    __m256i i[2];
    memcpy(i, &j, sizeof i);
    __m256d g[2] = {_mm256_i64gather_pd(fd_exp2_128, i[0], 8), _mm256_i64gather_pd(fd_exp2_128, i[1], 8)};
    v8d o;
    memcpy(&o, g, sizeof o);
    return o;
}
/* lo > x ? lo : x per lane: vmaxpd(a, b) is a > b ? a : b, so a NaN x is kept */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) v8d avx2_clamp8(v8d lo, v8d x)
{
    __m256d l[2], v[2];
    memcpy(l, &lo, sizeof l);
    memcpy(v, &x, sizeof v);
    v[0] = _mm256_max_pd(l[0], v[0]);
    v[1] = _mm256_max_pd(l[1], v[1]);
    memcpy(&x, v, sizeof x);
    return x;
}
#define KL_ATTR __attribute__((target("avx2,fma")))
#define KL_NAME(x) avx2_##x
#define KL_GATHER(out, idx) ((out) = avx2_gather8(idx))
#define KL_CLAMP_LO(lo, x) avx2_clamp8(lo, x)
#include "kl_impl.inc"
#undef KL_ATTR
#undef KL_NAME
#undef KL_GATHER
#undef KL_CLAMP_LO

/* Here the exp table lookup is the gather instruction: a load, so the bits are
 * those of the per-lane loop the other targets use.  (Measured on a Sapphire
 * Rapids-class host: the loop is as fast as vgatherqpd for AVX2, but makes the
 * AVX-512 KL loops ~1.5x slower.) */
#define KL_ATTR __attribute__((target("avx512f,avx512dq")))
#define KL_NAME(x) avx512_##x
#define KL_GATHER(out, idx) ((out) = (v8d)_mm512_i64gather_pd((__m512i)(idx), fd_exp2_128, 8))
#include "kl_impl.inc"
#undef KL_ATTR
#undef KL_NAME
#undef KL_GATHER
#endif

const fd_kl_ops *fd_kl_neon_ops(void);
const fd_kl_ops *fd_kl_ops_for(fd_path p)
{
#if defined(__x86_64__)
    switch (p) {
    case FD_PATH_AVX512F: case FD_PATH_AVX512BF16: return &avx512_ops;
    case FD_PATH_AVX2: return &avx2_ops;
    default: return &generic_ops;
    }
#elif defined(__aarch64__)
    return p == FD_PATH_NEON || p == FD_PATH_NEON_BF16 ? fd_kl_neon_ops() : &generic_ops; /* kl_neon.c */
#else
    (void)p;
    return &generic_ops;
#endif
}

double fd_exp_canonical(double x)
{
    v8d v = {x, 0, 0, 0, 0, 0, 0, 0};
    return generic_vexp(v)[0];
}

/* log(x) for x >= 1: x = 2^k * m with m in [sqrt(1/2), sqrt(2)),
 * log m = 2 atanh(s), s = (m-1)/(m+1), the series to s^23; mul/add only. */
double fd_log_canonical(double x)
{
    v8d v = {x, 1, 1, 1, 1, 1, 1, 1};
    return generic_vlog(v)[0];
}

void fd_kl_finish(const fd_ref_state *rs, const fd_pair_state *ps, fd_kl_result *out)
{
    double lr = fd_log_canonical(rs->s), lc = fd_log_canonical(ps->s);
    /* no term of the maxima themselves: t and u hold differences of
     * max-relative logits, so huge common offsets never cancel (NUMERICS §2) */
    out->kl = ps->t / rs->s + (lc - lr);
    out->rkl = ps->u / ps->s + (lr - lc);
    out->entropy = lr - rs->e / rs->s;
    out->top1_match = rs->argmax == ps->argmax;
}

int fd_kl_result_same(const fd_kl_result *a, const fd_kl_result *b)
{
    return memcmp(&a->kl, &b->kl, sizeof a->kl) == 0 && memcmp(&a->rkl, &b->rkl, sizeof a->rkl) == 0 &&
           memcmp(&a->entropy, &b->entropy, sizeof a->entropy) == 0 && a->top1_match == b->top1_match;
}
