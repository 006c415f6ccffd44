/* SIMD replay GEMM paths.  Each function is compiled for its own target so
 * the binary runs anywhere and dispatches at run time.  Microkernels: 4
 * positions x 4 tiles of 16 columns (AVX512_BF16, AVX2) and 8 positions x 3
 * tiles (AVX-512F); AVX512_BF16's narrow edges in 16 x 1, 8 x 2 and 8 x 3
 * blocks, every AVX512_BF16 block one generic body (block_bf16_rt):
 * independent accumulators each a single chain over the hidden pairs in the
 * canonical order, so the blocking never moves a bit. */
#include "gemm.h"
#if defined(__x86_64__)
#include <immintrin.h>
#include <string.h>
#include "../util/buf.h"

#define MR 4
#define NT 4

/* ------------------------------------------------- AVX-512F (FMA + FTZ/DAZ) */

__attribute__((target("avx512f")))
static void gemm_avx512f_any(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                         float *out, size_t ostride)
{
    const __m512i hi_mask = _mm512_set1_epi32((int)0xffff0000u);
    for (size_t p = 0; p < np; p += MR) {
        size_t mr = np - p < MR ? np - p : MR;
        for (size_t t = 0; t < ntiles; t += NT) {
            size_t nt = ntiles - t < NT ? ntiles - t : NT;
            __m512 acc[MR][NT];
            for (size_t i = 0; i < MR; i++)
                for (size_t j = 0; j < NT; j++) acc[i][j] = _mm512_setzero_ps();
            const uint32_t *b[NT];
            for (size_t j = 0; j < NT; j++) b[j] = packed + (t + (j < nt ? j : 0)) * kp * FD_TILE;
            const uint32_t *a[MR];
            for (size_t i = 0; i < MR; i++) a[i] = hid + (p + (i < mr ? i : 0)) * kp;
            for (size_t k = 0; k < kp; k++) {
                __m512 b_odd[NT], b_even[NT];
                for (size_t j = 0; j < NT; j++) {
                    __m512i bv = _mm512_loadu_si512((const void *)(b[j] + k * FD_TILE));
                    b_odd[j] = _mm512_castsi512_ps(_mm512_and_si512(bv, hi_mask));
                    b_even[j] = _mm512_castsi512_ps(_mm512_slli_epi32(bv, 16));
                }
                for (size_t i = 0; i < MR; i++) {
                    __m512 a_odd = _mm512_castsi512_ps(_mm512_set1_epi32((int)(a[i][k] & 0xffff0000u)));
                    __m512 a_even = _mm512_castsi512_ps(_mm512_set1_epi32((int)(a[i][k] << 16)));
                    for (size_t j = 0; j < NT; j++) {
                        acc[i][j] = _mm512_fmadd_ps(a_odd, b_odd[j], acc[i][j]);
                        acc[i][j] = _mm512_fmadd_ps(a_even, b_even[j], acc[i][j]);
                    }
                }
            }
            for (size_t i = 0; i < mr; i++)
                for (size_t j = 0; j < nt; j++) _mm512_storeu_ps(out + (p + i) * ostride + (t + j) * FD_TILE, acc[i][j]);
        }
    }
}


/* AVX512_BF16: R positions x T tiles for any R, T known at compile time:
 * the loops unroll fully and the R x T accumulators stay in registers
 * (R x T + T + 1 <= 32).  Each lane is one vdpbf16ps chain over the hidden
 * pairs in the canonical order, whatever the block, so the same bits.
 * (AVX-512F and AVX2 edges go through the *_any loops, which compute each
 * lane with the same instruction sequence.) */
