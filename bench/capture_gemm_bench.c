/* Capture GEMM microbenchmark (issue 24.2): the bf16 products of one
 * flash-0.1b window (`fidelity fixture --preset flash-0.1b`: 2,048 tokens,
 * hidden 256) run through the engine's own entry point (fd_mm_run: tasks of
 * 64 rows x column chunks, the kernel of each path and product order) on
 * one thread, per path and order: GFLOP/s and, when the path's register-only
 * peak is given (bench/peak.c, one core), the percentage of it.
 *
 * usage: capture_gemm_bench [--paths avx2,avx512f,...] [--orders tile,pair]
 *            [--peak PATH[/ORDER]=GFLOPS ...] [--min-seconds S] [--reps N] [--shape TEXT]
 * (--shape: only the shapes whose name contains TEXT; the window total then
 * covers those alone)
 * Prints one line per (order, path, shape) and a total per (order, path)
 * weighted as one window computes them; the last column is "bits" when that
 * path's output equals the scalar definition on the first 64 rows of the
 * shape, "DIFF" when not (a DIFF is a failure: exit 1). */
#include "engine/ops/matmul.h"
#include "kernels/gemm.h"
#include "util/buf.h"
#include "util/err.h"
#include "util/rng.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* the thread's CPU time: on a shared host the time this thread was not
 * scheduled does not count (on a quiet one it is the wall time) */
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* M x N x K and how many times one window of flash-0.1b (5 layers: 3 dense,
 * 2 MoE with 8 experts top-4 + 1 shared; the indexer computed in the 3
 * layers of type F, reused in the 2 of type S) runs it.  Expert products are
 * listed at their mean row count (2,048 x 4 / 8: the FLOPs are exact).
 * Attention, per head and 32-query block: Q.K^T (K = dn + dr = 48, N = the
 * keys up to the block's end, mean 1,040) and P.V (K = 2,048 keys, N = dv =
 * 32; the tile order's one K-block; the pair order skips its all-zero second
 * 1,024-key block for the first half of the queries, so its P.V FLOPs are
 * overstated here by a quarter).  Indexer scores: 16 queries x 4 heads per
 * block, keys up to the block's end (mean 1,160), K = 32, on the pair
 * kernel in either order (seq: fd_mm_run_seq).  Not listed: the F32 router
 * (2,048 x 8 x 256, twice; gemm_f32.c). */
typedef struct shape {
    const char *name;
    size_t M, N, K;
    double per_window;
    int seq;
} shape;

static const shape SHAPES[] = {
    {"q_a_proj      2048x128x256", 2048, 128, 256, 5, 0},
    {"q_b_proj      2048x192x128", 2048, 192, 128, 5, 0},
    {"kv_a_proj     2048x80x256", 2048, 80, 256, 5, 0},
    {"kv_b_proj     2048x256x64", 2048, 256, 64, 5, 0},
    {"o_proj        2048x256x128", 2048, 256, 128, 5, 0},
    {"idx.wq_b      2048x128x128", 2048, 128, 128, 3, 0},
    {"idx.wk        2048x32x256", 2048, 32, 256, 3, 0},
    {"idx.w_proj    2048x4x256", 2048, 4, 256, 3, 0},
    {"gate/up dense 2048x768x256", 2048, 768, 256, 6, 0},
    {"down dense    2048x256x768", 2048, 256, 768, 3, 0},
    {"expert g/u/d  1024x256x256", 1024, 256, 256, 2 * 8 * 3, 0},
    {"shared g/u/d  2048x256x256", 2048, 256, 256, 2 * 3, 0},
    {"attn Q.K^T    32x1040x48", 32, 1040, 48, 5 * 4 * 64, 0},
    {"attn P.V      32x32x2048", 32, 32, 2048, 5 * 4 * 64, 0},
    {"idx scores    64x1160x32 seq", 64, 1160, 32, 3 * 112, 1},
};
enum { NSHAPES = sizeof SHAPES / sizeof SHAPES[0] };

static void fill(uint32_t *w, size_t n, uint64_t *s)
{
    /* bf16 pairs of moderate magnitude (no subnormals: a timing, not a proof) */
    for (size_t i = 0; i < n; i++) w[i] = (uint32_t)fd_rng_next(s) & 0xbf7fbf7fu;
}

