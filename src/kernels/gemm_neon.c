/* The aarch64 paths (issue 24.3): the pair order, the tile order (gemm.h)
 * and the F32-weight products (gemm_f32.h) in NEON, each output the
 * canonical chain of the scalar definition, bit for bit.
 *
 *   neon       ASIMD (every aarch64 CPU): bf16 widened by shifts, one
 *              vfmaq (FMLA, an IEEE fp32 FMA) per element;
 *   neon-bf16  FEAT_BF16 (HWCAP2_BF16): BFMLALT / BFMLALB, which widen the
 *              odd / even bf16 element and do one IEEE fp32 FMA (Arm ARM
 *              BFMulAdd -> FPMulAdd under FPCR), so odd-then-even is the
 *              pair order and the two instructions are the tile order's O
 *              and E chains.  BFDOT and BFMMLA are NOT used: they add the
 *              two products of a pair first (round-to-odd with FPCR.EBF = 0,
 *              one fused sum with EBF = 1), a different order
 *              (docs/NUMERICS.md §1, measured under qemu -cpu max).
 *
 * DAZ/FTZ are explicit bit operations (daz of the bf16 operands before the
 * products, ftz of every fp32 result), with FPCR.FZ left at 0: Arm's FZ
 * flushes a result that is tiny BEFORE rounding, so a value that rounds up
 * to 2^-126 becomes 0 there but stays 2^-126 under x86's FTZ and in the
 * definition.  These kernels assume the process default FPCR (round to
 * nearest, FZ = 0, AH = 0), which nothing in this program changes. */
#include "gemm.h"
#include "gemm_f32.h"
#include "../util/buf.h"
#include <stdlib.h>
#include <string.h>

fd_gemm_fn fd_gemm_neon_fn(fd_path p, int tile);
fd_gemm_f32_fn fd_gemm_f32_neon_fn(fd_path p);
int fd_neon_supported(fd_path p);

#if defined(__aarch64__)
#include <arm_neon.h>
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1 << 1)
#endif
#ifndef HWCAP2_BF16
#define HWCAP2_BF16 (1 << 14)
#endif

int fd_neon_supported(fd_path p)
{
    unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
    if (p == FD_PATH_NEON) return (hw & HWCAP_ASIMD) != 0;
    if (p == FD_PATH_NEON_BF16) return (hw & HWCAP_ASIMD) && (hw2 & HWCAP2_BF16);
    return 0;
}

#define AI static inline __attribute__((always_inline))
#define MR 4 /* positions per block: the 4 lanes of one hidden vector */

/* fp32 subnormal -> zero of the same sign (exponent field 0: keep the sign bit) */
AI float32x4_t ftz4(float32x4_t v)
{
    uint32x4_t u = vreinterpretq_u32_f32(v);
    uint32x4_t keep = vorrq_u32(vtstq_u32(u, vdupq_n_u32(0x7f800000u)), vdupq_n_u32(0x80000000u));
    return vreinterpretq_f32_u32(vandq_u32(u, keep));
}
/* both bf16 halves of each packed word: subnormal -> signed zero */
AI uint32x4_t daz_pairs(uint32x4_t w)
{
    uint16x8_t u = vreinterpretq_u16_u32(w);
    uint16x8_t keep = vorrq_u16(vtstq_u16(u, vdupq_n_u16(0x7f80)), vdupq_n_u16(0x8000));
    return vreinterpretq_u32_u16(vandq_u16(u, keep));
}
AI float32x4_t odd_of(uint32x4_t w) { return vreinterpretq_f32_u32(vandq_u32(w, vdupq_n_u32(0xffff0000u))); }
AI float32x4_t even_of(uint32x4_t w) { return vreinterpretq_f32_u32(vshlq_n_u32(w, 16)); }

/* The hidden rows of positions p..p+3 (a missing one: zeros), DAZ applied,
 * as kp vectors: word k of position i in lane i. */
static void pack_block(const uint32_t *hid, size_t np, size_t kp, size_t p, uint32_t *blk)
{
    for (size_t k = 0; k < kp; k++)
        for (size_t i = 0; i < MR; i++) blk[k * MR + i] = p + i < np ? hid[(p + i) * kp + k] : 0;
    for (size_t k = 0; k < kp; k++) vst1q_u32(blk + k * MR, daz_pairs(vld1q_u32(blk + k * MR)));
}

AI void store_block(float *out, size_t ostride, size_t rows, float32x4_t acc[MR][4])
{
    for (size_t i = 0; i < rows; i++)
        for (int j = 0; j < 4; j++) vst1q_f32(out + i * ostride + 4 * j, acc[i][j]);
}

