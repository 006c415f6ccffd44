#include "kl.h"
#if defined(__x86_64__)
#include <cpuid.h>
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
/* x - kd*C_HI fused (exact either way: kl_impl.inc) */
__attribute__((target("avx2,fma"))) static inline __attribute__((always_inline)) v8d avx2_redhi8(v8d x, v8d kd)
{
    __m256d v[2], k[2];
    memcpy(v, &x, sizeof v);
    memcpy(k, &kd, sizeof k);
    const __m256d c = _mm256_set1_pd(EXP_C_HI);
    v[0] = _mm256_fnmadd_pd(k[0], c, v[0]);
    v[1] = _mm256_fnmadd_pd(k[1], c, v[1]);
    memcpy(&x, v, sizeof x);
    return x;
}
#define KL_ATTR __attribute__((target("avx2,fma")))
/* the 4-lane exp for the fused loop's halves (kl_impl.inc): one register per value */
#define KE_VD v4d
#define KE_VL v4l
#define KE_VU v4u
#define KE_N 4
#define KE_NAME avx2_vexp4
#define KE_NAME_X avx2_vexp4_x /* four at once: the fused loop's */
#define KE_X 4
#define KE_CLAMP_LO(lo, x) ((v4d)_mm256_max_pd((__m256d)(lo), (__m256d)(x)))
#define KE_RED_HI(x, kd) ((v4d)_mm256_fnmadd_pd((__m256d)(kd), _mm256_set1_pd(EXP_C_HI), (__m256d)(x)))
/* no KE_GATHER: the per-lane table loop, as fast here as vgatherqpd (measured
 * on Zen 4), and qemu-x86_64 7.2 (tests/avx2.sh) returned wrong entries for
 * this function's gather while the same binary matched the generic build on
 * 10^8 arguments natively */
#include "kl_exp.inc"
#undef KE_VD
#undef KE_VL
#undef KE_VU
#undef KE_N
#undef KE_NAME
#undef KE_NAME_X
#undef KE_X
#undef KE_CLAMP_LO
#undef KE_RED_HI
#define KL_EXP4 avx2_vexp4
#define KL_EXP4_X avx2_vexp4_x
#define KL_ONE_PASS 1
#define KL_NAME(x) avx2_##x
#define KL_GATHER(out, idx) ((out) = avx2_gather8(idx))
#define KL_CLAMP_LO(lo, x) avx2_clamp8(lo, x)
#define KL_RED_HI(x, kd) avx2_redhi8(x, kd)
#include "kl_impl.inc"
#undef KL_ATTR
#undef KL_NAME
#undef KL_GATHER
#undef KL_CLAMP_LO
#undef KL_RED_HI
#undef KL_EXP4
#undef KL_EXP4_X
#undef KL_ONE_PASS

/* AVX-512: two builds of the same code that differ in the exp table lookup
 * only, loads either way, so the bits are those of the per-lane loop the
 * other targets use.  avx512_: the gather instruction (measured on a Sapphire
 * Rapids-class host: a per-lane loop made the AVX-512 KL loops ~1.5x slower
 * there); avx512l_, on AMD Zen 5 and later: the 8 indices stored and read back
 * as integers, then 8 scalar loads (bench/README.md: on Zen 5 vgatherqpd was
 * the fused loop's bottleneck; the per-lane loop through vmovq / vpextrq was
 * ~7 % faster, this one ~15 %; on Zen 4 a lane loop had measured slower than
 * the gather, so Zen 4 keeps it).  Both run the fused loop's two exps side by
 * side (KL_EXP_X). */
