/* Growable byte buffer and allocation helpers.  Allocation failure aborts:
 * there is no sensible recovery from OOM in a CLI tool, and threading an
 * error through every append would bury the real failure paths. */
#ifndef FD_BUF_H
#define FD_BUF_H
#include <stddef.h>
#include <stdint.h>

typedef struct fd_buf {
    char *p;
    size_t n, cap;
} fd_buf;

void *fd_xmalloc(size_t n);
void *fd_xcalloc(size_t n, size_t sz);
void *fd_xrealloc(void *p, size_t n);
char *fd_xstrdup(const char *s);
char *fd_xstrndup(const char *s, size_t n);

void fd_buf_reserve(fd_buf *b, size_t extra);
void fd_buf_put(fd_buf *b, const void *p, size_t n);
void fd_buf_puts(fd_buf *b, const char *s);
void fd_buf_putc(fd_buf *b, char c);
void fd_buf_printf(fd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s percent-encoded as urllib.parse.quote(s, safe) does: ASCII
 * letters, digits and "_.-~" stay, as does any byte in safe; every other
 * byte becomes %XX (upper-case hex). */
void fd_buf_url_quote(fd_buf *b, const char *s, const char *safe);
/* NUL-terminates without counting the terminator; returns b->p. */
char *fd_buf_cstr(fd_buf *b);
void fd_buf_free(fd_buf *b);

#endif
