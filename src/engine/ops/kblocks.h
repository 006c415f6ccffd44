/* How torch's CPU matmuls cut the K axis (measured, torch 2.11 x86-64
 * wheel): each block is one chain from +0, the block sums are added in
 * order (and, for a two-half plan, half 0 + half 1 last).  Used by the
 * Linear layers of every architecture (ops/linear.c; arch/glm5_next/next_hc.c). */
#ifndef FD_ENGINE_KBLOCKS_H
#define FD_ENGINE_KBLOCKS_H
#include <stddef.h>

enum { FD_KPLAN_MAX = 1025 };

typedef struct fd_kplan {
    size_t st[FD_KPLAN_MAX + 1], nb, half; /* block b = [st[b], st[b+1]); half: first block of the second sum (0: one sum) */
} fd_kplan;

/* oneDNN's AVX512_BF16 matmul (goldens' ISA): K <= 512 one block;
 * 512 < K <= 2048 two, at 2^(ceil(log2 K) - 1); K > 2048 blocks of 1024
 * (measured: 64/256 x N x 2816, 128 x 128 x 4096, 300 x 64 x 3000). */
void fd_kplan_onednn(size_t K, fd_kplan *p);

/* oneDNN's AMX matmul (torch's default on AMX hosts; the tile order):
 * see kblocks.c for what was measured. */
void fd_kplan_amx(size_t M, size_t N, size_t K, fd_kplan *p);

/* The K-blocks of a bf16 product [M, K] x [K, N]: fd_kplan_amx for the tile
 * order, fd_kplan_onednn for the pair order. */
void fd_kplan_bf16(int tile, size_t M, size_t N, size_t K, fd_kplan *p);

/* MKL's sgemm (fp32, 2 threads) for M rows: see kblocks.c. */
void fd_kplan_mkl(size_t M, size_t K, fd_kplan *p);

#endif