#define BF16_TARGET __attribute__((target("avx512f,avx512bf16,avx512bw,avx512vl")))
BF16_TARGET static inline __attribute__((always_inline)) void
block_bf16_rt(const uint32_t *a, const uint32_t *b, size_t kp, float *out, size_t ostride, const int R, const int T)
{
    __m512 acc[16][4];
    const size_t ts = kp * FD_TILE;
#pragma GCC unroll 16
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int j = 0; j < T; j++) acc[i][j] = _mm512_setzero_ps();
    for (size_t k = 0; k < kp; k++) {
        __m512bh bv[4];
#pragma GCC unroll 4
        for (int j = 0; j < T; j++) bv[j] = (__m512bh)_mm512_loadu_si512((const void *)(b + (size_t)j * ts + k * FD_TILE));
#pragma GCC unroll 16
        for (int i = 0; i < R; i++) {
            __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[(size_t)i * kp + k]);
#pragma GCC unroll 4
            for (int j = 0; j < T; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], x, bv[j]);
        }
    }
#pragma GCC unroll 16
    for (int i = 0; i < R; i++)
#pragma GCC unroll 4
        for (int j = 0; j < T; j++) _mm512_storeu_ps(out + (size_t)i * ostride + (size_t)j * FD_TILE, acc[i][j]);
}

typedef void (*bf16_block_fn)(const uint32_t *a, const uint32_t *b, size_t kp, float *out, size_t ostride);
#define BF16_BLOCK(R, T)                                                                                    \
    BF16_TARGET static void block_bf16_##R##x##T(const uint32_t *a, const uint32_t *b, size_t kp, float *out, \
                                                 size_t ostride)                                            \
    {                                                                                                       \
        block_bf16_rt(a, b, kp, out, ostride, R, T);                                                        \
    }
#define BF16_TAILS(T) BF16_BLOCK(4, T) BF16_BLOCK(2, T) BF16_BLOCK(1, T)
BF16_BLOCK(16, 1)
BF16_BLOCK(8, 1)
BF16_TAILS(1)
BF16_BLOCK(8, 2)
BF16_TAILS(2)
BF16_BLOCK(8, 3)
BF16_TAILS(3)
BF16_TAILS(4)
#undef BF16_TAILS
#undef BF16_BLOCK

/* One panel of T (1 to 4) tiles for every row: the widest row block for T
 * (T = 1: 16 rows, 16 chains; T = 2, 3: 8 rows, 16 / 24 chains; T = 4: 4 rows,
 * 16 chains), then the leftover rows in blocks of 8, 4, 2, 1. */
BF16_TARGET static void gemm_bf16_panel(const uint32_t *hid, size_t np, size_t kp, const uint32_t *b, size_t T, float *out,
                                   size_t ostride)
{
    static const bf16_block_fn fns[4][5] = {
        {block_bf16_16x1, block_bf16_8x1, block_bf16_4x1, block_bf16_2x1, block_bf16_1x1},
        {NULL, block_bf16_8x2, block_bf16_4x2, block_bf16_2x2, block_bf16_1x2},
        {NULL, block_bf16_8x3, block_bf16_4x3, block_bf16_2x3, block_bf16_1x3},
        {NULL, NULL, block_bf16_4x4, block_bf16_2x4, block_bf16_1x4},
    };
    static const size_t rows[5] = {16, 8, 4, 2, 1};
    size_t p = 0;
    for (int r = 0; r < 5; r++)
        for (; fns[T - 1][r] && np - p >= rows[r]; p += rows[r]) fns[T - 1][r](hid + p * kp, b, kp, out + p * ostride, ostride);
}

BF16_TARGET static void gemm_bf16(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                                  float *out, size_t ostride)
{
    /* tiles outer: one panel of NT tiles (NT x kp x 64 bytes, 32 KiB at hidden
     * 256) stays in L1 for every row block, where rows outer streamed the whole
     * chunk of the head through L2 once per 4 rows; the last 1 to 3 tiles
     * (narrow products: N = 16, 32, 48, 80) as one narrower panel */
    for (size_t t = 0; t < ntiles; t += NT) {
        size_t nt = ntiles - t < NT ? ntiles - t : NT;
        gemm_bf16_panel(hid, np, kp, packed + t * kp * FD_TILE, nt, out + t * FD_TILE, ostride);
    }
}

