/* torch 2.11 CPU kernels, one lane at a time; see torch_ops.h. */
#include "kernels/torch_ops.h"
#include "util/bf16.h"
#include <math.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include "kernels/ew_isa.h" /* HAVE_512 / HAVE_256: the vector build, by CPU features */

static void expf_isa(const float *x, float *y, size_t n, int silu, int isa);

/* 2^e as a float for -126 <= e <= 127 (Sleef vpow2i_vf_vi2). */
static float pow2i(int e)
{
    uint32_t u = (uint32_t)(e + 0x7f) << 23;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Sleef's expf_u10.  The body is written once (EXP_BODY) and compiled twice:
 * for an FMA target, where fmaf and nearbyintf become single instructions,
 * and generically (libm's fmaf, exact either way), so every machine computes
 * the same bits and x86 with FMA does not pay a call per operation. */
#define EXP_BODY \
    /* Sleef's final selects, taken first: they override every lane where the                           \
     * integer conversion below would be out of range. */                                               \
    if (d != d) return d;                                                                               \
    if (d < -104.0f) return 0.0f;                                                                       \
    if (d > 100.0f) return INFINITY;                                                                    \
    const float r_ln2 = 1.442695040888963407359924681001892137426645954152985934135449406931f;          \
    const float l2u = 0.693145751953125f, l2l = 1.428606765330187045e-06f;                              \
    float qf = nearbyintf(d * r_ln2); /* vrint_vi2_vf: round half to even */                            \
    int q = (int)qf;                                                                                    \
    float s = fmaf(qf, -l2u, d);                                                                        \
    s = fmaf(qf, -l2l, s);                                                                              \
    float u = 0.000198527617612853646278381f;                                                           \
    u = fmaf(u, s, 0.00139304355252534151077271f);                                                      \
    u = fmaf(u, s, 0.00833336077630519866943359f);                                                      \
    u = fmaf(u, s, 0.0416664853692054748535156f);                                                       \
    u = fmaf(u, s, 0.166666671633720397949219f);                                                        \
    u = fmaf(u, s, 0.5f);                                                                               \
    u = 1.0f + fmaf(s * s, u, s);                                                                       \
    /* vldexp2_vf_vf_vi2: two exact power-of-two scalings */                                            \
    int h = q >> 1;                                                                                     \
    return u * pow2i(h) * pow2i(q - h);

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("fma"))) static float expf_fma(float d) { EXP_BODY }
#endif
static float expf_any(float d) { EXP_BODY }

float fd_torch_expf(float d)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("fma")) return expf_fma(d);
#endif
    return expf_any(d);
}

float fd_torch_silu(float x) { return x / (1.0f + fd_torch_expf(-x)); }

float fd_torch_silu_tail(float x) { return x / (1.0f + expf(-x)); }

float fd_torch_sigmoid_tail(float x) { return 1.0f / (1.0f + expf(-x)); }

float fd_torch_sigmoid(float x) { return 1.0f / (fd_torch_expf(0.0f - x) + 1.0f); }

/* Sleef's log1pf_u10, AVX-512 build (vgetexp for the exponent, FMA
 * double-float arithmetic: df.h's dfmul / dfdiv / dfadd), one lane; the
 * special cases for d > 1e38, d <= -1 and -0 as Sleef selects them (replicated
 * for d >= 0, the softplus domain; not checked within 2^-126 above -1). */
