/* The strict JSON parser (json.h). */
#include "format/json_internal.h"
#include "util/fsio.h"
#include "format/pyfloat.h"
#include "format/sha.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JV_MAX_DEPTH 512

/* ---------------------------------------------------------------- parser */

typedef struct {
    const unsigned char *p, *end, *start;
    fd_err *e;
    int lenient; /* duplicate keys keep the last (jv_parse_lenient) instead of refusing */
} P;

static int perr(P *ps, const char *what)
{
    return fd_fail(ps->e, "bad_json", "JSON", "%s at byte %ld", what, (long)(ps->p - ps->start));
}

static void ws(P *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int hex4(P *ps, unsigned *out)
{
    if (ps->end - ps->p < 4) return perr(ps, "truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = ps->p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return perr(ps, "invalid \\u escape");
        v = v * 16 + d;
    }
    ps->p += 4;
    *out = v;
    return 0;
}

static void put_utf8(fd_buf *b, unsigned cp)
{
    char t[4];
    if (cp < 0x80) { t[0] = (char)cp; fd_buf_put(b, t, 1); }
    else if (cp < 0x800) { t[0] = (char)(0xC0 | cp >> 6); t[1] = (char)(0x80 | (cp & 63)); fd_buf_put(b, t, 2); }
    else if (cp < 0x10000) {
        t[0] = (char)(0xE0 | cp >> 12); t[1] = (char)(0x80 | ((cp >> 6) & 63));
        t[2] = (char)(0x80 | (cp & 63)); fd_buf_put(b, t, 3);
    } else {
        t[0] = (char)(0xF0 | cp >> 18); t[1] = (char)(0x80 | ((cp >> 12) & 63));
        t[2] = (char)(0x80 | ((cp >> 6) & 63)); t[3] = (char)(0x80 | (cp & 63)); fd_buf_put(b, t, 4);
    }
}

/* Decodes one UTF-8 sequence strictly (no overlongs, surrogates, > U+10FFFF),
 * as Python's decoder does.  Returns its length, or 0 if invalid. */
int fd_utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0];
    if (c < 0x80) return 1;
    int n;
    unsigned cp;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if (end - p < n) return 0;
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    return n;
}

static int parse_string(P *ps, fd_buf *out)
{
    ps->p++; /* opening quote */
    for (;;) {
        const unsigned char *run = ps->p;
        while (ps->p < ps->end && *ps->p != '"' && *ps->p != '\\' && *ps->p >= 0x20 && *ps->p < 0x80)
            ps->p++;
        fd_buf_put(out, run, (size_t)(ps->p - run));
        if (ps->p >= ps->end) return perr(ps, "unterminated string");
        unsigned c = *ps->p;
        if (c == '"') { ps->p++; return 0; }
        if (c < 0x20) return perr(ps, "control character in string");
        if (c >= 0x80) {
            int n = fd_utf8_len(ps->p, ps->end);
            if (!n) return perr(ps, "invalid UTF-8 in string");
            fd_buf_put(out, ps->p, (size_t)n);
            ps->p += n;
            continue;
        }
        ps->p++; /* backslash */
        if (ps->p >= ps->end) return perr(ps, "truncated escape");
        c = *ps->p++;
        switch (c) {
        case '"': fd_buf_putc(out, '"'); break;
        case '\\': fd_buf_putc(out, '\\'); break;
        case '/': fd_buf_putc(out, '/'); break;
        case 'b': fd_buf_putc(out, '\b'); break;
        case 'f': fd_buf_putc(out, '\f'); break;
        case 'n': fd_buf_putc(out, '\n'); break;
        case 'r': fd_buf_putc(out, '\r'); break;
        case 't': fd_buf_putc(out, '\t'); break;
        case 'u': {
            unsigned cp, lo;
            if (hex4(ps, &cp)) return -1;
            if (cp >= 0xDC00 && cp <= 0xDFFF) return perr(ps, "lone low surrogate (not encodable as UTF-8)");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u')
                    return perr(ps, "lone high surrogate (not encodable as UTF-8)");
                ps->p += 2;
                if (hex4(ps, &lo)) return -1;
                if (lo < 0xDC00 || lo > 0xDFFF) return perr(ps, "lone high surrogate (not encodable as UTF-8)");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            put_utf8(out, cp);
            break;
        }
        default: return perr(ps, "invalid escape");
        }
    }
}

