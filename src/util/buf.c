#include "buf.h"
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void oom(size_t n)
{
    fprintf(stderr, "fidelity: out of memory allocating %zu bytes\n", n);
    abort();
}

void *fd_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) oom(n);
    return p;
}

void *fd_xcalloc(size_t n, size_t sz)
{
    void *p = calloc(n ? n : 1, sz ? sz : 1);
    if (!p) oom(n * sz);
    return p;
}

void *fd_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) oom(n);
    return q;
}

char *fd_xstrndup(const char *s, size_t n)
{
    char *p = fd_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

char *fd_xstrdup(const char *s) { return fd_xstrndup(s, strlen(s)); }

void fd_buf_reserve(fd_buf *b, size_t extra)
{
    if (b->n + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < b->n + extra + 1) cap *= 2;
    b->p = fd_xrealloc(b->p, cap);
    b->cap = cap;
}

void fd_buf_put(fd_buf *b, const void *p, size_t n)
{
    fd_buf_reserve(b, n);
    if (n) memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = 0;
}

void fd_buf_puts(fd_buf *b, const char *s) { fd_buf_put(b, s, strlen(s)); }
void fd_buf_putc(fd_buf *b, char c) { fd_buf_put(b, &c, 1); }

void fd_buf_printf(fd_buf *b, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k > 0) {
        fd_buf_reserve(b, (size_t)k);
        vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap2);
        b->n += (size_t)k;
    }
    va_end(ap2);
}

char *fd_buf_cstr(fd_buf *b)
{
    fd_buf_reserve(b, 0);
    b->p[b->n] = 0;
    return b->p;
}

void fd_buf_free(fd_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

void fd_buf_url_quote(fd_buf *b, const char *s, const char *safe)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (isalnum(*p) || strchr("_.-~", *p) || (*safe && strchr(safe, *p))) fd_buf_putc(b, (char)*p);
        else fd_buf_printf(b, "%%%02X", *p);
    }
}