/* The FMA paths (AVX-512F, AVX2) run the hidden pairs in passes: each
 * accumulator is stored after one pass and loaded by the next, an exact
 * round trip of an fp32 value (with FTZ no accumulator is subnormal, so DAZ
 * cannot touch it), so every lane is still one chain over the pairs in the
 * canonical order.  Per pass, row blocks outer: a block's pairs of its rows
 * stay in L1 while the pass's slice of the tiles streams from L2.  One pass
 * when the tiles' whole K fits 1 MiB (contiguous: a vocabulary chunk of 128
 * tiles at hidden 256, which runs near the FMA peak); else passes whose
 * slice fits 1 MiB, or 512 KiB from 64 tiles up, at least 32 pairs.  The
 * replay's chunk of 128 tiles at hidden 4,096 measured 5-9 % faster with
 * 512 KiB slices (64 pairs) than with 1 MiB ones, an engine task's 32 tiles
 * 0-7 % slower (bench/README.md).  One pass over all of a hidden 4,096
 * streamed the chunk's 16 MiB of head from L3 for every row block (half the
 * FMA rate on two cores). */
static size_t pass_pairs(size_t kp, size_t ntiles)
{
    size_t pair = FD_TILE * 4; /* bytes of one pair of a tile */
    if (!ntiles || ntiles * kp * pair <= ((size_t)1 << 20)) return kp;
    size_t kc = (ntiles >= 64 ? (size_t)1 << 19 : (size_t)1 << 20) / (ntiles * pair);
    kc = kc < 32 ? 32 : kc;
    return kc < kp ? kc : kp;
}

/* The rows a pass's panels hold at once: whole blocks of r rows within
 * 120 KiB (one small buffer per call, under malloc's mmap threshold: planes
 * through mmap and page faults on every call once cost a quarter of the
 * FMA rate), at least one block, at most the rows' blocks (rows rounded up
 * to r). */
static size_t group_rows(size_t kc, size_t r, size_t rows)
{
    size_t g = (size_t)120 * 1024 / (8 * ((kc + 7) / 8 * 8 + !kc)) / r * r, most = (rows + r - 1) / r * r;
    g = g < r ? r : g;
    return g < most ? g : most;
}

/* An accumulator's first value: zero on the first pass, else the stored one. */
#define ACC_INIT(i, j) (acc ? _mm512_loadu_ps(out + (size_t)(i) * ostride + (size_t)(j) * FD_TILE) : _mm512_setzero_ps())

/* Pairs k0 .. k0+kc of the r rows of hid (kp pairs a row) as a block's
 * fp32 panel, in groups of 8 pairs (PANEL_AT: a group's r rows' odd halves,
 * the high 16 bits, 8 floats a row, then their even halves): a block reads
 * its rows' operands at fixed offsets from one pointer, and the split is 8
 * pairs of a row a vector.  The last group's unused places stay unset. */
#define PANEL_AT(a, r, k, i) ((a)[((k) >> 3) * 16 * (r) + (i) * 8 + ((k) & 7)])
#define PANEL_FLOATS(r, kc) (2 * (r) * (((kc) + 7) / 8 * 8))
__attribute__((target("avx2")))
static void split_panel(const uint32_t *hid, size_t kp, size_t k0, size_t kc, size_t r, float *a)
{
    const __m256i hm = _mm256_set1_epi32((int)0xffff0000u);
    for (size_t i = 0; i < r; i++) {
        const uint32_t *src = hid + i * kp + k0;
        size_t k = 0;
        for (; k + 8 <= kc; k += 8) {
            __m256i w = _mm256_loadu_si256((const void *)(src + k));
            _mm256_storeu_si256((void *)&PANEL_AT(a, r, k, i), _mm256_and_si256(w, hm));
            _mm256_storeu_si256((void *)&PANEL_AT(a, r, k, r + i), _mm256_slli_epi32(w, 16));
        }
        for (; k < kc; k++) {
            uint32_t o = src[k] & 0xffff0000u, e = src[k] << 16;
            memcpy(&PANEL_AT(a, r, k, i), &o, 4);
            memcpy(&PANEL_AT(a, r, k, r + i), &e, 4);
        }
    }
}

