#include "gemm.h"
#include <math.h>
#include <string.h>

static inline float bits_f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t f_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Subnormal -> signed zero, as the hardware's DAZ/FTZ does. */
static inline float flush(float f)
{
    uint32_t u = f_bits(f);
    return (u & 0x7f800000u) == 0 ? bits_f(u & 0x80000000u) : f;
}

/* compiled generically and for an FMA target (fmaf one instruction instead
 * of a libm call): the same bits */
#define DOT_BODY                                                                    \
    float acc = 0.0f;                                                               \
    for (size_t k = 0; k < kp; k++) {                                               \
        uint32_t bk = b[k * bstride];                                               \
        float a0 = flush(bits_f(a[k] << 16)), a1 = flush(bits_f(a[k] & 0xffff0000u)); \
        float b0 = flush(bits_f(bk << 16)), b1 = flush(bits_f(bk & 0xffff0000u));   \
        acc = flush(fmaf(a1, b1, flush(acc)));                                      \
        acc = flush(fmaf(a0, b0, acc));                                             \
    }                                                                               \
    return acc;

static float dot_any(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride) { DOT_BODY }
#if defined(__x86_64__)
__attribute__((target("fma"))) static float dot_fma(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride)
{
    DOT_BODY
}
#endif

float fd_dot_canonical(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("fma")) return dot_fma(a, b, kp, bstride);
#endif
    return dot_any(a, b, kp, bstride);
}

/* The tile order (gemm.h): the definition the AMX tiles and the FMA
 * emulations are tested against. */
#define TILE_DOT_BODY                                                                      \
    float c = 0.0f;                                                                        \
    for (size_t k0 = 0; k0 < kp; k0 += 16) {                                               \
        float e = 0.0f, o = 0.0f;                                                          \
        for (size_t k = k0; k < k0 + 16; k++) {                                            \
            uint32_t ak = k < kp ? a[k] : 0, bk = k < kp ? b[k * bstride] : 0;             \
            e = flush(fmaf(flush(bits_f(ak << 16)), flush(bits_f(bk << 16)), e));          \
            o = flush(fmaf(flush(bits_f(ak & 0xffff0000u)), flush(bits_f(bk & 0xffff0000u)), o)); \
        }                                                                                  \
        c = flush(c + flush(e + o));                                                       \
    }                                                                                      \
    return c;

static float tile_dot_any(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride) { TILE_DOT_BODY }
#if defined(__x86_64__)
__attribute__((target("fma"))) static float tile_dot_fma(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride)
{
    TILE_DOT_BODY
}
#endif

float fd_dot_tile(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("fma")) return tile_dot_fma(a, b, kp, bstride);
#endif
    return tile_dot_any(a, b, kp, bstride);
}

/* Every output one call of the order's scalar definition. */
typedef float (*dot_fn)(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride);
static void gemm_dots(dot_fn dot, const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                      float *out, size_t ostride)
{
    for (size_t t = 0; t < ntiles; t++) {
        const uint32_t *tile = packed + t * kp * FD_TILE;
        for (size_t j = 0; j < FD_TILE; j++)
            for (size_t p = 0; p < np; p++) out[p * ostride + t * FD_TILE + j] = dot(hid + p * kp, tile + j, kp, FD_TILE);
    }
}

static void gemm_tile_scalar(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                             float *out, size_t ostride)
{
    gemm_dots(fd_dot_tile, hid, np, kp, packed, ntiles, out, ostride);
}

static void gemm_scalar(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                        float *out, size_t ostride)
{
    gemm_dots(fd_dot_canonical, hid, np, kp, packed, ntiles, out, ostride);
}

fd_gemm_fn fd_gemm_scalar_fn(void);
fd_gemm_fn fd_gemm_scalar_fn(void) { return gemm_scalar; }
fd_gemm_fn fd_gemm_tile_scalar_fn(void);
fd_gemm_fn fd_gemm_tile_scalar_fn(void) { return gemm_tile_scalar; }
