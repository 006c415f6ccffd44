#include "kl.h"
#include <immintrin.h>
#include <string.h>

/* The vector helpers are always inlined: no vector crosses a call boundary,
 * so GCC's note about the AVX-512 calling convention does not apply. */
#pragma GCC diagnostic ignored "-Wpsabi"

#define KL_ATTR
#define KL_NAME(x) generic_##x
#include "kl_impl.inc"
#undef KL_ATTR
#undef KL_NAME

#define KL_ATTR __attribute__((target("avx2,fma")))
#define KL_NAME(x) avx2_##x
#include "kl_impl.inc"
#undef KL_ATTR
#undef KL_NAME

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

const fd_kl_ops *fd_kl_ops_for(fd_path p)
{
    switch (p) {
    case FD_PATH_AVX512F: case FD_PATH_AVX512BF16: return &avx512_ops;
    case FD_PATH_AVX2: return &avx2_ops;
    default: return &generic_ops;
    }
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
    uint64_t u;
    memcpy(&u, &x, 8);
    int64_t k = (int64_t)((u >> 52) & 0x7ff) - 1023;
    u = (u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
    double m;
    memcpy(&m, &u, 8);
    if (m > 1.4142135623730951) { m *= 0.5; k += 1; }
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 23.0;
    static const double inv_odd[] = {1.0 / 21.0, 1.0 / 19.0, 1.0 / 17.0, 1.0 / 15.0, 1.0 / 13.0, 1.0 / 11.0,
                                     1.0 / 9.0, 1.0 / 7.0, 1.0 / 5.0, 1.0 / 3.0, 1.0};
    for (size_t i = 0; i < sizeof inv_odd / sizeof *inv_odd; i++) p = p * s2 + inv_odd[i];
    double kd = (double)k;
    return kd * LN2_HI + ((2.0 * s) * p + kd * LN2_LO);
}

void fd_kl_finish(const fd_ref_state *rs, const fd_pair_state *ps, fd_kl_result *out)
{
    double lr = fd_log_canonical(rs->s), lc = fd_log_canonical(ps->s);
    out->kl = ps->t / rs->s + ((ps->m - rs->m) + (lc - lr));
    out->rkl = ps->u / ps->s + ((rs->m - ps->m) + (lr - lc));
    out->entropy = lr - rs->e / rs->s;
    out->top1_match = rs->argmax == ps->argmax;
}