/* 8 positions x 3 tiles: 24 accumulators and 6 widened B vectors stay in
 * the 32 registers; each B widening (and + shift, on the FMA ports) now
 * feeds 16 FMAs instead of 8.  Same per-element chain as every path. */
#define ACC24(X) X(0,0) X(0,1) X(0,2) X(1,0) X(1,1) X(1,2) X(2,0) X(2,1) X(2,2) X(3,0) X(3,1) X(3,2) \
                 X(4,0) X(4,1) X(4,2) X(5,0) X(5,1) X(5,2) X(6,0) X(6,1) X(6,2) X(7,0) X(7,1) X(7,2)
__attribute__((target("avx512f")))
static void block_avx512f_8x3(const float *a, size_t kc, const uint32_t *b, size_t ts, float *out, size_t ostride,
                              int acc)
{
    const __m512i hm = _mm512_set1_epi32((int)0xffff0000u);
#define DECL(i, j) __m512 c##i##j = ACC_INIT(i, j);
    ACC24(DECL)
#undef DECL
    for (size_t k = 0; k < kc; k++) {
        const uint32_t *bk = b + k * FD_TILE;
        __m512i r0 = _mm512_loadu_si512((const void *)bk), r1 = _mm512_loadu_si512((const void *)(bk + ts));
        __m512i r2 = _mm512_loadu_si512((const void *)(bk + 2 * ts));
        __m512 o0 = _mm512_castsi512_ps(_mm512_and_si512(r0, hm)), e0 = _mm512_castsi512_ps(_mm512_slli_epi32(r0, 16));
        __m512 o1 = _mm512_castsi512_ps(_mm512_and_si512(r1, hm)), e1 = _mm512_castsi512_ps(_mm512_slli_epi32(r1, 16));
        __m512 o2 = _mm512_castsi512_ps(_mm512_and_si512(r2, hm)), e2 = _mm512_castsi512_ps(_mm512_slli_epi32(r2, 16));
#define ROW(i)                                                                                   \
    {                                                                                            \
        __m512 ao_ = _mm512_set1_ps(PANEL_AT(a, 8, k, i));                                      \
        c##i##0 = _mm512_fmadd_ps(ao_, o0, c##i##0);                                             \
        c##i##1 = _mm512_fmadd_ps(ao_, o1, c##i##1);                                             \
        c##i##2 = _mm512_fmadd_ps(ao_, o2, c##i##2);                                             \
        __m512 ae_ = _mm512_set1_ps(PANEL_AT(a, 8, k, 8 + (i)));                                \
        c##i##0 = _mm512_fmadd_ps(ae_, e0, c##i##0);                                             \
        c##i##1 = _mm512_fmadd_ps(ae_, e1, c##i##1);                                             \
        c##i##2 = _mm512_fmadd_ps(ae_, e2, c##i##2);                                             \
    }
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7)
#undef ROW
    }
#define ST(i, j) _mm512_storeu_ps(out + (size_t)(i) * ostride + (size_t)(j) * FD_TILE, c##i##j);
    ACC24(ST)
#undef ST
}

/* The tiles left over by the 8x3 blocking (a vocab chunk of 128 tiles
 * leaves 2), one at a time for 8 positions. */
