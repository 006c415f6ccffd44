/* File helpers: whole-file reads with a size cap, atomic writes (temporary
 * name, fsync, rename) so nothing is ever half-written under the real name. */
#ifndef FD_FSIO_H
#define FD_FSIO_H
#include <stddef.h>
#include <sys/stat.h>
#include "buf.h"
#include "err.h"

/* Opens path for reading as a regular file only: O_NONBLOCK so a FIFO never
 * blocks the open, fstat S_ISREG before anything is read (a FIFO, device,
 * socket or directory is refused as `unreadable` naming the kind), then
 * blocking mode again.  nofollow adds O_NOFOLLOW (a symlink is refused).
 * Returns the descriptor (st filled when non-NULL) or -1 with e set. */
int fd_open_regular(const char *path, int nofollow, struct stat *st, fd_err *e);
/* The whole regular file, at most max bytes (over it: `file_too_large`, by
 * the fstat size before any read and again while reading). */
int fd_read_file(const char *path, size_t max, fd_buf *out, fd_err *e);
int fd_write_atomic(const char *path, const void *p, size_t n, fd_err *e);
int fd_mkdirs(const char *path, fd_err *e);       /* mkdir -p */
int fd_rmtree(const char *path);                  /* best effort, no symlink following */
int fd_is_file(const char *path);                 /* regular file, not a symlink */
int fd_is_dir(const char *path);
/* SIGBUS (a memory-mapped input file shrank under the reader) becomes the
 * named refusal "REFUSED [file_changed]" on stdout and exit 3 instead of a
 * crash; a writer's OUT.partial-PID stays as after a kill. */
void fd_sigbus_refuses(void);
/* Joins a root and a relative path into a fresh string. */
char *fd_path_join(const char *a, const char *b);

#endif
