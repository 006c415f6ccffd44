/* A fixed set of worker threads that run parallel loops.
 *
 * The engine calls thousands of small parallel loops per window; starting
 * threads for each cost more than the work (wake_up_new_task in perf), so
 * the workers live as long as the pool.  A loop hands out its indices one
 * at a time from a shared counter: which thread runs an index varies from
 * run to run, so a loop body must write only outputs that belong to its
 * index (then the results never depend on the thread count or timing). */
#ifndef FD_POOL_H
#define FD_POOL_H
#include <stddef.h>

typedef struct fd_pool fd_pool;

/* fn(ctx, i, worker): worker < fd_pool_threads(), unique among the bodies
 * running at the same moment (for per-thread scratch). */
typedef void (*fd_pool_fn)(void *ctx, size_t i, int worker);

/* threads >= 1 (1: no workers, loops run in the caller).  NULL when no
 * thread could be started and threads > 1 was asked: the caller falls back
 * to fd_pool_new(1), which cannot fail. */
fd_pool *fd_pool_new(int threads);
void fd_pool_free(fd_pool *p);
int fd_pool_threads(const fd_pool *p);

/* Runs fn for every i < n and returns when all have run.  A call made from
 * inside a body (nested) or with p == NULL runs the loop in the calling
 * thread with worker 0, so nested bodies must not use worker-indexed
 * scratch. */
void fd_pool_for(fd_pool *p, size_t n, fd_pool_fn fn, void *ctx);

#endif
