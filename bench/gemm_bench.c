/* GEMM microbenchmark: achieved GFLOP/s of each replay GEMM path on an
 * L2-resident problem (64 positions x 2048 columns x hidden 256), one thread. */
#include "kernels/gemm.h"
#include "util/buf.h"
#include "util/rng.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    const size_t np = 64, kp = 128, tiles = 128;
    uint64_t s = 1;
    uint32_t *a = fd_xmalloc(np * kp * 4), *b = fd_xmalloc(tiles * kp * FD_TILE * 4);
    float *out = fd_xmalloc(np * tiles * FD_TILE * 4);
    for (size_t i = 0; i < np * kp; i++) a[i] = (uint32_t)fd_rng_next(&s) & 0x3f7f3f7fu;
    for (size_t i = 0; i < tiles * kp * FD_TILE; i++) b[i] = (uint32_t)fd_rng_next(&s) & 0x3f7f3f7fu;
    for (int p = FD_PATH_SCALAR; p < FD_PATH_COUNT; p++) {
        if (!fd_path_supported((fd_path)p)) continue;
        fd_gemm_fn f = fd_gemm_for((fd_path)p);
        int reps = p == FD_PATH_SCALAR ? 1 : 20;
        unsigned csr = fd_ftz_daz_enter();
        double t0 = now();
        for (int r = 0; r < reps; r++) f(a, np, kp, b, tiles, out, tiles * FD_TILE);
        double dt = now() - t0;
        fd_ftz_daz_leave(csr);
        double flop = 2.0 * (double)np * (double)(tiles * FD_TILE) * (double)(kp * 2) * reps;
        printf("%-11s %8.1f GFLOP/s\n", fd_path_name((fd_path)p), flop / dt * 1e-9);
    }
    /* the capture engine's tile order (docs/NUMERICS.md §5) on the same
     * problem, on one task of the engine (64 tokens x 512 columns x K 1024)
     * and on a whole 512 x 1024 x 1024 product in one call */
    const size_t shapes[3][3] = {{np, tiles, kp}, {64, 32, 512}, {512, 64, 512}};
    for (int sh = 0; sh < 3; sh++) {
        size_t m = shapes[sh][0], nt = shapes[sh][1], k2 = shapes[sh][2];
        uint32_t *a2 = fd_xmalloc(m * k2 * 4), *b2 = fd_xmalloc(nt * k2 * FD_TILE * 4);
        float *o2 = fd_xmalloc(m * nt * FD_TILE * 4);
        for (size_t i = 0; i < m * k2; i++) a2[i] = (uint32_t)fd_rng_next(&s) & 0x3f7f3f7fu;
        for (size_t i = 0; i < nt * k2 * FD_TILE; i++) b2[i] = (uint32_t)fd_rng_next(&s) & 0x3f7f3f7fu;
        for (int p = FD_PATH_AVX2; p < FD_PATH_COUNT; p++) {
            if (!fd_tile_path_supported((fd_path)p) || p == FD_PATH_AVX512BF16) continue;
            fd_gemm_fn f = fd_gemm_tile_for((fd_path)p);
            int reps = m * nt < 4096 ? 50 : 5;
            f(a2, m, k2, b2, nt, o2, nt * FD_TILE);
            double t0 = now();
            for (int r = 0; r < reps; r++) f(a2, m, k2, b2, nt, o2, nt * FD_TILE);
            double dt = now() - t0;
            double flop = 2.0 * (double)m * (double)(nt * FD_TILE) * (double)(k2 * 2) * reps;
            printf("tile order %zux%zux%zu %-8s %8.1f GFLOP/s\n", m, nt * FD_TILE, k2 * 2, fd_path_name((fd_path)p),
                   flop / dt * 1e-9);
        }
        free(a2); free(b2); free(o2);
    }
    return 0;
}
