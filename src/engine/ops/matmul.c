#include "engine/ops/matmul.h"
#include "kernels/gemm_f32.h"
#include "kernels/rowops.h"
#include "util/buf.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ROW_BLOCK = 64, TILE_BLOCK = 32 };

const char *fd_order_name(fd_order o) { return o == FD_ORDER_PAIR ? "pair" : "tile"; }

int fd_order_parse(const char *name, fd_order *out)
{
    if (!name || !*name || !strcmp(name, "tile")) *out = FD_ORDER_TILE;
    else if (!strcmp(name, "pair")) *out = FD_ORDER_PAIR;
    else return -1;
    return 0;
}

int fd_mm_init(fd_mm *m, const char *kernel, int threads, fd_order order, fd_err *e)
{
    m->order = order;
    if (order == FD_ORDER_TILE ? fd_tile_path_select(kernel, &m->path) : fd_path_select(kernel, &m->path))
        return fd_fail(e, "bad_usage", "", "kernel path '%s' is unknown or not supported on this CPU for the %s order "
                       "(scalar|avx2|avx512f|avx512bf16, amx for the tile order where the CPU has it; aarch64: "
                       "scalar|neon|neon-bf16)",
                       kernel, fd_order_name(order));
    m->gemm = order == FD_ORDER_TILE ? fd_gemm_tile_for(m->path) : fd_gemm_for(m->path);
    m->path_seq = m->path;
    if (order == FD_ORDER_TILE && fd_path_select(m->path == FD_PATH_AMX ? NULL : kernel, &m->path_seq))
        return fd_fail(e, "bad_usage", "", "kernel path '%s' is unknown or not supported on this CPU", kernel);
    m->gemm_seq = fd_gemm_for(m->path_seq);
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    m->threads = threads;
    m->pool = fd_pool_new(threads);
    if (!m->pool) return fd_fail(e, "resources", "", "could not start %d threads", threads);
    return 0;
}

void fd_mm_free(fd_mm *m)
{
    fd_pool_free(m->pool);
    m->pool = NULL;
}

fd_mm fd_mm_serial(const fd_mm *m)
{
    fd_mm s = *m;
    s.threads = 1;
    s.pool = NULL;
    return s;
}

void fd_mm_for(const fd_mm *m, size_t n, fd_pool_fn fn, void *ctx) { fd_pool_for(m ? m->pool : NULL, n, fn, ctx); }

typedef struct range_job {
    fd_range_fn fn;
    void *ctx;
    size_t n, grain;
} range_job;

static void range_task(void *ctx, size_t i, int worker)
{
    (void)worker;
    const range_job *r = ctx;
    size_t lo = i * r->grain, hi = lo + r->grain < r->n ? lo + r->grain : r->n;
    r->fn(r->ctx, lo, hi);
}

void fd_mm_range(const fd_mm *m, size_t n, size_t grain, fd_range_fn fn, void *ctx)
{
    if (!n) return;
    if (grain < 1) grain = 1;
    range_job r = {fn, ctx, n, grain};
    fd_mm_for(m, (n + grain - 1) / grain, range_task, &r);
}

typedef struct each_job {
    fd_each_fn fn;
    void *ctx;
    const fd_mm *inner;
} each_job;

static void each_task(void *ctx, size_t i, int worker)
{
    (void)worker;
    const each_job *j = ctx;
    j->fn(j->ctx, i, j->inner);
}

void fd_mm_each(const fd_mm *m, size_t n, fd_each_fn fn, void *ctx)
{
    size_t t = (size_t)(m->threads > 0 ? m->threads : 1);
    if (m->pool && (n >= 2 * t || n % t == 0)) {
        fd_mm serial = fd_mm_serial(m);
        each_job j = {fn, ctx, &serial};
        fd_mm_for(m, n, each_task, &j);
        return;
    }
    for (size_t i = 0; i < n; i++) fn(ctx, i, m);
}

static void mm_alloc(fd_packed_head *b, size_t N, size_t K, int zero)
{
    b->vocab = N;
    b->hidden = K;
    b->kp = (K + 1) / 2;
    b->tiles = (N + FD_TILE - 1) / FD_TILE;
    b->bytes = 0; /* heap memory: fd_packed_head_free frees it */
    size_t words = b->tiles * b->kp * FD_TILE + 1;
    b->w = aligned_alloc(64, ((words * 4 + 63) / 64) * 64);
    if (!b->w) b->w = fd_xmalloc(words * 4);
    if (zero) memset(b->w, 0, words * 4);
    else b->w[words - 1] = 0;
}

void fd_mm_alloc(fd_packed_head *b, size_t N, size_t K) { mm_alloc(b, N, K, 1); }
void fd_mm_alloc_packed(fd_packed_head *b, size_t N, size_t K) { mm_alloc(b, N, K, 0); }

void fd_mm_set_row(fd_packed_head *b, size_t n, const uint16_t *row) { fd_pack_head_rows(b, row, n, 1); }