#define LOG1P_BODY                                                                                      \
    float dp1 = d + 1.0f;                                                                               \
    float ev = dp1 * (1.0f / 0.75f);      /* vgetexp_vf_vf: floor(log2 |x|); 0, inf and NaN     */      \
    int e = ev > 0.0f && ev < INFINITY ? ilogbf(ev) : 128; /* lanes end in the special cases below */ \
    float t = ldexpf(1.0f, -e);           /* vldexp3_vf_vf_vi2(1, -e) */                               \
    float m = fmaf(d, t, t - 1.0f);                                                                     \
    /* s = dfmul((ln2 hi, lo), e) */                                                                    \
    float ef = (float)e, lh = 0.69314718246459960938f, ll = -1.904654323148236017e-09f;                 \
    float sx = lh * ef, sy = fmaf(ll, ef, fmaf(lh, ef, -sx));                                          \
    /* x = dfdiv((m, 0), dfadd(2, m)) */                                                                \
    float ax = 2.0f + m, ay = (2.0f - ax) + m;                                                          \
    float rt = 1.0f / ax, qx = m * rt, u = fmaf(rt, m, -qx);                                            \
    float v = fmaf(-ay, rt, fmaf(-ax, rt, 1.0f));                                                       \
    float xx = qx, xy = fmaf(qx, v, fmaf(0.0f, rt, u));                                                 \
    float x2 = xx * xx;                                                                                 \
    float p = 0.3027294874e+0f;                                                                         \
    p = fmaf(p, x2, 0.3996108174e+0f);                                                                  \
    p = fmaf(p, x2, 0.6666694880e+0f);                                                                  \
    /* s = dfadd(s, dfscale(x, 2)); s = dfadd(s, x2 * x.x * p) */                                       \
    float bx = xx * 2.0f, by = xy * 2.0f;                                                               \
    float s2 = sx + bx, s2y = (((sx - s2) + bx) + sy) + by;                                             \
    float c = x2 * xx * p;                                                                              \
    float s3 = s2 + c, s3y = ((s2 - s3) + c) + s2y;                                                     \
    float r = s3 + s3y;                                                                                 \
    if (d > 1e+38f) r = INFINITY;                                                                       \
    if (-1.0f > d || d != d) r = NAN;                                                                   \
    if (d == -1.0f) r = -INFINITY;                                                                      \
    if (d == 0.0f && signbit(d)) r = -0.0f;                                                             \
    return r;

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("fma"))) static float log1pf_fma(float d) { LOG1P_BODY }
#endif
static float log1pf_any(float d) { LOG1P_BODY }

float fd_torch_log1pf(float d)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_cpu_supports("fma")) return log1pf_fma(d);
#endif
    return log1pf_any(d);
}

float fd_torch_softplus(float x) { return x > 20.0f ? x : fd_torch_log1pf(fd_torch_expf(x)); }

