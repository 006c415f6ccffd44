/* The tile order (gemm.h) on x86: Intel AMX tiles, which compute it
 * natively (one TDPBF16PS per 32-element chunk), and FMA emulations for
 * CPUs without them.  Same operands as the pair order: A rows of kp pair
 * words, B packed as tiles of 16 columns x kp pair words, which is already
 * the VNNI layout a B tile loads (16 pair rows of 64 bytes). */
#include "gemm.h"
#if defined(__x86_64__)
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>
#include "../util/buf.h"

/* ------------------------------------------------------------------ AMX */

typedef struct __attribute__((packed)) tilecfg {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

/* Blocks of 32 rows x 32 columns: C tiles 0-3, A tiles 4-5, B tiles 6-7.
 * A rows come from a zero-padded copy unless the block is whole (32 rows
 * and kp a multiple of 16); a partial last chunk of B is copied with zero
 * pairs after it, so padding multiplies +0 by +0 as the definition says. */
__attribute__((target("amx-tile,amx-bf16")))
static void gemm_amx(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles, float *out,
                     size_t ostride)
{
    tilecfg cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) { cfg.colsb[t] = 64; cfg.rows[t] = 16; }
    size_t nc = (kp + 15) / 16, kpad = nc * 16, tail = kp % 16;
    uint32_t *abuf = NULL;
    _Alignas(64) uint32_t btail[2][256];
    _Alignas(64) float cbuf[32 * 32];
    _tile_loadconfig(&cfg);
    for (size_t p = 0; p < np; p += 32) {
        size_t mr = np - p < 32 ? np - p : 32;
        const uint32_t *A = hid + p * kp;
        size_t as = kp * 4;
        if (mr < 32 || tail) {
            if (!abuf) abuf = fd_xmalloc(32 * kpad * 4);
            memset(abuf, 0, 32 * kpad * 4);
            for (size_t r = 0; r < mr; r++) memcpy(abuf + r * kpad, hid + (p + r) * kp, kp * 4);
            A = abuf;
            as = kpad * 4;
        }
        for (size_t t = 0; t < ntiles; t += 2) {
            int two = t + 1 < ntiles;
            const uint32_t *B0 = packed + t * kp * FD_TILE, *B1 = two ? B0 + kp * FD_TILE : B0;
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            for (size_t c = 0; c < nc; c++) {
                const uint32_t *b0 = B0 + c * 256, *b1 = B1 + c * 256;
                if (c == nc - 1 && tail) {
                    memset(btail, 0, sizeof btail);
                    memcpy(btail[0], b0, tail * 64);
                    memcpy(btail[1], b1, tail * 64);
                    b0 = btail[0];
                    b1 = btail[1];
                }
                _tile_loadd(4, (const char *)A + c * 64, as);
                _tile_loadd(5, (const char *)A + 16 * as + c * 64, as);
                _tile_loadd(6, b0, 64);
                _tile_loadd(7, b1, 64);
                _tile_dpbf16ps(0, 4, 6);
                _tile_dpbf16ps(1, 4, 7);
                _tile_dpbf16ps(2, 5, 6);
                _tile_dpbf16ps(3, 5, 7);
            }
            float *o = out + p * ostride + t * FD_TILE;
            if (mr == 32 && two) {
                _tile_stored(0, o, ostride * 4);
                _tile_stored(1, o + FD_TILE, ostride * 4);
                _tile_stored(2, o + 16 * ostride, ostride * 4);
                _tile_stored(3, o + 16 * ostride + FD_TILE, ostride * 4);
                continue;
            }
            _tile_stored(0, cbuf, 128);
            _tile_stored(1, cbuf + 16, 128);
            _tile_stored(2, cbuf + 16 * 32, 128);
            _tile_stored(3, cbuf + 16 * 32 + 16, 128);
            for (size_t r = 0; r < mr; r++) memcpy(o + r * ostride, cbuf + r * 32, (two ? 32 : 16) * 4);
        }
    }
    _tile_release();
    free(abuf);
}

/* ------------------------------------------ AVX-512F emulation (FTZ/DAZ) */

/* A rows split into even / odd fp32 values, rows padded to a multiple of 4
 * with zeros (their outputs are computed and dropped). */
static float *split_rows(const uint32_t *hid, size_t np, size_t kp, size_t npad, int odd)
{
    float *v = fd_xcalloc(npad * kp + 1, sizeof *v);
    for (size_t i = 0; i < np * kp; i++) {
        uint32_t u = odd ? hid[i] & 0xffff0000u : hid[i] << 16;
        memcpy(&v[i], &u, 4);
    }
    return v;
}

/* 4 rows x 2 column tiles: 8 C, 8 E and 8 O accumulators in registers.  A
 * partial last chunk adds +0 to E and O once, which is what its zero
 * padding does (-0 becomes +0, nothing else changes). */
