/* The F32-weight product kernels (src/kernels/gemm_f32.h, docs/NUMERICS.md
 * §5b): every supported SIMD path gives the scalar definition's bits on
 * random operands (zeros, subnormals, wide exponents, both signs, ragged
 * row and column counts), and on bf16-exact weights the definition equals
 * the pair chain on pair-swapped operands (the BF16 router's path). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kernels/gemm_f32.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next32(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (uint32_t)(rng >> 16);
}

/* an fp32 operand: 1/16 zero, 1/16 subnormal, else a wide exponent; bf16 = low 16 bits cleared */
static float operand(int bf16)
{
    uint32_t r = next32(), kind = r & 15, sign = (r >> 4 & 1) << 31, m = next32() & 0x7fffffu, ex;
    if (kind == 0) ex = 0, m = 0;
    else if (kind == 1) ex = 0, m |= 1;
    else ex = 127 - 20 + (next32() % 41);
    uint32_t u = sign | ex << 23 | m;
    if (bf16) u &= 0xffff0000u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

int test_gemm_f32(void)
{
    int fails = 0;
    enum { NP = 7, N = 37, K = 75 };
    size_t tiles = (N + FD_TILE - 1) / FD_TILE;
    float *a = calloc(NP * K, 4), *w = calloc(N * K, 4), *packed = calloc(tiles * K * FD_TILE, 4);
    float *ref = calloc(NP * tiles * FD_TILE, 4), *out = calloc(NP * tiles * FD_TILE, 4);
    for (int round = 0; round < 20; round++) {
        int bf = round % 2;
        for (size_t i = 0; i < NP * K; i++) a[i] = operand(1);
        for (size_t i = 0; i < N * K; i++) w[i] = operand(bf);
        memset(packed, 0, tiles * K * FD_TILE * 4);
        for (size_t n = 0; n < N; n++)
            for (size_t k = 0; k < K; k++) packed[(n / FD_TILE) * K * FD_TILE + k * FD_TILE + n % FD_TILE] = w[n * K + k];
        fd_gemm_f32_for(FD_PATH_SCALAR)(a, NP, K, packed, tiles, ref, tiles * FD_TILE);
        for (size_t p = 0; p < NP; p++)
            for (size_t n = 0; n < N; n++)
                CHECKF(bits(ref[p * tiles * FD_TILE + n]) == bits(fd_dot_f32seq(a + p * K, w + n * K, K, 1)),
                       "scalar kernel = definition (p %zu, n %zu)", p, n);
        for (int pth = FD_PATH_AVX2; pth < FD_PATH_COUNT; pth++) { /* amx: no kernel (NULL) */
            if (!fd_path_supported((fd_path)pth) || !fd_gemm_f32_for((fd_path)pth)) continue;
            unsigned csr = fd_ftz_daz_enter();
            fd_gemm_f32_for((fd_path)pth)(a, NP, K, packed, tiles, out, tiles * FD_TILE);
            fd_ftz_daz_leave(csr);
            size_t bad = 0;
            for (size_t p = 0; p < NP; p++)
                for (size_t n = 0; n < tiles * FD_TILE; n++) bad += bits(out[p * tiles * FD_TILE + n]) != bits(ref[p * tiles * FD_TILE + n]);
            CHECKF(bad == 0, "path %s: %zu of %zu outputs differ from the definition (round %d)", fd_path_name((fd_path)pth),
                   bad, (size_t)NP * tiles * FD_TILE, round);
        }
        if (bf) { /* bf16-exact weights: the pair chain on pair-swapped operands */
            size_t kp = (K + 1) / 2;
            uint32_t *ap = calloc(kp, 4), *wp = calloc(kp, 4);
            for (size_t p = 0; p < NP; p++)
                for (size_t n = 0; n < N; n++) {
                    for (size_t k = 0; k < kp; k++) { /* word k: low half element 2k+1, high half 2k (swapped) */
                        uint32_t a0 = bits(a[p * K + 2 * k]) >> 16, w0 = bits(w[n * K + 2 * k]) >> 16;
                        uint32_t a1 = 2 * k + 1 < K ? bits(a[p * K + 2 * k + 1]) >> 16 : 0;
                        uint32_t w1 = 2 * k + 1 < K ? bits(w[n * K + 2 * k + 1]) >> 16 : 0;
                        ap[k] = a1 | a0 << 16;
                        wp[k] = w1 | w0 << 16;
                    }
                    float c = fd_dot_canonical(ap, wp, kp, 1);
                    /* an odd K: the swapped pad puts +0 products first, which adds exact zeros */
                    CHECKF(bits(c) == bits(ref[p * tiles * FD_TILE + n]) || (c == 0 && ref[p * tiles * FD_TILE + n] == 0),
                           "bf16-exact weight: F32 chain = swapped pair chain (p %zu, n %zu)", p, n);
                }
            free(ap);
            free(wp);
        }
    }
    free(a); free(w); free(packed); free(ref); free(out);
    return fails;
}
