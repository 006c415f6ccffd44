/* GGUF metadata writing (format/gguf.h): the records the reader parses. */
#include "format/gguf.h"
#include "util/buf.h"
#include <stdio.h>
#include <string.h>

void fd_gguf_put_u32(fd_buf *b, uint32_t v)
{
    unsigned char c[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16), (unsigned char)(v >> 24)};
    fd_buf_put(b, c, 4);
}

void fd_gguf_put_u64(fd_buf *b, uint64_t v)
{
    fd_gguf_put_u32(b, (uint32_t)v);
    fd_gguf_put_u32(b, (uint32_t)(v >> 32));
}

void fd_gguf_put_str(fd_buf *b, const char *s)
{
    fd_gguf_put_u64(b, strlen(s));
    fd_buf_puts(b, s);
}

/* the key record and the value type */
static void key(fd_gguf_kvw *w, const char *k, uint32_t type)
{
    char full[256];
    if (w->arch) snprintf(full, sizeof full, "%s.%s", w->arch, k);
    else snprintf(full, sizeof full, "%s", k);
    fd_gguf_put_str(w->b, full);
    fd_gguf_put_u32(w->b, type);
    w->n++;
}

void fd_gguf_kv_u32(fd_gguf_kvw *w, const char *k, int64_t v)
{
    key(w, k, FD_GGUF_U32);
    fd_gguf_put_u32(w->b, (uint32_t)v);
}

void fd_gguf_kv_f32(fd_gguf_kvw *w, const char *k, double v)
{
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    key(w, k, FD_GGUF_F32);
    fd_gguf_put_u32(w->b, u);
}

void fd_gguf_kv_bool(fd_gguf_kvw *w, const char *k, int v)
{
    key(w, k, FD_GGUF_BOOL);
    fd_buf_putc(w->b, (char)(v != 0));
}

void fd_gguf_kv_str(fd_gguf_kvw *w, const char *k, const char *v)
{
    key(w, k, FD_GGUF_STRING);
    fd_gguf_put_str(w->b, v);
}

void fd_gguf_kv_bools(fd_gguf_kvw *w, const char *k, const unsigned char *v, uint64_t n)
{
    key(w, k, FD_GGUF_ARRAY);
    fd_gguf_put_u32(w->b, FD_GGUF_BOOL);
    fd_gguf_put_u64(w->b, n);
    for (uint64_t i = 0; i < n; i++) fd_buf_putc(w->b, (char)(v[i] != 0));
}
