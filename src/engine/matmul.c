#include "engine/matmul.h"
#include "util/buf.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { ROW_BLOCK = 64, TILE_BLOCK = 32 };

int fd_mm_init(fd_mm *m, const char *kernel, int threads, fd_err *e)
{
    if (fd_path_select(kernel, &m->path))
        return fd_fail(e, "bad_usage", "", "kernel path '%s' is unknown or not supported on this CPU", kernel);
    m->gemm = fd_gemm_for(m->path);
    if (threads <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        threads = n > 0 ? (int)n : 1;
    }
    m->threads = threads;
    return 0;
}

void fd_mm_alloc(fd_packed_head *b, size_t N, size_t K)
{
    b->vocab = N;
    b->hidden = K;
    b->kp = (K + 1) / 2;
    b->tiles = (N + FD_TILE - 1) / FD_TILE;
    size_t words = b->tiles * b->kp * FD_TILE + 1;
    b->w = aligned_alloc(64, ((words * 4 + 63) / 64) * 64);
    if (!b->w) b->w = fd_xmalloc(words * 4);
    memset(b->w, 0, words * 4);
}

void fd_mm_set_row(fd_packed_head *b, size_t n, const uint16_t *row)
{
    uint32_t *dst = b->w + (n / FD_TILE) * b->kp * FD_TILE + n % FD_TILE;
    size_t K = b->hidden;
    for (size_t k = 0; k < b->kp; k++) {
        uint32_t lo = row[2 * k], hi = 2 * k + 1 < K ? row[2 * k + 1] : 0;
        dst[k * FD_TILE] = lo | hi << 16;
    }
}

void fd_mm_pack_rows(const uint16_t *x, size_t np, size_t K, size_t stride, uint32_t *out)
{
    size_t kp = (K + 1) / 2;
    for (size_t p = 0; p < np; p++) fd_pack_hidden(x + p * stride, K, out + p * kp);
}

typedef struct part {
    const fd_mm *m;
    const uint32_t *a;
    size_t np;
    const fd_packed_head *b;
    float *out;
    size_t ostride, t0, t1;
} part;

static void *run_part(void *arg)
{
    const part *q = arg;
    size_t kp = q->b->kp;
    int mx = q->m->path == FD_PATH_AVX2 || q->m->path == FD_PATH_AVX512F;
    unsigned csr = mx ? fd_ftz_daz_enter() : 0; /* MXCSR is per thread */
    for (size_t t = q->t0; t < q->t1; t += TILE_BLOCK) {
        size_t nt = q->t1 - t < TILE_BLOCK ? q->t1 - t : TILE_BLOCK;
        for (size_t p = 0; p < q->np; p += ROW_BLOCK) {
            size_t n = q->np - p < ROW_BLOCK ? q->np - p : ROW_BLOCK;
            q->m->gemm(q->a + p * kp, n, kp, q->b->w + t * kp * FD_TILE, nt, q->out + p * q->ostride + t * FD_TILE,
                       q->ostride);
        }
    }
    if (mx) fd_ftz_daz_leave(csr);
    return NULL;
}

void fd_mm_run(const fd_mm *m, const uint32_t *a, size_t np, const fd_packed_head *b, float *out, size_t ostride)
{
    size_t tiles = b->tiles;
    size_t work = np * tiles * b->kp;
    size_t nt = (size_t)(m->threads > 0 ? m->threads : 1);
    if (nt > tiles) nt = tiles;
    if (work < (1u << 16) || nt < 2) nt = 1; /* thread start-up would cost more than the work */
    part parts[64];
    if (nt > 64) nt = 64;
    for (size_t i = 0; i < nt; i++)
        parts[i] = (part){m, a, np, b, out, ostride, tiles * i / nt, tiles * (i + 1) / nt};
    if (nt == 1) { run_part(&parts[0]); return; }
    pthread_t th[64];
    size_t started = 0;
    for (size_t i = 1; i < nt; i++) {
        if (pthread_create(&th[i], NULL, run_part, &parts[i])) break;
        started = i;
    }
    run_part(&parts[0]);
    for (size_t i = started + 1; i < nt; i++) run_part(&parts[i]); /* could not start: run here */
    for (size_t i = 1; i <= started; i++) pthread_join(th[i], NULL);
}