float fd_torch_softplus_tail(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* ------------------------------------------------------------ sums */

/* utils::CeilLog2 of ATen: 1 for x <= 2 */
static size_t ceil_log2_sz(size_t x)
{
    if (x <= 2) return 1;
    size_t r = 0;
    for (size_t v = x - 1; v; v >>= 1) r++;
    return r;
}

float fd_torch_multi_row_sum(const float *x, size_t stride, size_t size)
{
    enum { LV = 4 };
    size_t lp = ceil_log2_sz(size) / LV > 4 ? ceil_log2_sz(size) / LV : 4, step = (size_t)1 << lp, mask = step - 1;
    float acc[LV] = {0};
    size_t i = 0;
    while (i + step <= size) {
        for (size_t j = 0; j < step; j++, i++) acc[0] += x[i * stride];
        for (size_t j = 1; j < LV; j++) {
            acc[j] += acc[j - 1];
            acc[j - 1] = 0.0f;
            if (i & (mask << (j * lp))) break;
        }
    }
    for (; i < size; i++) acc[0] += x[i * stride];
    for (size_t j = 1; j < LV; j++) acc[0] += acc[j];
    return acc[0];
}

float fd_torch_row_sum(const float *x, size_t stride, size_t size)
{
    size_t ilp = size / 4;
    float p[4];
    for (size_t k = 0; k < 4; k++) p[k] = fd_torch_multi_row_sum(x + k * stride, 4 * stride, ilp);
    for (size_t i = ilp * 4; i < size; i++) p[0] += x[i * stride];
    return ((p[0] + p[1]) + p[2]) + p[3];
}

#if defined(__x86_64__)
/* The 32 chains of fd_torch_sum's lanes and ILP slots at once: chain c
 * (lane c % 8, slot c / 8) is fd_torch_multi_row_sum(x + c, 32, ilp), and
 * all 32 share its control flow, so two 16-lane vectors run it exactly. */
__attribute__((target("avx512f"))) static void sum_chains32(const float *x, size_t ilp, float out[32])
{
    enum { LV = 4 };
    size_t lp = ceil_log2_sz(ilp) / LV > 4 ? ceil_log2_sz(ilp) / LV : 4, step = (size_t)1 << lp, mask = step - 1;
    __m512 a[LV][2];
    for (int j = 0; j < LV; j++) a[j][0] = a[j][1] = _mm512_setzero_ps();
    size_t i = 0;
    while (i + step <= ilp) {
        for (size_t j = 0; j < step; j++, i++) {
            a[0][0] = _mm512_add_ps(a[0][0], _mm512_loadu_ps(x + 32 * i));
            a[0][1] = _mm512_add_ps(a[0][1], _mm512_loadu_ps(x + 32 * i + 16));
        }
        for (size_t j = 1; j < LV; j++) {
            for (int h = 0; h < 2; h++) {
                a[j][h] = _mm512_add_ps(a[j][h], a[j - 1][h]);
                a[j - 1][h] = _mm512_setzero_ps();
            }
            if (i & (mask << (j * lp))) break;
        }
    }
    for (; i < ilp; i++) {
        a[0][0] = _mm512_add_ps(a[0][0], _mm512_loadu_ps(x + 32 * i));
        a[0][1] = _mm512_add_ps(a[0][1], _mm512_loadu_ps(x + 32 * i + 16));
    }
    for (size_t j = 1; j < LV; j++)
        for (int h = 0; h < 2; h++) a[0][h] = _mm512_add_ps(a[0][h], a[j][h]);
    _mm512_storeu_ps(out, a[0][0]);
    _mm512_storeu_ps(out + 16, a[0][1]);
    _mm256_zeroupper();
}
#endif

#if defined(__x86_64__)
/* sum_chains32 on 8-lane vectors: chain c in lane c % 8 of a[.][c / 8] */
__attribute__((target("avx2,fma"))) static void sum_chains32_avx2(const float *x, size_t ilp, float out[32])
{
    enum { LV = 4 };
    size_t lp = ceil_log2_sz(ilp) / LV > 4 ? ceil_log2_sz(ilp) / LV : 4, step = (size_t)1 << lp, mask = step - 1;
    __m256 a[LV][4];
    for (int j = 0; j < LV; j++)
        for (int h = 0; h < 4; h++) a[j][h] = _mm256_setzero_ps();
    size_t i = 0;
    while (i + step <= ilp) {
        for (size_t j = 0; j < step; j++, i++)
            for (int h = 0; h < 4; h++) a[0][h] = _mm256_add_ps(a[0][h], _mm256_loadu_ps(x + 32 * i + 8 * h));
        for (size_t j = 1; j < LV; j++) {
            for (int h = 0; h < 4; h++) {
                a[j][h] = _mm256_add_ps(a[j][h], a[j - 1][h]);
                a[j - 1][h] = _mm256_setzero_ps();
            }
            if (i & (mask << (j * lp))) break;
        }
    }
    for (; i < ilp; i++)
        for (int h = 0; h < 4; h++) a[0][h] = _mm256_add_ps(a[0][h], _mm256_loadu_ps(x + 32 * i + 8 * h));
    for (size_t j = 1; j < LV; j++)
        for (int h = 0; h < 4; h++) a[0][h] = _mm256_add_ps(a[0][h], a[j][h]);
    for (int h = 0; h < 4; h++) _mm256_storeu_ps(out + 8 * h, a[0][h]);
    _mm256_zeroupper();
}
#endif

/* isa: 0 the one-lane loops, 1 AVX2 + FMA, 2 AVX-512F (the caller checks the CPU) */
static float sum_isa(const float *x, size_t n, int isa)
{
    if (n < 8) return fd_torch_row_sum(x, 1, n); /* scalar_inner_sum */
    size_t nv = n / 8;
    float f = 0.0f;
#if defined(__x86_64__)
    if (isa) {
        size_t ilp = nv / 4;
        float ch[32];
        if (isa == 2) sum_chains32(x, ilp, ch);
        else sum_chains32_avx2(x, ilp, ch);
        for (size_t k = nv * 8; k < n; k++) f += x[k];
        for (size_t l = 0; l < 8; l++) { /* fd_torch_row_sum(x + l, 8, nv) */
            float p0 = ch[l];
            for (size_t i = ilp * 4; i < nv; i++) p0 += x[l + 8 * i];
            f += ((p0 + ch[l + 8]) + ch[l + 16]) + ch[l + 24];
        }
        return f;
    }
#else
    (void)isa;
#endif
    for (size_t k = nv * 8; k < n; k++) f += x[k];
    for (size_t l = 0; l < 8; l++) f += fd_torch_row_sum(x + l, 8, nv); /* lane l of vectorized_inner_sum */
    return f;
}

/* the vector build this CPU runs: 2 AVX-512F, 1 AVX2 + FMA, 0 none */
static int cpu_isa(void)
{
#if defined(__x86_64__)
    if (HAVE_512) return 2;
    if (HAVE_256) return 1;
#endif
    return 0;
}

float fd_torch_sum(const float *x, size_t n) { return sum_isa(x, n, cpu_isa()); }
float fd_torch_sum_scalar(const float *x, size_t n) { return sum_isa(x, n, 0); }
#if defined(__x86_64__)
float fd_torch_sum_avx2(const float *x, size_t n) { return sum_isa(x, n, 1); }
#endif

/* the AVX-512 butterfly of VecReduceAllSIMD<float> */
static float butterfly16(float v[16])
{
    for (int st = 8; st >= 1; st >>= 1) {
        float w[16];
        for (int i = 0; i < 16; i++) w[i] = v[i] + v[i ^ st];
        memcpy(v, w, sizeof w);
    }
    return v[0];
}

float fd_torch_reduce_sum(const float *x, size_t len)
{
    if (len < 16) {
        float s = len ? x[0] : 0.0f;
        for (size_t j = 1; j < len; j++) s += x[j];
        return s;
    }
    float acc[16];
    memcpy(acc, x, sizeof acc);
    for (size_t j = 16; j < len; j++) acc[j % 16] += x[j];
    return butterfly16(acc);
}

#if defined(__x86_64__)
/* the lane sums of rows of >= 16: lane l of the vector is j = l (mod 16) */
__attribute__((target("avx512f"))) static void lane_sums16(const float *x, size_t n, float acc[16])
{
    __m512 a = _mm512_setzero_ps();
    size_t j = 0;
    for (; j + 16 <= n; j += 16) a = _mm512_add_ps(a, _mm512_loadu_ps(x + j));
    _mm512_storeu_ps(acc, a);
    _mm256_zeroupper();
    for (; j < n; j++) acc[j % 16] += x[j];
}

/* the max over the kept entries (exact in any order), then x -= max */
__attribute__((target("avx512f,avx512bw,avx512vl"))) static size_t max_sub16(float *x, const unsigned char *keep, size_t nk,
                                                                          float *mx)
{
    __m512 m = _mm512_set1_ps(-INFINITY);
    size_t j = 0;
    for (; j + 16 <= nk; j += 16) {
        __mmask16 k = keep ? _mm_test_epi8_mask(_mm_loadu_si128((const __m128i *)(keep + j)), _mm_set1_epi8(-1)) : 0xffff;
        m = _mm512_mask_max_ps(m, k, m, _mm512_loadu_ps(x + j));
    }
    float v = _mm512_reduce_max_ps(m);
    for (size_t i = j; i < nk; i++)
        if ((!keep || keep[i]) && x[i] > v) v = x[i];
    __m512 vv = _mm512_set1_ps(v);
    for (j = 0; j + 16 <= nk; j += 16) _mm512_storeu_ps(x + j, _mm512_sub_ps(_mm512_loadu_ps(x + j), vv));
    _mm256_zeroupper();
    *mx = v;
    return j;
}

__attribute__((target("avx512f"))) static size_t scale16(float *x, size_t n, float s)
{
    size_t j = 0;
    for (; j + 16 <= n; j += 16) _mm512_storeu_ps(x + j, _mm512_mul_ps(_mm512_loadu_ps(x + j), _mm512_set1_ps(s)));
    _mm256_zeroupper();
    return j;
}
#endif

#if defined(__x86_64__)
/* the AVX2 builds of lane_sums16 (lanes 0-7, 8-15 in two vectors), scale16
 * and max_sub16; the max ignores NaN as the one-lane loop's `x > m` does
 * (vmaxps returns its second operand, the running max, for a NaN x) */
__attribute__((target("avx2,fma"))) static void lane_sums16_avx2(const float *x, size_t n, float acc[16])
{
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    size_t j = 0;
    for (; j + 16 <= n; j += 16) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + j));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + j + 8));
    }
    _mm256_storeu_ps(acc, a0);
    _mm256_storeu_ps(acc + 8, a1);
    _mm256_zeroupper();
    for (; j < n; j++) acc[j % 16] += x[j];
}

