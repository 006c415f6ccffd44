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

/* Pairs k0 .. k0+kc of the np rows of hid (kp pairs a row) split into even
 * / odd fp32 planes of npad rows of kc values in caller buffers (rows past
 * np +0; their outputs are computed and dropped), 8 words at a time (a
 * scalar split took 30 % of a P.V product). */
__attribute__((target("avx2")))
static void split_planes(const uint32_t *hid, size_t np, size_t kp, size_t k0, size_t kc, size_t npad, float *ae,
                         float *ao)
{
    const __m256i hm = _mm256_set1_epi32((int)0xffff0000u);
    for (size_t r = 0; r < np; r++) {
        const uint32_t *src = hid + r * kp + k0;
        float *e_ = ae + r * kc, *o_ = ao + r * kc;
        size_t i = 0;
        for (; i + 8 <= kc; i += 8) {
            __m256i w = _mm256_loadu_si256((const void *)(src + i));
            _mm256_storeu_si256((void *)(e_ + i), _mm256_slli_epi32(w, 16));
            _mm256_storeu_si256((void *)(o_ + i), _mm256_and_si256(w, hm));
        }
        for (; i < kc; i++) {
            uint32_t e = src[i] << 16, o = src[i] & 0xffff0000u;
            memcpy(&e_[i], &e, 4);
            memcpy(&o_[i], &o, 4);
        }
    }
    memset(ae + np * kc, 0, (npad - np) * kc * sizeof *ae);
    memset(ao + np * kc, 0, (npad - np) * kc * sizeof *ao);
}

/* The FMA emulations run K in passes of 128 pairs (8 whole chunks) when a
 * tile's K passes 384 pairs (24 KiB: the L1 share a tile had at the sizes
 * where one pass measured best): C is stored after a pass and loaded by
 * the next (exact: with FTZ no C is subnormal), and a pass's chunks are the
 * chunks of the definition (gemm.h), so every output is the same.  Tiles go
 * outer, so a tile's slice of a pass (8 KiB) stays in L1 for every row
 * block of the group: at a hidden size of thousands one pass over all of K
 * streamed each tile's whole K (128-448 KiB) from L2/L3 for every row block
 * (bench/README.md: passes of 128 beat 256 and a 1 MiB slice of the tiles;
 * at K 768 one pass beat three). */
static size_t tile_pass_pairs(size_t kp)
{
    return kp <= 384 ? kp : 128;
}

/* 4 rows x 2 column tiles: 8 C, 8 E and 8 O accumulators in registers.  A
 * partial last chunk adds +0 to E and O once, which is what its zero
 * padding does (-0 becomes +0, nothing else changes). */
