/* bench/fused_bench.c: would a fused GEMM + KL micro-kernel pay?  One thread,
 * the replay's sub-tile shape (64 positions x one 2,048-column chunk, hidden
 * 256, AVX512_BF16): (a) the bf16 GEMM of both sides alone, in the 4 x 4
 * register blocks of gemm_x86.c; (b) the KL pass's fold (two canonical exps
 * and the five sums per 8 columns, kl_impl.inc) alone over the same columns;
 * (c) the two interleaved: every H k-steps of the GEMM's inner loop, one KL
 * step of 16 columns, so that the out-of-order core can run the KL's
 * non-FMA operations beside the GEMM's vdpbf16ps.  Prints ns per column
 * (position x vocab column, both sides).  Build and run (Zen 4/5, SPR+):
 *   cc -O2 -ffp-contract=off -DHH=16 -Isrc bench/fused_bench.c -o /tmp/fused_bench -lm
 *   taskset -c 1 /tmp/fused_bench 40        (repeats; H is HH at build, 8/16/32)
 * The sums are not checked against the replay's (the logits are synthetic);
 * the point is the time. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels/kl.h"
#pragma GCC diagnostic ignored "-Wpsabi"
#define KL_ATTR __attribute__((target("avx512f,avx512dq,avx512bf16,avx512bw,avx512vl")))
#include "kernels/kl_avx512.h" /* the exp's AVX-512 hooks, as kl.c builds them */
#define KL_ONE_PASS 1
#define KL_NAME(x) fb_##x
#include "kernels/kl_impl.inc"

#ifndef HH
#define HH 16 /* k-steps of the GEMM per KL step */
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* the KL work of one sub-tile, taken 16 columns a step */
typedef struct {
    const float *r, *c;
    size_t n, npos, pos, col;
    const double *mr, *mc;
    v8d *acc; /* [npos][5] */
} stream;

KL_ATTR static inline __attribute__((always_inline)) void kl_step(stream *ks)
{
    if (ks->pos >= ks->npos) return;
    size_t i = ks->col, p = ks->pos;
    const float *r = ks->r + p * ks->n, *c = ks->c + p * ks->n;
    double mr = ks->mr[p], m = ks->mc[p];
    v8d *a5 = ks->acc + p * 5;
    v8d sr = a5[0], e = a5[1], s = a5[2], t = a5[3], u = a5[4];
#pragma GCC unroll 2
    for (int g = 0; g < 2; g++) {
        v8d a = (v8d)_mm512_cvtps_pd(_mm256_loadu_ps(r + i + 8 * g)) - mr;
        v8d b = (v8d)_mm512_cvtps_pd(_mm256_loadu_ps(c + i + 8 * g)) - m;
        v8d er = fb_vexp(a), ec = fb_vexp(b), d = a - b;
        sr = sr + er;
        e = e + er * a;
        s = s + ec;
        t = t + er * d;
        u = u - ec * d;
    }
    a5[0] = sr, a5[1] = e, a5[2] = s, a5[3] = t, a5[4] = u;
    i += 16;
    if (i + 16 > ks->n) i = 0, ks->pos++;
    ks->col = i;
}

#define BT __attribute__((target("avx512f,avx512bf16,avx512bw,avx512vl,avx512dq")))
BT static inline __attribute__((always_inline)) void block(const uint32_t *a, const uint32_t *b, size_t kp, float *out,
                                                          size_t ostride, stream *ks)
{
    __m512 acc[4][4];
    const size_t ts = kp * 16;
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) acc[i][j] = _mm512_setzero_ps();
    for (size_t k = 0; k < kp; k++) {
        __m512bh bv[4];
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) bv[j] = (__m512bh)_mm512_loadu_si512((const void *)(b + (size_t)j * ts + k * 16));
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) {
            __m512bh x = (__m512bh)_mm512_set1_epi32((int)a[(size_t)i * kp + k]);
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], x, bv[j]);
        }
        if (ks && k % HH == HH - 1) kl_step(ks);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++)
#pragma GCC unroll 4
        for (int j = 0; j < 4; j++) _mm512_storeu_ps(out + (size_t)i * ostride + (size_t)j * 16, acc[i][j]);
}

BT __attribute__((noinline)) static void gemm(const uint32_t *hid, size_t np, size_t kp, const uint32_t *w, size_t ntiles,
                                              float *out, stream *ks)
{
    for (size_t t = 0; t < ntiles; t += 4) /* tiles outer, as gemm_x86.c */
        for (size_t p = 0; p < np; p += 4) block(hid + p * kp, w + t * kp * 16, kp, out + p * ntiles * 16 + t * 16, ntiles * 16, ks);
}

BT __attribute__((noinline)) static void kl_all(stream *ks)
{
    while (ks->pos < ks->npos) kl_step(ks);
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 40;
    size_t np = 64, kp = 128, nt = 128, n = 2048;
    uint32_t *hid = aligned_alloc(64, np * kp * 4), *w = aligned_alloc(64, nt * kp * 16 * 4);
    for (size_t i = 0; i < np * kp; i++) hid[i] = 0x3f803f80u ^ (uint32_t)(i * 2654435761u & 0x007f007fu);
    for (size_t i = 0; i < nt * kp * 16; i++) w[i] = 0x3c003c00u ^ (uint32_t)(i * 2246822519u & 0x007f007fu);
    float *o = aligned_alloc(64, np * n * 4), *r = aligned_alloc(64, np * n * 4), *c = aligned_alloc(64, np * n * 4);
    unsigned long long s = 12345;
    for (size_t i = 0; i < np * n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        r[i] = (float)((double)(s >> 11) * 0x1p-53 * 20.0 - 10.0);
        c[i] = r[i] + 0.01f;
    }
    double mr[64], mc[64];
    for (int i = 0; i < 64; i++) mr[i] = 10, mc[i] = 10.01;
    v8d *acc = aligned_alloc(64, 64 * 5 * sizeof(v8d));
    memset(acc, 0, 64 * 5 * sizeof(v8d));
    double t0 = now();
    for (int k = 0; k < reps; k++) gemm(hid, np, kp, w, nt, o, NULL), gemm(hid, np, kp, w, nt, o, NULL);
    double tg = now() - t0;
    t0 = now();
    for (int k = 0; k < reps; k++) {
        stream ks = {r, c, n, np, 0, 0, mr, mc, acc};
        kl_all(&ks);
    }
    double tk = now() - t0;
    t0 = now();
    for (int k = 0; k < reps; k++) { /* both sides' GEMMs carry the KL steps; what is left runs after */
        stream ks = {r, c, n, np, 0, 0, mr, mc, acc};
        gemm(hid, np, kp, w, nt, o, &ks);
        gemm(hid, np, kp, w, nt, o, &ks);
        kl_all(&ks);
    }
    double tf = now() - t0, cols = (double)reps * (double)(np * n);
    printf("H=%d: ns per column: GEMM of both sides %.3f, KL %.3f, sum %.3f, fused %.3f\n", HH, tg / cols * 1e9,
           tk / cols * 1e9, (tg + tk) / cols * 1e9, tf / cols * 1e9);
    return 0;
}