__attribute__((target("avx2,fma"))) static size_t scale8(float *x, size_t n, float s)
{
    size_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(x + j, _mm256_mul_ps(_mm256_loadu_ps(x + j), _mm256_set1_ps(s)));
    _mm256_zeroupper();
    return j;
}

__attribute__((target("avx2,fma"))) static size_t max_sub8(float *x, const unsigned char *keep, size_t nk, float *mx)
{
    __m256 m = _mm256_set1_ps(-INFINITY);
    size_t j = 0;
    for (; j + 8 <= nk; j += 8) {
        __m256 v = _mm256_max_ps(_mm256_loadu_ps(x + j), m);
        if (keep) {
            __m256i k = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(keep + j)));
            v = _mm256_blendv_ps(m, v, _mm256_castsi256_ps(_mm256_xor_si256(_mm256_cmpeq_epi32(k, _mm256_setzero_si256()),
                                                                            _mm256_set1_epi32(-1))));
        }
        m = v;
    }
    float lanes[8], v = -INFINITY;
    _mm256_storeu_ps(lanes, m);
    for (int l = 0; l < 8; l++) /* no NaN here: the max is exact in any order */
        if (lanes[l] > v) v = lanes[l];
    for (size_t i = j; i < nk; i++)
        if ((!keep || keep[i]) && x[i] > v) v = x[i];
    __m256 vv = _mm256_set1_ps(v);
    for (j = 0; j + 8 <= nk; j += 8) _mm256_storeu_ps(x + j, _mm256_sub_ps(_mm256_loadu_ps(x + j), vv));
    _mm256_zeroupper();
    *mx = v;
    return j;
}
#endif