#define ACC8(X) X(0,0) X(0,1) X(1,0) X(1,1) X(2,0) X(2,1) X(3,0) X(3,1)
__attribute__((target("avx512f")))
static void tile_block_avx512f(const float *ae, const float *ao, size_t kp, const uint32_t *b0, const uint32_t *b1,
                               float *out, size_t ostride, size_t mr, int two)
{
    const __m512i hm = _mm512_set1_epi32((int)0xffff0000u);
    const __m512 zero = _mm512_setzero_ps();
#define DECL(i, j) __m512 c##i##j = zero, e##i##j, o##i##j;
    ACC8(DECL)
#undef DECL
    for (size_t k0 = 0; k0 < kp; k0 += 16) {
        size_t k1 = kp - k0 < 16 ? kp : k0 + 16;
#define ZERO(i, j) e##i##j = zero; o##i##j = zero;
        ACC8(ZERO)
#undef ZERO
        for (size_t k = k0; k < k1; k++) {
            __m512i r0 = _mm512_loadu_si512((const void *)(b0 + k * FD_TILE)), r1 = _mm512_loadu_si512((const void *)(b1 + k * FD_TILE));
            __m512 be0 = _mm512_castsi512_ps(_mm512_slli_epi32(r0, 16)), bo0 = _mm512_castsi512_ps(_mm512_and_si512(r0, hm));
            __m512 be1 = _mm512_castsi512_ps(_mm512_slli_epi32(r1, 16)), bo1 = _mm512_castsi512_ps(_mm512_and_si512(r1, hm));
#define ROW(i)                                                     \
    {                                                              \
        __m512 xe = _mm512_set1_ps(ae[(size_t)(i) * kp + k]);      \
        __m512 xo = _mm512_set1_ps(ao[(size_t)(i) * kp + k]);      \
        e##i##0 = _mm512_fmadd_ps(xe, be0, e##i##0);               \
        e##i##1 = _mm512_fmadd_ps(xe, be1, e##i##1);               \
        o##i##0 = _mm512_fmadd_ps(xo, bo0, o##i##0);               \
        o##i##1 = _mm512_fmadd_ps(xo, bo1, o##i##1);               \
    }
            ROW(0) ROW(1) ROW(2) ROW(3)
#undef ROW
        }
        if (k1 - k0 < 16) {
#define PAD(i, j) e##i##j = _mm512_add_ps(e##i##j, zero); o##i##j = _mm512_add_ps(o##i##j, zero);
            ACC8(PAD)
#undef PAD
        }
#define SUM(i, j) c##i##j = _mm512_add_ps(c##i##j, _mm512_add_ps(e##i##j, o##i##j));
        ACC8(SUM)
#undef SUM
    }
#define ST(i, j) if ((i) < mr && ((j) == 0 || two)) _mm512_storeu_ps(out + (size_t)(i) * ostride + (size_t)(j) * FD_TILE, c##i##j);
    ACC8(ST)
#undef ST
}

/* 8 rows x one tile: 8 C, 8 E, 8 O accumulators and one widened B pair
 * per pair of K, each B widening feeding 16 FMAs (the 4 x 2 block: 8). */
#define R8(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7)
__attribute__((target("avx512f")))
static void tile_block8_avx512f(const float *ae, const float *ao, size_t kp, const uint32_t *b, float *out, size_t ostride)
{
    const __m512i hm = _mm512_set1_epi32((int)0xffff0000u);
    const __m512 zero = _mm512_setzero_ps();
#define DECL(i) __m512 c##i = zero, e##i, o##i;
    R8(DECL)
#undef DECL
    for (size_t k0 = 0; k0 < kp; k0 += 16) {
        size_t k1 = kp - k0 < 16 ? kp : k0 + 16;
#define ZERO(i) e##i = zero; o##i = zero;
        R8(ZERO)
#undef ZERO
        for (size_t k = k0; k < k1; k++) {
            __m512i r = _mm512_loadu_si512((const void *)(b + k * FD_TILE));
            __m512 be = _mm512_castsi512_ps(_mm512_slli_epi32(r, 16)), bo = _mm512_castsi512_ps(_mm512_and_si512(r, hm));
#define ROW(i)                                                                        \
    e##i = _mm512_fmadd_ps(_mm512_set1_ps(ae[(size_t)(i) * kp + k]), be, e##i);       \
    o##i = _mm512_fmadd_ps(_mm512_set1_ps(ao[(size_t)(i) * kp + k]), bo, o##i);
            R8(ROW)
#undef ROW
        }
        if (k1 - k0 < 16) {
#define PAD(i) e##i = _mm512_add_ps(e##i, zero); o##i = _mm512_add_ps(o##i, zero);
            R8(PAD)
#undef PAD
        }
#define SUM(i) c##i = _mm512_add_ps(c##i, _mm512_add_ps(e##i, o##i));
        R8(SUM)
#undef SUM
    }
#define ST(i) _mm512_storeu_ps(out + (size_t)(i) * ostride, c##i);
    R8(ST)
#undef ST
}