__attribute__((target("avx512f")))
static void block_avx512f_8x1(const float *a, size_t kc, const uint32_t *b, float *out, size_t ostride, int acc)
{
    const __m512i hm = _mm512_set1_epi32((int)0xffff0000u);
    __m512 c[8];
    for (int i = 0; i < 8; i++) c[i] = ACC_INIT(i, 0);
    for (size_t k = 0; k < kc; k++) {
        __m512i r = _mm512_loadu_si512((const void *)(b + k * FD_TILE));
        __m512 o = _mm512_castsi512_ps(_mm512_and_si512(r, hm)), e = _mm512_castsi512_ps(_mm512_slli_epi32(r, 16));
        for (int i = 0; i < 8; i++) {
            c[i] = _mm512_fmadd_ps(_mm512_set1_ps(PANEL_AT(a, 8, k, (size_t)i)), o, c[i]);
            c[i] = _mm512_fmadd_ps(_mm512_set1_ps(PANEL_AT(a, 8, k, (size_t)(8 + i))), e, c[i]);
        }
    }
    for (int i = 0; i < 8; i++) _mm512_storeu_ps(out + (size_t)i * ostride, c[i]);
}

/* Two leftover tiles at once (16 accumulators, 4 widened B vectors): a
 * chunk whose tile count is 2 mod 3 (an expert of 128 columns has 8). */
#define ACC16X2(X) X(0,0) X(0,1) X(1,0) X(1,1) X(2,0) X(2,1) X(3,0) X(3,1) \
                   X(4,0) X(4,1) X(5,0) X(5,1) X(6,0) X(6,1) X(7,0) X(7,1)
__attribute__((target("avx512f")))
static void block_avx512f_8x2(const float *a, size_t kc, const uint32_t *b, size_t ts, float *out, size_t ostride,
                              int acc)
{
    const __m512i hm = _mm512_set1_epi32((int)0xffff0000u);
#define DECL(i, j) __m512 c##i##j = ACC_INIT(i, j);
    ACC16X2(DECL)
#undef DECL
    for (size_t k = 0; k < kc; k++) {
        const uint32_t *bk = b + k * FD_TILE;
        __m512i r0 = _mm512_loadu_si512((const void *)bk), r1 = _mm512_loadu_si512((const void *)(bk + ts));
        __m512 o0 = _mm512_castsi512_ps(_mm512_and_si512(r0, hm)), e0 = _mm512_castsi512_ps(_mm512_slli_epi32(r0, 16));
        __m512 o1 = _mm512_castsi512_ps(_mm512_and_si512(r1, hm)), e1 = _mm512_castsi512_ps(_mm512_slli_epi32(r1, 16));
#define ROW(i)                                                                                   \
    {                                                                                            \
        __m512 ao_ = _mm512_set1_ps(PANEL_AT(a, 8, k, i));                                      \
        c##i##0 = _mm512_fmadd_ps(ao_, o0, c##i##0);                                             \
        c##i##1 = _mm512_fmadd_ps(ao_, o1, c##i##1);                                             \
        __m512 ae_ = _mm512_set1_ps(PANEL_AT(a, 8, k, 8 + (i)));                                \
        c##i##0 = _mm512_fmadd_ps(ae_, e0, c##i##0);                                             \
        c##i##1 = _mm512_fmadd_ps(ae_, e1, c##i##1);                                             \
    }
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5) ROW(6) ROW(7)
#undef ROW
    }
#define ST(i, j) _mm512_storeu_ps(out + (size_t)(i) * ostride + (size_t)(j) * FD_TILE, c##i##j);
    ACC16X2(ST)
#undef ST
}

/* Rows in groups (group_rows); per group, per pass (pass_pairs), per 8-row
 * block, the 8 x 3 blocks across the tiles, then the 1 or 2 left. */