/* isa as sum_isa's; isa 2 also needs AVX-512BW/VL for the max */
static void softmax_isa(float *x, const unsigned char *keep, size_t nk, size_t len, int isa)
{
    float mx = -INFINITY;
    size_t j0 = 0;
#if defined(__x86_64__)
    if (isa == 2 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")) j0 = max_sub16(x, keep, nk, &mx);
    else if (isa >= 1) j0 = max_sub8(x, keep, nk, &mx);
    else
#endif
        for (size_t j = 0; j < nk; j++)
            if ((!keep || keep[j]) && x[j] > mx) mx = x[j];
    for (size_t j = j0; j < nk; j++) x[j] -= mx;
    expf_isa(x, x, nk, 0, isa);
    /* a masked entry adds an exact +0 to its lane, so it is zeroed; lanes
     * start at +0 (the first vector loaded as is equals 0 + it) */
    if (keep)
        for (size_t j = 0; j < nk; j++)
            if (!keep[j]) x[j] = 0.0f;
    float sum = 0.0f;
    if (len < 16)
        for (size_t j = 0; j < nk; j++) sum += x[j];
    else {
        float acc[16] = {0};
#if defined(__x86_64__)
        if (isa == 2) lane_sums16(x, nk, acc);
        else if (isa == 1) lane_sums16_avx2(x, nk, acc);
        else
#endif
            for (size_t j = 0; j < nk; j++) acc[j % 16] += x[j];
        sum = butterfly16(acc);
    }
    float inv = 1.0f / sum;
    size_t j1 = 0;
#if defined(__x86_64__)
    if (isa == 2) j1 = scale16(x, nk, inv);
    else if (isa == 1) j1 = scale8(x, nk, inv);
#endif
    for (size_t j = j1; j < nk; j++) x[j] *= inv;
    for (size_t j = nk; j < len; j++) x[j] = 0.0f;
}

void fd_torch_softmax_masked(float *x, const unsigned char *keep, size_t nk, size_t len)
{
    softmax_isa(x, keep, nk, len, cpu_isa());
}

void fd_torch_softmax_masked_scalar(float *x, const unsigned char *keep, size_t nk, size_t len)
{
    softmax_isa(x, keep, nk, len, 0);
}

#if defined(__x86_64__)
void fd_torch_softmax_masked_avx2(float *x, const unsigned char *keep, size_t nk, size_t len)
{
    softmax_isa(x, keep, nk, len, 1);
}
#endif

/* ------------------------------------------------------------ moments */

typedef struct mom8 { long long m0; float m1[8], m2[8]; } mom8;

/* AddMomentsVec: merge (m0_add, m1_add, m2_add) into *a */
static void add_moments_vec(long long m0_add, const float *m1_add, const float *m2_add, mom8 *a)
{
    long long n = a->m0 + m0_add;
    float c = n == 0 ? 0.0f : (float)m0_add / (float)n;
    for (int l = 0; l < 8; l++) {
        float delta = m1_add[l] - a->m1[l];
        float m2_tmp = a->m2[l] + m2_add[l];
        float cd = c * delta;
        float m0d = delta * (float)a->m0;
        a->m1[l] = a->m1[l] + cd;
        a->m2[l] = fmaf(m0d, cd, m2_tmp);
    }
    a->m0 = n;
}

/* UpdateMomentsVec (reduced-float version): m0 vectors of 16 bf16 from p,
 * two 8-lane Welford accumulators, each merged into *stk. */
static void update_moments_vec(long long m0, const uint16_t *p, mom8 *stk)
{
    float m1a[8] = {0}, m1b[8] = {0}, m2a[8] = {0}, m2b[8] = {0};
    for (long long j = 0; j < m0; j++) {
        float c = 1.0f / (float)(j + 1);
        for (int l = 0; l < 8; l++) {
            float xa = fd_bf16_to_f32(p[j * 16 + l]), xb = fd_bf16_to_f32(p[j * 16 + 8 + l]);
            float da = xa - m1a[l], db = xb - m1b[l];
            m1a[l] = fmaf(da, c, m1a[l]);
            m1b[l] = fmaf(db, c, m1b[l]);
            m2a[l] = fmaf(da, xa - m1a[l], m2a[l]);
            m2b[l] = fmaf(db, xb - m1b[l], m2b[l]);
        }
    }
    add_moments_vec(m0, m1a, m2a, stk);
    add_moments_vec(m0, m1b, m2b, stk);
}

/* utils::CeilLog2: 1 for x <= 2 */
static int ceil_log2(long long x)
{
    if (x <= 2) return 1;
    int r = 0;
    long long v = x - 1;
    while (v) { r++; v >>= 1; }
    return r;
}

void fd_torch_moments_bf16(const uint16_t *x, size_t N, float *mean, float *var)
{
    enum { VS = 16, CH = 16, MAXD = 64 };
    long long n = (long long)(N / VS), m = (n + CH - 1) / CH;
    int depth = ceil_log2(m);
    mom8 stk[MAXD];
    memset(stk, 0, sizeof stk);
    for (long long i = 0; i < m; i++) {
        long long m0 = n - i * CH < CH ? n - i * CH : CH;
        update_moments_vec(m0, x + i * CH * VS, &stk[0]);
        long long mask = i + 1;
        for (int j = 1; j < depth && (mask & 1) == 0; j++) {
            add_moments_vec(stk[j - 1].m0, stk[j - 1].m1, stk[j - 1].m2, &stk[j]);
            memset(&stk[j - 1], 0, sizeof stk[j - 1]);
            mask >>= 1;
        }
    }
    for (int i = 1; i < depth; i++) add_moments_vec(stk[i].m0, stk[i].m1, stk[i].m2, &stk[0]);
    long long m0 = 0;
    float m1 = 0.0f, m2 = 0.0f;
    for (size_t i = (size_t)n * VS; i < N; i++) {
        float xv = fd_bf16_to_f32(x[i]);
        float delta = xv - m1;
        ++m0;
        m1 += delta / (float)m0;
        m2 += delta * (xv - m1); /* measured: not contracted */
    }
    long long m0_add = n * VS / 8;
    for (int l = 0; l < 8; l++) { /* AddMoments, scalar */
        long long nn = m0 + m0_add;
        float c = nn == 0 ? 0.0f : (float)m0_add / (float)nn;
        float delta = stk[0].m1[l] - m1;
        m1 = fmaf(c, delta, m1);
        m2 = m2 + fmaf(delta * delta * c, (float)m0, stk[0].m2[l]);
        m0 = nn;
    }
    *mean = m1;
    *var = m2 / (float)N;
}

void fd_torch_layernorm_bf16(const uint16_t *x, size_t n, const uint16_t *gamma, const uint16_t *beta, float eps,
                             uint16_t *y)
{
    float mean, var;
    fd_torch_moments_bf16(x, n, &mean, &var);
    float rstd = 1.0f / sqrtf(var + eps);
    float bias = -rstd * mean;
    for (size_t j = 0; j < n; j++) {
        float v = fmaf(fmaf(fd_bf16_to_f32(x[j]), rstd, bias), fd_bf16_to_f32(gamma[j]), fd_bf16_to_f32(beta[j]));
        y[j] = fd_f32_to_bf16(v);
    }
}

/* ------------------------------------------------------------ whole rows */

#if defined(__x86_64__)
/* EXP_BODY on 16 lanes: the same operations in the same order (separate
 * multiplies, the same FMAs, round-half-even to integer, two exact
 * scalings), the range selects applied last as Sleef does. */
__attribute__((target("avx512f"))) static __m512 expf16(__m512 d)
{
    const __m512 qf = _mm512_roundscale_ps(_mm512_mul_ps(d, _mm512_set1_ps(1.442695040888963407359924681001892137426645954152985934135449406931f)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512i q = _mm512_cvtps_epi32(qf);
    __m512 s = _mm512_fmadd_ps(qf, _mm512_set1_ps(-0.693145751953125f), d);
    s = _mm512_fmadd_ps(qf, _mm512_set1_ps(-1.428606765330187045e-06f), s);
    __m512 u = _mm512_set1_ps(0.000198527617612853646278381f);
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.00139304355252534151077271f));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.00833336077630519866943359f));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.0416664853692054748535156f));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.166666671633720397949219f));
    u = _mm512_fmadd_ps(u, s, _mm512_set1_ps(0.5f));
    u = _mm512_add_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_mul_ps(s, s), u, s));
    const __m512i h = _mm512_srai_epi32(q, 1), bias = _mm512_set1_epi32(0x7f);
    const __m512 p1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(h, bias), 23));
    const __m512 p2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_sub_epi32(q, h), bias), 23));
    __m512 r = _mm512_mul_ps(_mm512_mul_ps(u, p1), p2);
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(d, _mm512_set1_ps(-104.0f), _CMP_LT_OQ), _mm512_setzero_ps());
    r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(d, _mm512_set1_ps(100.0f), _CMP_GT_OQ), _mm512_set1_ps(INFINITY));
    return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(d, d, _CMP_UNORD_Q), d);
}

