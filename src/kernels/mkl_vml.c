/* MKL VML vsExp (HA, AVX-512 kernel mkl_vml_kernel_sExp_Z0HAynn), the
 * kernel behind torch.exp on float CPU tensors in the x86-64 wheel
 * (ATen's vml.h maps exp to MKL's vsExp); read from the torch 2.11 wheel's
 * disassembly and its constant table vsexp_data_avx512.  mkl_vml.h. */
#include "kernels/mkl_vml.h"
#include "util/bf16.h"
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#define f_of fd_bits_f32
#define u_of fd_f32_bits

/* 2^(j/32) - T_HI[j] (the low part), and 2^(j/32) rounded, j = 0..31 */
static const uint32_t T_LO[32] = {
    0x00000000, 0xb34a3a0a, 0x3346cb6a, 0xb36ed17e, 0xb24e0611, 0xb3517dd9, 0x334b2482, 0xb31586de,
    0x33092801, 0xb2e6f467, 0x331b85f2, 0x3099b6f1, 0xb3051aa8, 0xb2e2a0da, 0xb2006c56, 0xb3365942,
    0x329302ae, 0x32c595dc, 0xb302e5a2, 0xb28e10a1, 0x31b3d0e5, 0xb31a472b, 0x31d1daf2, 0xb305bf64,
    0xb27ce182, 0xb2f26443, 0xb1b4b0da, 0xb1da8a8f, 0xb1d290be, 0xb2d5b899, 0x31b0a147, 0xb2156afc};
static const uint32_t T_HI[32] = {
    0x3f800000, 0x3f82cd87, 0x3f85aac3, 0x3f88980f, 0x3f8b95c2, 0x3f8ea43a, 0x3f91c3d3, 0x3f94f4f0,
    0x3f9837f0, 0x3f9b8d3a, 0x3f9ef532, 0x3fa27043, 0x3fa5fed7, 0x3fa9a15b, 0x3fad583f, 0x3fb123f6,
    0x3fb504f3, 0x3fb8fbaf, 0x3fbd08a4, 0x3fc12c4d, 0x3fc5672a, 0x3fc9b9be, 0x3fce248c, 0x3fd2a81e,
    0x3fd744fd, 0x3fdbfbb8, 0x3fe0ccdf, 0x3fe5b907, 0x3feac0c7, 0x3fefe4ba, 0x3ff5257d, 0x3ffa83b3};

/* fmaf(a, b, c) rounded toward zero ({rz-sae}): the exact a*b + c as a
 * double-double (the product of two floats is exact in a double), rounded
 * to nearest float, then stepped toward zero when that overshot (one ulp
 * down in magnitude: f is finite and nonzero there). */
#define FMA_RZ_BODY                                                                                      \
    double p = (double)a * (double)b, hi = p + (double)c;                                                \
    double bb = hi - p, lo = (p - (hi - bb)) + ((double)c - bb); /* TwoSum: hi + lo == p + c */         \
    float f = (float)hi;                                                                                \
    double d = (double)f - hi;                                                                          \
    double over = d != 0.0 ? d : -lo; /* sign of f - (hi + lo) */                                       \
    if ((f > 0.0f && over > 0.0) || (f < 0.0f && over < 0.0)) f = f_of(u_of(f) - 1u);                   \
    return f;

/* T_HI[j] * 2^k (vscalefps): an exponent add while the result is normal */
static float scale2(float t, int k)
{
    if (k < -126 || k > 127) return ldexpf(t, k);
    return f_of(u_of(t) + ((uint32_t)(k + 127) << 23) - (127u << 23));
}

/* compiled twice, as torch_ops.c's exp: for an FMA target (fmaf one
 * instruction) and generically (libm fmaf); the same bits */
