/* What the aarch64 bf16 instructions compute, against the canonical pair
 * order (docs/NUMERICS.md §1), lane by lane on random bf16 operands; run
 * under qemu-aarch64 -cpu max by tests/aarch64.sh (or on an aarch64 host
 * with FEAT_BF16).  Prints one line per instruction and exits 1 only when a
 * premise of the neon-bf16 kernels fails:
 *   BFMLALB / BFMLALT = one IEEE fp32 FMA of the even / odd element (FPCR.FZ = 0);
 *   FPCR.FZ = 1 flushes a result that is tiny before rounding (Arm), where
 *     the definition keeps one that rounds up to 2^-126 (x86 FTZ) -- why
 *     the kernels flush with bit operations;
 * and reports, without failing, how often BFDOT and BFMMLA (which add the
 * two products of a pair before the accumulator) differ from the pair order.
 * build: aarch64-linux-gnu-gcc -O2 -march=armv8.2-a+bf16 -o probe tests/aarch64/bf16_probe.c */
#include <arm_neon.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t s = 0x243f6a8885a308d3ull;
static uint32_t rnd(void) { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)(s >> 11); }
static float f(uint32_t u) { float x; memcpy(&x, &u, 4); return x; }
static uint32_t u32(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }
static float flush(float x) { uint32_t u = u32(x); return (u & 0x7f800000u) ? x : f(u & 0x80000000u); }
/* a bf16: 1/8 zero or subnormal, else an exponent near 1 (products and sums of similar size) */
static uint16_t bf(void)
{
    uint32_t r = rnd(), e = (r & 7) == 0 ? 0 : 120 + (r >> 3) % 16;
    return (uint16_t)((r >> 20 & 1) << 15 | e << 7 | (r >> 8 & 0x7f));
}
static float wide(uint16_t b) { return f((uint32_t)b << 16); }
static float pair_canon(float acc, uint16_t a0, uint16_t a1, uint16_t b0, uint16_t b1)
{
    acc = flush(fmaf(flush(wide(a1)), flush(wide(b1)), flush(acc)));
    return flush(fmaf(flush(wide(a0)), flush(wide(b0)), acc));
}
static uint64_t fpcr_get(void) { uint64_t v; __asm__ volatile("mrs %0, fpcr" : "=r"(v)); return v; }
static void fpcr_set(uint64_t v) { __asm__ volatile("msr fpcr, %0" ::"r"(v)); }

int main(void)
{
    enum { N = 1 << 20 };
    long dot_bad = 0, mmla_bad = 0, mlal_bad = 0, n = 0;
    for (int it = 0; it < N / 4; it++) {
        uint16_t a[8], b[8];
        float acc[4];
        for (int i = 0; i < 8; i++) a[i] = bf(), b[i] = bf();
        for (int i = 0; i < 4; i++) acc[i] = flush(wide(bf()));
        bfloat16x8_t va, vb;
        memcpy(&va, a, 16);
        memcpy(&vb, b, 16);
        float32x4_t vacc = vld1q_f32(acc), d = vbfdotq_f32(vacc, va, vb);
        float32x4_t l = vbfmlaltq_f32(vacc, va, vb), m = vbfmlalbq_f32(vacc, va, vb);
        /* BFMMLA: C(2x2) += A(2x4) B(2x4)^T; lane 2i+j = row i of a . row j of b (4 elements each) */
        float32x4_t mm = vbfmmlaq_f32(vacc, va, vb);
        float od[4], ol[4], om[4], omm[4];
        vst1q_f32(od, d); vst1q_f32(ol, l); vst1q_f32(om, m); vst1q_f32(omm, mm);
        for (int i = 0; i < 4; i++, n++) {
            float want = pair_canon(acc[i], a[2 * i], a[2 * i + 1], b[2 * i], b[2 * i + 1]);
            dot_bad += u32(od[i]) != u32(want);
            mlal_bad += u32(ol[i]) != u32(fmaf(wide(a[2 * i + 1]), wide(b[2 * i + 1]), acc[i]));
            mlal_bad += u32(om[i]) != u32(fmaf(wide(a[2 * i]), wide(b[2 * i]), acc[i]));
            int r = i / 2, c = i % 2; /* the 4-element chain: pairs (0,1) then (2,3), each odd then even */
            float w = pair_canon(acc[i], a[4 * r], a[4 * r + 1], b[4 * c], b[4 * c + 1]);
            w = pair_canon(w, a[4 * r + 2], a[4 * r + 3], b[4 * c + 2], b[4 * c + 3]);
            mmla_bad += u32(omm[i]) != u32(w);
        }
    }
    printf("bf16_probe: BFDOT vs the pair order: %ld of %ld lanes differ\n", dot_bad, n);
    printf("bf16_probe: BFMMLA vs two pair steps: %ld of %ld lanes differ\n", mmla_bad, n);
    printf("bf16_probe: BFMLALB/BFMLALT vs fmaf (FPCR.FZ = 0): %ld of %ld differ\n", mlal_bad, 2 * n);
    /* FPCR.FZ: 2^-126 + (-2^-76 * 2^-75) = 2^-126 - 2^-151 exactly, rounds to 2^-126 */
    uint64_t saved = fpcr_get();
    volatile float vc = 0x1p-126f, vx = -0x1p-76f, vy = 0x1p-75f; /* not folded at compile time */
    float32x4_t c = vdupq_n_f32(vc), x = vdupq_n_f32(vx), y = vdupq_n_f32(vy);
    float z0 = vgetq_lane_f32(vfmaq_f32(c, x, y), 0);
    fpcr_set(saved | 1u << 24);
    c = vdupq_n_f32(vc);
    float z1 = vgetq_lane_f32(vfmaq_f32(c, x, y), 0);
    fpcr_set(saved);
    printf("bf16_probe: 2^-126 - 2^-151 with FPCR.FZ = 0: %08x, FZ = 1: %08x (the definition: 00800000)\n", u32(z0), u32(z1));
    return mlal_bad != 0 || u32(z0) != 0x00800000u;
}
