/* src/mpi: the contiguous split every rank computes on its own, and the
 * single-process stand-in's collectives. */
#include "check.h"
#include "mpi/dist.h"
#include <stdint.h>

int test_dist(void)
{
    int fails = 0;
    for (size_t n = 0; n <= 40; n++)
        for (int size = 1; size <= 9; size++) {
            size_t next = 0, big = 0, small = (size_t)-1;
            for (int r = 0; r < size; r++) {
                size_t lo, hi;
                fd_dist_range(n, r, size, &lo, &hi);
                CHECKF(lo == next && hi >= lo, "n %zu size %d rank %d: [%zu,%zu) after %zu", n, size, r, lo, hi, next);
                next = hi;
                big = hi - lo > big ? hi - lo : big;
                small = hi - lo < small ? hi - lo : small;
            }
            CHECKF(next == n, "n %zu size %d: the shares cover %zu", n, size, next);
            CHECKF(big - small <= 1, "n %zu size %d: shares differ by %zu", n, size, big - small);
        }
    size_t lo, hi;
    fd_dist_range(10, 3, 3, &lo, &hi);
    CHECK(lo == 10 && hi == 10, "a rank beyond size has an empty share");
    fd_dist_range(10, 0, 4, &lo, &hi);
    CHECK(lo == 0 && hi == 3, "the first n %% size ranks take one more");
    /* no launcher in the unit tests: rank 0 of 1, the collectives are local */
    fd_dist d;
    fd_err e = {0};
    CHECK(fd_dist_open(&d, NULL, NULL, &e) == 0 && d.rank == 0 && d.size == 1 && !d.launched, "no launcher: rank 0 of 1");
    double mine[3] = {1.5, -2.0, 3.25}, all[3] = {0};
    CHECK(fd_dist_gather(&d, mine, sizeof mine, all) == sizeof mine && all[1] == -2.0, "gather of one rank is a copy");
    CHECK(fd_dist_agree(&d, 0, &e) == 0 && fd_dist_agree(&d, 5, &e) == -1, "agree reports this rank's failure");
    fd_dist_close(&d);
    return fails;
}