#define EXP_BODY(FMA_RZ)                                                                                 \
    if (x != x) return x;                                                                               \
    if (fabsf(x) >= f_of(0x42aeac4f)) /* MKL's scalar callout (overflow / subnormal results): libm */   \
        return expf(x);                                                                                 \
    float z = FMA_RZ(x, f_of(0x3fb8aa3b), 393216.0f); /* 1.5 * 2^18: z's low 5 bits = j */             \
    float n = z - 393216.0f;                           /* floor(32 x log2 e) / 32 */                    \
    float r = fmaf(n, f_of(0xbf317218), x);                                                             \
    r = fmaf(n, f_of(0x3102e308), r);                                                                   \
    r = f_of(u_of(r) & 0xbfffffffu);                                                                    \
    uint32_t j = u_of(z) & 31u;                                                                         \
    float r2 = r * r, tl = f_of(T_LO[j]) + r;                                                           \
    float q = fmaf(r, f_of(0x3e2aabf3), f_of(0x3f0000f6));                                              \
    float p = fmaf(q, r2, tl);                                                                          \
    float sc = scale2(f_of(T_HI[j]), (int)floorf(n)); /* vscalefps: T_HI[j] * 2^floor(n) */             \
    return fmaf(p, sc, sc);

static float fma_rz(float a, float b, float c) { FMA_RZ_BODY }
static float expf_any(float x) { EXP_BODY(fma_rz) }
#if defined(__x86_64__)
__attribute__((target("fma"))) static float fma_rz_fma(float a, float b, float c) { FMA_RZ_BODY }
__attribute__((target("fma"))) static float expf_fma(float x) { EXP_BODY(fma_rz_fma) }
#endif

#if defined(__x86_64__)
/* The kernel itself on 16 lanes: the truncating FMA as {rz-sae}, the two
 * 32-entry tables by permutes, vscalefps.  Lanes outside its fast range
 * (|x| >= 87.33654, NaN) are redone by the one-lane function. */
__attribute__((target("avx512f"))) static size_t expf16_rows(const float *x, float *y, size_t n)
{
    const __m512 thr = _mm512_set1_ps(f_of(0x42aeac4f)), big = _mm512_set1_ps(393216.0f);
    const __m512 lo0 = _mm512_loadu_ps((const float *)T_LO), lo1 = _mm512_loadu_ps((const float *)T_LO + 16);
    const __m512 hi0 = _mm512_loadu_ps((const float *)T_HI), hi1 = _mm512_loadu_ps((const float *)T_HI + 16);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        __m512 z = _mm512_fmadd_round_ps(v, _mm512_set1_ps(f_of(0x3fb8aa3b)), big, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
        __m512 nn = _mm512_sub_ps(z, big);
        __m512 r = _mm512_fmadd_ps(nn, _mm512_set1_ps(f_of(0xbf317218)), v);
        r = _mm512_fmadd_ps(nn, _mm512_set1_ps(f_of(0x3102e308)), r);
        r = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(r), _mm512_set1_epi32((int)0xbfffffffu)));
        __m512i j = _mm512_and_si512(_mm512_castps_si512(z), _mm512_set1_epi32(31));
        __m512 tlo = _mm512_permutex2var_ps(lo0, j, lo1), thi = _mm512_permutex2var_ps(hi0, j, hi1);
        __m512 r2 = _mm512_mul_ps(r, r), tl = _mm512_add_ps(tlo, r);
        __m512 q = _mm512_fmadd_ps(r, _mm512_set1_ps(f_of(0x3e2aabf3)), _mm512_set1_ps(f_of(0x3f0000f6)));
        __m512 p = _mm512_fmadd_ps(q, r2, tl);
        __m512 sc = _mm512_scalef_ps(thi, nn); /* thi * 2^floor(nn) */
        __mmask16 slow = _mm512_cmp_ps_mask(_mm512_abs_ps(v), thr, _CMP_NLT_UQ); /* >= or NaN */
        float xs[16];
        if (slow) _mm512_storeu_ps(xs, v); /* x may be y */
        _mm512_storeu_ps(y + i, _mm512_fmadd_ps(p, sc, sc));
        if (slow)
            for (int l = 0; l < 16; l++)
                if (slow >> l & 1) y[i + (size_t)l] = fd_mkl_expf(xs[l]);
    }
    _mm256_zeroupper();
    return i;
}
#endif

void fd_mkl_expf_n(const float *x, float *y, size_t n)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) i = expf16_rows(x, y, n);
#endif
    for (; i < n; i++) y[i] = fd_mkl_expf(x[i]);
}

float fd_mkl_expf(float x)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("fma")) return expf_fma(x);
#endif
    return expf_any(x);
}

