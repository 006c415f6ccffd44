#include "rowops.h"
#include "../util/bf16.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <math.h>
#include <string.h>

/* Which vector build runs is chosen by CPU features only (issue 24.4):
 * AVX-512F first, then AVX2 + FMA, then the portable loop.  Every variant
 * is the portable loop's exact operation sequence on 16 / 8 lanes.  A
 * bench build may compile this file with -DFD_EW_NO_AVX512 (and
 * -DFD_EW_NO_AVX2) to run what an AVX2-only (or older) CPU runs. */
#include "kernels/ew_isa.h"

/* aarch64: rowops_neon.c (the same operations, 8 or 4 lanes a step; returns
 * how many leading elements it did) */
size_t fd_neon_round_bf16(const float *x, const float *bias, size_t n, uint16_t *out);
size_t fd_neon_bf16_add(uint16_t *x, const uint16_t *y, size_t n);
size_t fd_neon_bf16_axpy(float *acc, const uint16_t *y, float r, size_t n);
size_t fd_neon_bf16_square(const uint16_t *x, size_t n, float *t);
size_t fd_neon_bf16_scale_round(const uint16_t *x, float s, size_t n, uint16_t *y);
size_t fd_neon_bf16_weight_round(const float *w, size_t n, uint16_t *y);
size_t fd_neon_bf16_rescale(float *x, size_t n, float s);
size_t fd_neon_relu_fma_acc(float *acc, const float *row, float d, float w, size_t n);

void fd_round_bf16_scalar(const float *x, const float *bias, size_t n, uint16_t *out)
{
    if (bias)
        for (size_t i = 0; i < n; i++) out[i] = fd_f32_to_bf16(x[i] + bias[i]);
    else
        for (size_t i = 0; i < n; i++) out[i] = fd_f32_to_bf16(x[i]);
}

#if defined(__x86_64__)
/* the scalar recipe on 16 lanes: NaN -> (u >> 16) | 0x40, else (u + 0x7fff + lsb) >> 16 */
__attribute__((target("avx512f"))) static inline __m256i round16(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1))));
    r = _mm512_mask_mov_epi32(_mm512_srli_epi32(r, 16), nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}

/* 16 bf16 values widened exactly to fp32 */
__attribute__((target("avx512f"))) static inline __m512 load16_bf16(const uint16_t *p)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}

__attribute__((target("avx512f"))) static void round_avx512(const float *x, const float *bias, size_t n, uint16_t *out)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        if (bias) v = _mm512_add_ps(v, _mm512_loadu_ps(bias + i));
        _mm256_storeu_si256((__m256i *)(out + i), round16(v));
    }
    /* GCC 12 tail-calls the scalar loop below without it; dirty upper
     * halves then slow every later SSE instruction of the thread */
    _mm256_zeroupper();
    fd_round_bf16_scalar(x + i, bias ? bias + i : NULL, n - i, out + i);
}
#endif

void fd_bf16_add_scalar(uint16_t *x, const uint16_t *y, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = fd_f32_to_bf16(fd_bf16_to_f32(x[i]) + fd_bf16_to_f32(y[i]));
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void add_avx512(uint16_t *x, const uint16_t *y, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        _mm256_storeu_si256((__m256i *)(x + i), round16(_mm512_add_ps(load16_bf16(x + i), load16_bf16(y + i))));
    }
    _mm256_zeroupper();
    fd_bf16_add_scalar(x + i, y + i, n - i);
}
#endif

void fd_bf16_add(uint16_t *x, const uint16_t *y, size_t n)
{
#if defined(__x86_64__)
    if (HAVE_512) { add_avx512(x, y, n); return; }
    if (HAVE_256) { fd_bf16_add_avx2(x, y, n); return; }
#elif defined(__aarch64__)
    size_t i = fd_neon_bf16_add(x, y, n);
    x += i, y += i, n -= i;
#endif
    fd_bf16_add_scalar(x, y, n);
}