/* One step of every chain of a 4x16 block: acc[i][j] = ftz(fma(a_i, b_j, acc)), a_i lane i of av. */
#define FMA_ROWS(acc, b, av)                                                                         \
    do {                                                                                             \
        for (int j_ = 0; j_ < 4; j_++) {                                                             \
            acc[0][j_] = ftz4(vfmaq_laneq_f32(acc[0][j_], b[j_], av, 0));                            \
            acc[1][j_] = ftz4(vfmaq_laneq_f32(acc[1][j_], b[j_], av, 1));                            \
            acc[2][j_] = ftz4(vfmaq_laneq_f32(acc[2][j_], b[j_], av, 2));                            \
            acc[3][j_] = ftz4(vfmaq_laneq_f32(acc[3][j_], b[j_], av, 3));                            \
        }                                                                                            \
    } while (0)

/* ---- the pair order, ASIMD: 4 positions x 16 columns, odd element then even */
static void block_pair_neon(const uint32_t *blk, size_t kp, const uint32_t *tile, float *out, size_t ostride, size_t rows)
{
    float32x4_t acc[MR][4];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = vdupq_n_f32(0.0f);
    for (size_t k = 0; k < kp; k++) {
        uint32x4_t h = vld1q_u32(blk + k * MR);
        float32x4_t bo[4], be[4];
        for (int j = 0; j < 4; j++) {
            uint32x4_t w = daz_pairs(vld1q_u32(tile + k * FD_TILE + 4 * j));
            bo[j] = odd_of(w);
            be[j] = even_of(w);
        }
        float32x4_t ho = odd_of(h), he = even_of(h);
        FMA_ROWS(acc, bo, ho);
        FMA_ROWS(acc, be, he);
    }
    store_block(out, ostride, rows, acc);
}

/* ---- the tile order, ASIMD: 4 positions x 8 columns (E and O chains) per pass */
static void block_tile_neon(const uint32_t *blk, size_t kp, const uint32_t *tile, float *out, size_t ostride, size_t rows)
{
    for (int half = 0; half < 2; half++) {
        float32x4_t c[MR][2];
        for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = vdupq_n_f32(0.0f);
        for (size_t k0 = 0; k0 < kp; k0 += 16) {
            float32x4_t e[MR][2], o[MR][2];
            for (int i = 0; i < MR; i++) e[i][0] = e[i][1] = o[i][0] = o[i][1] = vdupq_n_f32(0.0f);
            size_t k1 = k0 + 16 < kp ? k0 + 16 : kp;
            for (size_t k = k0; k < k1; k++) {
                uint32x4_t h = vld1q_u32(blk + k * MR);
                float32x4_t ho = odd_of(h), he = even_of(h);
                for (int j = 0; j < 2; j++) {
                    uint32x4_t w = daz_pairs(vld1q_u32(tile + k * FD_TILE + 8 * half + 4 * j));
                    float32x4_t bo = odd_of(w), be = even_of(w);
                    e[0][j] = ftz4(vfmaq_laneq_f32(e[0][j], be, he, 0));
                    e[1][j] = ftz4(vfmaq_laneq_f32(e[1][j], be, he, 1));
                    e[2][j] = ftz4(vfmaq_laneq_f32(e[2][j], be, he, 2));
                    e[3][j] = ftz4(vfmaq_laneq_f32(e[3][j], be, he, 3));
                    o[0][j] = ftz4(vfmaq_laneq_f32(o[0][j], bo, ho, 0));
                    o[1][j] = ftz4(vfmaq_laneq_f32(o[1][j], bo, ho, 1));
                    o[2][j] = ftz4(vfmaq_laneq_f32(o[2][j], bo, ho, 2));
                    o[3][j] = ftz4(vfmaq_laneq_f32(o[3][j], bo, ho, 3));
                }
            }
            /* the zero pairs padding a last partial chunk: fma(+0, +0, x) = x + 0 (turns -0 into +0) */
            const float32x4_t z = vdupq_n_f32(0.0f);
            for (int i = 0; i < MR; i++)
                for (int j = 0; j < 2; j++) {
                    if (k1 < k0 + 16) { e[i][j] = vaddq_f32(e[i][j], z); o[i][j] = vaddq_f32(o[i][j], z); }
                    c[i][j] = ftz4(vaddq_f32(c[i][j], ftz4(vaddq_f32(e[i][j], o[i][j]))));
                }
        }
        for (size_t i = 0; i < rows; i++)
            for (int j = 0; j < 2; j++) vst1q_f32(out + i * ostride + 8 * half + 4 * j, c[i][j]);
    }
}

