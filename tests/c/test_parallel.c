/* The engine's parallel machinery: the worker pool runs every index once
 * (nested loops inline), products and packing give the same bits for any
 * thread count and either packing routine, and the SIMD bf16 rounding equals
 * the scalar recipe on every bit pattern class. */
#include "check.h"
#include "engine/ops/matmul.h"
#include "kernels/torch_ops.h"
#include "kernels/mkl_vml.h"
#include "kernels/rowops.h"
#include "util/bf16.h"
#include "util/pool.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

typedef struct hits {
    atomic_int *n;
    fd_pool *p;
    atomic_int nested;
} hits;

static void nested_body(void *ctx, size_t i, int worker)
{
    (void)i;
    hits *h = ctx;
    if (worker == 0) atomic_fetch_add(&h->nested, 1);
}

static void body(void *ctx, size_t i, int worker)
{
    hits *h = ctx;
    atomic_fetch_add(&h->n[i], 1);
    if (i % 97 == 0) {
        hits inner = {NULL, NULL, 0};
        fd_pool_for(h->p, 5, nested_body, &inner); /* runs inline with worker 0 */
        if (atomic_load(&inner.nested) != 5) atomic_fetch_add(&h->n[i], 100);
    }
    (void)worker;
}

static int check_pool(void)
{
    int fails = 0;
    enum { N = 1000 };
    for (int t = 1; t <= 4; t++) {
        fd_pool *p = fd_pool_new(t);
        CHECKF(p && fd_pool_threads(p) == t, "pool of %d threads", t);
        if (!p) continue;
        for (int rep = 0; rep < 50; rep++) {
            atomic_int n[N];
            for (int i = 0; i < N; i++) atomic_init(&n[i], 0);
            hits h = {n, p, 0};
            fd_pool_for(p, (size_t)(rep % 2 ? N : rep), body, &h);
            size_t want = (size_t)(rep % 2 ? N : rep);
            int bad = 0;
            for (size_t i = 0; i < N; i++) bad += atomic_load(&n[i]) != (i < want);
            CHECKF(!bad, "threads %d rep %d: %d indices not run exactly once", t, rep, bad);
        }
        fd_pool_free(p);
    }
    return fails;
}

static uint32_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 32);
}