void fd_bf16_axpy_scalar(float *acc, const uint16_t *y, float r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float p = fd_bf16_to_f32(y[i]) * r;
        acc[i] += p;
    }
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static void axpy_avx512(float *acc, const uint16_t *y, float r, size_t n)
{
    size_t i = 0;
    const __m512 rv = _mm512_set1_ps(r);
    for (; i + 16 <= n; i += 16) {
        _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_mul_ps(load16_bf16(y + i), rv)));
    }
    _mm256_zeroupper();
    fd_bf16_axpy_scalar(acc + i, y + i, r, n - i);
}
#endif

void fd_bf16_axpy(float *acc, const uint16_t *y, float r, size_t n)
{
#if defined(__x86_64__)
    if (HAVE_512) { axpy_avx512(acc, y, r, n); return; }
    if (HAVE_256) { fd_bf16_axpy_avx2(acc, y, r, n); return; }
#elif defined(__aarch64__)
    size_t i = fd_neon_bf16_axpy(acc, y, r, n);
    acc += i, y += i, n -= i;
#endif
    fd_bf16_axpy_scalar(acc, y, r, n);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static size_t square_avx512(const uint16_t *x, size_t n, float *t)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m512 v = load16_bf16(x + i);
        _mm512_storeu_ps(t + i, _mm512_mul_ps(v, v));
    }
    _mm256_zeroupper();
    return i;
}

__attribute__((target("avx512f"))) static size_t scale_round_avx512(const uint16_t *x, float s, size_t n, uint16_t *y)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i), round16(_mm512_mul_ps(load16_bf16(x + i), _mm512_set1_ps(s))));
    _mm256_zeroupper();
    return i;
}

__attribute__((target("avx512f"))) static size_t weight_round_avx512(const float *w, size_t n, uint16_t *y)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(y + i), round16(_mm512_mul_ps(_mm512_loadu_ps(w + i), load16_bf16(y + i))));
    _mm256_zeroupper();
    return i;
}
#endif

void fd_bf16_square(const uint16_t *x, size_t n, float *t)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (HAVE_512) i = square_avx512(x, n, t);
    else if (HAVE_256) { fd_bf16_square_avx2(x, n, t); return; }
#elif defined(__aarch64__)
    i = fd_neon_bf16_square(x, n, t);
#endif
    for (; i < n; i++) { float u = fd_bf16_to_f32(x[i]); t[i] = u * u; }
}

void fd_bf16_scale_round(const uint16_t *x, float s, size_t n, uint16_t *y)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (HAVE_512) i = scale_round_avx512(x, s, n, y);
    else if (HAVE_256) { fd_bf16_scale_round_avx2(x, s, n, y); return; }
#elif defined(__aarch64__)
    i = fd_neon_bf16_scale_round(x, s, n, y);
#endif
    for (; i < n; i++) y[i] = fd_f32_to_bf16(fd_bf16_to_f32(x[i]) * s);
}

void fd_bf16_weight_round(const float *w, size_t n, uint16_t *y)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (HAVE_512) i = weight_round_avx512(w, n, y);
    else if (HAVE_256) { fd_bf16_weight_round_avx2(w, n, y); return; }
#elif defined(__aarch64__)
    i = fd_neon_bf16_weight_round(w, n, y);
#endif
    for (; i < n; i++) y[i] = fd_f32_to_bf16(w[i] * fd_bf16_to_f32(y[i]));
}

void fd_bf16_rescale_scalar(float *x, size_t n, float s)
{
    for (size_t i = 0; i < n; i++) x[i] = fd_bf16_to_f32(fd_f32_to_bf16(fd_bf16_to_f32(fd_f32_to_bf16(x[i])) * s));
}

void fd_relu_fma_acc_scalar(float *acc, const float *row, float d, float w, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = d * row[i];
        acc[i] = fmaf(w, v > 0.0f ? v : 0.0f, acc[i]);
    }
}

#if defined(__x86_64__)
/* round16's result widened back to fp32 */
__attribute__((target("avx512f"))) static inline __m512 round16_f32(__m512 v)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(round16(v)), 16));
}

__attribute__((target("avx512f"))) static size_t rescale_avx512(float *x, size_t n, float s)
{
    size_t i = 0;
    const __m512 sv = _mm512_set1_ps(s);
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(x + i, round16_f32(_mm512_mul_ps(round16_f32(_mm512_loadu_ps(x + i)), sv)));
    _mm256_zeroupper();
    return i;
}

