#include "npy.h"
#include "../util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fd_npy_header(fd_buf *out, const char *descr, const uint64_t *shape, int ndim)
{
    fd_buf h = {0};
    fd_buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < ndim; i++)
        fd_buf_printf(&h, i ? ", %llu" : "%llu", (unsigned long long)shape[i]);
    fd_buf_puts(&h, ndim == 1 ? ",), }" : "), }");
    if (ndim > 0) { /* numpy leaves room to grow axis 0 in place */
        char d[24];
        int k = snprintf(d, sizeof d, "%llu", (unsigned long long)shape[0]);
        for (int i = k; i < 21; i++) fd_buf_putc(&h, ' ');
    }
    size_t hlen = h.n + 1;
    size_t pad = 64 - ((10 + hlen) % 64);
    size_t total = hlen + pad;
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(total & 255), (unsigned char)(total >> 8)};
    fd_buf_put(out, pre, 10);
    fd_buf_put(out, h.p, h.n);
    for (size_t i = 0; i < pad; i++) fd_buf_putc(out, ' ');
    fd_buf_putc(out, '\n');
    fd_buf_free(&h);
}

int fd_npy_write_f64(const char *path, const double *v, size_t n, fd_err *e)
{
    fd_buf b = {0};
    uint64_t shape[1] = {n};
    fd_npy_header(&b, "<f8", shape, 1);
    fd_buf_put(&b, v, n * sizeof *v); /* x86-64 and aarch64 are little-endian */
    int rc = fd_write_atomic(path, b.p, b.n, e);
    fd_buf_free(&b);
    return rc;
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n')) p++;
    return p;
}

int fd_npy_parse(const unsigned char *p, size_t n, char descr[16], uint64_t shape[4], int *ndim,
                 size_t *data_off, fd_err *e)
{
    if (n < 10 || memcmp(p, "\x93NUMPY", 6) || (p[6] != 1 && p[6] != 2))
        return fd_fail(e, "bad_npy", "", "not a .npy v1/v2 file");
    size_t hl, base;
    if (p[6] == 1) { hl = p[8] | (size_t)p[9] << 8; base = 10; }
    else {
        if (n < 12) return fd_fail(e, "bad_npy", "", "truncated .npy header");
        hl = p[8] | (size_t)p[9] << 8 | (size_t)p[10] << 16 | (size_t)p[11] << 24;
        base = 12;
    }
    if (hl > n - base) return fd_fail(e, "bad_npy", "", ".npy header length past the end of the file");
    const char *h = (const char *)p + base, *end = h + hl;
    const char *d = memmem(h, hl, "'descr': '", 10);
    const char *f = memmem(h, hl, "'fortran_order': False", 22);
    const char *s = memmem(h, hl, "'shape': (", 10);
    if (!d || !f || !s) return fd_fail(e, "bad_npy", "", ".npy header is not a C-order descr/shape dict");
    d += 10;
    const char *q = memchr(d, '\'', (size_t)(end - d));
    if (!q || q - d >= 16) return fd_fail(e, "bad_npy", "", "bad .npy descr");
    memcpy(descr, d, (size_t)(q - d));
    descr[q - d] = 0;
    s += 10;
    *ndim = 0;
    for (;;) {
        s = skip_ws(s, end);
        if (s < end && *s == ')') break;
        if (*ndim == 4 || s >= end || *s < '0' || *s > '9') return fd_fail(e, "bad_npy", "", "bad .npy shape");
        uint64_t v = 0;
        while (s < end && *s >= '0' && *s <= '9') {
            if (v > (UINT64_MAX - 9) / 10) return fd_fail(e, "bad_npy", "", ".npy shape overflows");
            v = v * 10 + (uint64_t)(*s++ - '0');
        }
        shape[(*ndim)++] = v;
        s = skip_ws(s, end);
        if (s < end && *s == ',') s++;
    }
    *data_off = base + hl;
    return 0;
}
