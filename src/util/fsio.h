/* File helpers: whole-file reads with a size cap, atomic writes (temporary
 * name, fsync, rename) so nothing is ever half-written under the real name. */
#ifndef FD_FSIO_H
#define FD_FSIO_H
#include <stddef.h>
#include "buf.h"
#include "err.h"

int fd_read_file(const char *path, size_t max, fd_buf *out, fd_err *e);
int fd_write_atomic(const char *path, const void *p, size_t n, fd_err *e);
int fd_mkdirs(const char *path, fd_err *e);       /* mkdir -p */
int fd_rmtree(const char *path);                  /* best effort, no symlink following */
int fd_is_file(const char *path);                 /* regular file, not a symlink */
int fd_is_dir(const char *path);
/* Joins a root and a relative path into a fresh string. */
char *fd_path_join(const char *a, const char *b);

#endif