/* {d, c} per piece: rsqrt14 = trunc17((c - 2^8 d (x' - y)) / 2^19) on [1, 2)
 * (y = 1 + 1/64 + i/32), (c - 2^7 d (x' - y)) / 2^19 on [2, 4) (y = 2 +
 * 1/32 + i/16), x' = x with its 8 low significand bits cleared.  The integers
 * are the smallest that reproduce VRSQRT14SS on all 2^24 inputs of [1, 4)
 * (fitted and checked on this host, tests/parity). */
static const uint32_t RSQ_LO[32][2] = {
    {1001, 520261}, {955, 512437}, {915, 504953}, {877, 497790}, {841, 490922}, {807, 484331}, {775, 478001},
    {747, 471909},  {719, 466046}, {693, 460397}, {669, 454947}, {647, 449688}, {625, 444606}, {603, 439694},
    {585, 434939},  {567, 430335}, {549, 425875}, {533, 421551}, {517, 417355}, {501, 413284}, {487, 409329},
    {473, 405487},  {461, 401748}, {449, 398111}, {437, 394571}, {425, 391127}, {415, 387770}, {403, 384498},
    {393, 381307},  {385, 378194}, {375, 375155}, {367, 372190}};
static const uint32_t RSQ_HI[32][2] = {
    {707, 367881}, {675, 362349}, {647, 357056}, {619, 351992}, {595, 347136}, {571, 342475}, {549, 337997},
    {527, 333693}, {509, 329545}, {491, 325551}, {473, 321697}, {457, 317977}, {441, 314385}, {427, 310910},
    {413, 307549}, {401, 304295}, {389, 301139}, {377, 298079}, {365, 295115}, {355, 292237}, {345, 289439},
    {335, 286722}, {325, 284080}, {317, 281508}, {309, 279006}, {301, 276569}, {293, 274195}, {285, 271882},
    {279, 269625}, {271, 267425}, {265, 265276}, {259, 263178}};

float fd_rsqrt14(float x)
{
    uint32_t u = u_of(x);
    int e;
    if (u >= 0x00800000u) e = (int)(u >> 23) - 127;
    else { /* subnormal: normalise */
        e = -126;
        while (!(u & 0x00800000u)) { u <<= 1; e--; }
    }
    uint32_t sig = u & 0x007fffffu;
    int odd = e & 1, n = (e - odd) / 2; /* x = m 2^(2n), m in [1, 4) */
    float m = f_of((odd ? 0x40000000u : 0x3f800000u) | sig);
    if (!odd && sig == 0) return f_of((uint32_t)(0x3f800000 - n * (1 << 23))); /* exact power of 4 */
    float mt = f_of(u_of(m) & 0xffffff00u);
    uint32_t i = odd ? (uint32_t)((m - 2.0f) * 16.0f) : (uint32_t)((m - 1.0f) * 32.0f);
    double y = odd ? 2.0 + 1.0 / 32 + i / 16.0 : 1.0 + 1.0 / 64 + i / 32.0;
    const uint32_t *cd = odd ? RSQ_HI[i] : RSQ_LO[i];
    double v = (double)cd[1] - (odd ? 128.0 : 256.0) * (double)cd[0] * ((double)mt - y); /* exact */
    uint64_t b;
    memcpy(&b, &v, 8);
    b &= 0xfffffff000000000ull; /* 17 significant bits, truncated */
    memcpy(&v, &b, 8);
    float r = (float)ldexp(v, -19);
    return f_of(u_of(r) - (uint32_t)(n * (1 << 23)));
}

float fd_mkl_sqrtf(float x)
{
    if (!(x > 0.0f) || x == INFINITY) return sqrtf(x);
    float y0 = fd_rsqrt14(x), h = y0 * 0.5f, s = y0 * x;
    if (y0 > 549755813888.0f) { /* y0 > 2^39 (x < 2^-78): the kernel's scaled lanes */
        float xs = x * 302231454903657293676544.0f, ss = s * 549755813888.0f; /* x 2^78, s 2^39 */
        float hs = h * f_of(0x18800000u);                                      /* h 2^-78 */
        float e = fmaf(-ss, ss, xs);
        return fmaf(e, hs, s);
    }
    float e = fmaf(-s, s, x);
    return fmaf(e, h, s);
}

