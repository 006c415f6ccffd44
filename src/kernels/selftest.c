/* Empirical proof that every GEMM path and every KL path computes the
 * canonical bits: random bf16 operands (zeros, subnormals, tiny, ordinary
 * and large exponents, both signs) through each supported path, compared
 * bit for bit with the scalar emulation. */
#include "selftest.h"
#include "gemm.h"
#include "gemm_f32.h"
#include "kl.h"
#include "../util/buf.h"
#include "../util/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* wide: 0 ordinary, 1 with large exponents too, 2 tiny (a fifth subnormal,
 * the rest just above): against ordinary operands the products and the
 * chains then sit at the subnormal boundary, where DAZ and FTZ decide bits */
static uint16_t rand_bf16(uint64_t *s, int wide)
{
    uint64_t r = fd_rng_next(s);
    unsigned sign = (unsigned)(r >> 63) << 15, mant = (unsigned)(r >> 8) & 0x7f, sel = (unsigned)r & 0xff, exp;
    if (wide == 2) exp = sel < 52 ? 0 : 1 + (unsigned)((r >> 16) % 16);
    else if (sel < 16) exp = 0;                              /* zero / subnormal */
    else if (sel < 40) exp = 1 + (unsigned)((r >> 16) % 12);  /* just above subnormal */
    else if (wide && sel < 56) exp = 180 + (unsigned)((r >> 16) % 40);
    else exp = 110 + (unsigned)((r >> 16) % 30);             /* ordinary magnitudes */
    return (uint16_t)(sign | exp << 7 | mant);
}

static float f32_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The extremes of fp32 for the KL paths: huge values of both signs, FLT_MAX
 * ties, +-0, subnormals, mixes of huge and tiny, a large common offset, and
 * maxima jumping by orders of magnitude between chunks. */
static void extreme_rows(int round, float *r, float *c, size_t vocab, uint64_t *s)
{
    const float fmax = f32_bits(0x7f7fffffu), sub = f32_bits(1u);
    static const float pool[] = {1e38f, -1e38f, 3.0e38f, 1e-38f, -1e-38f, 0.0f, -0.0f, 1.5f, -2.25f, 7e-45f};
    for (size_t v = 0; v < vocab; v++) {
        double u = fd_rng_unit(s), w = fd_rng_unit(s);
        uint64_t k = fd_rng_next(s);
        switch (round % 8) {
        case 0: r[v] = (float)(u * 3.0e38); c[v] = (float)(r[v] + w * 1e37); break;
        case 1: r[v] = k % 97 ? -fmax : fmax; c[v] = (k >> 8) % 211 ? -fmax : fmax; break;
        case 2: r[v] = (float)-1e38 * (1.0f + (float)(k % 4) * 0x1p-23f); c[v] = (float)-1e38 * (1.0f + (float)((k >> 4) % 4) * 0x1p-23f); break;
        case 3: r[v] = pool[k % 10] * (k & 1024 ? 0.75f : 1.0f); c[v] = pool[(k >> 12) % 10] * (k & 2048 ? 0.5f : 1.0f); break;
        case 4: r[v] = (float)(k % (1u << 20)) * sub; c[v] = r[v] + (float)((k >> 24) % 3) * sub; break;
        case 5: r[v] = 1.6e7f + (float)((int)(k % 17) - 8); c[v] = r[v] + (float)((int)((k >> 8) % 5) - 2); break;
        case 6: { /* maxima rising by 1e10 per chunk, the candidate's falling */
            int ch = (int)(v * 4 / vocab);
            r[v] = (float)(u * 3.0 * __builtin_pow(10.0, 10.0 * ch));
            c[v] = (float)(w * 3.0 * __builtin_pow(10.0, 10.0 * (3 - ch)));
            break;
        }
        default: r[v] = (float)(u * 3.3e38); c[v] = r[v]; break; /* identical huge rows */
        }
    }
    if (round >= 90) { /* the window, the argmax in the last chunk */
        size_t j = vocab - 5, t = 0;
        for (size_t v = 0; v < vocab; v++) { r[v] = 0x1p126f; c[v] = 0x1p125f; }
        r[j] = 0x1p127f;
        c[j] = 0x1p126f;
        for (size_t v = round == 90 ? 0 : 1; t < 269; v += 17)
            if (v % vocab != j && c[v % vocab] != 0x1p126f) { c[v % vocab] = 0x1p126f; t++; }
    }
}

/* The F32-weight product (gemm_f32.h, NUMERICS §5b) on every path that has
 * one, against the scalar definition fd_dot_f32seq: bf16-valued activations,
 * fp32 weights over the whole exponent range with zeros and subnormals, a
 * ragged row count and K; the SIMD kernels under FTZ+DAZ as the engine runs
 * them.  Returns the number of failing paths. */