static int check_round(void)
{
    int fails = 0;
    uint64_t s = 7;
    static const uint32_t special[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffffffffu, 0x00000001u,
                                       0x807fffffu, 0x3f7fffffu, 0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0, 0x80000000u};
    for (size_t n = 0; n < 70; n++) {
        float x[70], b[70];
        uint16_t got[70], want[70];
        for (size_t i = 0; i < n; i++) {
            uint32_t u = i % 5 == 0 ? special[rnd(&s) % 13] : rnd(&s);
            uint32_t v = i % 7 == 0 ? special[rnd(&s) % 13] : (rnd(&s) & 0x807fffffu) | 0x3f000000u;
            memcpy(&x[i], &u, 4);
            memcpy(&b[i], &v, 4);
        }
        for (int wb = 0; wb < 2; wb++) {
            fd_round_bf16(x, wb ? b : NULL, n, got);
            fd_round_bf16_scalar(x, wb ? b : NULL, n, want);
            int agree = 1; /* bit for bit, except the payload of NaN + NaN (see below) */
            for (size_t i = 0; i < n; i++)
                agree &= wb && isnan(x[i]) && isnan(b[i]) ? (got[i] & 0x7fffu) > 0x7f80u : got[i] == want[i];
            CHECKF(agree, "fd_round_bf16 n=%zu bias=%d differs from the scalar recipe", n, wb);
            int same = 1;
            /* NaN + NaN: which payload survives is the CPU's choice (x86 takes the first
             * source, aarch64 prefers a signalling NaN) and the compiler may swap the
             * operands of a commutative add, so only the sum's NaN-ness is defined there */
            for (size_t i = 0; i < n; i++) {
                if (wb && isnan(x[i]) && isnan(b[i])) { same &= ((want[i] & 0x7fffu) > 0x7f80u); continue; }
                same &= want[i] == fd_f32_to_bf16(wb ? x[i] + b[i] : x[i]);
            }
            CHECKF(same, "scalar recipe n=%zu differs from fd_f32_to_bf16", n);
        }
        float r1[70], r2[70], a1[70], a2[70];
        memcpy(r1, x, n * 4);
        memcpy(r2, x, n * 4);
        fd_bf16_rescale(r1, n, 0.1020620726f);
        fd_bf16_rescale_scalar(r2, n, 0.1020620726f);
        CHECKF(!memcmp(r1, r2, n * 4), "fd_bf16_rescale n=%zu differs from the scalar loop", n);
        for (size_t i = 0; i < n; i++) a1[i] = a2[i] = b[i];
        fd_relu_fma_acc(a1, x, 0.125f, -1.7f, n);
        fd_relu_fma_acc_scalar(a2, x, 0.125f, -1.7f, n);
        CHECKF(!memcmp(a1, a2, n * 4), "fd_relu_fma_acc n=%zu differs from the scalar loop", n);
        /* the bf16 row kernels of the residual add, MoE combine and RMSNorm
         * against their one-element definitions */
        uint16_t h[70], g[70], y1[70], y2[70];
        for (size_t i = 0; i < n; i++) { h[i] = fd_f32_to_bf16(x[i]); g[i] = fd_f32_to_bf16(b[i]); }
        memcpy(y1, h, n * 2);
        fd_bf16_add(y1, g, n);
        int ok = 1;
        for (size_t i = 0; i < n; i++) { /* NaN + NaN: which payload survives is the add's operand order */
            float p = fd_bf16_to_f32(h[i]), q = fd_bf16_to_f32(g[i]);
            ok &= (p != p && q != q) || y1[i] == fd_f32_to_bf16(p + q);
        }
        CHECKF(ok, "fd_bf16_add n=%zu", n);
        for (size_t i = 0; i < n; i++) a1[i] = a2[i] = b[i];
        fd_bf16_axpy(a1, h, 0.3f, n);
        fd_bf16_axpy_scalar(a2, h, 0.3f, n);
        ok = 1; /* NaN + NaN: the payload is the add's operand order (GCC may swap it; aarch64 NEON does) */
        for (size_t i = 0; i < n; i++) {
            float p = fd_bf16_to_f32(h[i]) * 0.3f;
            ok &= (p != p && b[i] != b[i]) ? (a1[i] != a1[i] && a2[i] != a2[i]) : !memcmp(&a1[i], &a2[i], 4);
        }
        CHECKF(ok, "fd_bf16_axpy n=%zu differs from the scalar loop", n);
        fd_bf16_square(h, n, a1);
        ok = 1;
        for (size_t i = 0; i < n; i++) {
            float u = fd_bf16_to_f32(h[i]), sq = u * u;
            ok &= !memcmp(&a1[i], &sq, 4);
        }
        CHECKF(ok, "fd_bf16_square n=%zu", n);
        fd_bf16_scale_round(h, 0.0371f, n, y1);
        memcpy(y2, y1, n * 2);
        fd_bf16_weight_round(b, n, y2);
        ok = 1;
        for (size_t i = 0; i < n; i++) {
            uint16_t s1 = fd_f32_to_bf16(fd_bf16_to_f32(h[i]) * 0.0371f);
            ok &= y1[i] == s1 && y2[i] == fd_f32_to_bf16(b[i] * fd_bf16_to_f32(s1));
        }
        CHECKF(ok, "fd_bf16_scale_round / fd_bf16_weight_round n=%zu", n);
    }
    return fails;
}

