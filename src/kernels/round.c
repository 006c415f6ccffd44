#include "round.h"
#include "../util/bf16.h"
#include <immintrin.h>

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

void fd_round_bf16(const float *x, const float *bias, size_t n, uint16_t *out)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("avx512f")) { round_avx512(x, bias, n, out); return; }
#endif
    fd_round_bf16_scalar(x, bias, n, out);
}
