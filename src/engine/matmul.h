/* The engine's matrix products, on the fenced kernels of src/kernels.
 *
 * Every product the forward needs (Linear layers, attention scores and
 * P.V, indexer scores, the router) is a set of independent canonical dot
 * products (docs/NUMERICS.md): one output element is one fd_dot_canonical
 * of a packed row and a packed column.  fd_mm_run splits the output columns
 * among threads and the rows into blocks only for cache locality, so the
 * bits never depend on the thread count, the blocking or the kernel path
 * (every path is proven identical by `kernel-selftest`). */
#ifndef FD_ENGINE_MATMUL_H
#define FD_ENGINE_MATMUL_H
#include <stddef.h>
#include <stdint.h>
#include "kernels/gemm.h"
#include "util/err.h"

typedef struct fd_mm {
    fd_path path;
    fd_gemm_fn gemm;
    int threads;        /* >= 1 */
} fd_mm;

/* kernel: NULL/"" for the fastest path here, else scalar|avx2|avx512f|avx512bf16
 * (refused when unknown or unsupported).  threads <= 0: one per online CPU. */
int fd_mm_init(fd_mm *m, const char *kernel, int threads, fd_err *e);

/* A matrix of N rows of K bf16 values packed as column tiles (the head
 * layout of gemm.h: "vocab" = N output columns, "hidden" = K). */
void fd_mm_alloc(fd_packed_head *b, size_t N, size_t K);
/* Row n from K bf16 values (any alignment). */
void fd_mm_set_row(fd_packed_head *b, size_t n, const uint16_t *row);

/* a: np packed rows of b->kp words.  out[p*ostride + n] for p < np and
 * n < b->tiles*16 (columns past N are zero); ostride >= b->tiles*16. */
void fd_mm_run(const fd_mm *m, const uint32_t *a, size_t np, const fd_packed_head *b, float *out, size_t ostride);

/* Packs rows of K bf16 values (row stride `stride` elements) into np*kp words. */
void fd_mm_pack_rows(const uint16_t *x, size_t np, size_t K, size_t stride, uint32_t *out);

#endif
