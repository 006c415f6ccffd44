/* The AVX2 + FMA builds of the element-wise capture kernels (issue 24.2),
 * called directly so that they are checked on any AVX2 host, AVX-512 ones
 * included (the dispatchers run the AVX-512 build there; test_rowops.c
 * checks the dispatchers): each must equal the portable loop bit for bit
 * on random fp32 / bf16 rows mixed with NaN (quiet, signalling, both signs),
 * +-inf, +-0, subnormals, +-FLT_MAX and round-to-nearest-even ties, for
 * every tail length 0..17 and longer rows.
 * The one freedom: where both operands of an add or multiply are NaN, which
 * payload survives is the operand order the compiler picked for the scalar
 * loop, so there only NaN-ness is required. */
#include "check.h"
#include "kernels/rowops.h"
#include "kernels/torch_ops.h"
#include "util/bf16.h"
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
enum { MAXN = 300 };

static uint32_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

static const uint32_t F32_EDGE[] = {
    0x7fc00000u, 0xffc00001u, 0x7f800001u, 0xff800123u,            /* NaN: quiet, signalling, both signs */
    0x7f800000u, 0xff800000u, 0, 0x80000000u,                      /* +-inf, +-0 */
    0x00000001u, 0x807fffffu, 0x00008000u, 0x00018000u,            /* subnormals (with ties) */
    0x7f7fffffu, 0xff7fffffu, 0x7f7f8000u, 0x7f7f7fffu,            /* +-max, the tie that rounds to inf */
    0x3f808000u, 0x3f818000u, 0xbf808000u, 0x3f80ffffu, 0x3f7fffffu, /* ties to even, just below */
    0x42f00000u, 0xc2f00000u, 0x42c80000u, 0xc2d00000u, 0x41a00000u, /* exp / softplus range edges */
};
static const uint16_t BF16_EDGE[] = {0x7fc0, 0xffc1, 0x7f81, 0x7f80, 0xff80, 0, 0x8000, 0x0001, 0x807f,
                                     0x7f7f, 0xff7f, 0x3f80, 0x3f81, 0xbf7f};

static float f32_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* random fp32: every third value an edge case, the rest random bits (any
 * exponent) or ordinary magnitudes */
static void fill_f32(uint64_t *s, float *x, size_t n, int ordinary)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t r = rnd(s), u;
        if (r % 3 == 0) u = F32_EDGE[rnd(s) % (sizeof F32_EDGE / 4)];
        else if (ordinary || r % 3 == 1) u = (rnd(s) & 0x807fffffu) | (uint32_t)(0x3c000000u + (rnd(s) % 0x6000000u));
        else u = rnd(s);
        x[i] = f32_of(u);
    }
}

static void fill_bf16(uint64_t *s, uint16_t *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t r = rnd(s);
        x[i] = r % 3 == 0 ? BF16_EDGE[rnd(s) % (sizeof BF16_EDGE / 2)] : (uint16_t)(rnd(s) >> 8);
    }
}

/* bit equality, or both NaN where `loose` (two NaN operands) */
static int same32(float a, float b, int loose)
{
    return !memcmp(&a, &b, 4) || (loose && a != a && b != b);
}

static int same16(uint16_t a, uint16_t b, int loose)
{
    return a == b || (loose && (a & 0x7fffu) > 0x7f80u && (b & 0x7fffu) > 0x7f80u);
}

static int bf16_nan(uint16_t v) { return (v & 0x7fffu) > 0x7f80u; }

