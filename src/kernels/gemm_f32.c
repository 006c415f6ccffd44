/* F32-weight product kernels (gemm_f32.h): the scalar definition and its
 * AVX2 / AVX-512F forms, each output one FMA chain in increasing k. */
#include "gemm_f32.h"
#include <math.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

static inline float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t f_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Subnormal -> signed zero, as the hardware's DAZ/FTZ does. */
static inline float flush(float f)
{
    uint32_t u = f_bits(f);
    return (u & 0x7f800000u) == 0 ? bits_f(u & 0x80000000u) : f;
}

#define F32_DOT_BODY                                                      \
    float acc = 0.0f;                                                     \
    for (size_t k = 0; k < K; k++) acc = flush(fmaf(flush(a[k]), flush(b[k * bstride]), acc)); \
    return acc;

static float dot_any(const float *a, const float *b, size_t K, size_t bstride) { F32_DOT_BODY }
#if defined(__x86_64__)
__attribute__((target("fma"))) static float dot_fma(const float *a, const float *b, size_t K, size_t bstride) { F32_DOT_BODY }
#endif

float fd_dot_f32seq(const float *a, const float *b, size_t K, size_t bstride)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("fma")) return dot_fma(a, b, K, bstride);
#endif
    return dot_any(a, b, K, bstride);
}

static void gemm_scalar(const float *a, size_t np, size_t K, const float *packed, size_t ntiles, float *out, size_t ostride)
{
    for (size_t p = 0; p < np; p++)
        for (size_t t = 0; t < ntiles; t++)
            for (size_t j = 0; j < FD_TILE; j++)
                out[p * ostride + t * FD_TILE + j] = fd_dot_f32seq(a + p * K, packed + t * K * FD_TILE + j, K, FD_TILE);
}

#if defined(__x86_64__)
#define MR 4

/* 4 positions x 1 tile (one vector of 16 chains each) */
__attribute__((target("avx512f")))
static void gemm_avx512f(const float *a, size_t np, size_t K, const float *packed, size_t ntiles, float *out, size_t ostride)
{
    for (size_t p = 0; p < np; p += MR) {
        size_t mr = np - p < MR ? np - p : MR;
        const float *ar[MR];
        for (size_t i = 0; i < MR; i++) ar[i] = a + (p + (i < mr ? i : 0)) * K;
        for (size_t t = 0; t < ntiles; t++) {
            const float *b = packed + t * K * FD_TILE;
            __m512 acc[MR];
            for (size_t i = 0; i < MR; i++) acc[i] = _mm512_setzero_ps();
            for (size_t k = 0; k < K; k++) {
                __m512 bv = _mm512_loadu_ps(b + k * FD_TILE);
                for (size_t i = 0; i < MR; i++) acc[i] = _mm512_fmadd_ps(_mm512_set1_ps(ar[i][k]), bv, acc[i]);
            }
            for (size_t i = 0; i < mr; i++) _mm512_storeu_ps(out + (p + i) * ostride + t * FD_TILE, acc[i]);
        }
    }
}

__attribute__((target("avx2,fma")))
static void gemm_avx2(const float *a, size_t np, size_t K, const float *packed, size_t ntiles, float *out, size_t ostride)
{
    for (size_t p = 0; p < np; p += MR) {
        size_t mr = np - p < MR ? np - p : MR;
        const float *ar[MR];
        for (size_t i = 0; i < MR; i++) ar[i] = a + (p + (i < mr ? i : 0)) * K;
        for (size_t t = 0; t < ntiles; t++) {
            const float *b = packed + t * K * FD_TILE;
            __m256 acc[MR][2];
            for (size_t i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
            for (size_t k = 0; k < K; k++) {
                __m256 b0 = _mm256_loadu_ps(b + k * FD_TILE), b1 = _mm256_loadu_ps(b + k * FD_TILE + 8);
                for (size_t i = 0; i < MR; i++) {
                    __m256 av = _mm256_set1_ps(ar[i][k]);
                    acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
                    acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
                }
            }
            for (size_t i = 0; i < mr; i++) {
                _mm256_storeu_ps(out + (p + i) * ostride + t * FD_TILE, acc[i][0]);
                _mm256_storeu_ps(out + (p + i) * ostride + t * FD_TILE + 8, acc[i][1]);
            }
        }
    }
}
#endif

fd_gemm_f32_fn fd_gemm_f32_neon_fn(fd_path p);
fd_gemm_f32_fn fd_gemm_f32_for(fd_path p)
{
    switch (p) {
    case FD_PATH_NEON:
    case FD_PATH_NEON_BF16: return fd_gemm_f32_neon_fn(p); /* gemm_neon.c; NULL off aarch64 */
    case FD_PATH_SCALAR: return gemm_scalar;
#if defined(__x86_64__)
    case FD_PATH_AVX2: return gemm_avx2;
    case FD_PATH_AVX512F:
    case FD_PATH_AVX512BF16: return gemm_avx512f;
#endif
    default: return NULL;
    }
}