__attribute__((target("avx512f,avx512dq"))) static inline __attribute__((always_inline)) v8d avx512_lookup8(v8l j)
{
    long long ix[8] __attribute__((aligned(64)));
    memcpy(ix, &j, sizeof ix);
    __asm__("" : "+m"(ix)); /* keeps the store: the lanes come back through loads, not vector-to-integer moves */
    v8d o;
    for (int l = 0; l < 8; l++) o[l] = fd_exp2_128[ix[l]];
    return o;
}
/* The chunk max for the scan (kl_impl.inc): vmaxps(m, v) is m > v ? m : v, the
 * generic blend, over 4 x 16 lanes; non-finite (exponent all ones) found as
 * the unsigned max of the exponent bits.  The max of finite floats is one
 * value whatever the order (of +0 / -0 either may be kept, as there). */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) int avx512_scan_max(const float *x, size_t n,
                                                                                                  float *best)
{
    const __m512i ex = _mm512_set1_epi32(0x7f800000);
    __m512 m0 = _mm512_set1_ps(x[0]), m1 = m0, m2 = m0, m3 = m0;
    __m512i e0 = _mm512_setzero_si512(), e1 = e0;
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
        __m512 v2 = _mm512_loadu_ps(x + i + 32), v3 = _mm512_loadu_ps(x + i + 48);
        e0 = _mm512_max_epu32(e0, _mm512_and_si512(_mm512_castps_si512(v0), ex));
        e1 = _mm512_max_epu32(e1, _mm512_and_si512(_mm512_castps_si512(v1), ex));
        e0 = _mm512_max_epu32(e0, _mm512_and_si512(_mm512_castps_si512(v2), ex));
        e1 = _mm512_max_epu32(e1, _mm512_and_si512(_mm512_castps_si512(v3), ex));
        m0 = _mm512_max_ps(m0, v0);
        m1 = _mm512_max_ps(m1, v1);
        m2 = _mm512_max_ps(m2, v2);
        m3 = _mm512_max_ps(m3, v3);
    }
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        e0 = _mm512_max_epu32(e0, _mm512_and_si512(_mm512_castps_si512(v), ex));
        m0 = _mm512_max_ps(m0, v);
    }
    if (i < n) { /* the tail, masked: lanes past n are x[0] again */
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1u);
        __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(x[0]), k, x + i);
        e0 = _mm512_max_epu32(e0, _mm512_and_si512(_mm512_castps_si512(v), ex));
        m0 = _mm512_max_ps(m0, v);
    }
    m0 = _mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3));
    if (_mm512_cmpeq_epi32_mask(_mm512_max_epu32(e0, e1), ex)) return -1;
    float l[16], b = x[0];
    _mm512_storeu_ps(l, m0);
    for (int j = 0; j < 16; j++) b = l[j] > b ? l[j] : b;
    *best = b;
    return 0;
}
#define KL_ATTR __attribute__((target("avx512f,avx512dq")))
#define KL_SCAN_MAX(x, n, best) avx512_scan_max(x, n, best)
/* vmaxpd(lo, x) is lo > x ? lo : x, the blend's result for every x (NaN kept) */
#define KL_CLAMP_LO(lo, x) ((v8d)_mm512_max_pd((__m512d)(lo), (__m512d)(x)))
#define KL_RED_HI(x, kd) ((v8d)_mm512_fnmadd_pd((__m512d)(kd), _mm512_set1_pd(EXP_C_HI), (__m512d)(x)))
/* y * 2^floor(kd/128) rounded once (kd/128 is exact): the correctly rounded
 * y * 2^e of the generic two steps, subnormal results included */
#define KL_SCALE(y, kd) ((v8d)_mm512_scalef_pd((__m512d)(y), (__m512d)((kd) * (1.0 / 128.0))))
#define KL_ONE_PASS 1
#define KL_EXP_X 2
#define KL_NAME(x) avx512_##x
#define KL_GATHER(out, idx) ((out) = (v8d)_mm512_i64gather_pd((__m512i)(idx), fd_exp2_128, 8))
#include "kl_impl.inc"
#undef KL_NAME
#undef KL_GATHER
#define KL_NAME(x) avx512l_##x
#define KL_GATHER(out, idx) ((out) = avx512_lookup8(idx))
#include "kl_impl.inc"
#undef KL_NAME
#undef KL_GATHER
#undef KL_ATTR
#undef KL_CLAMP_LO
#undef KL_RED_HI
#undef KL_SCALE
#undef KL_ONE_PASS
#undef KL_EXP_X
#undef KL_SCAN_MAX
#endif

#if defined(__x86_64__)
/* AMD family 1Ah (Zen 5) or later, from CPUID (a feature of the CPU, never a timing) */
static int amd_zen5_or_later(void)
{
    unsigned a, b, c, d;
    if (!__builtin_cpu_is("amd") || !__get_cpuid(1, &a, &b, &c, &d)) return 0;
    unsigned family = (a >> 8) & 0xf;
    if (family == 0xf) family += (a >> 20) & 0xff;
    return family >= 0x1a;
}
#endif

const fd_kl_ops *fd_kl_neon_ops(void);
const fd_kl_ops *fd_kl_ops_for(fd_path p)
{
#if defined(__x86_64__)
    switch (p) {
    case FD_PATH_AVX512F: case FD_PATH_AVX512BF16: return amd_zen5_or_later() ? &avx512l_ops : &avx512_ops;
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

const fd_kl_ops *fd_kl_ops_variant(fd_path p, int v)
{
    if (v == 0) return fd_kl_ops_for(p);
#if defined(__x86_64__)
    if (v == 1 && (p == FD_PATH_AVX512F || p == FD_PATH_AVX512BF16))
        return fd_kl_ops_for(p) == &avx512_ops ? &avx512l_ops : &avx512_ops;
#endif
    return NULL;
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