__attribute__((target("avx512f"))) static size_t expf_rows16(const float *x, float *y, size_t n, int silu)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        if (silu) /* x / (1 + exp(-x)); -x is exact */
            v = _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), expf16(_mm512_sub_ps(_mm512_setzero_ps(), v))));
        else v = expf16(v);
        _mm512_storeu_ps(y + i, v);
    }
    _mm256_zeroupper(); /* the caller's SSE code follows */
    return i;
}
#endif

#if defined(__x86_64__)
/* EXP_BODY on 8 lanes, as expf16 */
__attribute__((target("avx2,fma"))) static __m256 expf8(__m256 d)
{
    const __m256 qf = _mm256_round_ps(_mm256_mul_ps(d, _mm256_set1_ps(1.442695040888963407359924681001892137426645954152985934135449406931f)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i q = _mm256_cvtps_epi32(qf);
    __m256 s = _mm256_fmadd_ps(qf, _mm256_set1_ps(-0.693145751953125f), d);
    s = _mm256_fmadd_ps(qf, _mm256_set1_ps(-1.428606765330187045e-06f), s);
    __m256 u = _mm256_set1_ps(0.000198527617612853646278381f);
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00139304355252534151077271f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.00833336077630519866943359f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.0416664853692054748535156f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.166666671633720397949219f));
    u = _mm256_fmadd_ps(u, s, _mm256_set1_ps(0.5f));
    u = _mm256_add_ps(_mm256_set1_ps(1.0f), _mm256_fmadd_ps(_mm256_mul_ps(s, s), u, s));
    const __m256i h = _mm256_srai_epi32(q, 1), bias = _mm256_set1_epi32(0x7f);
    const __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(h, bias), 23));
    const __m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(q, h), bias), 23));
    __m256 r = _mm256_mul_ps(_mm256_mul_ps(u, p1), p2);
    r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(d, _mm256_set1_ps(-104.0f), _CMP_LT_OQ));
    r = _mm256_blendv_ps(r, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(d, _mm256_set1_ps(100.0f), _CMP_GT_OQ));
    return _mm256_blendv_ps(r, d, _mm256_cmp_ps(d, d, _CMP_UNORD_Q));
}

