#include "json.h"
#include "util/fsio.h"
#include "pyfloat.h"
#include "sha.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JV_MAX_DEPTH 512

const jv_style JV_CANON = {-1, 0, ",", ":"};
const jv_style JV_CANON_ASCII = {-1, 1, ",", ":"};
const jv_style JV_PRETTY = {2, 0, ",", ": "};
const jv_style JV_DEFAULT = {-1, 1, ", ", ": "};

/* ---------------------------------------------------------------- values */

static jv *mk(jv_type t)
{
    jv *v = fd_xcalloc(1, sizeof *v);
    v->t = t;
    return v;
}

jv *jv_null(void) { return mk(JV_NULL); }
jv *jv_bool(int b) { jv *v = mk(JV_BOOL); v->u.b = !!b; return v; }
jv *jv_int(int64_t i) { jv *v = mk(JV_INT); v->u.i = i; return v; }
jv *jv_float(double f) { jv *v = mk(JV_FLOAT); v->u.f = f; return v; }
jv *jv_arr(void) { return mk(JV_ARR); }
jv *jv_obj(void) { return mk(JV_OBJ); }
jv *jv_strn(const char *s, size_t n)
{
    jv *v = mk(JV_STR);
    v->u.s.p = fd_xstrndup(s, n);
    v->u.s.n = n;
    return v;
}
jv *jv_str(const char *s) { return jv_strn(s, strlen(s)); }

void jv_free(jv *v)
{
    if (!v) return;
    switch (v->t) {
    case JV_STR: case JV_BIGINT: free(v->u.s.p); break;
    case JV_ARR:
        for (size_t i = 0; i < v->u.a.n; i++) jv_free(v->u.a.v[i]);
        free(v->u.a.v);
        break;
    case JV_OBJ:
        for (size_t i = 0; i < v->u.o.n; i++) { free(v->u.o.m[i].k); jv_free(v->u.o.m[i].v); }
        free(v->u.o.m);
        break;
    default: break;
    }
    free(v);
}

void jv_push(jv *a, jv *v)
{
    if (a->u.a.n == a->u.a.cap) {
        a->u.a.cap = a->u.a.cap ? a->u.a.cap * 2 : 8;
        a->u.a.v = fd_xrealloc(a->u.a.v, a->u.a.cap * sizeof *a->u.a.v);
    }
    a->u.a.v[a->u.a.n++] = v;
}

/* Python sorts str keys by code point; for valid UTF-8 that is byte order. */
static int keycmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t m = an < bn ? an : bn;
    int c = memcmp(a, b, m);
    if (c) return c;
    return an < bn ? -1 : an > bn;
}

/* Binary search: index of key, or -(insertion point)-1. */
static long find(const jv *o, const char *k, size_t kn)
{
    size_t lo = 0, hi = o->u.o.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = keycmp(o->u.o.m[mid].k, o->u.o.m[mid].klen, k, kn);
        if (c == 0) return (long)mid;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return -(long)lo - 1;
}

static void set_n(jv *o, const char *k, size_t kn, jv *v)
{
    long at = find(o, k, kn);
    if (at >= 0) { jv_free(o->u.o.m[at].v); o->u.o.m[at].v = v; return; }
    size_t pos = (size_t)(-at - 1);
    if (o->u.o.n == o->u.o.cap) {
        o->u.o.cap = o->u.o.cap ? o->u.o.cap * 2 : 8;
        o->u.o.m = fd_xrealloc(o->u.o.m, o->u.o.cap * sizeof *o->u.o.m);
    }
    memmove(o->u.o.m + pos + 1, o->u.o.m + pos, (o->u.o.n - pos) * sizeof *o->u.o.m);
    o->u.o.m[pos] = (jv_member){fd_xstrndup(k, kn), kn, v};
    o->u.o.n++;
}

void jv_set(jv *o, const char *k, jv *v) { set_n(o, k, strlen(k), v); }

jv *jv_get(const jv *o, const char *k)
{
    if (!o || o->t != JV_OBJ) return NULL;
    long at = find(o, k, strlen(k));
    return at >= 0 ? o->u.o.m[at].v : NULL;
}

