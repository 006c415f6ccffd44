/* The contiguous split shared by both implementations. */
#include "mpi/dist.h"

void fd_dist_range(size_t n, int r, int size, size_t *lo, size_t *hi)
{
    size_t s = size > 0 ? (size_t)size : 1, k = r > 0 ? (size_t)r : 0, q = n / s, m = n % s;
    if (k >= s) { *lo = *hi = n; return; }
    *lo = k * q + (k < m ? k : m);
    *hi = *lo + q + (k < m ? 1 : 0);
}