/* max(v, +0) returns its second operand for NaN and for -0: v > 0 ? v : +0 */
__attribute__((target("avx512f"))) static size_t relu_fma_avx512(float *acc, const float *row, float d, float w, size_t n)
{
    size_t i = 0;
    const __m512 dv = _mm512_set1_ps(d), wv = _mm512_set1_ps(w), z = _mm512_setzero_ps();
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_max_ps(_mm512_mul_ps(dv, _mm512_loadu_ps(row + i)), z);
        _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(wv, v, _mm512_loadu_ps(acc + i)));
    }
    _mm256_zeroupper();
    return i;
}
#endif

#if defined(__x86_64__)
/* 16 x 16 words per step: 32-bit then 64-bit unpacks leave, in 128-bit
 * lane L of s[4g + c], column 4L + c of rows 4g..4g+3; two rounds of
 * 128-bit lane shuffles gather each column's four lanes. */
__attribute__((target("avx512f"))) static size_t transpose_avx512(const unsigned char *const *rows, size_t words, uint32_t *dst)
{
    size_t k0 = 0;
    for (; k0 + 16 <= words; k0 += 16) {
        __m512i r[16], t[16], u[16];
        for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_si512((const void *)(rows[i] + 4 * k0));
        for (int i = 0; i < 8; i++) {
            t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        for (int g = 0; g < 4; g++) {
            u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g + 0], t[4 * g + 2]);
            u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g + 0], t[4 * g + 2]);
            u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
            u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
        }
        for (int c = 0; c < 4; c++) {
            __m512i v0 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), v1 = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xee);
            __m512i w0 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44), w1 = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xee);
            _mm512_storeu_si512((void *)(dst + (k0 + c) * 16), _mm512_shuffle_i32x4(v0, w0, 0x88));
            _mm512_storeu_si512((void *)(dst + (k0 + 4 + c) * 16), _mm512_shuffle_i32x4(v0, w0, 0xdd));
            _mm512_storeu_si512((void *)(dst + (k0 + 8 + c) * 16), _mm512_shuffle_i32x4(v1, w1, 0x88));
            _mm512_storeu_si512((void *)(dst + (k0 + 12 + c) * 16), _mm512_shuffle_i32x4(v1, w1, 0xdd));
        }
    }
    _mm256_zeroupper();
    return k0;
}
#endif

void fd_transpose16_words(const unsigned char *const *rows, size_t words, uint32_t *dst)
{
    size_t k = 0;
#if defined(__x86_64__)
    if (HAVE_512) k = transpose_avx512(rows, words, dst);
    else if (HAVE_256) { fd_transpose16_words_avx2(rows, words, dst); return; }
#endif
    for (; k < words; k++)
        for (size_t c = 0; c < 16; c++) memcpy(&dst[k * 16 + c], rows[c] + 4 * k, 4);
}

void fd_bf16_rescale(float *x, size_t n, float s)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (HAVE_512) i = rescale_avx512(x, n, s);
    else if (HAVE_256) { fd_bf16_rescale_avx2(x, n, s); return; }
#elif defined(__aarch64__)
    i = fd_neon_bf16_rescale(x, n, s);
#endif
    fd_bf16_rescale_scalar(x + i, n - i, s);
}

void fd_relu_fma_acc(float *acc, const float *row, float d, float w, size_t n)
{
    size_t i = 0;
#if defined(__x86_64__)
    if (HAVE_512) i = relu_fma_avx512(acc, row, d, w, n);
    else if (HAVE_256) { fd_relu_fma_acc_avx2(acc, row, d, w, n); return; }
#elif defined(__aarch64__)
    i = fd_neon_relu_fma_acc(acc, row, d, w, n);
#endif
    fd_relu_fma_acc_scalar(acc + i, row + i, d, w, n - i);
}