/* MKL VML vsLn (HA), the kernel behind torch.log on float CPU tensors
 * (ATen's vml.h maps log to vsLn).  On this host (AMD Zen 4) MKL dispatches
 * mkl_vml_kernel_sLn_EXHAynn (perf on torch.log of a 2^22 tensor; the
 * AVX-512 Z0 kernel is not the one that runs), read from the torch 2.15
 * wheel's disassembly: SSE mulps / addps (no FMA, round to nearest), no
 * table on the fast path.  Positive normal x = 2^k m, m in [2/3, 4/3) by an
 * integer subtract of 0x3f2aaaab; r = m - 1 (exact); a degree-9 polynomial
 * p(r) = r + r^2 (a1 + a2 r + ... + a9 r^8) in Horner order; then
 * k ln2_lo + p, then k ln2_hi + that.  The rest (zero, subnormal, negative,
 * infinity, NaN) is the scalar callout vsln_cout_rare: -inf for +-0, the
 * default NaN 0x7fc00000 for x < 0 and -inf, x * x for +inf and NaN, and
 * for a subnormal a double-precision log rounded to float, for which
 * (float)log((double)x) stands in (checked on all 2^23 - 1 subnormals). */
static const uint32_t LN_A[9] = {0xbf000000, 0x3eaaaa83, 0xbe7fff78, 0x3e4ce814, 0xbe2acee6,
                                 0x3e0f6b8c, 0xbdf9889e, 0x3e0f335d, 0xbe0402c8}; /* a1 .. a9 */

float fd_mkl_logf(float x)
{
    uint32_t xi = u_of(x);
    if (xi - 0x00800000u < 0x7f000000u) { /* positive normal: the vector path */
        uint32_t u = xi - 0x3f2aaaabu;
        int k = (int)(u >> 23); /* psrad: the 9-bit exponent field of u, signed */
        if (k >= 256) k -= 512;
        float r = f_of((u & 0x007fffffu) + 0x3f2aaaabu) - 1.0f;
        float p = f_of(LN_A[8]);
        for (int i = 7; i >= 0; i--) p = p * r + f_of(LN_A[i]); /* mulps, addps */
        p = p * r * r + r;
        float kf = (float)k, lo = kf * f_of(0x35bfbe8e) + p;
        return kf * f_of(0x3f317200) + lo;
    }
    if ((xi & 0x7f800000u) == 0x7f800000u) /* infinity, NaN */
        return xi == 0xff800000u ? f_of(0x7fc00000u) : x * x;
    if ((xi & 0x7fffffffu) == 0) return -INFINITY;
    if (xi >> 31) return f_of(0x7fc00000u);
    return (float)log((double)x); /* subnormal */
}

/* MKL VML vsExp (HA) as MKL 2024.2 (the torch 2.15 wheel) dispatches it on
 * this host (AMD Zen 4): mkl_vml_kernel_sExp_EXHAynn, an SSE kernel (perf
 * on torch.exp; not the AVX-512 Z0 kernel of fd_mkl_expf, which differs on
 * ~1.7 % of inputs by 1 ulp).  n = round(x 128 / ln 2) by the 1.5 * 2^23
 * shifter (multiply then add: two roundings, no FMA), r = x - n ln2_hi/128
 * + n ln2_lo/128, q = r^2 / 2 + r, a 128-entry two-part table T = 2^(j/128)
 * (vsexp_data + 0x300): (q T_hi + T_lo) + T_hi, times 2^(n >> 7) built in
 * the exponent field.  |x| > 87.33654 and NaN take the scalar callout
 * vsexp_cout_rare (replicated below). */
