/* panel.c's .npy and path helpers, shared with panel_build.c (not an API). */
#ifndef FD_CAPTURE_PANEL_INTERNAL_H
#define FD_CAPTURE_PANEL_INTERNAL_H
#include "util/err.h"
#include <stddef.h>
#include <stdint.h>

enum { FD_PANEL_NPY_MAX = 1024u << 20 }; /* one tokens or mask .npy, one build input */

/* a .npy of an accepted dtype and 1..max_ndim dimensions whose data size is
 * what its header promises; panel_invalid naming `what` otherwise */
int fd_panel_npy_any(const unsigned char *p, size_t n, const char *const *descrs, const char *what, int max_ndim,
                     const char **descr_out, uint64_t shape[4], int *ndim, const unsigned char **data, fd_err *e);
/* element i of a little-endian integer/bool array as int64 */
int64_t fd_panel_npy_elem(const char *descr, const unsigned char *data, size_t i);
/* the last component of path ("." and the like resolved), allocated */
char *fd_panel_basename(const char *path);

#endif