__attribute__((target("avx2,fma"))) static size_t expf_rows8(const float *x, float *y, size_t n, int silu)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        if (silu) /* x / (1 + exp(-x)), -x a sign flip as in fd_torch_silu: a NaN x keeps its
                   * payload with the sign flipped, then meets x in the divide, where which
                   * NaN survives is the CPU's rule (x86 hardware and qemu's differ) */
            v = _mm256_div_ps(v, _mm256_add_ps(_mm256_set1_ps(1.0f), expf8(_mm256_xor_ps(v, _mm256_set1_ps(-0.0f)))));
        else v = expf8(v);
        _mm256_storeu_ps(y + i, v);
    }
    _mm256_zeroupper();
    return i;
}
#endif

static void expf_isa(const float *x, float *y, size_t n, int silu, int isa)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (isa == 2) i = expf_rows16(x, y, n, silu);
    else if (isa == 1) i = expf_rows8(x, y, n, silu);
#else
    (void)isa;
#endif
    if (silu)
        for (; i < n; i++) y[i] = fd_torch_silu(x[i]);
    else
        for (; i < n; i++) y[i] = fd_torch_expf(x[i]);
}

void fd_torch_expf_n(const float *x, float *y, size_t n) { expf_isa(x, y, n, 0, cpu_isa()); }
void fd_torch_silu_n(const float *x, float *y, size_t n) { expf_isa(x, y, n, 1, cpu_isa()); }
#if defined(__x86_64__)
void fd_torch_expf_n_avx2(const float *x, float *y, size_t n) { expf_isa(x, y, n, 0, 1); }
void fd_torch_silu_n_avx2(const float *x, float *y, size_t n) { expf_isa(x, y, n, 1, 1); }
#endif