__attribute__((target("avx512f")))
static void gemm_avx512f(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                         float *out, size_t ostride)
{
    size_t np8 = np / 8 * 8, nt3 = ntiles / 3 * 3, ts = kp * FD_TILE, kcm = pass_pairs(kp, ntiles);
    const size_t group = group_rows(kcm, 8, np8);
    float *a = fd_xmalloc((PANEL_FLOATS(group, kcm) + 1) * sizeof *a);
    for (size_t g = 0; g < np8; g += group) {
        size_t ng = np8 - g < group ? np8 - g : group;
        FD_FOR_PASSES(k0, kc, kp, kcm) {
            int acc = k0 > 0;
            for (size_t p = 0; p < ng; p += 8) split_panel(hid + (g + p) * kp, kp, k0, kc, 8, a + PANEL_FLOATS(p, kc));
            const uint32_t *b = packed + k0 * FD_TILE;
            float *o = out + g * ostride;
            for (size_t p = 0; p < ng; p += 8) {
                for (size_t t = 0; t < nt3; t += 3)
                    block_avx512f_8x3(a + PANEL_FLOATS(p, kc), kc, b + t * ts, ts, o + p * ostride + t * FD_TILE, ostride, acc);
                float *oe = o + p * ostride + nt3 * FD_TILE;
                if (ntiles - nt3 == 2) block_avx512f_8x2(a + PANEL_FLOATS(p, kc), kc, b + nt3 * ts, ts, oe, ostride, acc);
                else if (ntiles - nt3 == 1) block_avx512f_8x1(a + PANEL_FLOATS(p, kc), kc, b + nt3 * ts, oe, ostride, acc);
            }
        }
    }
    free(a);
    if (np8 < np) gemm_avx512f_any(hid + np8 * kp, np - np8, kp, packed, ntiles, out + np8 * ostride, ostride);
}

/* ------------------------------------------------------ AVX2 (FMA + FTZ/DAZ) */