__attribute__((target("avx512f")))
static void gemm_tile_avx512f(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                              float *out, size_t ostride)
{
    unsigned csr = fd_ftz_daz_enter();
    size_t npad = (np + 3) / 4 * 4;
    float *ae = split_rows(hid, np, kp, npad, 0), *ao = split_rows(hid, np, kp, npad, 1);
    size_t np8 = np / 8 * 8;
    for (size_t t = 0; t < ntiles; t++)
        for (size_t p = 0; p < np8; p += 8)
            tile_block8_avx512f(ae + p * kp, ao + p * kp, kp, packed + t * kp * FD_TILE, out + p * ostride + t * FD_TILE,
                                ostride);
    for (size_t t = 0; np8 < np && t < ntiles; t += 2) { /* the last rows, 4 at a time */
        int two = t + 1 < ntiles;
        const uint32_t *b0 = packed + t * kp * FD_TILE, *b1 = two ? b0 + kp * FD_TILE : b0;
        for (size_t p = np8; p < np; p += 4)
            tile_block_avx512f(ae + p * kp, ao + p * kp, kp, b0, b1, out + p * ostride + t * FD_TILE, ostride,
                               np - p < 4 ? np - p : 4, two);
    }
    free(ae);
    free(ao);
    fd_ftz_daz_leave(csr);
}

/* --------------------------------------------- AVX2 emulation (FTZ/DAZ) */

/* 2 rows x one tile (two 8-lane halves): 4 C, 4 E, 4 O accumulators. */
__attribute__((target("avx2,fma")))
static void gemm_tile_avx2(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                           float *out, size_t ostride)
{
    unsigned csr = fd_ftz_daz_enter();
    size_t npad = (np + 1) / 2 * 2;
    float *ae = split_rows(hid, np, kp, npad, 0), *ao = split_rows(hid, np, kp, npad, 1);
    const __m256i hm = _mm256_set1_epi32((int)0xffff0000u);
    const __m256 zero = _mm256_setzero_ps();
    for (size_t t = 0; t < ntiles; t++) {
        const uint32_t *b = packed + t * kp * FD_TILE;
        for (size_t p = 0; p < np; p += 2) {
            __m256 c[2][2] = {{zero, zero}, {zero, zero}};
            for (size_t k0 = 0; k0 < kp; k0 += 16) {
                size_t k1 = kp - k0 < 16 ? kp : k0 + 16;
                __m256 e[2][2] = {{zero, zero}, {zero, zero}}, o[2][2] = {{zero, zero}, {zero, zero}};
                for (size_t k = k0; k < k1; k++)
                    for (int h = 0; h < 2; h++) {
                        __m256i r = _mm256_loadu_si256((const void *)(b + k * FD_TILE + 8 * h));
                        __m256 be = _mm256_castsi256_ps(_mm256_slli_epi32(r, 16)), bo = _mm256_castsi256_ps(_mm256_and_si256(r, hm));
                        for (int i = 0; i < 2; i++) {
                            e[i][h] = _mm256_fmadd_ps(_mm256_set1_ps(ae[(p + i) * kp + k]), be, e[i][h]);
                            o[i][h] = _mm256_fmadd_ps(_mm256_set1_ps(ao[(p + i) * kp + k]), bo, o[i][h]);
                        }
                    }
                for (int i = 0; i < 2; i++)
                    for (int h = 0; h < 2; h++) {
                        if (k1 - k0 < 16) { e[i][h] = _mm256_add_ps(e[i][h], zero); o[i][h] = _mm256_add_ps(o[i][h], zero); }
                        c[i][h] = _mm256_add_ps(c[i][h], _mm256_add_ps(e[i][h], o[i][h]));
                    }
            }
            for (size_t i = 0; i < 2 && p + i < np; i++)
                for (int h = 0; h < 2; h++) _mm256_storeu_ps(out + (p + i) * ostride + t * FD_TILE + 8 * h, c[i][h]);
        }
    }
    free(ae);
    free(ao);
    fd_ftz_daz_leave(csr);
}

fd_gemm_fn fd_gemm_tile_x86_fn(fd_path p);
fd_gemm_fn fd_gemm_tile_x86_fn(fd_path p)
{
    switch (p) {
    case FD_PATH_AMX: return gemm_amx;
    case FD_PATH_AVX512F:
    case FD_PATH_AVX512BF16: return gemm_tile_avx512f;
    case FD_PATH_AVX2: return gemm_tile_avx2;
    default: return NULL;
    }
}

#else /* not x86-64: no SIMD paths of this file; the portable definitions run */

fd_gemm_fn fd_gemm_tile_x86_fn(fd_path p);
fd_gemm_fn fd_gemm_tile_x86_fn(fd_path p)
{
    (void)p;
    return NULL;
}
#endif