static const uint32_t EX_HI[128] = {
    0x3f800000, 0x3f80b1ed, 0x3f8164d2, 0x3f8218af, 0x3f82cd87, 0x3f838359, 0x3f843a29, 0x3f84f1f6,
    0x3f85aac3, 0x3f866491, 0x3f871f62, 0x3f87db35, 0x3f88980f, 0x3f8955ee, 0x3f8a14d5, 0x3f8ad4c6,
    0x3f8b95c2, 0x3f8c57ca, 0x3f8d1adf, 0x3f8ddf04, 0x3f8ea43a, 0x3f8f6a81, 0x3f9031dc, 0x3f90fa4d,
    0x3f91c3d3, 0x3f928e72, 0x3f935a2b, 0x3f9426ff, 0x3f94f4f0, 0x3f95c3ff, 0x3f96942d, 0x3f97657d,
    0x3f9837f0, 0x3f990b88, 0x3f99e046, 0x3f9ab62b, 0x3f9b8d3a, 0x3f9c6573, 0x3f9d3eda, 0x3f9e196e,
    0x3f9ef532, 0x3f9fd228, 0x3fa0b051, 0x3fa18faf, 0x3fa27043, 0x3fa3520f, 0x3fa43516, 0x3fa51958,
    0x3fa5fed7, 0x3fa6e595, 0x3fa7cd94, 0x3fa8b6d5, 0x3fa9a15b, 0x3faa8d26, 0x3fab7a3a, 0x3fac6897,
    0x3fad583f, 0x3fae4934, 0x3faf3b79, 0x3fb02f0e, 0x3fb123f6, 0x3fb21a32, 0x3fb311c4, 0x3fb40aaf,
    0x3fb504f3, 0x3fb60094, 0x3fb6fd92, 0x3fb7fbf0, 0x3fb8fbaf, 0x3fb9fcd2, 0x3fbaff5b, 0x3fbc034a,
    0x3fbd08a4, 0x3fbe0f68, 0x3fbf179a, 0x3fc0213b, 0x3fc12c4d, 0x3fc238d2, 0x3fc346cd, 0x3fc4563f,
    0x3fc5672a, 0x3fc67991, 0x3fc78d75, 0x3fc8a2d8, 0x3fc9b9be, 0x3fcad226, 0x3fcbec15, 0x3fcd078c,
    0x3fce248c, 0x3fcf4319, 0x3fd06334, 0x3fd184df, 0x3fd2a81e, 0x3fd3ccf1, 0x3fd4f35b, 0x3fd61b5e,
    0x3fd744fd, 0x3fd87039, 0x3fd99d16, 0x3fdacb94, 0x3fdbfbb8, 0x3fdd2d82, 0x3fde60f5, 0x3fdf9613,
    0x3fe0ccdf, 0x3fe2055b, 0x3fe33f89, 0x3fe47b6d, 0x3fe5b907, 0x3fe6f85b, 0x3fe8396a, 0x3fe97c38,
    0x3feac0c7, 0x3fec0719, 0x3fed4f30, 0x3fee9910, 0x3fefe4ba, 0x3ff13231, 0x3ff28177, 0x3ff3d290,
    0x3ff5257d, 0x3ff67a41, 0x3ff7d0df, 0x3ff9295a, 0x3ffa83b3, 0x3ffbdfed, 0x3ffd3e0c, 0x3ffe9e11,
};
static const uint32_t EX_LO[128] = {
    0x00000000, 0x331fb333, 0xb1c43fd0, 0x3306e7f8, 0xb34ea7a9, 0x331ddf6e, 0xb2f14c87, 0x332c6f38,
    0x334f9891, 0x3337247f, 0xb352c2e6, 0x337fed32, 0xb37eda4b, 0x30d86398, 0x336a92de, 0x330a58e5,
    0xb260aba1, 0xb2ee6e43, 0x3336fcb7, 0x32808b9a, 0xb3697465, 0x323f3647, 0x330628cd, 0xb3682237,
    0x33675624, 0x337b2a64, 0x32bc4f9c, 0x31fab1c0, 0xb32e0212, 0xb3725267, 0x32dc8061, 0x3313e2f5,
    0x33231b71, 0xb26cc9f4, 0xb359be90, 0xb0dac01e, 0xb30c5563, 0x33505d86, 0xb331a601, 0x3244ea39,
    0x33412342, 0x32959003, 0x31fb9715, 0xb2d5eaed, 0x30c3125a, 0x3351d005, 0xb323ec33, 0xb37282c2,
    0xb32c9d5e, 0xb2c0445e, 0xb3162d36, 0x3233d990, 0xb3162b08, 0x3325d921, 0xb314ad82, 0xb3368380,
    0xb22deaf6, 0x3325946b, 0xb3252deb, 0xb2d1247f, 0xb37c5aa8, 0xb33333ce, 0x32154889, 0xb33b3569,
    0x32cfe77a, 0xb32f4254, 0xb266b974, 0xb2d5cd70, 0x330ec5f7, 0x330a5817, 0xb31bd983, 0x337de5d4,
    0xb3414fe8, 0x31986099, 0xb3130b1a, 0xb33c1e5f, 0xb2d6663e, 0x32c478f6, 0xb2976da2, 0xb2ceb32d,
    0x320aa837, 0xb314abb7, 0xb2dd5119, 0x33391ffc, 0xb37323a2, 0x333c8521, 0xb006c6c2, 0xb3735f84,
    0x3228fc24, 0xb2c39b9c, 0xb2944353, 0x3344a2d3, 0xb35c1daa, 0xb34cf4ca, 0xb3286024, 0xb0303219,
    0xb2d4a58a, 0x3318db66, 0xb2f61d41, 0x335e5594, 0xb3504a1c, 0xb375ef9b, 0xb37b43e3, 0xb2851c3f,
    0xb21eab59, 0xac3e164c, 0x33657d15, 0xb33f9185, 0xb2441be6, 0xb32a23c0, 0x33207898, 0x3300d89f,
    0xb24116de, 0xb31367c7, 0x3276cca1, 0xb34fe4ba, 0xb348464a, 0xb330a5ed, 0x32f167ff, 0xb2871670,
    0x32292436, 0x3358e67f, 0x336615a2, 0xb3094457, 0xb2923758, 0x3359cbe1, 0x31cf486c, 0x3338f71f,
};