void fd_round_bf16(const float *x, const float *bias, size_t n, uint16_t *out)
{
#if defined(__x86_64__)
    if (HAVE_512) { round_avx512(x, bias, n, out); return; }
    if (HAVE_256) { fd_round_bf16_avx2(x, bias, n, out); return; }
#elif defined(__aarch64__)
    size_t i = fd_neon_round_bf16(x, bias, n, out);
    x += i, bias = bias ? bias + i : NULL, n -= i, out += i;
#endif
    fd_round_bf16_scalar(x, bias, n, out);
}

#if defined(__x86_64__)
/* ---------------------------------------------------- AVX2 + FMA, 8 lanes */

/* the scalar recipe on 8 lanes: NaN -> (u >> 16) | 0x40, else (u + 0x7fff + lsb) >> 16 */
__attribute__((target("avx2,fma"))) static inline __m128i round8(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(u, 16);
    /* |u| <= 0x7fffffff, so the signed compare is the unsigned one */
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1))));
    r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    /* every lane is <= 0xffff: the saturating pack is the truncation */
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

/* 8 bf16 values widened exactly to fp32 */
__attribute__((target("avx2,fma"))) static inline __m256 load8_bf16(const uint16_t *p)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

/* round8's result widened back to fp32 */
__attribute__((target("avx2,fma"))) static inline __m256 round8_f32(__m256 v)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(round8(v)), 16));
}

__attribute__((target("avx2,fma"))) static size_t round_v8(const float *x, const float *bias, size_t n, uint16_t *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        if (bias) v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
        _mm_storeu_si128((__m128i *)(out + i), round8(v));
    }
    _mm256_zeroupper(); /* the caller's SSE code follows */
    return i;
}

void fd_round_bf16_avx2(const float *x, const float *bias, size_t n, uint16_t *out)
{
    size_t i = round_v8(x, bias, n, out);
    fd_round_bf16_scalar(x + i, bias ? bias + i : NULL, n - i, out + i);
}

__attribute__((target("avx2,fma"))) static size_t add_v8(uint16_t *x, const uint16_t *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(x + i), round8(_mm256_add_ps(load8_bf16(x + i), load8_bf16(y + i))));
    _mm256_zeroupper();
    return i;
}

void fd_bf16_add_avx2(uint16_t *x, const uint16_t *y, size_t n)
{
    size_t i = add_v8(x, y, n);
    fd_bf16_add_scalar(x + i, y + i, n - i);
}

__attribute__((target("avx2,fma"))) static size_t axpy_v8(float *acc, const uint16_t *y, float r, size_t n)
{
    size_t i = 0;
    const __m256 rv = _mm256_set1_ps(r);
    for (; i + 8 <= n; i += 8) /* a rounded product, then a rounded add: no FMA */
        _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), _mm256_mul_ps(load8_bf16(y + i), rv)));
    _mm256_zeroupper();
    return i;
}

void fd_bf16_axpy_avx2(float *acc, const uint16_t *y, float r, size_t n)
{
    size_t i = axpy_v8(acc, y, r, n);
    fd_bf16_axpy_scalar(acc + i, y + i, r, n - i);
}

__attribute__((target("avx2,fma"))) static size_t square_v8(const uint16_t *x, size_t n, float *t)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = load8_bf16(x + i);
        _mm256_storeu_ps(t + i, _mm256_mul_ps(v, v));
    }
    _mm256_zeroupper();
    return i;
}

void fd_bf16_square_avx2(const uint16_t *x, size_t n, float *t)
{
    for (size_t i = square_v8(x, n, t); i < n; i++) { float u = fd_bf16_to_f32(x[i]); t[i] = u * u; }
}

__attribute__((target("avx2,fma"))) static size_t scale_round_v8(const uint16_t *x, float s, size_t n, uint16_t *y)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), round8(_mm256_mul_ps(load8_bf16(x + i), _mm256_set1_ps(s))));
    _mm256_zeroupper();
    return i;
}

void fd_bf16_scale_round_avx2(const uint16_t *x, float s, size_t n, uint16_t *y)
{
    for (size_t i = scale_round_v8(x, s, n, y); i < n; i++) y[i] = fd_f32_to_bf16(fd_bf16_to_f32(x[i]) * s);
}

