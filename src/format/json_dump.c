/* The JSON serialiser and the seal (json.h). */
#include "format/json_internal.h"
#include "util/fsio.h"
#include "format/pyfloat.h"
#include "format/sha.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ serialiser */

static void dump_str(const char *s, size_t n, int ascii, fd_buf *o)
{
    static const char hx[] = "0123456789abcdef";
    fd_buf_putc(o, '"');
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        const unsigned char *run = p;
        while (p < end && *p >= 0x20 && *p != '"' && *p != '\\' && (!ascii || *p < 0x7f)) p++;
        fd_buf_put(o, run, (size_t)(p - run));
        if (p >= end) break;
        unsigned c = *p;
        if (c >= 0x7f) { /* ensure_ascii: [^ -~] as \uXXXX, astral as a surrogate pair */
            int len = fd_utf8_len(p, end);
            unsigned cp;
            if (c == 0x7f) { cp = 0x7f; len = 1; }
            else if (!len) { cp = 0xFFFD; len = 1; }
            else if (len == 2) cp = (p[0] & 0x1Fu) << 6 | (p[1] & 0x3Fu);
            else if (len == 3) cp = (p[0] & 0x0Fu) << 12 | (p[1] & 0x3Fu) << 6 | (p[2] & 0x3Fu);
            else cp = (p[0] & 0x07u) << 18 | (p[1] & 0x3Fu) << 12 | (p[2] & 0x3Fu) << 6 | (p[3] & 0x3Fu);
            p += len;
            unsigned units[2], nu = 0;
            if (cp >= 0x10000) {
                cp -= 0x10000;
                units[nu++] = 0xD800 | (cp >> 10);
                units[nu++] = 0xDC00 | (cp & 0x3FF);
            } else units[nu++] = cp;
            for (unsigned i = 0; i < nu; i++) {
                char t[6] = {'\\', 'u', hx[units[i] >> 12 & 15], hx[units[i] >> 8 & 15],
                             hx[units[i] >> 4 & 15], hx[units[i] & 15]};
                fd_buf_put(o, t, 6);
            }
            continue;
        }
        p++;
        switch (c) {
        case '"': fd_buf_puts(o, "\\\""); break;
        case '\\': fd_buf_puts(o, "\\\\"); break;
        case '\n': fd_buf_puts(o, "\\n"); break;
        case '\r': fd_buf_puts(o, "\\r"); break;
        case '\t': fd_buf_puts(o, "\\t"); break;
        case '\b': fd_buf_puts(o, "\\b"); break;
        case '\f': fd_buf_puts(o, "\\f"); break;
        default: {
            char t[6] = {'\\', 'u', '0', '0', hx[c >> 4], hx[c & 15]};
            fd_buf_put(o, t, 6);
        }
        }
    }
    fd_buf_putc(o, '"');
}

static void newline(const jv_style *st, int level, fd_buf *o)
{
    fd_buf_putc(o, '\n');
    for (int i = 0; i < st->indent * level; i++) fd_buf_putc(o, ' ');
}

static int dump(const jv *v, const jv_style *st, int level, fd_buf *o, fd_err *e)
{
    char num[40];
    switch (v->t) {
    case JV_NULL: fd_buf_puts(o, "null"); return 0;
    case JV_BOOL: fd_buf_puts(o, v->u.b ? "true" : "false"); return 0;
    case JV_INT: fd_buf_printf(o, "%lld", (long long)v->u.i); return 0;
    case JV_BIGINT: fd_buf_put(o, v->u.s.p, v->u.s.n); return 0;
    case JV_FLOAT:
        if (fd_pyfloat_repr(v->u.f, num, sizeof num) < 0)
            return fd_fail(e, "bad_json", "JSON", "NaN/Infinity are not JSON compliant (allow_nan=False)");
        fd_buf_puts(o, num);
        return 0;
    case JV_STR: dump_str(v->u.s.p, v->u.s.n, st->ensure_ascii, o); return 0;
    case JV_ARR:
        if (!v->u.a.n) { fd_buf_puts(o, "[]"); return 0; }
        fd_buf_putc(o, '[');
        for (size_t i = 0; i < v->u.a.n; i++) {
            if (i) fd_buf_puts(o, st->item_sep);
            if (st->indent >= 0) newline(st, level + 1, o);
            if (dump(v->u.a.v[i], st, level + 1, o, e)) return -1;
        }
        if (st->indent >= 0) newline(st, level, o);
        fd_buf_putc(o, ']');
        return 0;
    case JV_OBJ:
        if (!v->u.o.n) { fd_buf_puts(o, "{}"); return 0; }
        fd_buf_putc(o, '{');
        for (size_t i = 0; i < v->u.o.n; i++) {
            if (i) fd_buf_puts(o, st->item_sep);
            if (st->indent >= 0) newline(st, level + 1, o);
            dump_str(v->u.o.m[i].k, v->u.o.m[i].klen, st->ensure_ascii, o);
            fd_buf_puts(o, st->key_sep);
            if (dump(v->u.o.m[i].v, st, level + 1, o, e)) return -1;
        }
        if (st->indent >= 0) newline(st, level, o);
        fd_buf_putc(o, '}');
        return 0;
    }
    return 0;
}

int jv_dump(const jv *v, const jv_style *st, fd_buf *out, fd_err *e)
{
    size_t mark = out->n;
    if (dump(v, st, 0, out, e)) { out->n = mark; return -1; }
    fd_buf_cstr(out);
    return 0;
}

int jv_seal(const jv *obj, const char *field, char hex[65], fd_err *e)
{
    if (!obj || obj->t != JV_OBJ) return fd_fail(e, "bad_schema", "SEAL", "seal needs a JSON object");
    /* A shallow copy whose member array shares the values, with the seal
     * field blanked (inserted if absent), exactly as common.seal does. */
    jv blank = {.t = JV_STR, .u.s = {"", 0}};
    jv shallow = {.t = JV_OBJ};
    size_t n = obj->u.o.n;
    shallow.u.o.m = fd_xmalloc((n + 1) * sizeof(jv_member));
    if (n) memcpy(shallow.u.o.m, obj->u.o.m, n * sizeof(jv_member));
    shallow.u.o.n = n;
    shallow.u.o.cap = n + 1;
    long at = jvi_find(&shallow, field, strlen(field));
    if (at >= 0) shallow.u.o.m[at].v = &blank;
    else {
        size_t pos = (size_t)(-at - 1);
        memmove(shallow.u.o.m + pos + 1, shallow.u.o.m + pos, (n - pos) * sizeof(jv_member));
        shallow.u.o.m[pos] = (jv_member){(char *)field, strlen(field), &blank};
        shallow.u.o.n++;
    }
    fd_buf b = {0};
    int rc = jv_dump(&shallow, &JV_CANON, &b, e);
    if (!rc) fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
    free(shallow.u.o.m);
    return rc;
}