static int check_rowops(size_t n, uint64_t *s)
{
    int fails = 0;
    float x[MAXN], b[MAXN], a1[MAXN], a2[MAXN];
    uint16_t h[MAXN], g[MAXN], y1[MAXN], y2[MAXN];
    fill_f32(s, x, n, 0);
    fill_f32(s, b, n, 1);
    fill_bf16(s, h, n);
    fill_bf16(s, g, n);
    int ok;

    for (int wb = 0; wb < 2; wb++) {
        fd_round_bf16_avx2(x, wb ? b : NULL, n, y1);
        fd_round_bf16_scalar(x, wb ? b : NULL, n, y2);
        ok = 1;
        for (size_t i = 0; i < n; i++) ok &= same16(y1[i], y2[i], wb && x[i] != x[i] && b[i] != b[i]);
        CHECKF(ok, "fd_round_bf16_avx2 n=%zu bias=%d differs from the scalar loop", n, wb);
    }

    memcpy(y1, h, n * 2);
    memcpy(y2, h, n * 2);
    fd_bf16_add_avx2(y1, g, n);
    fd_bf16_add_scalar(y2, g, n);
    ok = 1;
    for (size_t i = 0; i < n; i++) ok &= same16(y1[i], y2[i], bf16_nan(h[i]) && bf16_nan(g[i]));
    CHECKF(ok, "fd_bf16_add_avx2 n=%zu differs from the scalar loop", n);

    memcpy(a1, b, n * 4);
    memcpy(a2, b, n * 4);
    fd_bf16_axpy_avx2(a1, h, -0.3f, n);
    fd_bf16_axpy_scalar(a2, h, -0.3f, n);
    ok = 1;
    for (size_t i = 0; i < n; i++) ok &= same32(a1[i], a2[i], b[i] != b[i] && bf16_nan(h[i]));
    CHECKF(ok, "fd_bf16_axpy_avx2 n=%zu differs from the scalar loop", n);

    fd_bf16_square_avx2(h, n, a1);
    ok = 1;
    for (size_t i = 0; i < n; i++) { float u = fd_bf16_to_f32(h[i]); ok &= same32(a1[i], u * u, 0); }
    CHECKF(ok, "fd_bf16_square_avx2 n=%zu differs from x * x", n);

    static const float scales[] = {0.0371f, 3.0e38f, 1e-30f, -2.5f};
    float sc = scales[n % 4];
    fd_bf16_scale_round_avx2(h, sc, n, y1);
    ok = 1;
    for (size_t i = 0; i < n; i++) ok &= same16(y1[i], fd_f32_to_bf16(fd_bf16_to_f32(h[i]) * sc), 0);
    CHECKF(ok, "fd_bf16_scale_round_avx2 n=%zu s=%g differs from bf16(x * s)", n, (double)sc);

    memcpy(y1, g, n * 2);
    fd_bf16_weight_round_avx2(x, n, y1);
    ok = 1;
    for (size_t i = 0; i < n; i++) ok &= same16(y1[i], fd_f32_to_bf16(x[i] * fd_bf16_to_f32(g[i])), x[i] != x[i] && bf16_nan(g[i]));
    CHECKF(ok, "fd_bf16_weight_round_avx2 n=%zu differs from bf16(w * y)", n);

    memcpy(a1, x, n * 4);
    memcpy(a2, x, n * 4);
    fd_bf16_rescale_avx2(a1, n, sc);
    fd_bf16_rescale_scalar(a2, n, sc);
    ok = !n || !memcmp(a1, a2, n * 4);
    CHECKF(ok, "fd_bf16_rescale_avx2 n=%zu differs from the scalar loop", n);

    memcpy(a1, b, n * 4);
    memcpy(a2, b, n * 4);
    fd_relu_fma_acc_avx2(a1, x, n % 2 ? 0.125f : -3.0f, -1.7f, n);
    fd_relu_fma_acc_scalar(a2, x, n % 2 ? 0.125f : -3.0f, -1.7f, n);
    ok = !n || !memcmp(a1, a2, n * 4);
    CHECKF(ok, "fd_relu_fma_acc_avx2 n=%zu differs from the scalar loop", n);
    return fails;
}