/* ---- FEAT_BF16: BFMLALT (odd elements) / BFMLALB (even), one IEEE FMA each */
#define BF_ATTR __attribute__((target("arch=armv8.2-a+bf16"))) /* as arm_neon.h declares them */
#define BF_ROWS(op, acc, b, hv, nj)                                                                  \
    do {                                                                                             \
        for (int j_ = 0; j_ < (nj); j_++) {                                                          \
            acc[0][j_] = ftz4(op(acc[0][j_], b[j_], hv, 0 + OFF_));                                  \
            acc[1][j_] = ftz4(op(acc[1][j_], b[j_], hv, 2 + OFF_));                                  \
            acc[2][j_] = ftz4(op(acc[2][j_], b[j_], hv, 4 + OFF_));                                  \
            acc[3][j_] = ftz4(op(acc[3][j_], b[j_], hv, 6 + OFF_));                                  \
        }                                                                                            \
    } while (0)

/* bf16 element 2i+1 of the hidden vector is position i's odd element, 2i its even one */
BF_ATTR static void block_pair_bf16(const uint32_t *blk, size_t kp, const uint32_t *tile, float *out, size_t ostride,
                                    size_t rows)
{
    float32x4_t acc[MR][4];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = vdupq_n_f32(0.0f);
    for (size_t k = 0; k < kp; k++) {
        bfloat16x8_t h = vreinterpretq_bf16_u32(vld1q_u32(blk + k * MR)), b[4];
        for (int j = 0; j < 4; j++) b[j] = vreinterpretq_bf16_u32(daz_pairs(vld1q_u32(tile + k * FD_TILE + 4 * j)));
#define OFF_ 1
        BF_ROWS(vbfmlaltq_laneq_f32, acc, b, h, 4);
#undef OFF_
#define OFF_ 0
        BF_ROWS(vbfmlalbq_laneq_f32, acc, b, h, 4);
#undef OFF_
    }
    store_block(out, ostride, rows, acc);
}

BF_ATTR static void block_tile_bf16(const uint32_t *blk, size_t kp, const uint32_t *tile, float *out, size_t ostride,
                                    size_t rows)
{
    for (int half = 0; half < 2; half++) {
        float32x4_t c[MR][2];
        for (int i = 0; i < MR; i++) c[i][0] = c[i][1] = vdupq_n_f32(0.0f);
        for (size_t k0 = 0; k0 < kp; k0 += 16) {
            float32x4_t e[MR][2], o[MR][2];
            for (int i = 0; i < MR; i++) e[i][0] = e[i][1] = o[i][0] = o[i][1] = vdupq_n_f32(0.0f);
            size_t k1 = k0 + 16 < kp ? k0 + 16 : kp;
            for (size_t k = k0; k < k1; k++) {
                bfloat16x8_t h = vreinterpretq_bf16_u32(vld1q_u32(blk + k * MR)), b[2];
                for (int j = 0; j < 2; j++)
                    b[j] = vreinterpretq_bf16_u32(daz_pairs(vld1q_u32(tile + k * FD_TILE + 8 * half + 4 * j)));
#define OFF_ 0
                BF_ROWS(vbfmlalbq_laneq_f32, e, b, h, 2);
#undef OFF_
#define OFF_ 1
                BF_ROWS(vbfmlaltq_laneq_f32, o, b, h, 2);
#undef OFF_
            }
            const float32x4_t z = vdupq_n_f32(0.0f);
            for (int i = 0; i < MR; i++)
                for (int j = 0; j < 2; j++) {
                    if (k1 < k0 + 16) { e[i][j] = vaddq_f32(e[i][j], z); o[i][j] = vaddq_f32(o[i][j], z); }
                    c[i][j] = ftz4(vaddq_f32(c[i][j], ftz4(vaddq_f32(e[i][j], o[i][j]))));
                }
        }
        for (size_t i = 0; i < rows; i++)
            for (int j = 0; j < 2; j++) vst1q_f32(out + i * ostride + 8 * half + 4 * j, c[i][j]);
    }
}

typedef void (*block_fn)(const uint32_t *blk, size_t kp, const uint32_t *tile, float *out, size_t ostride, size_t rows);

/* All position blocks packed first, then tile by tile (the tile, kp * 64
 * bytes, stays in cache across the blocks of positions). */
