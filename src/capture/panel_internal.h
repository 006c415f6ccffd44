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

/* panel_upstream.c: the options of an upstream-layout build (pinned
 * tokenizer repository and revision), and its sealed
 * malaiwah.token-panel-build-receipt.v1 panel.receipt.json written into dir
 * for panel.json doc (windows of length L, np template prefix ids). */
struct fd_panel_build_opts;
struct jv;
int fd_panel_upstream_check(const struct fd_panel_build_opts *o, fd_err *e);
int fd_panel_upstream_receipt(const char *dir, const struct jv *doc, const struct fd_panel_build_opts *o, int64_t vocab,
                              size_t L, size_t nwin, size_t np, const int64_t *prefix, const char *rule, fd_err *e);

#endif