__attribute__((target("avx2,fma"))) static size_t weight_round_v8(const float *w, size_t n, uint16_t *y)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(y + i), round8(_mm256_mul_ps(_mm256_loadu_ps(w + i), load8_bf16(y + i))));
    _mm256_zeroupper();
    return i;
}

void fd_bf16_weight_round_avx2(const float *w, size_t n, uint16_t *y)
{
    for (size_t i = weight_round_v8(w, n, y); i < n; i++) y[i] = fd_f32_to_bf16(w[i] * fd_bf16_to_f32(y[i]));
}

__attribute__((target("avx2,fma"))) static size_t rescale_v8(float *x, size_t n, float s)
{
    size_t i = 0;
    const __m256 sv = _mm256_set1_ps(s);
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(x + i, round8_f32(_mm256_mul_ps(round8_f32(_mm256_loadu_ps(x + i)), sv)));
    _mm256_zeroupper();
    return i;
}

void fd_bf16_rescale_avx2(float *x, size_t n, float s)
{
    size_t i = rescale_v8(x, n, s);
    fd_bf16_rescale_scalar(x + i, n - i, s);
}

/* vmaxps returns its second operand for NaN and for -0: v > 0 ? v : +0 */
__attribute__((target("avx2,fma"))) static size_t relu_fma_v8(float *acc, const float *row, float d, float w, size_t n)
{
    size_t i = 0;
    const __m256 dv = _mm256_set1_ps(d), wv = _mm256_set1_ps(w), z = _mm256_setzero_ps();
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_max_ps(_mm256_mul_ps(dv, _mm256_loadu_ps(row + i)), z);
        _mm256_storeu_ps(acc + i, _mm256_fmadd_ps(wv, v, _mm256_loadu_ps(acc + i)));
    }
    _mm256_zeroupper();
    return i;
}

void fd_relu_fma_acc_avx2(float *acc, const float *row, float d, float w, size_t n)
{
    size_t i = relu_fma_v8(acc, row, d, w, n);
    fd_relu_fma_acc_scalar(acc + i, row + i, d, w, n - i);
}

/* 16 rows x 8 words per step, as two 8 x 8 transposes: 32-bit then 64-bit
 * unpacks leave columns c and c + 4 of four rows in u[c] (lanes 0 / 1), one
 * 128-bit lane permute joins the two row quads. */
__attribute__((target("avx2,fma"))) static size_t transpose_v8(const unsigned char *const *rows, size_t words, uint32_t *dst)
{
    size_t k0 = 0;
    for (; k0 + 8 <= words; k0 += 8)
        for (int g = 0; g < 2; g++) {
            __m256i r[8], t[8], u[8];
            for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_si256((const __m256i *)(rows[8 * g + i] + 4 * k0));
            for (int i = 0; i < 4; i++) {
                t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
                t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
            }
            for (int q = 0; q < 2; q++) {
                u[4 * q + 0] = _mm256_unpacklo_epi64(t[4 * q + 0], t[4 * q + 2]);
                u[4 * q + 1] = _mm256_unpackhi_epi64(t[4 * q + 0], t[4 * q + 2]);
                u[4 * q + 2] = _mm256_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
                u[4 * q + 3] = _mm256_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
            }
            for (int c = 0; c < 4; c++) {
                _mm256_storeu_si256((__m256i *)(dst + (k0 + c) * 16 + 8 * g), _mm256_permute2x128_si256(u[c], u[4 + c], 0x20));
                _mm256_storeu_si256((__m256i *)(dst + (k0 + 4 + c) * 16 + 8 * g), _mm256_permute2x128_si256(u[c], u[4 + c], 0x31));
            }
        }
    _mm256_zeroupper();
    return k0;
}

static void transpose_tail(const unsigned char *const *rows, size_t k, size_t words, uint32_t *dst)
{
    for (; k < words; k++)
        for (size_t c = 0; c < 16; c++) memcpy(&dst[k * 16 + c], rows[c] + 4 * k, 4);
}

void fd_transpose16_words_avx2(const unsigned char *const *rows, size_t words, uint32_t *dst)
{
    transpose_tail(rows, transpose_v8(rows, words, dst), words, dst);
}
#endif
