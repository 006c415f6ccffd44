/* The distributed engine over MPI (OpenMPI from Debian): the only file of
 * the tool that calls MPI.  MPI's default error handler aborts the job on a
 * communication failure, so a dead peer ends every rank; what the ranks had
 * sealed survives for a resumed run (docs/MPI.md). */
#ifdef FD_WITH_MPI
#include "mpi/dist.h"
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PIECE ((size_t)1 << 30)   /* MPI counts are int: large buffers travel in pieces */

static int under_launcher(void)
{
    static const char *const VARS[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof VARS / sizeof *VARS; i++)
        if (getenv(VARS[i])) return 1;
    return 0;
}

int fd_dist_open(fd_dist *d, int *argc, char ***argv, fd_err *e)
{
    memset(d, 0, sizeof *d);
    d->size = 1;
    if (!under_launcher()) return 0;
    int provided = 0;
    /* worker threads never call MPI: funneled is enough */
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return fd_fail(e, "mpi_failed", "", "MPI_Init_thread failed");
    d->launched = d->active = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->size);
    return 0;
}

void fd_dist_close(fd_dist *d)
{
    if (d->active) MPI_Finalize();
    d->active = 0;
}

const char *fd_dist_kind(void) { return "mpi"; }

int fd_dist_agree(const fd_dist *d, int rc, fd_err *e)
{
    if (!d->active) return rc ? -1 : 0;
    int mine = rc ? d->rank : d->size, first = d->size;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == d->size) return 0;
    MPI_Bcast(e, (int)sizeof *e, MPI_BYTE, first, MPI_COMM_WORLD);
    e->code[sizeof e->code - 1] = e->rule[sizeof e->rule - 1] = e->msg[sizeof e->msg - 1] = 0;
    return -1;
}

void fd_dist_bcast(const fd_dist *d, void *buf, size_t bytes, int root)
{
    if (!d->active) return;
    for (size_t at = 0; at < bytes; at += PIECE) {
        size_t n = bytes - at < PIECE ? bytes - at : PIECE;
        MPI_Bcast((char *)buf + at, (int)n, MPI_BYTE, root, MPI_COMM_WORLD);
    }
}

void fd_dist_barrier(const fd_dist *d)
{
    if (d->active) MPI_Barrier(MPI_COMM_WORLD);
}

size_t fd_dist_gather(const fd_dist *d, const void *mine, size_t bytes, void *all)
{
    if (!d->active) {
        if (all && bytes && all != mine) memmove(all, mine, bytes);
        return bytes;
    }
    uint64_t n = bytes, *counts = d->rank ? NULL : calloc((size_t)d->size, sizeof *counts);
    if (!d->rank && !counts) MPI_Abort(MPI_COMM_WORLD, 70);
    MPI_Gather(&n, 1, MPI_UINT64_T, counts, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    size_t total = 0;
    if (d->rank) {
        for (size_t at = 0; at < bytes; at += PIECE) {
            size_t k = bytes - at < PIECE ? bytes - at : PIECE;
            MPI_Send((const char *)mine + at, (int)k, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
        return 0;
    }
    for (int r = 0; r < d->size; r++) {
        size_t c = (size_t)counts[r];
        if (!r) { if (c) memmove((char *)all + total, mine, c); }
        else
            for (size_t at = 0; at < c; at += PIECE) {
                size_t k = c - at < PIECE ? c - at : PIECE;
                MPI_Recv((char *)all + total + at, (int)k, MPI_BYTE, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        total += c;
    }
    free(counts);
    return total;
}
#else
typedef int fd_dist_mpi_unused; /* the build without MPI uses dist_none.c */
#endif
