/* .npy v1.0 exactly as numpy.save writes it: the dict header in sorted-key
 * repr form, 21-digit growth padding, aligned to 64 bytes, then raw LE data. */
#ifndef FD_NPY_H
#define FD_NPY_H
#include <stddef.h>
#include <stdint.h>
#include "../util/buf.h"
#include "../util/err.h"

/* Appends the header for a C-order array with the given descr ('<f8', '<i8'). */
void fd_npy_header(fd_buf *out, const char *descr, const uint64_t *shape, int ndim);
/* Writes a 1-D float64 array to path atomically. */
int fd_npy_write_f64(const char *path, const double *v, size_t n, fd_err *e);
/* Parses a v1.0/v2.0 header: descr, ndim<=4, shape; *data_off gets the data start. */
int fd_npy_parse(const unsigned char *p, size_t n, char descr[16], uint64_t shape[4], int *ndim,
                 size_t *data_off, fd_err *e);

#endif