__attribute__((target("avx2,fma")))
static void gemm_avx2_any(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                          float *out, size_t ostride)
{
    const __m256i hi_mask = _mm256_set1_epi32((int)0xffff0000u);
    for (size_t p = 0; p < np; p += MR) {
        size_t mr = np - p < MR ? np - p : MR;
        for (size_t t = 0; t < ntiles; t++) {
            __m256 acc[MR][2];
            for (size_t i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
            const uint32_t *b = packed + t * kp * FD_TILE;
            const uint32_t *a[MR];
            for (size_t i = 0; i < MR; i++) a[i] = hid + (p + (i < mr ? i : 0)) * kp;
            for (size_t k = 0; k < kp; k++) {
                __m256 bo[2], be[2];
                for (size_t h = 0; h < 2; h++) {
                    __m256i bv = _mm256_loadu_si256((const void *)(b + k * FD_TILE + 8 * h));
                    bo[h] = _mm256_castsi256_ps(_mm256_and_si256(bv, hi_mask));
                    be[h] = _mm256_castsi256_ps(_mm256_slli_epi32(bv, 16));
                }
                for (size_t i = 0; i < MR; i++) {
                    __m256 ao = _mm256_castsi256_ps(_mm256_set1_epi32((int)(a[i][k] & 0xffff0000u)));
                    __m256 ae = _mm256_castsi256_ps(_mm256_set1_epi32((int)(a[i][k] << 16)));
                    for (size_t h = 0; h < 2; h++) {
                        acc[i][h] = _mm256_fmadd_ps(ao, bo[h], acc[i][h]);
                        acc[i][h] = _mm256_fmadd_ps(ae, be[h], acc[i][h]);
                    }
                }
            }
            for (size_t i = 0; i < mr; i++)
                for (size_t h = 0; h < 2; h++) _mm256_storeu_ps(out + (p + i) * ostride + t * FD_TILE + 8 * h, acc[i][h]);
        }
    }
}

/* 6 positions x 1 tile (12 accumulators of 8 columns): per pair k the odd
 * halves of the tile are widened and fed to the six rows' odd FMAs, then
 * the even halves to their even FMAs, so each accumulator still takes
 * odd then even per pair (the canonical chain) while 12 + 2 + 2 of the 16
 * registers are live; the A values come pre-split into a panel
 * (split_panel) and are broadcast from memory.  The old 4 x 1 block (8 accumulators, each two
 * dependent FMAs per pair) was bound by the FMA latency at half the peak. */
/* One body for both blocks: ROWS lists the rows (a macro X-list). */
/* c = a * b + c, one rounding (the same operation as _mm256_fmadd_ps), in
 * the form that keeps c in its register: GCC otherwise writes some sums
 * into the dead broadcast's register, and the accumulators rotating
 * through registers cost spills in the loop (a third of the FMA rate). */
#define A2_FMA231(c, a, b) __asm__("vfmadd231ps %2, %1, %0" : "+x"(c) : "x"(a), "x"(b))
/* d = the odd halves of r (r & 0xffff0000 per lane), the mask a memory
 * operand: the 16 registers hold 12 accumulators, 2 B vectors and 2
 * broadcasts, no register for the mask (with one, an accumulator spilled). */
static const uint32_t A2_HM[8] __attribute__((aligned(32))) = {0xffff0000u, 0xffff0000u, 0xffff0000u, 0xffff0000u,
                                                               0xffff0000u, 0xffff0000u, 0xffff0000u, 0xffff0000u};
#define A2_HI(d, r) __asm__("vpand %1, %2, %0" : "=x"(d) : "m"(*(const __m256i *)A2_HM), "x"(r))
#define A2_INIT(i, h) (acc ? _mm256_loadu_ps(out + (size_t)(i) * ostride + 8 * (h)) : _mm256_setzero_ps())
#define A2_DECL(i) __m256 c##i##0 = A2_INIT(i, 0), c##i##1 = A2_INIT(i, 1);
#define A2_FMA(i, half)                                                                          \
    {                                                                                            \
        __m256 a_ = _mm256_broadcast_ss(&PANEL_AT(a, rr, k, (half) * rr + (i)));                 \
        A2_FMA231(c##i##0, a_, b0);                                                              \
        A2_FMA231(c##i##1, a_, b1);                                                              \
    }
#define A2_ODD(i) A2_FMA(i, 0)
#define A2_EVEN(i) A2_FMA(i, 1)
#define A2_ST(i) _mm256_storeu_ps(out + (size_t)(i) * ostride, c##i##0); _mm256_storeu_ps(out + (size_t)(i) * ostride + 8, c##i##1);
#define A2_BLOCK(NAME, ROWS, R)                                                                                        \
    __attribute__((target("avx2,fma"))) static void NAME(const float *a, size_t kc, const uint32_t *b, float *out,     \
                                                         size_t ostride, int acc)                                      \
    {                                                                                                                  \
        const size_t rr = (R); /* rows of the panel (PANEL_AT) */                                                    \
        ROWS(A2_DECL)                                                                                                  \
        for (size_t k = 0; k < kc; k++) {                                                                              \
            const uint32_t *bk = b + k * FD_TILE;                                                                      \
            __m256i r0 = _mm256_loadu_si256((const void *)bk), r1 = _mm256_loadu_si256((const void *)(bk + 8));        \
            __m256 b0, b1;                                                                                             \
            A2_HI(b0, r0);                                                                                             \
            A2_HI(b1, r1);                                                                                             \
            ROWS(A2_ODD)                                                                                               \
            /* the even half loaded again after the odd FMAs (a compiler barrier): the raw B vectors are  \
             * not kept live across them, so no accumulator is spilled */                                    \
            __asm__ volatile("" ::: "memory");                                                                         \
            b0 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_loadu_si256((const void *)bk), 16));                     \
            b1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_loadu_si256((const void *)(bk + 8)), 16));              \
            ROWS(A2_EVEN)                                                                                              \
        }                                                                                                              \
        ROWS(A2_ST)                                                                                                    \
    }
#define ROWS6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define ROWS4(X) X(0) X(1) X(2) X(3)
A2_BLOCK(block_avx2_6x1, ROWS6, 6)
/* The same for the 4 positions a 64-position block leaves (8 accumulators:
 * 16 FMAs per pair against 8-cycle chains still fill both FMA pipes). */