static int f32_selftest(uint64_t seed, FILE *out)
{
    enum { NP = 11, K = 203, TILES = 5 };
    uint64_t s = seed;
    float *a = fd_xmalloc(NP * K * 4), *w = fd_xmalloc(TILES * K * FD_TILE * 4);
    float *ref = fd_xmalloc(NP * TILES * FD_TILE * 4), *got = fd_xmalloc(NP * TILES * FD_TILE * 4);
    for (size_t i = 0; i < NP * K; i++) a[i] = f32_bits(((uint32_t)fd_rng_next(&s) & 0xbfff0000u) | 0x20000000u);
    for (size_t i = 0; i < TILES * K * FD_TILE; i++) {
        uint64_t k = fd_rng_next(&s);
        uint32_t u = (uint32_t)k;
        if ((k >> 40) % 16 == 0) u &= 0x807fffffu;    /* subnormal (or zero) */
        else if ((k >> 44) % 16 == 0) u &= 0x80000000u; /* signed zero */
        if (i % FD_TILE < 4) u &= 0x80ffffffu;           /* four columns a tile stay near the bottom: */
        w[i] = f32_bits(u & 0xbfffffffu);                /* their products and sums are subnormal, so */
                                                          /* FTZ/DAZ decide them; all finite */
    }
    int fails = 0;
    fprintf(out, "kernel-selftest: F32-weight products, paths:");
    for (int p = 0; p < FD_PATH_COUNT; p++) {
        fd_gemm_f32_fn f = fd_path_supported((fd_path)p) ? fd_gemm_f32_for((fd_path)p) : NULL;
        if (!f) continue;
        unsigned csr = fd_ftz_daz_enter();
        f(a, NP, K, w, TILES, p == FD_PATH_SCALAR ? ref : got, TILES * FD_TILE);
        fd_ftz_daz_leave(csr);
        if (p != FD_PATH_SCALAR && memcmp(ref, got, NP * TILES * FD_TILE * 4)) fails++;
        fprintf(out, " %s", fd_path_name((fd_path)p));
    }
    for (size_t i = 0; i < NP; i++)   /* the scalar kernel is the definition, output by output */
        for (size_t j = 0; j < TILES * FD_TILE; j++) {
            float d = fd_dot_f32seq(a + i * K, w + (j / FD_TILE) * K * FD_TILE + j % FD_TILE, K, FD_TILE);
            if (memcmp(&d, &ref[i * TILES * FD_TILE + j], 4)) { fails++; i = NP; break; }
        }
    fprintf(out, "; %s\n", fails ? "MISMATCH" : "0 mismatching outputs");
    free(a); free(w); free(ref); free(got);
    return fails;
}

/* The bf16 GEMM paths against the scalar (canonical) emulation, and every
 * tile path against the tile emulation, for at least `products` products;
 * s: the generator state.  Returns the number of failures. */
