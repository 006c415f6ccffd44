/* bench/kl_bench.c: the fp64 KL pass alone (reference + one candidate per
 * position, as the replay calls it), one thread, on logits shaped like the
 * replay's sub-tile: NPOS positions x one 2,048-column chunk, repeated.
 * Prints ns of this thread's CPU time per column (reference + candidate) and a checksum of the states
 * (identical on every path).  Build and run:
 *   cc -O2 -ffp-contract=off -Isrc bench/kl_bench.c src/kernels/kl.c -o /tmp/kl_bench
 *   taskset -c 1 perf stat -e cycles,instructions /tmp/kl_bench avx512 64 200
 * args: path (generic|avx2|avx512), positions per sub-tile (64), repeats (100),
 * and `fused` for ref_pair_chunk instead of ref_chunk + pair_chunk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "kernels/kl.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    const char *pn = argc > 1 ? argv[1] : "avx512";
    size_t npos = argc > 2 ? (size_t)atol(argv[2]) : 64, reps = argc > 3 ? (size_t)atol(argv[3]) : 100;
    fd_path p = !strcmp(pn, "avx2") ? FD_PATH_AVX2 : !strcmp(pn, "avx512") ? FD_PATH_AVX512F : FD_PATH_SCALAR;
    const fd_kl_ops *ops = fd_kl_ops_for(p);
    size_t n = FD_KL_CHUNK;
    float *r = malloc(npos * n * 4), *c = malloc(npos * n * 4);
    fd_ref_chunk *ch = malloc(npos * sizeof *ch);
    fd_ref_state *rs = calloc(npos, sizeof *rs);
    fd_pair_state *ps = calloc(npos, sizeof *ps);
    unsigned long long s = 12345;
    for (size_t i = 0; i < npos * n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        r[i] = (float)((double)(s >> 11) * 0x1p-53 * 20.0 - 10.0);
        c[i] = r[i] + (float)((double)((s >> 20) & 1023) * 0x1p-10 * 0.2 - 0.1);
    }
    int fused = argc > 4 && !strcmp(argv[4], "fused");
    double t0 = now();
    for (size_t k = 0; fused && k < reps; k++) /* one pass: ref_pair_chunk, the exps not kept */
        for (size_t i = 0; i < npos; i++)
            if (ops->ref_pair_chunk(&rs[i], &ch[i], &ps[i], r + i * n, c + i * n, n, k * n, 0)) return 1;
    for (size_t k = 0; !fused && k < reps; k++) { /* as the replay: every reference row of the sub-tile, then every candidate row */
        for (size_t i = 0; i < npos; i++)
            if (ops->ref_chunk(&rs[i], &ch[i], r + i * n, n, k * n)) return 1;
        for (size_t i = 0; i < npos; i++)
            if (ops->pair_chunk(&ps[i], &rs[i], &ch[i], r + i * n, c + i * n, n, k * n)) return 1;
    }
    double t1 = now();
    double sum = 0;
    for (size_t i = 0; i < npos; i++) sum += rs[i].s + rs[i].e + ps[i].s + ps[i].t + ps[i].u;
    printf("%s%s: %.3f ns per column (reference + candidate), checksum %.17g\n", pn, fused ? " fused" : "", (t1 - t0) * 1e9 / (double)(reps * npos * n), sum);
    return 0;
}