/* vsexp_cout_rare, the EX kernel's scalar callout (|x| > 87.33654, NaN):
 * exp in double, n = round(x 64 / ln 2) by the 1.5 * 2^52 shifter, r = x -
 * n ln2/64 in two parts, a degree-6 polynomial, a 64-entry two-part table
 * (_vmldExpHATab), scaled by 2^(n >> 6) and rounded once to float; results
 * that are subnormal floats are formed at 2^60 and split (Dekker) so the
 * one rounding happens at the float conversion. */
static const uint64_t EXC_HI[64] = {
    0x3ff0000000000000ull, 0x3ff02c9a3e778061ull, 0x3ff059b0d3158574ull, 0x3ff0874518759bc8ull,
    0x3ff0b5586cf9890full, 0x3ff0e3ec32d3d1a2ull, 0x3ff11301d0125b51ull, 0x3ff1429aaea92de0ull,
    0x3ff172b83c7d517bull, 0x3ff1a35beb6fcb75ull, 0x3ff1d4873168b9aaull, 0x3ff2063b88628cd6ull,
    0x3ff2387a6e756238ull, 0x3ff26b4565e27cddull, 0x3ff29e9df51fdee1ull, 0x3ff2d285a6e4030bull,
    0x3ff306fe0a31b715ull, 0x3ff33c08b26416ffull, 0x3ff371a7373aa9cbull, 0x3ff3a7db34e59ff7ull,
    0x3ff3dea64c123422ull, 0x3ff4160a21f72e2aull, 0x3ff44e086061892dull, 0x3ff486a2b5c13cd0ull,
    0x3ff4bfdad5362a27ull, 0x3ff4f9b2769d2ca7ull, 0x3ff5342b569d4f82ull, 0x3ff56f4736b527daull,
    0x3ff5ab07dd485429ull, 0x3ff5e76f15ad2148ull, 0x3ff6247eb03a5585ull, 0x3ff6623882552225ull,
    0x3ff6a09e667f3bcdull, 0x3ff6dfb23c651a2full, 0x3ff71f75e8ec5f74ull, 0x3ff75feb564267c9ull,
    0x3ff7a11473eb0187ull, 0x3ff7e2f336cf4e62ull, 0x3ff82589994cce13ull, 0x3ff868d99b4492edull,
    0x3ff8ace5422aa0dbull, 0x3ff8f1ae99157736ull, 0x3ff93737b0cdc5e5ull, 0x3ff97d829fde4e50ull,
    0x3ff9c49182a3f090ull, 0x3ffa0c667b5de565ull, 0x3ffa5503b23e255dull, 0x3ffa9e6b5579fdbfull,
    0x3ffae89f995ad3adull, 0x3ffb33a2b84f15fbull, 0x3ffb7f76f2fb5e47ull, 0x3ffbcc1e904bc1d2ull,
    0x3ffc199bdd85529cull, 0x3ffc67f12e57d14bull, 0x3ffcb720dcef9069ull, 0x3ffd072d4a07897cull,
    0x3ffd5818dcfba487ull, 0x3ffda9e603db3285ull, 0x3ffdfc97337b9b5full, 0x3ffe502ee78b3ff6ull,
    0x3ffea4afa2a490daull, 0x3ffefa1bee615a27ull, 0x3fff50765b6e4540ull, 0x3fffa7c1819e90d8ull,
};
static const uint64_t EXC_LO[64] = {
    0x0000000000000000ull, 0xbc7160139cd8dc5dull, 0x3c8cd2523567f613ull, 0x3c60f74e61e6c861ull,
    0x3c979aa65d837b6dull, 0x3c3ebe3d702f9cd1ull, 0xbc9556522a2fbd0eull, 0xbc91c923b9d5f416ull,
    0xbc801b15eaa59348ull, 0x3c8b898c3f1353bfull, 0x3c9aecf73e3a2f60ull, 0x3c8a6f4144a6c38dull,
    0x3c968efde3a8a894ull, 0x3c80472b981fe7f2ull, 0x3c82f7e16d09ab31ull, 0x3c8b3782720c0ab4ull,
    0x3c834d754db0abb6ull, 0x3c8fdd395dd3f84aull, 0xbc924aedcc4b5068ull, 0xbc71d1e83e9436d2ull,
    0x3c859f48a72a4c6dull, 0xbc58a78f4817895bull, 0x3c4363ed60c2ac11ull, 0x3c6ecce1daa10379ull,
    0x3c7690cebb7aafb0ull, 0xbc8f94340071a38eull, 0xbc78dec6bd0f385full, 0x3c93350518fdd78eull,
    0x3c9063e1e21c5409ull, 0x3c9432e62b64c035ull, 0xbc8c33c53bef4da8ull, 0xbc93cedd78565858ull,
    0xbc93b3efbf5e2228ull, 0xbc6367efb86da9eeull, 0xbc781f647e5a3ecfull, 0xbc8619321e55e68aull,
    0xbc7b32dcb94da51dull, 0x3c65ebe1abd66c55ull, 0xbc9369b6f13b3734ull, 0xbc94d450d872576eull,
    0x3c8db72fc1f0eab4ull, 0x3c7bf68359f35f44ull, 0xbc5da9b88b6c1e29ull, 0xbc92434322f4f9aaull,
    0x3c71affc2b91ce27ull, 0xbc87c50422622263ull, 0xbc91bbd1d3bcbb15ull, 0x3c8469846e735ab3ull,
    0x3c8c1a7792cb3387ull, 0xbc55c3d956dcaebaull, 0xbc68d6f438ad9334ull, 0x3c74ffd70a5fddcdull,
    0x3c736eae30af0cb3ull, 0x3c84e08fd10959acull, 0x3c676b2c6c921968ull, 0xbc8fad5d3ffffa6full,
    0x3c74a385a63d07a7ull, 0x3c8e5a50d5c192acull, 0xbc82d52107b43e1full, 0x3c74b604603a88d3ull,
    0xbc8ff7128fd391f0ull, 0x3c8ec3bc41aa2008ull, 0x3c8a64a931d185eeull, 0x3c77893b4d91cd9dull,
};