static int gemm_selftest(uint64_t products, uint64_t *s, FILE *out)
{
    /* not multiples of the 4x4 / 8x3 blocks: every edge kernel too (the
     * tile count cycles through 62, 61, 60: 2, 1 and 0 tiles past the 8x3s) */
    const size_t np = 63, kp = 128, tiles = 62;
    uint32_t *hid = fd_xmalloc(np * kp * 4), *head = fd_xmalloc(tiles * kp * FD_TILE * 4);
    float *ref = fd_xmalloc(np * tiles * FD_TILE * 4), *got = fd_xmalloc(np * tiles * FD_TILE * 4);
    uint64_t done = 0, mismatches = 0, rounds = 0, tile_mismatches = 0;
    int tile_failed[FD_PATH_COUNT] = {0};
    int failures = 0;
    fd_gemm_fn scalar = fd_gemm_for(FD_PATH_SCALAR);
    while (done < products) {
        size_t nt = tiles - (size_t)(rounds++ % 3);
        /* every 4th hidden row tiny, every 4th head tile (another) tiny */
        for (size_t i = 0; i < np * kp; i++) {
            int w = i / kp % 4 == 3 ? 2 : 0;
            hid[i] = rand_bf16(s, w) | (uint32_t)rand_bf16(s, w) << 16;
        }
        for (size_t i = 0; i < tiles * kp * FD_TILE; i++) {
            int w = i / (kp * FD_TILE) % 4 == 2 ? 2 : 1;
            head[i] = rand_bf16(s, w) | (uint32_t)rand_bf16(s, w) << 16;
        }
        scalar(hid, np, kp, head, nt, ref, nt * FD_TILE);
        for (int p = FD_PATH_AVX2; p < FD_PATH_COUNT; p++) {
            if (!fd_path_supported((fd_path)p)) continue;
            unsigned csr = fd_ftz_daz_enter();
            fd_gemm_for((fd_path)p)(hid, np, kp, head, nt, got, nt * FD_TILE);
            fd_ftz_daz_leave(csr);
            for (size_t i = 0; i < np * nt * FD_TILE; i++)
                if (memcmp(&ref[i], &got[i], 4)) mismatches++;
            if (mismatches && !failures) {
                fprintf(out, "kernel-selftest: GEMM path %s differs from the canonical emulation\n", fd_path_name((fd_path)p));
                failures++;
            }
        }
        /* the tile order: every tile path against fd_dot_tile, with a kp
         * that is a multiple of the 16-pair chunk and one that is not,
         * and 62, 61 or 63 rows (the AVX2 kernel's 3-row blocks: 1, 2 or 0
         * padding rows in its last block) */
        size_t kt = rounds % 2 ? kp : 77, mt = np - (size_t)(rounds % 3);
        fd_gemm_tile_for(FD_PATH_SCALAR)(hid, mt, kt, head, nt, ref, nt * FD_TILE);
        for (int p = FD_PATH_AVX2; p < FD_PATH_COUNT; p++) {
            if (!fd_tile_path_supported((fd_path)p)) continue;
            fd_gemm_tile_for((fd_path)p)(hid, mt, kt, head, nt, got, nt * FD_TILE);
            uint64_t before = tile_mismatches;
            for (size_t i = 0; i < mt * nt * FD_TILE; i++)
                if (memcmp(&ref[i], &got[i], 4)) tile_mismatches++;
            if (tile_mismatches > before && !tile_failed[p]) {
                fprintf(out, "kernel-selftest: tile-order GEMM path %s differs from the tile emulation\n", fd_path_name((fd_path)p));
                tile_failed[p] = 1;
                failures++;
            }
        }
        done += (uint64_t)np * nt * FD_TILE * kp * 2;
    }
    fprintf(out, "kernel-selftest: tile order, paths:");
    for (int p = 0; p < FD_PATH_COUNT; p++)
        if (fd_tile_path_supported((fd_path)p)) fprintf(out, " %s", fd_path_name((fd_path)p));
    fprintf(out, "; %llu mismatching outputs\n", (unsigned long long)tile_mismatches);
    fprintf(out, "kernel-selftest: %llu bf16 products per path, %llu mismatching logits\n",
            (unsigned long long)done, (unsigned long long)mismatches);
    free(hid); free(head); free(ref); free(got);
    return failures;
}

/* One product (m rows x nt tiles x kp pairs) in one order: the scalar
 * definition into ref, then every supported SIMD path into got, compared
 * byte for byte; a mismatch prints "differs on a WHAT (m x N x K)".
 * Returns the number of paths that differ. */
static int shape_check(const uint32_t *hid, const uint32_t *head, size_t m, size_t kp, size_t nt, int tile, float *ref,
                       float *got, const char *what, FILE *out)
{
    int failures = 0;
    (tile ? fd_gemm_tile_for(FD_PATH_SCALAR) : fd_gemm_for(FD_PATH_SCALAR))(hid, m, kp, head, nt, ref, nt * FD_TILE);
    for (int p = FD_PATH_AVX2; p < FD_PATH_COUNT; p++) {
        if (tile ? !fd_tile_path_supported((fd_path)p) : !fd_path_supported((fd_path)p)) continue;
        memset(got, 0xff, m * nt * FD_TILE * 4); /* NaN: an output a path leaves unwritten differs */
        unsigned csr = fd_ftz_daz_enter();
        (tile ? fd_gemm_tile_for((fd_path)p) : fd_gemm_for((fd_path)p))(hid, m, kp, head, nt, got, nt * FD_TILE);
        fd_ftz_daz_leave(csr);
        if (memcmp(ref, got, m * nt * FD_TILE * 4)) {
            fprintf(out, "kernel-selftest: %s-order GEMM path %s differs on a %s (%zu x %zu x %zu)\n", tile ? "tile" : "pair",
                    fd_path_name((fd_path)p), what, m, nt * FD_TILE, 2 * kp);
            failures++;
        }
    }
    return failures;
}

/* Random operands for the shape checks: np rows of kp pairs (A, ordinary
 * bf16 values), tiles tiles of kp pairs (B, wider exponents) and two output
 * buffers of n floats; the caller frees the four. */
static void shape_operands(uint64_t *s, size_t np, size_t kp, size_t tiles, size_t n, uint32_t **hid, uint32_t **head,
                           float **ref, float **got)
{
    *hid = fd_xmalloc(np * kp * 4 + 4);
    *head = fd_xmalloc(tiles * kp * FD_TILE * 4 + 4);
    *ref = fd_xmalloc(n * 4);
    *got = fd_xmalloc(n * 4);
    for (size_t i = 0; i < np * kp; i++) (*hid)[i] = rand_bf16(s, 0) | (uint32_t)rand_bf16(s, 0) << 16;
    for (size_t i = 0; i < tiles * kp * FD_TILE; i++) (*head)[i] = rand_bf16(s, 1) | (uint32_t)rand_bf16(s, 1) << 16;
}