static int digits(P *ps)
{
    const unsigned char *s = ps->p;
    while (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') ps->p++;
    return ps->p > s;
}

static jv *parse_number(P *ps)
{
    const unsigned char *s = ps->p;
    int is_float = 0;
    if (*ps->p == '-') ps->p++;
    if (ps->p < ps->end && *ps->p == '0') ps->p++;
    else if (!digits(ps)) { perr(ps, "invalid number"); return NULL; }
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (!digits(ps)) { perr(ps, "invalid number"); return NULL; }
        is_float = 1;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-')) ps->p++;
        if (!digits(ps)) { perr(ps, "invalid number"); return NULL; }
        is_float = 1;
    }
    size_t n = (size_t)(ps->p - s);
    char *txt = fd_xstrndup((const char *)s, n);
    jv *v = NULL;
    if (is_float) {
        errno = 0;
        double d = strtod(txt, NULL);
        if (!isfinite(d)) perr(ps, "float out of range (would be Infinity, which is refused)");
        else v = jv_float(d);
    } else {
        errno = 0;
        long long i = strtoll(txt, NULL, 10);
        if (errno == ERANGE) {
            v = jvi_mk(JV_BIGINT); /* exact: JSON ints have no leading zeros */
            v->u.s.p = txt;
            v->u.s.n = n;
            return v;
        }
        v = jv_int(i);
    }
    free(txt);
    return v;
}

static int lit(P *ps, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) >= n && memcmp(ps->p, w, n) == 0) { ps->p += n; return 1; }
    return 0;
}

typedef struct { jv_member m; size_t seq; } ordered_member;

static int cmp_ordered(const void *a, const void *b)
{
    const ordered_member *x = a, *y = b;
    int c = jvi_keycmp(x->m.k, x->m.klen, y->m.k, y->m.klen);
    if (c) return c;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Members arrive in document order; sort them by (key, position).  A key
 * that appears twice is refused, naming it (Python keeps the last value, other
 * readers the first: a duplicate lets two readers of one sealed document see
 * two different values; docs/FORMAT-IMPL.md); lenient: keep the last of each
 * run of equal keys, as a Python dict does. */
static int sort_dedupe(P *ps, jv *o)
{
    size_t n = o->u.o.n, w = 0;
    ordered_member *t = fd_xmalloc((n ? n : 1) * sizeof *t);
    for (size_t i = 0; i < n; i++) t[i] = (ordered_member){o->u.o.m[i], i};
    qsort(t, n, sizeof *t, cmp_ordered);
    for (size_t i = 0; i + 1 < n && !ps->lenient; i++)
        if (!jvi_keycmp(t[i].m.k, t[i].m.klen, t[i + 1].m.k, t[i + 1].m.klen)) {
            char shown[72];
            size_t k = 0;
            for (size_t j = 0; j < t[i].m.klen && k + 4 < sizeof shown; j++) {
                unsigned char c = (unsigned char)t[i].m.k[j];
                shown[k++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
            }
            if (t[i].m.klen && k < t[i].m.klen) { shown[k++] = '.'; shown[k++] = '.'; shown[k++] = '.'; }
            shown[k] = 0;
            free(t);
            return fd_fail(ps->e, "bad_json", "JSON", "duplicate object key '%s' in the object ending at byte %ld (Python's "
                           "json keeps the last value, other readers the first: refused)", shown, (long)(ps->p - ps->start));
        }
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && !jvi_keycmp(t[i].m.k, t[i].m.klen, t[i + 1].m.k, t[i + 1].m.klen)) {
            free(t[i].m.k);
            jv_free(t[i].m.v);
            continue;
        }
        o->u.o.m[w++] = t[i].m;
    }
    o->u.o.n = w;
    free(t);
    return 0;
}

static jv *parse_value(P *ps, int depth);