A2_BLOCK(block_avx2_4x1, ROWS4, 4)
#undef ROWS6
#undef ROWS4
#undef A2_BLOCK
#undef A2_ST
#undef A2_EVEN
#undef A2_ODD
#undef A2_FMA
#undef A2_DECL
#undef A2_INIT
#undef A2_FMA231
#undef A2_HI

/* Rows in groups of whole blocks (group_rows: 6-row blocks up to np6, then
 * 4-row ones); per group, per pass (pass_pairs), per row block, every tile.
 * 6k + 2 rows run as 6(k-1) + 4 + 4. */
__attribute__((target("avx2,fma")))
static void gemm_avx2(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                      float *out, size_t ostride)
{
    size_t np6 = np / 6 * 6;
    if (np - np6 == 2 && np6) np6 -= 6; /* 6k + 2 rows as 6(k-1) + 4 + 4 (32 queries: 24 + 8, not 30 + 2 in the edge loop) */
    size_t np4 = np6 + (np - np6) / 4 * 4, ts = kp * FD_TILE, kcm = pass_pairs(kp, ntiles);
    const size_t cap = group_rows(kcm, 6, np4);
    float *a = fd_xmalloc((PANEL_FLOATS(cap, kcm) + 1) * sizeof *a);
#define BLOCK_ROWS(i) ((i) < np6 ? (size_t)6 : (size_t)4) /* the rows of the block that starts at row i */
    for (size_t g = 0, ng = 0; g < np4; g += ng) {
        for (ng = 0; g + ng < np4 && ng + BLOCK_ROWS(g + ng) <= cap;) ng += BLOCK_ROWS(g + ng);
        FD_FOR_PASSES(k0, kc, kp, kcm) {
            int acc = k0 > 0;
            for (size_t p = 0; p < ng; p += BLOCK_ROWS(g + p))
                split_panel(hid + (g + p) * kp, kp, k0, kc, BLOCK_ROWS(g + p), a + PANEL_FLOATS(p, kc));
            for (size_t p = 0; p < ng; p += BLOCK_ROWS(g + p))
                for (size_t t = 0; t < ntiles; t++) {
                    const uint32_t *b = packed + t * ts + k0 * FD_TILE;
                    float *o = out + (g + p) * ostride + t * FD_TILE;
                    if (BLOCK_ROWS(g + p) == 6) block_avx2_6x1(a + PANEL_FLOATS(p, kc), kc, b, o, ostride, acc);
                    else block_avx2_4x1(a + PANEL_FLOATS(p, kc), kc, b, o, ostride, acc);
                }
        }
    }
#undef BLOCK_ROWS
    free(a);
    if (np4 < np) gemm_avx2_any(hid + np4 * kp, np - np4, kp, packed, ntiles, out + np4 * ostride, ostride);
}

unsigned fd_ftz_daz_enter(void)
{
    unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u); /* FTZ (bit 15) | DAZ (bit 6) */
    return saved;
}

void fd_ftz_daz_leave(unsigned saved) { _mm_setcsr(saved); }

fd_gemm_fn fd_gemm_x86_fn(fd_path p);
fd_gemm_fn fd_gemm_x86_fn(fd_path p)
{
    switch (p) {
    case FD_PATH_AVX512BF16: return gemm_bf16;
    case FD_PATH_AVX512F: return gemm_avx512f;
    case FD_PATH_AVX2: return gemm_avx2;
    default: return NULL;
    }
}

#else /* not x86-64: no SIMD paths of this file; the portable definitions run */

unsigned fd_ftz_daz_enter(void) { return 0; }
void fd_ftz_daz_leave(unsigned saved) { (void)saved; }
fd_gemm_fn fd_gemm_x86_fn(fd_path p);
fd_gemm_fn fd_gemm_x86_fn(fd_path p)
{
    (void)p;
    return NULL;
}
#endif