/* Narrow products (a capture's kv_a_proj N = 80, idx.wk N = 32, ...): 1, 2,
 * 3, 5, 6 and 7 tiles (N = 16, 32, 48, 80, 96, 112) by 1 to 33 rows, odd
 * counts included, both orders, every path against the definition: each
 * narrow / edge register block of the SIMD kernels (AVX512_BF16: 16 x 1,
 * 8 x 2, 8 x 3 and the 8, 4, 2, 1-row tails) on every tile count left over.
 * Returns the number of failures. */
static int narrow_selftest(uint64_t *s, FILE *out)
{
    const size_t np = 33, kp = 37, tiles = 7, n = np * tiles * FD_TILE;
    static const size_t ntl[] = {1, 2, 3, 5, 6, 7};
    static const size_t rows[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33};
    uint32_t *hid, *head;
    float *ref, *got;
    shape_operands(s, np, kp, tiles, n, &hid, &head, &ref, &got);
    int failures = 0;
    size_t shapes = 0;
    for (size_t t = 0; t < sizeof ntl / sizeof *ntl; t++)
        for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
            for (int tile = 0; tile < 2; tile++) {
                shapes++;
                failures += shape_check(hid, head, rows[r], kp, ntl[t], tile, ref, got, "narrow product", out);
            }
    fprintf(out, "kernel-selftest: narrow N (%zu shapes: 1 to 33 rows x N 16, 32, 48, 80, 96, 112 x %zu, both orders): %s\n",
            shapes / 2, 2 * kp, failures ? "MISMATCH" : "0 mismatching outputs");
    free(hid); free(head); free(ref); free(got);
    return failures;
}

/* A long K in few rows and two tiles (a capture's P.V: 32 queries x 1,024+
 * key pairs x dv 32), both orders, every path against the definition: the
 * SIMD kernels split A in row groups whose planes stay under 64 KiB (pair
 * order: 120 KiB), so this K makes several groups of 6 (pair, AVX2) or up to
 * 7 (tile, AVX2: blocks of 3 and 2 rows) rows with a ragged last one; then
 * 1, 2, 4, 5 and 7 rows (the tile AVX2 kernel's 1-row group, its 2 + 2 and
 * 3 + 2 ends); then 7 tiles by 32 and 17 rows (AVX-512F's 8 x 3 and 8 x 1
 * blocks over the whole K, and its edge row).  Returns the number of
 * failures. */
static int longk_selftest(uint64_t *s, FILE *out)
{
    const size_t np = 32, kp = 1029, tiles = 7, n = np * tiles * FD_TILE;
    static const size_t rows[] = {32, 1, 2, 4, 5, 7}, rows7[] = {32, 17};
    uint32_t *hid, *head;
    float *ref, *got;
    shape_operands(s, np, kp, tiles, n, &hid, &head, &ref, &got);
    int failures = 0;
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
        for (int tile = 0; tile < 2; tile++) failures += shape_check(hid, head, rows[r], kp, 2, tile, ref, got, "long K", out);
    for (size_t r = 0; r < sizeof rows7 / sizeof *rows7; r++)
        failures += shape_check(hid, head, rows7[r], kp, tiles, 0, ref, got, "long K", out);
    fprintf(out, "kernel-selftest: long K (32, 1, 2, 4, 5 and 7 x 32 and 32, 17 x 112, x %zu, both orders): %s\n", 2 * kp,
            failures ? "MISMATCH" : "0 mismatching outputs");
    free(hid); free(head); free(ref); free(got);
    return failures;
}

/* The FMA paths split K in passes, each accumulator (the tile order's C)
 * stored after a pass and loaded by the next.  Pair order (gemm_x86.c,
 * pass_pairs): a replay chunk's 128 tiles at 260 pairs run passes of 64,
 * 64, 64, 64 and 4 pairs, and 127 tiles the same through AVX-512F's 8 x 3
 * blocks then its 8 x 1; 137 rows cross both kernels' row groups (AVX-512F:
 * 120 + 16 rows and an edge row; AVX2: 120, then 6 + 6 + 4, and an edge
 * row), 122 rows end AVX2's first group on a 4-row block (6-row blocks to
 * 114, then 4 + 4, the second in the next group), 17 rows: two 8-row blocks
 * and an edge row.  Tile order (gemm_tile_x86.c: passes of 128 pairs beyond
 * 384): 16 tiles at 400 pairs, 128 + 128 + 128 + 16, by 137 rows (AVX-512F:
 * groups of 64 rows and a 4-row edge; AVX2: groups of 46) and 17.  Then a K
 * of 0 in both orders.  Returns the number of failures. */