static jv *parse_object(P *ps, int depth)
{
    jv *o = jv_obj();
    fd_buf key = {0};
    ps->p++;
    ws(ps);
    if (ps->p < ps->end && *ps->p == '}') { ps->p++; return o; }
    for (;;) {
        ws(ps);
        if (ps->p >= ps->end || *ps->p != '"') { perr(ps, "expected object key"); goto fail; }
        key.n = 0;
        if (parse_string(ps, &key)) goto fail;
        ws(ps);
        if (ps->p >= ps->end || *ps->p != ':') { perr(ps, "expected ':'"); goto fail; }
        ps->p++;
        jv *v = parse_value(ps, depth + 1);
        if (!v) goto fail;
        if (o->u.o.n == o->u.o.cap) {
            o->u.o.cap = o->u.o.cap ? o->u.o.cap * 2 : 8;
            o->u.o.m = fd_xrealloc(o->u.o.m, o->u.o.cap * sizeof *o->u.o.m);
        }
        o->u.o.m[o->u.o.n++] = (jv_member){fd_xstrndup(key.p ? key.p : "", key.n), key.n, v};
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
        if (ps->p < ps->end && *ps->p == '}') { ps->p++; break; }
        perr(ps, "expected ',' or '}'");
        goto fail;
    }
    fd_buf_free(&key);
    if (sort_dedupe(ps, o)) { jv_free(o); return NULL; }
    return o;
fail:
    fd_buf_free(&key);
    jv_free(o);
    return NULL;
}

static jv *parse_value(P *ps, int depth)
{
    if (depth > JV_MAX_DEPTH) { perr(ps, "nesting too deep"); return NULL; }
    ws(ps);
    if (ps->p >= ps->end) { perr(ps, "unexpected end of input"); return NULL; }
    unsigned c = *ps->p;
    if (c == '{') return parse_object(ps, depth);
    if (c == '[') {
        jv *a = jv_arr();
        ps->p++;
        ws(ps);
        if (ps->p < ps->end && *ps->p == ']') { ps->p++; return a; }
        for (;;) {
            jv *v = parse_value(ps, depth + 1);
            if (!v) { jv_free(a); return NULL; }
            jv_push(a, v);
            ws(ps);
            if (ps->p < ps->end && *ps->p == ',') { ps->p++; continue; }
            if (ps->p < ps->end && *ps->p == ']') { ps->p++; return a; }
            perr(ps, "expected ',' or ']'");
            jv_free(a);
            return NULL;
        }
    }
    if (c == '"') {
        fd_buf b = {0};
        if (parse_string(ps, &b)) { fd_buf_free(&b); return NULL; }
        jv *v = jv_strn(b.p ? b.p : "", b.n);
        fd_buf_free(&b);
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        if (lit(ps, "-Infinity")) { perr(ps, "-Infinity is refused"); return NULL; }
        return parse_number(ps);
    }
    if (lit(ps, "true")) return jv_bool(1);
    if (lit(ps, "false")) return jv_bool(0);
    if (lit(ps, "null")) return jv_null();
    if (lit(ps, "NaN") || lit(ps, "Infinity")) { perr(ps, "NaN/Infinity are refused"); return NULL; }
    perr(ps, "unexpected character");
    return NULL;
}

static jv *parse_doc(const char *text, size_t n, int lenient, fd_err *e)
{
    P ps = {(const unsigned char *)text, (const unsigned char *)text + n, (const unsigned char *)text, e, lenient};
    if (n >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) {
        perr(&ps, "UTF-8 BOM is refused (Python json refuses it)");
        return NULL;
    }
    jv *v = parse_value(&ps, 0);
    if (!v) return NULL;
    ws(&ps);
    if (ps.p != ps.end) { perr(&ps, "extra data after JSON value"); jv_free(v); return NULL; }
    return v;
}

jv *jv_parse(const char *text, size_t n, fd_err *e) { return parse_doc(text, n, 0, e); }

jv *jv_parse_lenient(const char *text, size_t n, fd_err *e) { return parse_doc(text, n, 1, e); }

jv *jv_parse_file(const char *path, fd_err *e)
{
    fd_buf b = {0};
    if (fd_read_file(path, FD_JSON_MAX_FILE, &b, e)) { fd_buf_free(&b); return NULL; }
    jv *v = jv_parse(b.p ? b.p : "", b.n, e);
    fd_buf_free(&b);
    if (!v) fd_err_prefix(e, path);
    return v;
}
