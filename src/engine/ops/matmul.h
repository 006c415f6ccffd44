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
#include "util/pool.h"

/* The dot-product order of every bf16 product (docs/NUMERICS.md): the pair
 * order (oneDNN's AVX512_BF16 matmul, §1) or the tile order (its AMX
 * matmul, §5).  Part of what a capture computes: recorded in the dataset. */
typedef enum { FD_ORDER_TILE, FD_ORDER_PAIR } fd_order;
const char *fd_order_name(fd_order o);
int fd_order_parse(const char *name, fd_order *out); /* NULL/"": tile; -1 if unknown */

typedef struct fd_mm {
    fd_order order;
    fd_path path;
    fd_gemm_fn gemm;
    /* torch's fp32 products of upcast bf16 values are sequential FMA chains
     * (MKL), which the pair-order kernel computes on pair-swapped operands
     * in either order (fd_mm_run_seq) */
    fd_path path_seq;
    fd_gemm_fn gemm_seq;
    int threads;        /* >= 1 */
    fd_pool *pool;      /* NULL: everything runs in the calling thread */
} fd_mm;

/* kernel: NULL/"" for the default path here for `order` (by CPU features), else
 * scalar|avx2|avx512f|avx512bf16|amx|neon|neon-bf16 (refused when unknown or unsupported;
 * amx computes only the tile order).  threads <= 0: one per online CPU.
 * Starts the worker threads; fd_mm_free stops them. */
int fd_mm_init(fd_mm *m, const char *kernel, int threads, fd_order order, fd_err *e);
void fd_mm_free(fd_mm *m);
/* The same kernel without threads, for products run inside a parallel
 * loop (each body then computes its own products serially). */
fd_mm fd_mm_serial(const fd_mm *m);
/* fn(ctx, i, worker) for i < n on m's threads (engine loops whose bodies
 * write disjoint outputs; util/pool.h). */
void fd_mm_for(const fd_mm *m, size_t n, fd_pool_fn fn, void *ctx);
/* fn(ctx, i, mi) for i < n, units that each run their own products on mi
 * (attention heads, routed experts): as parallel tasks with serial products
 * when there are enough of them for the threads (n >= 2 x threads or a
 * multiple of them), else one at a time with mi = m's parallel products. */
typedef void (*fd_each_fn)(void *ctx, size_t i, const fd_mm *mi);
void fd_mm_each(const fd_mm *m, size_t n, fd_each_fn fn, void *ctx);
/* fn(ctx, lo, hi) over [0, n) cut into runs of `grain` (the last shorter). */
typedef void (*fd_range_fn)(void *ctx, size_t lo, size_t hi);
void fd_mm_range(const fd_mm *m, size_t n, size_t grain, fd_range_fn fn, void *ctx);

/* A matrix of N rows of K bf16 values packed as column tiles (the head
 * layout of gemm.h: "vocab" = N output columns, "hidden" = K). */
void fd_mm_alloc(fd_packed_head *b, size_t N, size_t K);
/* The same without zeroing, for a matrix whose every tile fd_mm_set_tile
 * will write (it zeroes what a partial tile leaves). */
void fd_mm_alloc_packed(fd_packed_head *b, size_t N, size_t K);
/* Row n from K bf16 values (any alignment). */
void fd_mm_set_row(fd_packed_head *b, size_t n, const uint16_t *row);
/* Rows n0 .. n0+nr-1 (n0 a multiple of 16, nr <= 16) at once, from
 * b->hidden little-endian bf16 values at rows[r] (any alignment): the tile's
 * words are written in order, which is what makes packing fast. */
void fd_mm_set_tile(fd_packed_head *b, size_t n0, const unsigned char *const *rows, size_t nr);

/* a: np packed rows of b->kp words.  out[p*ostride + n] for p < np and
 * n < b->tiles*16 (columns past N are zero); ostride >= b->tiles*16. */
void fd_mm_run(const fd_mm *m, const uint32_t *a, size_t np, const fd_packed_head *b, float *out, size_t ostride);

/* The same with the pair-order kernel (gemm_seq): the fp32 chains. */
void fd_mm_run_seq(const fd_mm *m, const uint32_t *a, size_t np, const fd_packed_head *b, float *out, size_t ostride);

/* An fp32 product with an F32 weight (kernels/gemm_f32.h): a is np rows of
 * K floats, w the packed fp32 tiles of `tiles` x 16 columns; each output
 * one FMA chain in increasing k on the pair-order path's kernel. */
void fd_mm_run_f32(const fd_mm *m, const float *a, size_t np, size_t K, const float *w, size_t tiles, float *out,
                   size_t ostride);

/* Packs rows of K bf16 values (row stride `stride` elements) into np*kp words. */
void fd_mm_pack_rows(const uint16_t *x, size_t np, size_t K, size_t stride, uint32_t *out);

#endif