static int has(const char *list, const char *name)
{
    if (!list) return 1;
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || !p[n])) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *paths = NULL, *orders = NULL, *only = NULL;
    double peak[FD_PATH_COUNT][2] = {{0}}, min_s = 0.3;
    int reps = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--paths") && i + 1 < argc) paths = argv[++i];
        else if (!strcmp(argv[i], "--orders") && i + 1 < argc) orders = argv[++i];
        else if (!strcmp(argv[i], "--shape") && i + 1 < argc) only = argv[++i];
        else if (!strcmp(argv[i], "--min-seconds") && i + 1 < argc) min_s = atof(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--peak") && i + 1 < argc) {
            /* PATH[/ORDER]=GFLOPS: the pair order on avx512bf16 runs vdpbf16ps,
             * the tile order there the avx512f FMA emulation */
            char buf[64];
            snprintf(buf, sizeof buf, "%s", argv[++i]);
            char *eq = strchr(buf, '='), *sl = strchr(buf, '/');
            fd_path p;
            if (!eq) goto usage;
            *eq = 0;
            if (sl) *sl = 0;
            if (fd_path_parse(buf, &p)) goto usage;
            double g = atof(eq + 1);
            if (!sl || !strcmp(sl + 1, "tile")) peak[p][0] = g;
            if (!sl || !strcmp(sl + 1, "pair")) peak[p][1] = g;
        } else {
        usage:
            fprintf(stderr, "usage: capture_gemm_bench [--paths P,..] [--orders tile,pair] [--peak PATH[/ORDER]=GFLOPS ..] "
                            "[--min-seconds S] [--reps N] [--shape TEXT]\n");
            return 2;
        }
    }
    if (reps < 1) reps = 1;
    uint64_t s = 1;
    uint32_t *a[NSHAPES];
    fd_packed_head pb[NSHAPES];
    size_t maxout = 0;
    for (int i = 0; i < NSHAPES; i++) {
        const shape *h = &SHAPES[i];
        size_t kp = (h->K + 1) / 2;
        a[i] = fd_xmalloc(h->M * kp * 4 + 4);
        fill(a[i], h->M * kp, &s);
        fd_mm_alloc(&pb[i], h->N, h->K);
        fill(pb[i].w, pb[i].tiles * kp * FD_TILE, &s);
        size_t o = h->M * pb[i].tiles * FD_TILE;
        if (o > maxout) maxout = o;
    }
    float *out = fd_xmalloc(maxout * 4 + 4), *ref = fd_xmalloc(maxout * 4 + 4);
    int bad = 0;
    printf("%-5s %-10s %-28s %9s %9s %7s %s\n", "order", "path", "shape (M x N x K)", "ms/call", "GFLOP/s", "% peak", "bits");
    for (int ord = 0; ord < 2; ord++) {
        fd_order order = ord ? FD_ORDER_PAIR : FD_ORDER_TILE;
        if (!has(orders, fd_order_name(order))) continue;
        for (int p = FD_PATH_AVX2; p < FD_PATH_COUNT; p++) {
            if (!has(paths, fd_path_name((fd_path)p))) continue;
            if (order == FD_ORDER_TILE ? !fd_tile_path_supported((fd_path)p) : !fd_path_supported((fd_path)p)) continue;
            fd_mm m, sc;
            fd_err e = {0};
            if (fd_mm_init(&m, fd_path_name((fd_path)p), 1, order, &e) || fd_mm_init(&sc, "scalar", 1, order, &e)) {
                fprintf(stderr, "capture_gemm_bench: %s\n", e.msg);
                return 1;
            }
            double win_s = 0, win_flop = 0;
            for (int i = 0; i < NSHAPES; i++) {
                const shape *h = &SHAPES[i];
                if (only && !strstr(h->name, only)) continue;
                size_t os = pb[i].tiles * FD_TILE, rows = h->M < 64 ? h->M : 64;
                void (*run)(const fd_mm *, const uint32_t *, size_t, const fd_packed_head *, float *, size_t) =
                    h->seq ? fd_mm_run_seq : fd_mm_run;
                run(&sc, a[i], rows, &pb[i], ref, os);
                run(&m, a[i], h->M, &pb[i], out, os);
                int same = !memcmp(ref, out, rows * os * 4);
                bad |= !same;
                double flop = 2.0 * (double)h->M * (double)h->N * (double)h->K, best = 1e30;
                for (int r = 0; r < reps; r++) {
                    int calls = 0;
                    double t0 = now(), dt;
                    do {
                        run(&m, a[i], h->M, &pb[i], out, os);
                        calls++;
                    } while ((dt = now() - t0) < min_s / reps);
                    if (dt / calls < best) best = dt / calls;
                }
                double g = flop / best * 1e-9, pk = peak[p][ord];
                char pct[16] = "-";
                if (pk > 0) snprintf(pct, sizeof pct, "%.1f", g / pk * 100);
                win_s += best * h->per_window;
                win_flop += flop * h->per_window;
                printf("%-5s %-10s %-28s %9.3f %9.1f %7s %s\n", fd_order_name(order), fd_path_name((fd_path)p), h->name,
                       best * 1e3, g, pct, same ? "bits" : "DIFF");
            }
            double g = win_flop / win_s * 1e-9, pk = peak[p][ord];
            char pct[16] = "-";
            if (pk > 0) snprintf(pct, sizeof pct, "%.1f", g / pk * 100);
            printf("%-5s %-10s %-28s %9.1f %9.1f %7s\n", fd_order_name(order), fd_path_name((fd_path)p),
                   "ONE WINDOW (weighted, ms)", win_s * 1e3, g, pct);
            printf("capture-gemm %s %s window_gflop %.2f window_gemm_ms %.1f window_gflops %.1f", fd_order_name(order),
                   fd_path_name((fd_path)p), win_flop * 1e-9, win_s * 1e3, g);
            if (pk > 0) printf(" peak %.1f percent %.1f", pk, g / pk * 100);
            printf("\n");
            fd_mm_free(&m);
            fd_mm_free(&sc);
        }
    }
    for (int i = 0; i < NSHAPES; i++) { free(a[i]); fd_packed_head_free(&pb[i]); }
    free(out);
    free(ref);
    if (bad) fprintf(stderr, "capture_gemm_bench: a path differs from the scalar definition\n");
    return bad;
}
