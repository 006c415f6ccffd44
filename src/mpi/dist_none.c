/* The single-process stand-in of dist_mpi.c: rank 0 of 1, no launcher. */
#ifndef FD_WITH_MPI
#include "mpi/dist.h"
#include <string.h>

int fd_dist_open(fd_dist *d, int *argc, char ***argv, fd_err *e)
{
    (void)argc; (void)argv; (void)e;
    memset(d, 0, sizeof *d);
    d->size = 1;
    return 0;
}

void fd_dist_close(fd_dist *d) { (void)d; }
const char *fd_dist_kind(void) { return "none"; }
int fd_dist_agree(const fd_dist *d, int rc, fd_err *e) { (void)d; (void)e; return rc ? -1 : 0; }
void fd_dist_bcast(const fd_dist *d, void *buf, size_t bytes, int root) { (void)d; (void)buf; (void)bytes; (void)root; }
void fd_dist_barrier(const fd_dist *d) { (void)d; }

size_t fd_dist_gather(const fd_dist *d, const void *mine, size_t bytes, void *all)
{
    (void)d;
    if (all && bytes && all != mine) memmove(all, mine, bytes);
    return bytes;
}
#else
typedef int fd_dist_none_unused; /* the MPI build uses dist_mpi.c */
#endif
