/* Directed bit cases of the flush rules (docs/NUMERICS.md §1, §5, §5b) on
 * every supported path of the pair order, the tile order and the F32-weight
 * products, each with the one result the definition gives:
 *   - an FMA whose exact result lies just below 2^-126 and rounds up to it
 *     keeps 2^-126 (the flush is of the ROUNDED result: x86's FTZ; Arm's
 *     FPCR.FZ flushes before rounding and would give 0, so the aarch64
 *     paths flush with bit operations instead);
 *   - a subnormal bf16 operand is read as zero (DAZ) even against a huge one;
 *   - a negative subnormal result becomes -0 (the sign kept);
 *   - the tile order's last partial chunk is padded with +0 pairs, so an
 *     E/O chain of -0 there becomes +0 (visible when C is -0). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "kernels/gemm.h"
#include "kernels/gemm_f32.h"

static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint16_t bf(float f) { return (uint16_t)(fbits(f) >> 16); } /* exact for the values used */
static uint32_t pair(uint16_t even, uint16_t odd) { return even | (uint32_t)odd << 16; }

/* one output (position 0, column 0) of path p; tile: the tile order */
static uint32_t run_bf16(fd_path p, int tile, const uint32_t *h, const uint32_t *w, size_t kp)
{
    uint32_t *packed = calloc(kp * FD_TILE, 4);
    float out[FD_TILE];
    for (size_t k = 0; k < kp; k++) packed[k * FD_TILE] = w[k];
    unsigned csr = tile ? 0 : fd_ftz_daz_enter();
    (tile ? fd_gemm_tile_for(p) : fd_gemm_for(p))(h, 1, kp, packed, 1, out, FD_TILE);
    if (!tile) fd_ftz_daz_leave(csr);
    free(packed);
    return fbits(out[0]);
}

/* Does this FPU, with the kernels' flush mode on (fd_ftz_daz_enter: MXCSR
 * FTZ+DAZ on x86), flush a result that is tiny only BEFORE rounding?  x86
 * hardware detects tininess after rounding and keeps 2^-126 (the definition);
 * qemu-user's x86 emulation (7.2, tests/avx2.sh) flushes before rounding, as
 * Arm's FPCR.FZ does, so the FPU-flushed paths give 0 there.  The probe is
 * a double -> float conversion of 2^-126 - 2^-151, which rounds to 2^-126. */
static int fpu_flushes_before_rounding(void)
{
    volatile double d = 0x1p-126 - 0x1p-151;
    unsigned csr = fd_ftz_daz_enter();
    volatile float f = (float)d;
    fd_ftz_daz_leave(csr);
    return fbits(f) != 0x00800000u;
}

int test_gemm_edges(void)
{
    int fails = 0;
    const int emu = fpu_flushes_before_rounding();
    if (emu)
        printf("  (gemm_edges: this FPU flushes before rounding (an emulator, e.g. qemu-user x86): the two "
               "rounds-up-to-2^-126 checks of the FPU-flushed paths are skipped here; they run on hardware)\n");
    const uint16_t one = bf(1.0f), nz = 0x8000, sub = 0x0040 /* 2^-127 */;
    /* pair order, kp = 1: odd 2^-63 * 2^-63 = 2^-126, then even -2^-76 * 2^-75:
     * exact 2^-126 - 2^-151, which rounds to 2^-126 */
    uint32_t h1[1] = {pair(bf(-0x1p-76f), bf(0x1p-63f))}, w1[1] = {pair(bf(0x1p-75f), bf(0x1p-63f))};
    /* DAZ: odd 2^-127 (subnormal) * 2^100 reads as +0 * 2^100; even +0 */
    uint32_t h2[1] = {pair(0, sub)}, w2[1] = {pair(one, bf(0x1p100f))};
    /* FTZ keeps the sign: odd -2^-70 * 2^-60 = -2^-130 -> -0; even -0 * 1 -> -0 + -0 = -0 */
    uint32_t h3[1] = {pair(nz, bf(-0x1p-70f))}, w3[1] = {pair(one, bf(0x1p-60f))};
    /* tile order, kp = 33 (chunks of 16, 16, 1): C = 2^-125 after chunk 1,
     * -0.25 * 2^-125 -> -0 after chunk 2; chunk 3's E and O are -0 (flushed
     * negative products), the 15 padding pairs make them +0: C = -0 + +0 = +0 */
    uint32_t h4[33], w4[33];
    for (size_t k = 0; k < 33; k++) h4[k] = pair(nz, nz), w4[k] = pair(one, one);
    h4[0] = pair(bf(0x1p-60f), nz); w4[0] = pair(bf(0x1p-65f), one);
    h4[16] = pair(bf(-0x1p-60f), nz); w4[16] = pair(bf(0x1.4p-65f), one);
    h4[32] = pair(bf(-0x1p-70f), bf(-0x1p-70f)); w4[32] = pair(bf(0x1p-60f), bf(0x1p-60f));
    int tested = 0;
    for (int p = 0; p < FD_PATH_COUNT; p++) {
        const char *nm = fd_path_name((fd_path)p);
        if (fd_path_supported((fd_path)p)) {
            tested++;
            if (!emu) CHECKF(run_bf16((fd_path)p, 0, h1, w1, 1) == 0x00800000u, "pair %s: rounds up to 2^-126, kept", nm);
            CHECKF(run_bf16((fd_path)p, 0, h2, w2, 1) == 0x00000000u, "pair %s: subnormal operand read as +0", nm);
            CHECKF(run_bf16((fd_path)p, 0, h3, w3, 1) == 0x80000000u, "pair %s: negative subnormal -> -0", nm);
        }
        if (fd_tile_path_supported((fd_path)p)) {
            CHECKF(run_bf16((fd_path)p, 1, h1, w1, 1) == 0x00800000u, "tile %s: E -> -0, O = 2^-126, C = 2^-126", nm);
            CHECKF(run_bf16((fd_path)p, 1, h4, w4, 33) == 0x00000000u, "tile %s: the +0 padding of a partial chunk", nm);
        }
        fd_gemm_f32_fn f = fd_path_supported((fd_path)p) ? fd_gemm_f32_for((fd_path)p) : NULL;
        if (f) { /* 2^-63 * 2^-63, then -2^-76 * 2^-75: 2^-126 kept; then a subnormal weight against 2^100 */
            float a[3] = {0x1p-63f, -0x1p-76f, 0x1p100f}, w[3 * FD_TILE] = {0}, out[FD_TILE];
            w[0] = 0x1p-63f; w[FD_TILE] = 0x1p-75f; w[2 * FD_TILE] = bitsf(0x00000001u);
            unsigned csr = fd_ftz_daz_enter();
            f(a, 1, 3, w, 1, out, FD_TILE);
            fd_ftz_daz_leave(csr);
            if (!emu)
                CHECKF(fbits(out[0]) == 0x00800000u, "f32 %s: 2^-126 kept, the subnormal weight read as +0 (got %08x)",
                       nm, fbits(out[0]));
        }
    }
    /* the definitions themselves */
    CHECK(fbits(fd_dot_canonical(h1, w1, 1, 1)) == 0x00800000u, "pair definition: 2^-126");
    CHECK(fbits(fd_dot_tile(h4, w4, 33, 1)) == 0x00000000u, "tile definition: +0 after the padding");
    CHECK(tested >= 1, "at least the scalar path ran");
    return fails;
}
