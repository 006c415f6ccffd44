/* Writes the body of src/kernels/rsqrtps_zen4.inc: RSQRTPS (SSE) on every
 * 12-bit significand prefix of [1, 2) and [2, 4), as the host computes it
 * (the committed table: AMD Zen 4; Intel's RSQRTPS differs).  Also checks
 * that the instruction's result depends only on that prefix and scales
 * exactly by 2^-n (exit 1 otherwise).
 *
 *   cc -O2 -o /tmp/rsqrtps_table tests/parity/rsqrtps_table.c
 *   /tmp/rsqrtps_table > /tmp/body   (the 512 lines between the braces) */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
static uint32_t B(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float F(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static float r12(float x) { return _mm_cvtss_f32(_mm_rsqrt_ss(_mm_set_ss(x))); }
int main(void)
{
    long bad = 0;
    for (uint32_t u = 0x3f800000u; u < 0x40800000u; u++) {
        uint32_t p = u & ~0x7ffu, r = B(r12(F(u)));
        bad += r != B(r12(F(p))) || (r & 0x7ffu) || (r >> 23) != 126;
        if ((u & 0xfff) == 0)
            for (int e = -124; e <= 124; e += 2) bad += B(r12(F(u) * __builtin_ldexpf(1.0f, e))) != B(__builtin_ldexpf(F(r), -e / 2));
    }
    for (int i = 0; i < 8192; i++) {
        uint32_t u = (i >> 12 ? 0x40000000u : 0x3f800000u) | ((uint32_t)(i & 4095) << 11);
        printf("%s0x%03x,%s", i % 16 ? "" : "    ", (B(r12(F(u))) >> 11) & 0xfff, i % 16 == 15 ? "\n" : " ");
    }
    fprintf(stderr, "rsqrtps: %ld inputs break the model\n", bad);
    return bad != 0;
}
