/* The distributed engine, fenced: every MPI call of the tool lives in
 * dist_mpi.c (built only with -DFD_WITH_MPI, `make mpi`); dist_none.c is
 * the single-process stand-in (rank 0 of 1), so no other file needs an
 * #ifdef.  A handle carries the state; there is no global of ours.
 *
 * A program built with MPI but not started by a launcher (no mpirun
 * environment) does not initialise MPI at all: it is rank 0 of 1 with
 * launched = 0, exactly like the build without MPI. */
#ifndef FD_MPI_DIST_H
#define FD_MPI_DIST_H
#include <stddef.h>
#include "util/err.h"

typedef struct fd_dist {
    int rank, size;
    int launched;   /* started by an MPI launcher (mpirun), even with -np 1 */
    int active;     /* MPI_Init was called here; fd_dist_close finalises it */
} fd_dist;

/* Initialises MPI when launched by mpirun; otherwise rank 0 of 1. */
int fd_dist_open(fd_dist *d, int *argc, char ***argv, fd_err *e);
void fd_dist_close(fd_dist *d);
/* "mpi" or "none": what this binary was built with. */
const char *fd_dist_kind(void);

/* Collective: every rank passes its own rc (0 ok, nonzero failed).  When
 * any rank failed, every rank returns -1 with the error of the lowest
 * failing rank copied into *e; else 0.  Call it before each collective
 * step that a failure on one rank would otherwise leave waiting. */
int fd_dist_agree(const fd_dist *d, int rc, fd_err *e);
/* Collective: root's bytes overwrite everyone's. */
void fd_dist_bcast(const fd_dist *d, void *buf, size_t bytes, int root);
/* Collective: rank 0 receives every rank's `mine` (any size, size_t
 * counts; 0 is fine) concatenated in rank order into `all`, which must
 * hold the sum.  Other ranks pass all = NULL.  Returns the total at rank 0. */
size_t fd_dist_gather(const fd_dist *d, const void *mine, size_t bytes, void *all);
void fd_dist_barrier(const fd_dist *d);

/* The contiguous share [lo, hi) of n items for rank r of size: the first
 * n % size ranks take one more.  Pure arithmetic, the same on every rank. */
void fd_dist_range(size_t n, int r, int size, size_t *lo, size_t *hi);

#endif