void fd_mm_set_tile(fd_packed_head *b, size_t n0, const unsigned char *const *rows, size_t nr)
{
    uint32_t *dst = b->w + (n0 / FD_TILE) * b->kp * FD_TILE;
    size_t K = b->hidden, full = K / 2;
    if (nr < FD_TILE) memset(dst, 0, b->kp * FD_TILE * 4);
    if (nr == FD_TILE) fd_transpose16_words(rows, full, dst); /* little-endian: element 2k in the low half */
    else
        for (size_t k = 0; k < full; k++)
            for (size_t c = 0; c < nr; c++) memcpy(&dst[k * FD_TILE + c], rows[c] + 4 * k, 4);
    if (K % 2)
        for (size_t c = 0; c < nr; c++) {
            uint16_t lo;
            memcpy(&lo, rows[c] + 4 * full, 2);
            dst[full * FD_TILE + c] = lo;
        }
}

void fd_mm_pack_rows(const uint16_t *x, size_t np, size_t K, size_t stride, uint32_t *out)
{
    size_t kp = (K + 1) / 2;
    for (size_t p = 0; p < np; p++) fd_pack_hidden(x + p * stride, K, out + p * kp);
}

/* One product split into tasks of ROW_BLOCK rows x `tc` tiles; each
 * task writes its own block of out. */
typedef struct mm_job {
    const fd_mm *m;
    const uint32_t *a;
    size_t np;
    const fd_packed_head *b;
    float *out;
    size_t ostride, tc, rblocks;
    int seq;
} mm_job;

static void run_task(void *ctx, size_t i, int worker)
{
    (void)worker;
    const mm_job *q = ctx;
    /* tile-major: consecutive tasks reuse one chunk of the weights */
    size_t t = (i / q->rblocks) * q->tc, p = (i % q->rblocks) * ROW_BLOCK, kp = q->b->kp;
    size_t n = q->np - p < ROW_BLOCK ? q->np - p : ROW_BLOCK, nt = q->b->tiles - t < q->tc ? q->b->tiles - t : q->tc;
    fd_path path = q->seq ? q->m->path_seq : q->m->path;
    int mx = (q->seq || q->m->order == FD_ORDER_PAIR) && (path == FD_PATH_AVX2 || path == FD_PATH_AVX512F);
    unsigned csr = mx ? fd_ftz_daz_enter() : 0; /* MXCSR is per thread */
    (q->seq ? q->m->gemm_seq : q->m->gemm)(q->a + p * kp, n, kp, q->b->w + t * kp * FD_TILE, nt, q->out + p * q->ostride + t * FD_TILE, q->ostride);
    if (mx) fd_ftz_daz_leave(csr);
}

static void mm_run(const fd_mm *m, const uint32_t *a, size_t np, const fd_packed_head *b, float *out, size_t ostride, int seq)
{
    size_t tiles = b->tiles;
    if (!np || !tiles) return;
    size_t rblocks = (np + ROW_BLOCK - 1) / ROW_BLOCK, tc = TILE_BLOCK;
    size_t want = 4 * (size_t)(m->threads > 0 ? m->threads : 1);
    int small = np * tiles * b->kp < (1u << 16); /* thread hand-off would cost more than the work */
    if (small || !m->pool) tc = tiles;           /* one task per row block, run here */
    else if (rblocks * ((tiles + tc - 1) / tc) < want) {
        tc = (tiles * rblocks + want - 1) / want;  /* more, narrower column chunks (multiples of the 3-tile kernel) */
        tc = tc < 3 ? 3 : (tc + 2) / 3 * 3;
    }
    mm_job q = {m, a, np, b, out, ostride, tc, rblocks, seq};
    fd_mm_for(small ? NULL : m, rblocks * ((tiles + tc - 1) / tc), run_task, &q);
}

void fd_mm_run(const fd_mm *m, const uint32_t *a, size_t np, const fd_packed_head *b, float *out, size_t ostride)
{
    mm_run(m, a, np, b, out, ostride, 0);
}

void fd_mm_run_seq(const fd_mm *m, const uint32_t *a, size_t np, const fd_packed_head *b, float *out, size_t ostride)
{
    mm_run(m, a, np, b, out, ostride, 1);
}

/* F32-weight products: tasks of ROW_BLOCK rows x all tiles (the router's
 * few columns), each on the pair-order path's fp32 kernel under FTZ+DAZ. */
typedef struct f32_job {
    const fd_mm *m;
    const float *a, *w;
    size_t np, K, tiles, ostride;
    float *out;
} f32_job;

static void f32_task(void *ctx, size_t i, int worker)
{
    (void)worker;
    const f32_job *q = ctx;
    size_t p = i * ROW_BLOCK, n = q->np - p < ROW_BLOCK ? q->np - p : ROW_BLOCK;
    fd_path path = q->m->path_seq;
    int mx = path != FD_PATH_SCALAR;
    unsigned csr = mx ? fd_ftz_daz_enter() : 0; /* MXCSR is per thread */
    fd_gemm_f32_for(path)(q->a + p * q->K, n, q->K, q->w, q->tiles, q->out + p * q->ostride, q->ostride);
    if (mx) fd_ftz_daz_leave(csr);
}

void fd_mm_run_f32(const fd_mm *m, const float *a, size_t np, size_t K, const float *w, size_t tiles, float *out,
                   size_t ostride)
{
    if (!np || !tiles) return;
    f32_job q = {m, a, w, np, K, tiles, ostride, out};
    int small = np * tiles * K < (1u << 16);
    fd_mm_for(small ? NULL : m, (np + ROW_BLOCK - 1) / ROW_BLOCK, f32_task, &q);
}
