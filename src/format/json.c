/* JSON values (json.h); the parser is json_parse.c, the serialiser json_dump.c. */
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

const jv_style JV_CANON = {-1, 0, ",", ":"};
const jv_style JV_CANON_ASCII = {-1, 1, ",", ":"};
const jv_style JV_PRETTY = {2, 0, ",", ": "};
const jv_style JV_DEFAULT = {-1, 1, ", ", ": "};

/* ---------------------------------------------------------------- values */

jv *jvi_mk(jv_type t)
{
    jv *v = fd_xcalloc(1, sizeof *v);
    v->t = t;
    return v;
}

jv *jv_null(void) { return jvi_mk(JV_NULL); }
jv *jv_bool(int b) { jv *v = jvi_mk(JV_BOOL); v->u.b = !!b; return v; }
jv *jv_int(int64_t i) { jv *v = jvi_mk(JV_INT); v->u.i = i; return v; }
jv *jv_float(double f) { jv *v = jvi_mk(JV_FLOAT); v->u.f = f; return v; }
jv *jv_arr(void) { return jvi_mk(JV_ARR); }
jv *jv_obj(void) { return jvi_mk(JV_OBJ); }
jv *jv_strn(const char *s, size_t n)
{
    jv *v = jvi_mk(JV_STR);
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
int jvi_keycmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t m = an < bn ? an : bn;
    int c = memcmp(a, b, m);
    if (c) return c;
    return an < bn ? -1 : an > bn;
}

/* Binary search: index of key, or -(insertion point)-1. */
long jvi_find(const jv *o, const char *k, size_t kn)
{
    size_t lo = 0, hi = o->u.o.n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = jvi_keycmp(o->u.o.m[mid].k, o->u.o.m[mid].klen, k, kn);
        if (c == 0) return (long)mid;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return -(long)lo - 1;
}

static void set_n(jv *o, const char *k, size_t kn, jv *v)
{
    long at = jvi_find(o, k, kn);
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
    long at = jvi_find(o, k, strlen(k));
    return at >= 0 ? o->u.o.m[at].v : NULL;
}

int jv_del(jv *o, const char *k)
{
    if (!o || o->t != JV_OBJ) return 0;
    long at = jvi_find(o, k, strlen(k));
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
    jv *c = jvi_mk(v->t);
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
            if (jvi_keycmp(a->u.o.m[i].k, a->u.o.m[i].klen, b->u.o.m[i].k, b->u.o.m[i].klen) ||
                !jv_equal(a->u.o.m[i].v, b->u.o.m[i].v))
                return 0;
        return 1;
    }
    return 0;
}