static int check_products(void)
{
    int fails = 0;
    enum { NP = 77, K = 301, N = 173 };
    uint64_t s = 11;
    uint16_t *w = malloc(N * K * 2), *x = malloc(NP * K * 2);
    for (size_t i = 0; i < (size_t)N * K; i++) w[i] = (uint16_t)((rnd(&s) & 0x80ff) | 0x3c00);
    for (size_t i = 0; i < (size_t)NP * K; i++) x[i] = (uint16_t)((rnd(&s) & 0x80ff) | 0x3e00);
    fd_packed_head a, b;
    fd_mm_alloc(&a, N, K);
    fd_mm_alloc(&b, N, K);
    for (size_t n = 0; n < N; n++) fd_mm_set_row(&a, n, w + n * K);
    for (size_t n0 = 0; n0 < N; n0 += FD_TILE) {
        const unsigned char *rows[FD_TILE];
        size_t nr = N - n0 < FD_TILE ? N - n0 : FD_TILE;
        for (size_t r = 0; r < nr; r++) rows[r] = (const unsigned char *)(w + (n0 + r) * K);
        fd_mm_set_tile(&b, n0, rows, nr);
    }
    size_t words = a.tiles * a.kp * FD_TILE;
    CHECK(!memcmp(a.w, b.w, words * 4), "fd_mm_set_tile packs as fd_mm_set_row");
    uint32_t *xp = malloc(NP * a.kp * 4);
    fd_mm_pack_rows(x, NP, K, K, xp);
    size_t os = a.tiles * FD_TILE;
    float *ref = malloc(NP * os * 4), *out = malloc(NP * os * 4);
    fd_err e;
    fd_mm m1;
    if (fd_mm_init(&m1, NULL, 1, FD_ORDER_PAIR, &e)) { CHECK(0, "fd_mm_init"); return fails; }
    fd_mm_run(&m1, xp, NP, &a, ref, os);
    for (int t = 2; t <= 5; t++) {
        fd_mm m;
        if (fd_mm_init(&m, NULL, t, FD_ORDER_PAIR, &e)) { CHECK(0, "fd_mm_init"); continue; }
        memset(out, 0xff, NP * os * 4);
        fd_mm_run(&m, xp, NP, &a, out, os);
        CHECKF(!memcmp(ref, out, NP * os * 4), "fd_mm_run with %d threads differs from 1 thread", t);
        fd_mm_free(&m);
    }
    fd_mm_free(&m1);
    fd_packed_head_free(&a);
    fd_packed_head_free(&b);
    free(w); free(x); free(xp); free(ref); free(out);
    return fails;
}

/* the 16-lane exp / silu against the one-lane definitions, over every
 * range the selects and the scalings treat differently */
static int check_vexp(void)
{
    int fails = 0;
    enum { N = 4099 };
    float *x = malloc(N * 4), *y = malloc(N * 4), *z = malloc(N * 4);
    uint64_t s = 3;
    static const float edge[] = {-104.0f, -103.99f, -87.3f, -88.8f, 88.7f, 100.0f, 100.01f, 0.0f, -0.0f, 1e-30f, -1e-30f};
    for (int rep = 0; rep < 40; rep++) {
        for (size_t i = 0; i < N; i++) {
            uint32_t r = rnd(&s);
            if (i % 11 == 0) x[i] = edge[r % 11];
            else if (i % 13 == 0) { uint32_t u = r; memcpy(&x[i], &u, 4); } /* any bits: NaN, inf, subnormal */
            else x[i] = ((float)(r % 2000001) / 1e4f - 100.0f) * (rep % 4 == 0 ? 1.2f : 1.0f);
        }
        size_t n = N - (size_t)rep;
        fd_torch_expf_n(x, y, n);
        int bad = 0;
        for (size_t i = 0; i < n; i++) {
            float w = fd_torch_expf(x[i]);
            bad += memcmp(&w, &y[i], 4) != 0;
        }
        CHECKF(!bad, "fd_torch_expf_n: %d of %zu lanes differ from fd_torch_expf", bad, n);
        fd_torch_silu_n(x, z, n);
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            float w = fd_torch_silu(x[i]);
            bad += memcmp(&w, &z[i], 4) != 0;
        }
        CHECKF(!bad, "fd_torch_silu_n: %d of %zu lanes differ from fd_torch_silu", bad, n);
        memcpy(z, x, n * 4);
        fd_mkl_expf_n(z, z, n); /* in place, as next_kda.c calls it */
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            float w = fd_mkl_expf(x[i]);
            bad += memcmp(&w, &z[i], 4) != 0;
        }
        CHECKF(!bad, "fd_mkl_expf_n: %d of %zu lanes differ from fd_mkl_expf", bad, n);
    }
    free(x); free(y); free(z);
    return fails;
}

int test_parallel(void) { return check_pool() + check_round() + check_products() + check_vexp(); }