/* torch_ops' rows: exp, silu, the cascade sum, the masked softmax */
static int check_torch_rows(size_t n, uint64_t *s)
{
    int fails = 0;
    float *x = malloc((n + 1) * 4), *y1 = malloc((n + 1) * 4), *y2 = malloc((n + 1) * 4);
    unsigned char *keep = malloc(n + 1);
    fill_f32(s, x, n, rnd(s) % 2);
    fd_torch_expf_n_avx2(x, y1, n);
    for (size_t i = 0; i < n; i++) y2[i] = fd_torch_expf(x[i]);
    CHECKF(!n || !memcmp(y1, y2, n * 4), "fd_torch_expf_n_avx2 n=%zu differs from fd_torch_expf", n);
    fd_torch_silu_n_avx2(x, y1, n);
    for (size_t i = 0; i < n; i++) y2[i] = fd_torch_silu(x[i]);
    CHECKF(!n || !memcmp(y1, y2, n * 4), "fd_torch_silu_n_avx2 n=%zu differs from fd_torch_silu", n);
    for (int pass = 0; pass < 2; pass++) { /* any values, then finite ones (the sums then finite too) */
        if (pass)
            for (size_t i = 0; i < n; i++) x[i] = (float)((int)(rnd(s) % 20001) - 10000) * 0x1p-7f;
        float a = fd_torch_sum_avx2(x, n), b = fd_torch_sum_scalar(x, n);
        CHECKF(same32(a, b, !pass), "fd_torch_sum_avx2 n=%zu pass %d: %a, the one-lane loop %a", n, pass, (double)a, (double)b);
    }
    /* softmax rows: any values (edges included: NaN rows), then finite
     * scores with -inf, -max, +-0 and subnormals mixed in; every other row masked */
    static const float sm_edge[] = {-INFINITY, -0x1.fffffep127f, 0.0f, -0.0f, 0x1p-149f, 88.5f};
    for (size_t i = 0; i < n; i++) keep[i] = rnd(s) % 4 != 0;
    for (int mk = 0; mk < 4; mk++) {
        if (mk == 0) fill_f32(s, x, n, 1);
        if (mk == 2)
            for (size_t i = 0; i < n; i++)
                x[i] = rnd(s) % 16 ? (float)((int)(rnd(s) % 20001) - 10000) * 0x1p-9f : sm_edge[rnd(s) % 6];
        size_t nk = n - (n ? rnd(s) % (n / 4 + 1) : 0), len = mk % 2 ? n + rnd(s) % 3 : n;
        float *z1 = malloc((len + 1) * 4), *z2 = malloc((len + 1) * 4);
        memcpy(z1, x, n * 4);
        memcpy(z2, x, n * 4);
        fd_torch_softmax_masked_avx2(z1, mk % 2 ? keep : NULL, nk, len);
        fd_torch_softmax_masked_scalar(z2, mk % 2 ? keep : NULL, nk, len);
        int ok = 1; /* a NaN score makes its row NaN; which NaN is the adds' operand order */
        for (size_t i = 0; i < len; i++) ok &= same32(z1[i], z2[i], mk < 2);
        CHECKF(ok, "fd_torch_softmax_masked_avx2 n=%zu nk=%zu len=%zu keep=%d finite=%d", n, nk, len, mk % 2, mk / 2);
        free(z1);
        free(z2);
    }
    free(x);
    free(y1);
    free(y2);
    free(keep);
    return fails;
}

static int check_transpose(size_t words, uint64_t *s)
{
    int fails = 0;
    unsigned char *buf = malloc(16 * (4 * words + 3) + 1);
    uint32_t *got = malloc(16 * words * 4 + 4), *want = malloc(16 * words * 4 + 4);
    const unsigned char *rows[16];
    for (size_t i = 0; i < 16 * (4 * words + 3) + 1; i++) buf[i] = (unsigned char)rnd(s);
    for (size_t c = 0; c < 16; c++) rows[c] = buf + 1 + c * (4 * words + 3); /* unaligned rows */
    fd_transpose16_words_avx2(rows, words, got);
    for (size_t k = 0; k < words; k++)
        for (size_t c = 0; c < 16; c++) memcpy(&want[k * 16 + c], rows[c] + 4 * k, 4);
    CHECKF(!words || !memcmp(got, want, 16 * words * 4), "fd_transpose16_words_avx2 words=%zu", words);
    free(buf);
    free(got);
    free(want);
    return fails;
}
#endif

int test_rowops_avx2(void)
{
    int fails = 0;
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        printf("rowops_avx2: no AVX2 + FMA on this CPU, the AVX2 builds not checked\n");
        return 0;
    }
    uint64_t s = 24;
    for (int rep = 0; rep < 40; rep++) {
        for (size_t n = 0; n <= 17; n++) fails += check_rowops(n, &s);
        fails += check_rowops(8 * (size_t)(rnd(&s) % 36) + rnd(&s) % 8, &s);
    }
    for (int rep = 0; rep < 20; rep++) {
        for (size_t n = 0; n <= 17; n++) fails += check_torch_rows(n, &s);
        fails += check_torch_rows(rnd(&s) % 600, &s);
    }
    /* sums long enough for every cascade level (levels of 16 rows per lane past 2^16 / 32 lanes) */
    static const size_t longs[] = {1023, 4096 + 7, 65536 + 31, 300001};
    for (size_t k = 0; k < 4; k++) fails += check_torch_rows(longs[k], &s);
    for (size_t w = 0; w <= 17; w++) fails += check_transpose(w, &s);
    fails += check_transpose(203, &s);
#endif
    return fails;
}