static int passes_selftest(uint64_t *s, FILE *out)
{
    const size_t np = 137, kp = 400, tiles = 128, n = np * tiles * FD_TILE, kpp = 260;
    static const size_t shapes[][2] = {{137, 127}, {122, 128}, {17, 128}}, trows[] = {137, 17};
    uint32_t *hid, *head;
    float *ref, *got;
    shape_operands(s, np, kp, tiles, n, &hid, &head, &ref, &got); /* kp >= kpp: rows and tiles fit both */
    int failures = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++)
        failures += shape_check(hid, head, shapes[i][0], kpp, shapes[i][1], 0, ref, got, "K in passes", out);
    for (size_t r = 0; r < sizeof trows / sizeof *trows; r++)
        failures += shape_check(hid, head, trows[r], kp, 16, 1, ref, got, "K in passes", out);
    for (int tile = 0; tile < 2; tile++) /* K = 0: every output +0, still written */
        failures += shape_check(hid, head, 17, 0, 3, tile, ref, got, "K of 0", out);
    fprintf(out, "kernel-selftest: K in passes (pair order: 137 x 2,032, 122 and 17 x 2,048 x %zu; tile order: 137 and 17 "
            "x 256 x %zu; 17 x 48 x 0, both orders): %s\n", 2 * kpp, 2 * kp, failures ? "MISMATCH" : "0 mismatching outputs");
    free(hid); free(head); free(ref); free(got);
    return failures;
}

/* 1 when both pairs of running states hold the same bits in every field. */
static int kl_states_same(const fd_ref_state *a, const fd_ref_state *b, const fd_pair_state *c, const fd_pair_state *d)
{
    return !memcmp(&a->m, &b->m, 8) && !memcmp(&a->s, &b->s, 8) && !memcmp(&a->e, &b->e, 8) &&
           !memcmp(&a->best, &b->best, 4) && a->argmax == b->argmax && a->started == b->started &&
           !memcmp(&a->chunk_best, &b->chunk_best, 4) && !memcmp(&c->chunk_best, &d->chunk_best, 4) &&
           !memcmp(&c->m, &d->m, 8) && !memcmp(&c->s, &d->s, 8) && !memcmp(&c->t, &d->t, 8) &&
           !memcmp(&c->u, &d->u, 8) && !memcmp(&c->best, &d->best, 4) && c->argmax == d->argmax &&
           c->started == d->started;
}

/* The KL / JS paths against the generic one over 92 rounds of logits (s:
 * the generator state).  Returns the number of failures. */