static void gemm_blocks(block_fn f, const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed, size_t ntiles,
                        float *out, size_t ostride)
{
    if (!np || !ntiles) return;
    size_t nb = (np + MR - 1) / MR, bw = (kp ? kp : 1) * MR;
    uint32_t *blk = fd_xmalloc(nb * bw * sizeof *blk); /* the hidden rows' size, DAZ applied */
    for (size_t b = 0; b < nb; b++) pack_block(hid, np, kp, b * MR, blk + b * bw);
    for (size_t t = 0; t < ntiles; t++)
        for (size_t b = 0; b < nb; b++) {
            size_t p = b * MR, rows = np - p < MR ? np - p : MR;
            f(blk + b * bw, kp, packed + t * kp * FD_TILE, out + p * ostride + t * FD_TILE, ostride, rows);
        }
    free(blk);
}

static void gemm_pair_neon(const uint32_t *h, size_t np, size_t kp, const uint32_t *w, size_t nt, float *o, size_t os)
{
    gemm_blocks(block_pair_neon, h, np, kp, w, nt, o, os);
}
static void gemm_tile_neon(const uint32_t *h, size_t np, size_t kp, const uint32_t *w, size_t nt, float *o, size_t os)
{
    gemm_blocks(block_tile_neon, h, np, kp, w, nt, o, os);
}
static void gemm_pair_bf16(const uint32_t *h, size_t np, size_t kp, const uint32_t *w, size_t nt, float *o, size_t os)
{
    gemm_blocks(block_pair_bf16, h, np, kp, w, nt, o, os);
}
static void gemm_tile_bf16(const uint32_t *h, size_t np, size_t kp, const uint32_t *w, size_t nt, float *o, size_t os)
{
    gemm_blocks(block_tile_bf16, h, np, kp, w, nt, o, os);
}

fd_gemm_fn fd_gemm_neon_fn(fd_path p, int tile)
{
    if (p == FD_PATH_NEON) return tile ? gemm_tile_neon : gemm_pair_neon;
    if (p == FD_PATH_NEON_BF16) return tile ? gemm_tile_bf16 : gemm_pair_bf16;
    return NULL;
}

/* ---- F32 weights (gemm_f32.h): acc = ftz(fma(daz(a[k]), daz(w[k]), acc)), 4 positions x 16 columns */
AI float32x4_t daz4(float32x4_t v) { return ftz4(v); }

static void block_f32(const float *blk, size_t K, const float *w, float *out, size_t ostride, size_t rows)
{
    float32x4_t acc[MR][4];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = vdupq_n_f32(0.0f);
    for (size_t k = 0; k < K; k++) {
        float32x4_t av = vld1q_f32(blk + k * MR), b[4];
        for (int j = 0; j < 4; j++) b[j] = daz4(vld1q_f32(w + k * FD_TILE + 4 * j));
        FMA_ROWS(acc, b, av);
    }
    store_block(out, ostride, rows, acc);
}

static void gemm_f32_neon(const float *a, size_t np, size_t K, const float *packed, size_t ntiles, float *out, size_t ostride)
{
    if (!np || !ntiles) return;
    size_t nb = (np + MR - 1) / MR, bw = (K ? K : 1) * MR;
    float *blk = fd_xmalloc(nb * bw * sizeof *blk);
    for (size_t b = 0; b < nb; b++) /* position p + i of block b at lane i, DAZ applied */
        for (size_t k = 0; k < K; k++) {
            float v[MR];
            for (size_t i = 0; i < MR; i++) v[i] = b * MR + i < np ? a[(b * MR + i) * K + k] : 0.0f;
            vst1q_f32(blk + b * bw + k * MR, daz4(vld1q_f32(v)));
        }
    for (size_t t = 0; t < ntiles; t++)
        for (size_t b = 0; b < nb; b++) {
            size_t p = b * MR, rows = np - p < MR ? np - p : MR;
            block_f32(blk + b * bw, K, packed + t * K * FD_TILE, out + p * ostride + t * FD_TILE, ostride, rows);
        }
    free(blk);
}

/* neon-bf16 runs the ASIMD kernel: the weights are fp32, there is no bf16 operand */
fd_gemm_f32_fn fd_gemm_f32_neon_fn(fd_path p)
{
    return p == FD_PATH_NEON || p == FD_PATH_NEON_BF16 ? gemm_f32_neon : NULL;
}

#else /* not aarch64: no path of this file */

int fd_neon_supported(fd_path p)
{
    (void)p;
    return 0;
}
fd_gemm_fn fd_gemm_neon_fn(fd_path p, int tile)
{
    (void)p;
    (void)tile;
    return NULL;
}
fd_gemm_f32_fn fd_gemm_f32_neon_fn(fd_path p)
{
    (void)p;
    return NULL;
}
#endif