static double d_of(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static float expf_ex_callout(float x)
{
    uint32_t xi = u_of(x), e = xi & 0x7f800000u;
    if (e == 0x7f800000u) return (xi & 0x807fffffu) == 0x80000000u ? 0.0f : x * x; /* -inf: 0; +inf, NaN */
    if (e < 0x25000001u) return x + 1.0f;
    if (x > f_of(0x42b17217u)) return INFINITY;
    if (x < f_of(0xc2cff1b4u)) return 0.0f;
    double xd = x;
    double t2 = xd * d_of(0x40571547652b82feull) + d_of(0x4338000000000000ull);
    double n = t2 + d_of(0xc338000000000000ull);
    double r = (n * d_of(0xbf862e42fefa0000ull) + xd) + n * d_of(0xbd1cf79abc9e3b3aull);
    double p = r * d_of(0x3f56c16a1c2a3ffdull) + d_of(0x3f8111123aaf20d3ull);
    p = p * r + d_of(0x3fa5555555558fccull);
    p = p * r + d_of(0x3fc55555555548f8ull);
    p = p * r + 0.5;
    p = p * r * r + r;
    uint64_t tb;
    memcpy(&tb, &t2, 8);
    uint32_t lo32 = (uint32_t)tb, j = lo32 & 63u, k = lo32 >> 6;
    double hi = d_of(EXC_HI[j]), q = (p + d_of(EXC_LO[j])) * hi;
    if (x >= f_of(0xc2aeac4fu)) { /* a normal float result */
        uint32_t ex = (k + 0x3ffu) & 0x7ffu;
        double s = hi + q;
        if (ex == 0x7ffu) { s = s * d_of(0x7fe0000000000000ull); return (float)(s + s); }
        return (float)(s * d_of((uint64_t)ex << 52));
    }
    uint32_t ex = (k + 0x43bu) & 0x7ffu; /* scaled by 2^60 */
    double sc = d_of((uint64_t)ex << 52), q2 = q * sc, h2 = hi * sc, s = h2 + q2;
    if (ex <= 0x32u) return (float)(s * d_of(0x3c30000000000000ull));
    double err = q2 + (h2 - s);
    double sp = s * d_of(0x41f8000000000000ull), shi = (s + sp) - sp, slo = err + (s - shi);
    return (float)(shi * d_of(0x3c30000000000000ull) + slo * d_of(0x3c30000000000000ull));
}

float fd_mkl_expf_ex(float x)
{
    if ((u_of(x) & 0x7fffffffu) > 0x42aeac4fu) return expf_ex_callout(x); /* NaN too */
    float z = x * f_of(0x4338aa3b) + f_of(0x4b400000); /* 128 / ln 2, 1.5 * 2^23 */
    float n = z + f_of(0xcb400000);
    float r = x - n * f_of(0x3bb18000);
    r = n * f_of(0x35de8083) + r;
    float q = r * r * 0.5f + r;
    uint32_t j = u_of(z) & 127u;
    float res = (q * f_of(EX_HI[j]) + f_of(EX_LO[j])) + f_of(EX_HI[j]);
    return res * f_of(((u_of(z) << 16) + 0x3f800000u) & 0x7f800000u);
}

void fd_mkl_expf_ex_n(const float *x, float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) y[i] = fd_mkl_expf_ex(x[i]);
}