static int kl_selftest(uint64_t *s, FILE *out)
{
    int failures = 0;
    /* KL paths: random logits, several chunks with rising and falling maxima */
    size_t vocab = 3 * FD_KL_CHUNK + 77;
    float *r = fd_xmalloc(vocab * 4), *c = fd_xmalloc(vocab * 4);
    fd_ref_chunk *ch = fd_xmalloc(sizeof *ch), *ch2 = fd_xmalloc(sizeof *ch2);
    /* rounds 64..71 add far-off logits (exp clamped to +0, subnormal exps);
     * 72 and 73 compare a capture with itself: KL must be exactly +0.0;
     * 74..89 are the extremes of fp32 (extreme_row), 90..91 the issue's
     * window: a one-hot 2^127 reference against 270 ties at 2^126, whose
     * KL is exactly the canonical log(270) */
    for (int round = 0; round < 92; round++) {
        if (round >= 74) extreme_rows(round, r, c, vocab, s);
        else for (size_t v = 0; v < vocab; v++) {
            r[v] = (float)(fd_rng_unit(s) * (round % 8 + 1) * 4 + (double)v / (double)vocab * (round % 3) * 10);
            c[v] = r[v] + (float)(fd_rng_unit(s) * 0.1 * (round % 5));
            if (round >= 64 && fd_rng_next(s) % 16 == 0) {
                double far = fd_rng_next(s) % 2 ? -700.0 - 60.0 * fabs(fd_rng_unit(s)) : -1e30 * fabs(fd_rng_unit(s));
                r[v] = (float)far;
                c[v] = (float)(far + fd_rng_unit(s) * 20.0);
            }
            if (round >= 72) c[v] = r[v];
        }
        fd_kl_result res[FD_PATH_COUNT];
        double js[FD_PATH_COUNT];
        /* each entry's padding poisoned differently: only the fields may be compared */
        for (int p = 0; p < FD_PATH_COUNT; p++) memset(&res[p], 0xA0 + p, sizeof res[p]);
        int have[FD_PATH_COUNT] = {0};
        for (int p = 0; p < FD_PATH_COUNT; p++) { /* every path */
            if (!fd_path_supported((fd_path)p)) continue;
            const fd_kl_ops *ops = fd_kl_ops_for((fd_path)p);
            if (!ops) continue;
            fd_ref_state rs = {0};
            fd_pair_state ps = {0};
            fd_ref_state rs2 = {0};
            fd_pair_state ps2 = {0};
            for (size_t v0 = 0; v0 < vocab; v0 += FD_KL_CHUNK) {
                size_t n = vocab - v0 < FD_KL_CHUNK ? vocab - v0 : FD_KL_CHUNK;
                ops->ref_chunk(&rs, ch, r + v0, n, v0);
                ops->pair_chunk(&ps, &rs, ch, r + v0, c + v0, n, v0);
                /* the one-pass ref_pair_chunk: the same states and, when kept, exps */
                int keep = (int)((size_t)round + v0 / FD_KL_CHUNK) % 2;
                if (ops->ref_pair_chunk(&rs2, ch2, &ps2, r + v0, c + v0, n, v0, keep) ||
                    !kl_states_same(&rs, &rs2, &ps, &ps2) || (keep && memcmp(ch->er, ch2->er, n * sizeof *ch->er))) {
                    fprintf(out, "kernel-selftest: KL path %s: ref_pair_chunk differs from ref_chunk + pair_chunk "
                                 "(round %d, columns %zu.., keep %d)\n", fd_path_name((fd_path)p), round, v0, keep);
                    failures++;
                }
            }
            fd_kl_finish(&rs, &ps, &res[p]);
            js[p] = 0;
            for (size_t v0 = 0; v0 < vocab; v0 += FD_KL_CHUNK) {
                size_t n = vocab - v0 < FD_KL_CHUNK ? vocab - v0 : FD_KL_CHUNK;
                js[p] += ops->js_chunk(&rs, &ps, r + v0, c + v0, n);
            }
            have[p] = 1;
            if (memcmp(&js[p], &js[0], sizeof js[p])) {
                fprintf(out, "kernel-selftest: JS path %s differs from the generic path (round %d)\n", fd_path_name((fd_path)p), round);
                failures++;
            }
            double want = fd_log_canonical(270.0);
            if (round >= 90 && (memcmp(&res[p].kl, &want, 8) || !(res[p].rkl > 1e37))) {
                fprintf(out, "kernel-selftest: KL path %s: huge logits cancel (KL %.17g, want log 270 = %.17g)\n",
                        fd_path_name((fd_path)p), res[p].kl, want);
                failures++;
            }
            if (round >= 74 && !(res[p].kl >= -1e-9 && res[p].rkl >= -1e-9 && js[p] >= -1e-9 && js[p] <= 0.6931471805599453 + 1e-12)) {
                fprintf(out, "kernel-selftest: KL path %s: round %d gives KL %g, reverse %g, JS %g\n", fd_path_name((fd_path)p),
                        round, res[p].kl, res[p].rkl, js[p]);
                failures++;
            }
            /* field by field: the struct's padding bytes are not part of the result
             * (comparing them made AVX2-only hosts report spurious differences) */
            if (!fd_kl_result_same(&res[p], &res[0])) {
                fprintf(out, "kernel-selftest: KL path %s differs from the generic path (round %d)\n", fd_path_name((fd_path)p), round);
                failures++;
            }
            const double pz = 0.0;
            if ((round == 72 || round == 73 || (round >= 74 && round < 90 && round % 8 == 7)) && (memcmp(&res[p].kl, &pz, 8) || memcmp(&res[p].rkl, &pz, 8) || !res[p].top1_match)) {
                fprintf(out, "kernel-selftest: KL path %s: identical logits do not give exactly +0.0\n", fd_path_name((fd_path)p));
                failures++;
            }
        }
        (void)have;
    }
    /* a non-finite logit (NaN, +inf, -inf; in a scan's 4-vector body, its
     * one-vector loop and its tail): 1 for the reference's row (nothing
     * folded), 2 for the candidate's */
    static const float bad[3] = {NAN, INFINITY, -INFINITY};
    static const size_t at[3] = {37, 70, 98};
    for (size_t v = 0; v < 100; v++) r[v] = c[v] = (float)v;
    for (int p = 0; p < FD_PATH_COUNT; p++) {
        if (!fd_path_supported((fd_path)p)) continue;
        const fd_kl_ops *ops = fd_kl_ops_for((fd_path)p);
        if (!ops) continue;
        for (int k = 0; k < 9; k++) {
            int got[2];
            size_t w = at[k % 3];
            for (int side = 0; side < 2; side++) {
                fd_ref_state rs = {0};
                fd_pair_state ps = {0};
                (side ? c : r)[w] = bad[k / 3];
                got[side] = ops->ref_pair_chunk(&rs, ch, &ps, r, c, 100, 0, 1);
                (side ? c : r)[w] = (float)w;
                if (got[side] == 1 && (rs.started || ps.started)) got[side] = -1;
                if (got[side] == 2 && (!rs.started || ps.started)) got[side] = -1;
            }
            if (got[0] != 1 || got[1] != 2) {
                fprintf(out, "kernel-selftest: KL path %s: ref_pair_chunk on a %g at column %zu gives %d (reference) / "
                             "%d (candidate), want 1 / 2\n", fd_path_name((fd_path)p), (double)bad[k / 3], w, got[0], got[1]);
                failures++;
            }
        }
    }
    free(r); free(c); free(ch); free(ch2);

    return failures;
}