#define ACC8(X) X(0,0) X(0,1) X(1,0) X(1,1) X(2,0) X(2,1) X(3,0) X(3,1)
__attribute__((target("avx512f")))
static void tile_block_avx512f(const float *ae, const float *ao, size_t kp, const uint32_t *b0, const uint32_t *b1,
                               float *out, size_t ostride, size_t mr, int two, int acc)
{
    const __m512i hm = _mm512_set1_epi32((int)0xffff0000u);
    const __m512 zero = _mm512_setzero_ps();
#define DECL(i, j) __m512 c##i##j = zero, e##i##j, o##i##j;
    ACC8(DECL)
#undef DECL
    if (acc) { /* C as the last pass stored it, for the rows and tiles that exist */
#define LD(i, j) if ((i) < mr && ((j) == 0 || two)) c##i##j = _mm512_loadu_ps(out + (size_t)(i) * ostride + (size_t)(j) * FD_TILE);
        ACC8(LD)
#undef LD
    }
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
static void tile_block8_avx512f(const float *ae, const float *ao, size_t kp, const uint32_t *b, float *out, size_t ostride,
                                int acc)
{
    const __m512i hm = _mm512_set1_epi32((int)0xffff0000u);
    const __m512 zero = _mm512_setzero_ps();
#define DECL(i) __m512 c##i = zero, e##i, o##i;
    R8(DECL)
#undef DECL
    if (acc) { /* C as the last pass stored it */
#define LD(i) c##i = _mm512_loadu_ps(out + (size_t)(i) * ostride);
        R8(LD)
#undef LD
    }
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

/* A split in groups of 8-row blocks whose planes (one pass's pairs) stay
 * under 64 KiB (as the AVX2 kernel below: no mmap per call), then the last
 * rows 4 at a time; per group, per pass (tile_pass_pairs), tiles outer. */
__attribute__((target("avx512f")))
static void gemm_tile_avx512f(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                              float *out, size_t ostride)
{
    unsigned csr = fd_ftz_daz_enter();
    size_t kcm = tile_pass_pairs(kp), ts = kp * FD_TILE;
    size_t np8 = np / 8 * 8, group = kcm ? (64 * 1024) / (8 * kcm) / 8 * 8 : 8;
    if (group < 8) group = 8;
    if (group > np8 && np8) group = np8;
    float *ae = fd_xmalloc((group * kcm + 1) * sizeof *ae), *ao = fd_xmalloc((group * kcm + 1) * sizeof *ao);
    for (size_t g = 0; g < np8; g += group) {
        size_t ng = np8 - g < group ? np8 - g : group;
        FD_FOR_PASSES(k0, kc, kp, kcm) {
            split_planes(hid + g * kp, ng, kp, k0, kc, ng, ae, ao);
            for (size_t t = 0; t < ntiles; t++)
                for (size_t p = 0; p < ng; p += 8)
                    tile_block8_avx512f(ae + p * kc, ao + p * kc, kc, packed + t * ts + k0 * FD_TILE,
                                        out + (g + p) * ostride + t * FD_TILE, ostride, k0 > 0);
        }
    }
    if (np8 < np) { /* the last rows, 4 at a time (padded with +0 rows: at most 8) */
        size_t rem = np - np8;
        FD_FOR_PASSES(k0, kc, kp, kcm) {
            split_planes(hid + np8 * kp, rem, kp, k0, kc, (rem + 3) / 4 * 4, ae, ao);
            for (size_t t = 0; t < ntiles; t += 2) {
                int two = t + 1 < ntiles;
                const uint32_t *b0 = packed + t * ts + k0 * FD_TILE, *b1 = two ? b0 + ts : b0;
                for (size_t p = 0; p < rem; p += 4)
                    tile_block_avx512f(ae + p * kc, ao + p * kc, kc, b0, b1, out + (np8 + p) * ostride + t * FD_TILE, ostride,
                                       rem - p < 4 ? rem - p : 4, two, k0 > 0);
            }
        }
    }
    free(ae);
    free(ao);
    fd_ftz_daz_leave(csr);
}

/* --------------------------------------------- AVX2 emulation (FTZ/DAZ) */

/* ROWS rows (3 or 2) x one tile (two 8-lane halves): 12 (8) E / O
 * accumulators in registers, C in a local buffer (one load, two adds and a
 * store per output vector and chunk; copied to out for the rows that
 * exist).  Per pair the odd halves of the tile are widened and fed to the
 * rows' O chains, then the even halves to their E chains: 12 (8)
 * independent FMAs per pair against a 4-cycle latency on two pipes, two
 * loads of B and one broadcast of the pre-split A per FMA pair, and at
 * most 12 + 2 + 1 of the 16 ymm registers live.  A whole chunk of 16 pairs
 * is unrolled, so its B rows and A values are constant offsets from the
 * chunk's pointers (one pair per loop iteration spent a third of its
 * instructions on address arithmetic).  Each accumulator still takes its
 * pairs in increasing order from +0, and the chunk's partial padding and
 * the C update are the operations of the definition (gemm.h): which block
 * computes a row never moves a bit.  The previous 2 x 1 block (12
 * accumulators as arrays, 6 of them C) spilled. */
#define T2_DECL(i) __m256 e##i##0, e##i##1, o##i##0, o##i##1;
#define T2_ZERO(i) e##i##0 = zero; e##i##1 = zero; o##i##0 = zero; o##i##1 = zero;
#define T2_ODD(i)                                                                                                      \
    {                                                                                                                  \
        __m256 a_ = _mm256_broadcast_ss(ao + (size_t)(i) * kp + kk);                                                   \
        o##i##0 = _mm256_fmadd_ps(a_, b0, o##i##0);                                                                    \
        o##i##1 = _mm256_fmadd_ps(a_, b1, o##i##1);                                                                    \
    }
#define T2_EVEN(i)                                                                                                     \
    {                                                                                                                  \
        __m256 a_ = _mm256_broadcast_ss(ae + (size_t)(i) * kp + kk);                                                   \
        e##i##0 = _mm256_fmadd_ps(a_, b0, e##i##0);                                                                    \
        e##i##1 = _mm256_fmadd_ps(a_, b1, e##i##1);                                                                    \
    }
#define T2_STEP(ROWS, bk)                                                                                              \
    {                                                                                                                  \
        __m256i r0 = _mm256_loadu_si256((const void *)(bk)), r1 = _mm256_loadu_si256((const void *)((bk) + 8));        \
        __m256 b0 = _mm256_castsi256_ps(_mm256_and_si256(r0, hm)), b1 = _mm256_castsi256_ps(_mm256_and_si256(r1, hm)); \
        ROWS(T2_ODD)                                                                                                   \
        b0 = _mm256_castsi256_ps(_mm256_slli_epi32(r0, 16));                                                           \
        b1 = _mm256_castsi256_ps(_mm256_slli_epi32(r1, 16));                                                           \
        ROWS(T2_EVEN)                                                                                                  \
    }
#define T2_PAD(i)                                                                                                      \
    e##i##0 = _mm256_add_ps(e##i##0, zero); e##i##1 = _mm256_add_ps(e##i##1, zero);                                   \
    o##i##0 = _mm256_add_ps(o##i##0, zero); o##i##1 = _mm256_add_ps(o##i##1, zero);
#define T2_SUM(i)                                                                                                      \
    {                                                                                                                  \
        __m256 c0 = _mm256_load_ps(cbuf[i]), c1 = _mm256_load_ps(cbuf[i] + 8);                                         \
        _mm256_store_ps(cbuf[i], _mm256_add_ps(c0, _mm256_add_ps(e##i##0, o##i##0)));                                 \
        _mm256_store_ps(cbuf[i] + 8, _mm256_add_ps(c1, _mm256_add_ps(e##i##1, o##i##1)));                             \
    }
#define T2_BLOCK(NAME, NR, ROWS)                                                                                       \
    __attribute__((target("avx2,fma"))) static void NAME(const float *ae, const float *ao, size_t kp, const uint32_t *b, \
                                                         float *out, size_t ostride, size_t mr, int acc)               \
    {                                                                                                                  \
        const __m256i hm = _mm256_set1_epi32((int)0xffff0000u);                                                        \
        const __m256 zero = _mm256_setzero_ps();                                                                       \
        _Alignas(32) float cbuf[NR][FD_TILE] = {{0}}; /* C from +0 (and +0 when kp is 0), or the last pass's */       \
        if (acc)                                                                                                       \
            for (size_t i = 0; i < mr; i++) {                                                                          \
                _mm256_store_ps(cbuf[i], _mm256_loadu_ps(out + i * ostride));                                          \
                _mm256_store_ps(cbuf[i] + 8, _mm256_loadu_ps(out + i * ostride + 8));                                  \
            }                                                                                                          \
        ROWS(T2_DECL)                                                                                                  \
        for (size_t k0 = 0; k0 < kp; k0 += 16) {                                                                       \
            size_t k1 = kp - k0 < 16 ? kp : k0 + 16;                                                                   \
            ROWS(T2_ZERO)                                                                                              \
            if (k1 - k0 == 16) {                                                                                       \
                const uint32_t *bc = b + k0 * FD_TILE;                                                                 \
                _Pragma("GCC unroll 16") for (size_t kk = k0; kk < k0 + 16; kk++) T2_STEP(ROWS, bc + (kk - k0) * FD_TILE) \
            } else {                                                                                                   \
                for (size_t kk = k0; kk < k1; kk++) T2_STEP(ROWS, b + kk * FD_TILE)                                    \
                ROWS(T2_PAD)                                                                                           \
            }                                                                                                          \
            ROWS(T2_SUM)                                                                                               \
        }                                                                                                              \
        for (size_t i = 0; i < mr; i++) memcpy(out + i * ostride, cbuf[i], sizeof cbuf[i]);                            \
    }
#define R3(X) X(0) X(1) X(2)
#define R2(X) X(0) X(1)
T2_BLOCK(tile_block3_avx2, 3, R3)
/* the rows a multiple of 3 leaves, 2 at a time (8 accumulators: 16 FMAs
 * per pair against 4-cycle chains still fill both FMA pipes) instead of a
 * 3-row block with padding rows (a 64-row task was 22 blocks, 66 rows) */
T2_BLOCK(tile_block2_avx2, 2, R2)
#undef R3
#undef R2
#undef T2_BLOCK
#undef T2_SUM
#undef T2_PAD
#undef T2_STEP
#undef T2_EVEN
#undef T2_ODD
#undef T2_ZERO
#undef T2_DECL

/* Rows go in groups whose fp32 planes stay near 64 KiB (as few groups as
 * that allows, of equal size: a 64-row task of 128 pairs is one group, not
 * 63 rows and 1): the planes are split into one small buffer per call, so
 * no call maps fresh pages (a plane of all the rows, 256 KiB for P.V's
 * 32 x 1,024 pairs, went through mmap on every call and its page faults
 * took half the time), and each group's planes are reused across every
 * tile from L1/L2; the planes hold one pass's pairs (tile_pass_pairs), per
 * group the passes in order.  A group's rows go 3 at a time, then 2 at a
 * time for the last 2 or 4 (a 1-row group: one 2-row block with a +0 row). */
__attribute__((target("avx2,fma")))
static void gemm_tile_avx2(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                           float *out, size_t ostride)
{
    if (!np) return;
    unsigned csr = fd_ftz_daz_enter();
    size_t kcm = tile_pass_pairs(kp), ts = kp * FD_TILE;
    size_t most = kcm ? (64 * 1024) / (8 * kcm) : np;
    if (most < 3) most = 3;
    size_t ngroups = (np + most - 1) / most, group = (np + ngroups - 1) / ngroups;
    size_t cap = group < 2 ? 2 : group;
    float *ae = fd_xmalloc((cap * kcm + 1) * sizeof *ae), *ao = fd_xmalloc((cap * kcm + 1) * sizeof *ao);
    for (size_t g = 0; g < np; g += group) {
        size_t ng = np - g < group ? np - g : group;
        FD_FOR_PASSES(k0, kc, kp, kcm) {
            int acc = k0 > 0;
            split_planes(hid + g * kp, ng, kp, k0, kc, ng < 2 ? 2 : ng, ae, ao);
            for (size_t t = 0; t < ntiles; t++) {
                const uint32_t *b = packed + t * ts + k0 * FD_TILE;
                float *o = out + g * ostride + t * FD_TILE;
                for (size_t p = 0; p < ng;) {
                    size_t rem = ng - p;
                    if (rem == 4 || rem <= 2) {
                        tile_block2_avx2(ae + p * kc, ao + p * kc, kc, b, o + p * ostride, ostride, rem < 2 ? rem : 2, acc);
                        p += 2;
                    } else {
                        tile_block3_avx2(ae + p * kc, ao + p * kc, kc, b, o + p * ostride, ostride, 3, acc);
                        p += 3;
                    }
                }
            }
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
