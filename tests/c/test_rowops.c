/* The row operations (src/kernels/rowops.h) against their portable loops:
 * every dispatching function (AVX-512 on x86-64 where the CPU has it, NEON on
 * aarch64) on random operands of every class (NaN, +-inf, subnormals, +-0,
 * wide exponents, bf16 rounding ties) and every length 0..40 (the vector bodies and the scalar
 * tails), bit for bit; a NaN result is compared by NaN-ness only (payloads
 * are not part of the contract, docs/HOSTS.md). */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "check.h"
#include "kernels/rowops.h"
#include "util/bf16.h"

static uint64_t rs = 0x6a09e667f3bcc909ull;
static uint32_t r32(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return (uint32_t)(rs >> 20); }
static float fval(void)
{
    uint32_t r = r32(), k = r % 16, u;
    if (k == 0) u = 0x7fc00000u | (r32() & 0x3fffff);
    else if (k == 1) u = 0x7f800000u;
    else if (k == 2) u = r32() & 0x7fffffu;
    else if (k == 3) u = 0;
    else if (k == 4) u = (uint32_t)(100 + r32() % 56) << 23 | (r32() & 0x7f0000u) | 0x8000u; /* a bf16 rounding tie */
    else u = (uint32_t)(100 + r32() % 56) << 23 | (r32() & 0x7fffffu);
    u |= (r32() & 1u) << 31;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t fb(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static int same_f(float a, float b) { return (isnan(a) && isnan(b)) || fb(a) == fb(b); }
static int same_h(uint16_t a, uint16_t b) { return ((a & 0x7fff) > 0x7f80 && (b & 0x7fff) > 0x7f80) || a == b; }

int test_rowops(void)
{
    int fails = 0;
    enum { N = 40 };
    for (int round = 0; round < 30; round++)
        for (size_t n = 0; n <= N; n++) {
            float x[N], b[N], w[N], a1[N], a2[N], t1[N], t2[N];
            uint16_t h[N], g[N], o1[N], o2[N];
            for (size_t i = 0; i < N; i++) {
                x[i] = fval(), b[i] = fval(), w[i] = fval(), a1[i] = a2[i] = fval();
                h[i] = fd_f32_to_bf16(fval()), g[i] = fd_f32_to_bf16(fval());
            }
            float s = fval(), d = fval();
            int bad = 0;
            fd_round_bf16(x, round % 2 ? b : NULL, n, o1);
            fd_round_bf16_scalar(x, round % 2 ? b : NULL, n, o2);
            for (size_t i = 0; i < n; i++) bad |= !same_h(o1[i], o2[i]);
            CHECKF(!bad, "fd_round_bf16 = the loop (n %zu, round %d)", n, round);
            bad = 0;
            memcpy(o1, h, sizeof h), memcpy(o2, h, sizeof h);
            fd_bf16_add(o1, g, n);
            fd_bf16_add_scalar(o2, g, n);
            for (size_t i = 0; i < n; i++) bad |= !same_h(o1[i], o2[i]);
            CHECKF(!bad, "fd_bf16_add = the loop (n %zu)", n);
            bad = 0;
            memcpy(t1, a1, sizeof t1), memcpy(t2, a1, sizeof t2);
            fd_bf16_axpy(t1, h, s, n);
            fd_bf16_axpy_scalar(t2, h, s, n);
            for (size_t i = 0; i < n; i++) bad |= !same_f(t1[i], t2[i]);
            CHECKF(!bad, "fd_bf16_axpy = the loop (n %zu)", n);
            bad = 0;
            fd_bf16_square(h, n, t1);
            for (size_t i = 0; i < n; i++) { float u = fd_bf16_to_f32(h[i]); bad |= !same_f(t1[i], u * u); }
            CHECKF(!bad, "fd_bf16_square = the loop (n %zu)", n);
            bad = 0;
            fd_bf16_scale_round(h, s, n, o1);
            for (size_t i = 0; i < n; i++) bad |= !same_h(o1[i], fd_f32_to_bf16(fd_bf16_to_f32(h[i]) * s));
            CHECKF(!bad, "fd_bf16_scale_round = the loop (n %zu)", n);
            bad = 0;
            memcpy(o1, g, sizeof g);
            fd_bf16_weight_round(w, n, o1);
            for (size_t i = 0; i < n; i++) bad |= !same_h(o1[i], fd_f32_to_bf16(w[i] * fd_bf16_to_f32(g[i])));
            CHECKF(!bad, "fd_bf16_weight_round = the loop (n %zu)", n);
            bad = 0;
            memcpy(t1, x, sizeof t1), memcpy(t2, x, sizeof t2);
            fd_bf16_rescale(t1, n, s);
            fd_bf16_rescale_scalar(t2, n, s);
            for (size_t i = 0; i < n; i++) bad |= !same_f(t1[i], t2[i]);
            CHECKF(!bad, "fd_bf16_rescale = the loop (n %zu)", n);
            bad = 0;
            memcpy(t1, a2, sizeof t1), memcpy(t2, a2, sizeof t2);
            fd_relu_fma_acc(t1, x, d, s, n);
            fd_relu_fma_acc_scalar(t2, x, d, s, n);
            for (size_t i = 0; i < n; i++) bad |= !same_f(t1[i], t2[i]);
            CHECKF(!bad, "fd_relu_fma_acc = the loop (n %zu)", n);
            bad = 0;
        }
    return fails;
}