/* The canonical exp / log against libm, and the exactness the reduction
 * relies on (s: the generator state).  Returns the number of failures. */
static int explog_selftest(uint64_t *s, FILE *out)
{
    int failures = 0;
    /* exp/log accuracy against libm (a sanity bound, not the definition) */
    double worst_exp = 0, worst_log = 0;
    for (int i = 0; i < 200000; i++) {
        double x = i % 2 ? -fabs(fd_rng_unit(s)) * 745.0 : -fd_rng_unit(s) * fd_rng_unit(s) * 740.0;
        if (x > 0) x = -x;
        double a = fd_exp_canonical(x), b = exp(x);
        if (b > 1e-300) { double rel = fabs(a - b) / b; if (rel > worst_exp) worst_exp = rel; }
        double y = 1.0 + fabs(fd_rng_unit(s)) * 1e6;
        double la = fd_log_canonical(y), lb = log(y);
        double rl = fabs(la - lb) / lb;
        if (rl > worst_log) worst_log = rl;
    }
    fprintf(out, "kernel-selftest: canonical exp max rel err %.3g, log %.3g (vs libm)\n", worst_exp, worst_log);
    if (worst_exp > 5e-16 || worst_log > 1e-15) { fprintf(out, "kernel-selftest: exp/log accuracy out of bounds\n"); failures++; }
    /* exactness the reduction relies on: exp(0) = 1 (so S >= 1 and a self-compare
     * is +0.0), +0 below -746, and exp never increasing with x near the table's
     * interval edges by more than one ulp */
    static const double zero_in[] = {-746.0000001, -747.0, -1e5, -1e30, -3.4e38 * 2.0};
    const double one = 1.0, pz = 0.0;
    double e0 = fd_exp_canonical(0.0), em0 = fd_exp_canonical(-0.0);
    int exact_bad = memcmp(&e0, &one, 8) != 0 || memcmp(&em0, &one, 8) != 0;
    for (size_t i = 0; i < sizeof zero_in / sizeof *zero_in; i++) {
        double z = fd_exp_canonical(zero_in[i]);
        exact_bad |= memcmp(&z, &pz, 8) != 0;
    }
    for (int i = 0; i < 20000; i++) {
        double x = -((double)(fd_rng_next(s) % 137700) + 0.5) * (0.6931471805599453 / 128.0), prev = fd_exp_canonical(x);
        for (int j = 0; j < 8; j++) {
            x = nextafter(x, -1e9);
            double v = fd_exp_canonical(x);
            exact_bad |= v > prev && v > nextafter(prev, 1e9);
            prev = v;
        }
    }
    if (exact_bad) { fprintf(out, "kernel-selftest: canonical exp exactness (exp(0), underflow, near-monotonicity) broken\n"); failures++; }
    return failures;
}

/* first_above of every path against the per-column loop: rows of 0..99
 * columns drawn from a small pool (ties with thr, +0/-0, NaN, infinities,
 * subnormals, the largest finite values), thresholds from the same pool. */
static int above_selftest(uint64_t *s, FILE *out)
{
    static const float pool[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.5f, 1e-45f, -1e-45f, 3.4028235e38f, -3.4028235e38f,
                                 __builtin_inff(), -__builtin_inff(), __builtin_nanf("")};
    const size_t np = sizeof pool / sizeof *pool;
    float x[100];
    int failures = 0;
    for (int round = 0; round < 4000; round++) {
        size_t n = (size_t)(fd_rng_next(s) % 100), sparse = fd_rng_next(s) % 4;
        float thr = pool[fd_rng_next(s) % np];
        for (size_t i = 0; i < n; i++) /* mostly values at or below thr, so the hits are sparse */
            x[i] = sparse && fd_rng_next(s) % (16 * sparse) ? -1.0f : pool[fd_rng_next(s) % np];
        size_t want = n;
        for (size_t i = 0; i < n; i++)
            if (x[i] > thr) { want = i; break; }
        for (int p = 0; p < FD_PATH_COUNT; p++) {
            if (!fd_path_supported((fd_path)p)) continue;
            size_t got = fd_kl_ops_for((fd_path)p)->first_above(x, n, thr);
            if (got != want) {
                fprintf(out, "kernel-selftest: first_above path %s gives %zu, the loop %zu (round %d)\n",
                        fd_path_name((fd_path)p), got, want, round);
                return failures + 1;
            }
        }
    }
    return failures;
}