/* RSQRTPS (SSE) as AMD Zen 4 computes it, for a positive normal x: a table
 * on the exponent's parity and the top 12 significand bits (the
 * instruction's result depends on nothing else on this host; Intel's
 * differs), scaled by 2^-n for x = m 2^(2n). */
#include "kernels/rsqrtps_zen4.inc"

float fd_rsqrtps_zen4(float x)
{
    uint32_t u = u_of(x);
    int e = (int)(u >> 23) - 127, odd = e & 1, n = (e - odd) / 2;
    uint32_t t = RSQRTPS_ZEN4[(uint32_t)odd << 12 | (u >> 11 & 0xfffu)];
    return f_of(((uint32_t)(126 - n) << 23) | t << 11);
}

/* MKL VML vsSqrt (HA) as torch 2.15's MKL runs it on this host: the SSE
 * kernel mkl_vml_kernel_sSqrt_EXHAynn.  y = RSQRTPS(x), s = x y, h = y / 2,
 * e = 1/2 - s h, s' = s e + s, h' = h e + h, result (x - s'^2) h' + s', in
 * float multiplies and adds (no FMA).  Lanes outside [2^-126, 0x7f7ff000]
 * (zero, subnormal, negative, the largest 4095 floats, infinity, NaN) take
 * the scalar callout: the NaN 0x7fc00000 for x < 0 (-inf included), else
 * sqrtf (equal to the callout on all of them, measured). */
float fd_mkl_sqrtf_ex(float x)
{
    uint32_t u = u_of(x);
    if (u - 0x00800000u > 0x7f7ff000u - 0x00800000u) { /* the callout */
        if (x < 0.0f) return f_of(0x7fc00000u); /* MKL's default NaN (x86 sqrtss would give 0xffc00000) */
        return sqrtf(x);                        /* +-0, subnormal, large, +inf, NaN (payload kept) */
    }
    float y = fd_rsqrtps_zen4(x), s = x * y, h = y * 0.5f;
    float e = 0.5f - s * h;
    float s1 = s * e + s, h1 = h * e + h;
    return (x - s1 * s1) * h1 + s1;
}
