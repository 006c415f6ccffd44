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
/* AVX2: the fma of 8 lanes as two 256-bit fused multiply-adds (one rounding each, as C fma()) */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) v8d avx2_fma8(v8d a, v8d b, v8d c)
{
    __m256d x[2], y[2], z[2];
    memcpy(x, &a, sizeof x);
    memcpy(y, &b, sizeof y);
    memcpy(z, &c, sizeof z);
    x[0] = _mm256_fmadd_pd(x[0], y[0], z[0]);
    x[1] = _mm256_fmadd_pd(x[1], y[1], z[1]);
    memcpy(&a, x, sizeof a);
    return a;
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
#define SC_NAME avx2_scan_minmax
#define SC_TARGET __attribute__((target("avx2")))
#define SC_N 8
#define SC_VF __m256
#define SC_VI __m256i
#define SC_SET1F _mm256_set1_ps
#define SC_SET1I _mm256_set1_epi32
#define SC_ZEROI _mm256_setzero_si256
#define SC_LOADF _mm256_loadu_ps
#define SC_BITS _mm256_castps_si256
#define SC_AND _mm256_and_si256
#define SC_MAXU _mm256_max_epu32
#define SC_MAXF _mm256_max_ps
#define SC_STOREI(p, v) _mm256_storeu_si256((__m256i *)(void *)(p), v)
#define SC_STOREF _mm256_storeu_ps
#include "kl_scan.inc"
#define KL_ATTR __attribute__((target("avx2,fma")))
/* the 4-lane exp for the fused loop's halves (kl_impl.inc): one register per value */
#define KE_VD v4d
#define KE_VL v4l
#define KE_VU v4u
#define KE_N 4
#define KE_NAME avx2_vexp4
#define KE_NAME_X avx2_vexp4_x /* four at once: the fused loop's */
#define KE_NAME_X_NC avx2_vexp4_x_nc /* the same where every argument is >= -700 */
#define KE_X 4
#define KE_CLAMP_LO(lo, x) ((v4d)_mm256_max_pd((__m256d)(lo), (__m256d)(x)))
#define KE_FMA(a, b, c) ((v4d)_mm256_fmadd_pd((__m256d)(a), (__m256d)(b), (__m256d)(c)))
/* no KE_LOOKUP: the per-lane table loop.  Measured slower on Zen 5
 * (bench/kl_bench.c, fused): the indices stored and read back (store
 * forwarding), and vpermps from the table in four registers with two
 * vblendvpd; vgatherqpd measured no faster on Zen 4, and qemu-x86_64 7.2
 * (tests/avx2.sh) returned wrong entries for a gather here. */
#include "kl_exp.inc"
#undef KE_VD
#undef KE_VL
#undef KE_VU
#undef KE_N
#undef KE_NAME
#undef KE_NAME_X
#undef KE_NAME_X_NC
#undef KE_X
#undef KE_CLAMP_LO
#undef KE_FMA
#undef KE_LOOKUP
#define KL_EXP4 avx2_vexp4
#define KL_EXP4_X avx2_vexp4_x
#define KL_EXP4_X_NC avx2_vexp4_x_nc
#define KL_SCAN_MINMAX(x, n, best, least) avx2_scan_minmax(x, n, best, least)
#define KL_ONE_PASS 1
#define KL_NAME(x) avx2_##x
#define KL_FMA(a, b, c) avx2_fma8(a, b, c)
#define KL_CLAMP_LO(lo, x) avx2_clamp8(lo, x)
#include "kl_impl.inc"
#undef KL_ATTR
#undef KL_NAME
#undef KL_FMA
#undef KL_CLAMP_LO
#undef KL_EXP4
#undef KL_EXP4_X
#undef KL_EXP4_X_NC
#undef KL_SCAN_MINMAX
#undef KL_ONE_PASS

/* AVX-512: the table lookup is one vpermt2pd from the 16 entries held in two
 * registers (it reads the low 4 bits of each index: j), and the fused loop
 * is software-pipelined (KL_PIPE). */
#define SC_NAME avx512_scan_minmax
#define SC_TARGET __attribute__((target("avx512f")))
#define SC_N 16
#define SC_VF __m512
#define SC_VI __m512i
#define SC_SET1F _mm512_set1_ps
#define SC_SET1I _mm512_set1_epi32
#define SC_ZEROI _mm512_setzero_si512
#define SC_LOADF _mm512_loadu_ps
#define SC_BITS _mm512_castps_si512
#define SC_AND _mm512_and_si512
#define SC_MAXU _mm512_max_epu32
#define SC_MAXF _mm512_max_ps
#define SC_STOREI(p, v) _mm512_storeu_si512((void *)(p), v)
#define SC_STOREF _mm512_storeu_ps
#include "kl_scan.inc"
/* The first x[i] > thr (ordered: NaN never is), or n: 64 columns a time as
 * four 16-lane compares, the index of the first hit from their masks. */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) size_t avx512_first_above_16(const float *x,
                                                                                                           size_t n, float thr)
{
    const __m512 t = _mm512_set1_ps(thr);
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t k = (uint64_t)_mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), t, _CMP_GT_OQ) |
                     (uint64_t)_mm512_cmp_ps_mask(_mm512_loadu_ps(x + i + 16), t, _CMP_GT_OQ) << 16 |
                     (uint64_t)_mm512_cmp_ps_mask(_mm512_loadu_ps(x + i + 32), t, _CMP_GT_OQ) << 32 |
                     (uint64_t)_mm512_cmp_ps_mask(_mm512_loadu_ps(x + i + 48), t, _CMP_GT_OQ) << 48;
        if (k) return i + (size_t)__builtin_ctzll(k);
    }
    for (; i < n; i++)
        if (x[i] > thr) return i;
    return n;
}
#define KL_ATTR __attribute__((target("avx512f,avx512dq")))
#define KL_SCAN_MINMAX(x, n, best, least) avx512_scan_minmax(x, n, best, least)
#define KL_FIRST_ABOVE(x, n, thr) avx512_first_above_16(x, n, thr)
#include "kl_avx512.h" /* the exp's hooks: fma, clamp, table lookup, scaling */
#define KL_ONE_PASS 1
#define KL_PIPE 1
#define KL_NAME(x) avx512_##x
#include "kl_impl.inc"
#undef KL_NAME
#undef KL_ATTR
#undef KL_FMA
#undef KL_CLAMP_LO
#undef KL_LOOKUP
#undef KL_SCALE
#undef KL_ONE_PASS
#undef KL_PIPE
#undef KL_SCAN_MINMAX
#undef KL_FIRST_ABOVE
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
