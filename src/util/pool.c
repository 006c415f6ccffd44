#include "kernels/relax.h"
#include "util/pool.h"
#include "util/buf.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

/* A worker spins this many polls for the next loop before it sleeps: the
 * engine's loops come microseconds apart, a condition-variable wake-up
 * costs more than that. */
enum { SPIN_POLLS = 2000 };

/* A loop's state word: CLOSED once the caller has run out of indices, plus
 * the number of workers inside the loop.  A worker joins only while the
 * loop is open, so the caller never waits for a worker that is still
 * asleep, only for those that hold an index. */
#define CLOSED 0x40000000

struct fd_pool {
    int threads, started;
    pthread_t *th;
    pthread_mutex_t mu;
    pthread_cond_t go;
    atomic_ulong gen;      /* bumped once per loop; workers run a loop when it changes */
    atomic_int quit, sleepers, state, active;
    atomic_size_t next;    /* the next index to hand out */
    fd_pool_fn fn;         /* the current loop, written before gen is bumped */
    void *ctx;
    size_t n;
};

typedef struct worker_arg {
    fd_pool *p;
    int id;
} worker_arg;

static inline void relax(void) { fd_cpu_relax(); }

static void run_indices(fd_pool *p, int worker)
{
    size_t i;
    while ((i = atomic_fetch_add(&p->next, 1)) < p->n) p->fn(p->ctx, i, worker);
}

static void *worker_main(void *arg)
{
    worker_arg *wa = arg;
    fd_pool *p = wa->p;
    int id = wa->id;
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        unsigned long g;
        int polls = 0;
        while ((g = atomic_load(&p->gen)) == seen && !atomic_load(&p->quit)) {
            if (++polls < SPIN_POLLS) { relax(); continue; }
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (atomic_load(&p->gen) == seen && !atomic_load(&p->quit)) pthread_cond_wait(&p->go, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit)) return NULL;
        seen = g;
        int st = atomic_load(&p->state);
        while (!(st & CLOSED) && !atomic_compare_exchange_weak(&p->state, &st, st + 1)) {}
        if (st & CLOSED) continue; /* the caller finished this loop alone */
        run_indices(p, id);
        atomic_fetch_sub(&p->state, 1);
    }
}

fd_pool *fd_pool_new(int threads)
{
    fd_pool *p = fd_xcalloc(1, sizeof *p);
    p->threads = threads < 1 ? 1 : threads;
    atomic_init(&p->state, CLOSED);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->go, NULL);
    if (p->threads == 1) return p;
    p->th = fd_xcalloc((size_t)p->threads, sizeof *p->th);
    for (int w = 1; w < p->threads; w++) {
        worker_arg *wa = fd_xmalloc(sizeof *wa);
        *wa = (worker_arg){p, w};
        if (pthread_create(&p->th[w], NULL, worker_main, wa)) {
            free(wa);
            fd_pool_free(p);
            return NULL;
        }
        p->started = w;
    }
    return p;
}

void fd_pool_free(fd_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    for (int w = 1; w <= p->started; w++) pthread_join(p->th[w], NULL);
    pthread_cond_destroy(&p->go);
    pthread_mutex_destroy(&p->mu);
    free(p->th);
    free(p);
}

int fd_pool_threads(const fd_pool *p) { return p ? p->threads : 1; }

void fd_pool_for(fd_pool *p, size_t n, fd_pool_fn fn, void *ctx)
{
    int busy = 0;
    if (!p || p->threads == 1 || n <= 1 || !atomic_compare_exchange_strong(&p->active, &busy, 1)) {
        for (size_t i = 0; i < n; i++) fn(ctx, i, 0);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    atomic_store(&p->next, 0);
    atomic_store(&p->state, 0); /* open: the fields above are visible to whoever joins */
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->gen, 1);
    if (atomic_load(&p->sleepers)) pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->mu);
    run_indices(p, 0);
    /* close it, then wait for the workers that joined: they must leave
     * before the fields change */
    atomic_fetch_or(&p->state, CLOSED);
    for (unsigned polls = 0; atomic_load(&p->state) != CLOSED; polls++)
        if (polls % 256 == 255) sched_yield(); else relax();
    atomic_store(&p->active, 0);
}