int jv_del(jv *o, const char *k)
{
    if (!o || o->t != JV_OBJ) return 0;
    long at = find(o, k, strlen(k));
    if (at < 0) return 0;
    free(o->u.o.m[at].k);
    jv_free(o->u.o.m[at].v);
    memmove(o->u.o.m + at, o->u.o.m + at + 1, (o->u.o.n - (size_t)at - 1) * sizeof *o->u.o.m);
    o->u.o.n--;
    return 1;
}

int jv_is_str(const jv *v) { return v && v->t == JV_STR; }
int jv_is_int(const jv *v) { return v && (v->t == JV_INT || v->t == JV_BIGINT); }
int jv_is_num(const jv *v) { return v && (v->t == JV_INT || v->t == JV_BIGINT || v->t == JV_FLOAT); }

const char *jv_get_str(const jv *o, const char *k)
{
    jv *v = jv_get(o, k);
    return v && v->t == JV_STR ? v->u.s.p : NULL;
}

int jv_get_i64(const jv *o, const char *k, int64_t *out)
{
    jv *v = jv_get(o, k);
    if (!v || v->t != JV_INT) return -1;
    *out = v->u.i;
    return 0;
}

jv *jv_copy(const jv *v)
{
    jv *c = mk(v->t);
    switch (v->t) {
    case JV_STR: case JV_BIGINT:
        c->u.s.p = fd_xstrndup(v->u.s.p, v->u.s.n);
        c->u.s.n = v->u.s.n;
        break;
    case JV_ARR:
        for (size_t i = 0; i < v->u.a.n; i++) jv_push(c, jv_copy(v->u.a.v[i]));
        break;
    case JV_OBJ:
        c->u.o.cap = c->u.o.n = v->u.o.n;
        c->u.o.m = fd_xmalloc((v->u.o.n ? v->u.o.n : 1) * sizeof *c->u.o.m);
        for (size_t i = 0; i < v->u.o.n; i++)
            c->u.o.m[i] = (jv_member){fd_xstrndup(v->u.o.m[i].k, v->u.o.m[i].klen),
                                      v->u.o.m[i].klen, jv_copy(v->u.o.m[i].v)};
        break;
    default: c->u = v->u; break;
    }
    return c;
}

/* Python equality: 1 == 1.0, True == 1; we keep it strict on type except
 * int/float numeric comparison, which is what the validator needs. */
int jv_equal(const jv *a, const jv *b)
{
    if (!a || !b) return a == b;
    if (a->t == JV_INT && b->t == JV_FLOAT) return (double)a->u.i == b->u.f;
    if (a->t == JV_FLOAT && b->t == JV_INT) return a->u.f == (double)b->u.i;
    if (a->t != b->t) return 0;
    switch (a->t) {
    case JV_NULL: return 1;
    case JV_BOOL: return a->u.b == b->u.b;
    case JV_INT: return a->u.i == b->u.i;
    case JV_FLOAT: return a->u.f == b->u.f;
    case JV_STR: case JV_BIGINT:
        return a->u.s.n == b->u.s.n && memcmp(a->u.s.p, b->u.s.p, a->u.s.n) == 0;
    case JV_ARR:
        if (a->u.a.n != b->u.a.n) return 0;
        for (size_t i = 0; i < a->u.a.n; i++)
            if (!jv_equal(a->u.a.v[i], b->u.a.v[i])) return 0;
        return 1;
    case JV_OBJ:
        if (a->u.o.n != b->u.o.n) return 0;
        for (size_t i = 0; i < a->u.o.n; i++)
            if (keycmp(a->u.o.m[i].k, a->u.o.m[i].klen, b->u.o.m[i].k, b->u.o.m[i].klen) ||
                !jv_equal(a->u.o.m[i].v, b->u.o.m[i].v))
                return 0;
        return 1;
    }
    return 0;
}

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
            v = mk(JV_BIGINT); /* exact: JSON ints have no leading zeros */
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
    int c = keycmp(x->m.k, x->m.klen, y->m.k, y->m.klen);
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
        if (!keycmp(t[i].m.k, t[i].m.klen, t[i + 1].m.k, t[i + 1].m.klen)) {
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
        if (i + 1 < n && !keycmp(t[i].m.k, t[i].m.klen, t[i + 1].m.k, t[i + 1].m.klen)) {
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
    long at = find(&shallow, field, strlen(field));
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