/* Every path's vector exp and log against the generic build, bit for bit:
 * random arguments over the whole domain, results in the subnormal range
 * (x in [-745.2, -708.4]), the clamp (x just above and below -746, huge
 * negative logits, -DBL_MAX), +-0, the smallest magnitudes, and for log
 * 1, the smallest normal, DBL_MAX and the ratios the JS pass takes. */
static int explog_paths_selftest(uint64_t *s, FILE *out)
{
    enum { N = 40000 };
    double *x = malloc(N * sizeof *x), *want = malloc(N * sizeof *want), *got = malloc(N * sizeof *got);
    static const double ex[] = {0.0, -0.0, -5e-324, -1e-300, -0x1p-1022, -1e-17, -0.5, -1.0, -708.3964185322641,
                                -708.4, -709.0, -744.44007192138122, -745.1332191019411, -745.1332191019412, -745.2,
                                -745.9999999, -746.0, -746.0000000001, -747.0, -1e5, -1e30, -3.4028234663852886e38,
                                -1e300, -1.7976931348623157e308};
    static const double lx[] = {1.0, 0x1p-1022, 0x1.0000000000001p-1022, 1.7976931348623157e308, 2.0, 0.5,
                                1.4142135623730951, 1.4142135623730950, 0.7071067811865476, 1.0000000000000002,
                                0.9999999999999999, 1e-300, 1e300, 3.4028234663852886e38};
    const size_t ne = sizeof ex / sizeof *ex, nl = sizeof lx / sizeof *lx;
    int failures = 0;
    if (!x || !want || !got) { free(x); free(want); free(got); fprintf(out, "kernel-selftest: out of memory\n"); return 1; }
    for (int fn = 0; fn < 2; fn++) {
        for (size_t i = 0; i < N; i++) {
            uint64_t r = fd_rng_next(s);
            double u = fd_rng_unit(s);
            if (fn == 0) {
                /* u is in [-1, 1): |u| keeps x in the domain x <= 0 (positive
                 * arguments are outside the definition and never passed) */
                if (i < ne) x[i] = ex[i];
                else if (r % 4 == 0) x[i] = -708.0 - fabs(u) * 38.5;       /* subnormal results, the clamp */
                else if (r % 4 == 1) x[i] = -fabs(u) * 50.0;                /* ordinary logits */
                else if (r % 4 == 2) x[i] = -ldexp(fabs(u), (int)(r >> 8) % 2100 - 1074); /* every exponent */
                else x[i] = ex[(r >> 8) % ne];
            } else {
                if (i < nl) x[i] = lx[i];
                else if (r % 3 == 0) x[i] = 0x1p-1022 + u * 2.0;             /* the JS ratios */
                else if (r % 3 == 1) x[i] = 1.0 + u * 1e6;                   /* sums of exps */
                else x[i] = ldexp(0.5 + u * 0.5, (int)(r >> 8) % 2046 - 1021); /* every normal exponent */
            }
        }
        const fd_kl_ops *g = fd_kl_ops_for(FD_PATH_SCALAR);
        (fn ? g->log_n : g->exp_n)(x, N, want);
        for (int p = 1; p < FD_PATH_COUNT; p++) {
            if (!fd_path_supported((fd_path)p)) continue;
            const fd_kl_ops *o = fd_kl_ops_for((fd_path)p);
            if (!o) continue;
            (fn ? o->log_n : o->exp_n)(x, N, got);
            for (size_t i = 0; i < N; i++)
                if (memcmp(&got[i], &want[i], 8)) {
                    fprintf(out, "kernel-selftest: %s path %s: %s(%a) = %a, the generic build %a\n", fn ? "log" : "exp",
                            fd_path_name((fd_path)p), fn ? "log" : "exp", x[i], got[i], want[i]);
                    failures++;
                    break;
                }
        }
    }
    free(x); free(want); free(got);
    return failures;
}

int fd_kernel_selftest(uint64_t products, uint64_t seed, FILE *out)
{
    uint64_t s = seed;
    int failures = gemm_selftest(products, &s, out);
    failures += longk_selftest(&s, out);
    failures += passes_selftest(&s, out);
    failures += narrow_selftest(&s, out);
    failures += f32_selftest(seed ^ 0xf32f32u, out);
    failures += kl_selftest(&s, out);
    failures += explog_selftest(&s, out);
    failures += above_selftest(&s, out);
    failures += explog_paths_selftest(&s, out);
    return failures ? -1 : 0;
}
