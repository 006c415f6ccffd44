#define PCRE2_CODE_UNIT_WIDTH 8
#include "schema.h"
#include <math.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pyfloat.h"

/* Bounds both the schema walk and $ref chains (a cyclic $ref would otherwise
 * recurse until the stack runs out). */
#define MAX_DEPTH 64
/* Reprs of whole objects (oneOf failures) would bury the message. */
#define REPR_MAX 160

typedef struct { const jv *src; pcre2_code *re; } pat;

struct fd_schema {
    const jv *root, *defs;
    pat *pats;
    size_t npats, cap;
};

static const char *const ANNOTATIONS[] = {"$schema", "$id", "$comment", "title", "description",
                                          "default", "examples", NULL};
/* Keyword groups by the shape of their value. */
static const char *const MAPS[] = {"$defs", "properties", NULL};
static const char *const SUBSCHEMAS[] = {"additionalProperties", "items", "if", "then", "else", NULL};
static const char *const LISTS[] = {"allOf", "oneOf", NULL};
static const char *const COUNTS[] = {"minLength", "minItems", "maxItems", NULL};
static const char *const TYPES[] = {"null", "boolean", "object", "array", "number", "string",
                                    "integer", NULL};

static int is(const char *k, size_t kn, const char *word)
{
    return kn == strlen(word) && !memcmp(k, word, kn);
}

static int in_set(const char *const *set, const char *k, size_t kn)
{
    for (; *set; set++)
        if (is(k, kn, *set)) return 1;
    return 0;
}

/* ------------------------------------------------------------ compile */

typedef struct { fd_schema *s; fd_buf at; fd_err *e; } W;

static int walk(W *w, const jv *sc, int depth);

/* `at` is a JSON pointer into the schema so a refusal names where it is. */
static int walk_sub(W *w, const jv *sc, int depth, const char *k, const char *k2, long idx)
{
    size_t n0 = w->at.n;
    fd_buf_printf(&w->at, "/%s", k);
    if (k2) fd_buf_printf(&w->at, "/%s", k2);
    if (idx >= 0) fd_buf_printf(&w->at, "/%ld", idx);
    int rc = walk(w, sc, depth + 1);
    w->at.n = n0;
    return rc;
}

static int str_list(const jv *v, int types)
{
    if (v->t != JV_ARR) return 0;
    for (size_t i = 0; i < v->u.a.n; i++) {
        const jv *x = v->u.a.v[i];
        if (x->t != JV_STR || (types && !in_set(TYPES, x->u.s.p, x->u.s.n))) return 0;
    }
    return 1;
}

static int compile_pattern(W *w, const jv *p)
{
    int err;
    PCRE2_SIZE off;
    /* Python's re on str: Unicode classes, \uXXXX escapes (the relpath
     * pattern spells NUL as \u0000, which stock PCRE2 refuses). */
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)p->u.s.p, p->u.s.n,
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_ALT_BSUX, &err, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        return fd_fail(w->e, "bad_schema", "", "schema %s: pattern %s: %s at offset %zu",
                       fd_buf_cstr(&w->at), p->u.s.p, (const char *)msg, (size_t)off);
    }
    fd_schema *s = w->s;
    if (s->npats == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->pats = fd_xrealloc(s->pats, s->cap * sizeof *s->pats);
    }
    s->pats[s->npats++] = (pat){p, re};
    return 0;
}

static int ref_ok(const fd_schema *s, const jv *v)
{
    if (v->t != JV_STR || strlen(v->u.s.p) != v->u.s.n || strncmp(v->u.s.p, "#/$defs/", 8))
        return 0;
    /* Only plain names: pointer escapes and nested pointers are not needed. */
    return !strpbrk(v->u.s.p + 8, "/~%") && jv_get(s->defs, v->u.s.p + 8);
}

static int walk(W *w, const jv *sc, int depth)
{
    if (depth > MAX_DEPTH)
        return fd_fail(w->e, "bad_schema", "", "schema %s: nested deeper than %d levels",
                       fd_buf_cstr(&w->at), MAX_DEPTH);
    if (sc->t == JV_BOOL) return 0;
    if (sc->t != JV_OBJ)
        return fd_fail(w->e, "bad_schema", "", "schema %s: a schema must be an object or a boolean",
                       fd_buf_cstr(&w->at));
    for (size_t i = 0; i < sc->u.o.n; i++) {
        const char *k = sc->u.o.m[i].k;
        size_t kn = sc->u.o.m[i].klen;
        const jv *v = sc->u.o.m[i].v;
        int ok = 1;
        if (in_set(ANNOTATIONS, k, kn)) continue;
        if (in_set(MAPS, k, kn)) {
            ok = v->t == JV_OBJ;
            for (size_t j = 0; ok && j < v->u.o.n; j++)
                if (walk_sub(w, v->u.o.m[j].v, depth, k, v->u.o.m[j].k, -1)) return -1;
        } else if (in_set(SUBSCHEMAS, k, kn)) {
            if (walk_sub(w, v, depth, k, NULL, -1)) return -1;
        } else if (in_set(LISTS, k, kn)) {
            ok = v->t == JV_ARR && v->u.a.n > 0;
            for (size_t j = 0; ok && j < v->u.a.n; j++)
                if (walk_sub(w, v->u.a.v[j], depth, k, NULL, (long)j)) return -1;
        } else if (is(k, kn, "type")) {
            ok = v->t == JV_STR ? in_set(TYPES, v->u.s.p, v->u.s.n) : str_list(v, 1);
        } else if (is(k, kn, "required")) {
            ok = str_list(v, 0);
        } else if (is(k, kn, "enum") || is(k, kn, "const")) {
            ok = v->t == JV_ARR || is(k, kn, "const");
        } else if (in_set(COUNTS, k, kn)) {
            ok = v->t == JV_INT && v->u.i >= 0;
        } else if (is(k, kn, "minimum") || is(k, kn, "maximum")) {
            ok = jv_is_num(v);
        } else if (is(k, kn, "pattern")) {
            if ((ok = v->t == JV_STR) && compile_pattern(w, v)) return -1;
        } else if (is(k, kn, "$ref")) {
            ok = ref_ok(w->s, v);
        } else {
            return fd_fail(w->e, "bad_schema", "", "unsupported schema keyword '%s' at %s", k,
                           fd_buf_cstr(&w->at));
        }
        if (!ok)
            return fd_fail(w->e, "bad_schema", "", "schema %s: invalid value for keyword '%s'",
                           fd_buf_cstr(&w->at), k);
    }
    return 0;
}

fd_schema *fd_schema_new(const jv *root, fd_err *e)
{
    fd_schema *s = fd_xcalloc(1, sizeof *s);
    s->root = root;
    s->defs = jv_get(root, "$defs");
    W w = {s, {0}, e};
    fd_buf_putc(&w.at, '#');
    if (walk(&w, root, 0)) {
        fd_schema_free(s);
        s = NULL;
    }
    fd_buf_free(&w.at);
    return s;
}

void fd_schema_free(fd_schema *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->npats; i++) pcre2_code_free(s->pats[i].re);
    free(s->pats);
    free(s);
}

/* ------------------------------------------------------------ values */

/* Python repr(), so messages read like the Python tool's. */
static void repr_str(fd_buf *b, const char *s, size_t n)
{
    char q = memchr(s, '\'', n) && !memchr(s, '"', n) ? '"' : '\'';
    fd_buf_putc(b, q);
    for (size_t i = 0; i < n; i++) {
        unsigned c = (unsigned char)s[i], cp = c;
        if (c == 0xC2 && i + 1 < n && (unsigned char)s[i + 1] < 0xA0) cp = (unsigned char)s[++i];
        if (c == '\\' || c == (unsigned char)q) { fd_buf_putc(b, '\\'); fd_buf_putc(b, (char)c); }
        else if (c == '\n') fd_buf_puts(b, "\\n");
        else if (c == '\r') fd_buf_puts(b, "\\r");
        else if (c == '\t') fd_buf_puts(b, "\\t");
        else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) fd_buf_printf(b, "\\x%02x", cp);
        else fd_buf_putc(b, (char)c);
    }
    fd_buf_putc(b, q);
}

static void repr(fd_buf *b, const jv *v, size_t stop)
{
    char tmp[40];
    int n;
    switch (v->t) {
    case JV_NULL: fd_buf_puts(b, "None"); break;
    case JV_BOOL: fd_buf_puts(b, v->u.b ? "True" : "False"); break;
    case JV_INT: fd_buf_printf(b, "%lld", (long long)v->u.i); break;
    case JV_BIGINT: fd_buf_put(b, v->u.s.p, v->u.s.n); break;
    case JV_FLOAT:
        n = fd_pyfloat_repr(v->u.f, tmp, sizeof tmp);
        fd_buf_put(b, n > 0 ? tmp : "nan", n > 0 ? (size_t)n : 3);
        break;
    case JV_STR: repr_str(b, v->u.s.p, v->u.s.n); break;
    case JV_ARR: case JV_OBJ: {
        int o = v->t == JV_OBJ;
        fd_buf_putc(b, o ? '{' : '[');
        for (size_t i = 0; i < (o ? v->u.o.n : v->u.a.n) && b->n < stop; i++) {
            if (i) fd_buf_puts(b, ", ");
            if (o) {
                repr_str(b, v->u.o.m[i].k, v->u.o.m[i].klen);
                fd_buf_puts(b, ": ");
            }
            repr(b, o ? v->u.o.m[i].v : v->u.a.v[i], stop);
        }
        fd_buf_putc(b, o ? '}' : ']');
        break;
    }
    }
}

static void repr_short(fd_buf *b, const jv *v)
{
    size_t start = b->n, cut = start + REPR_MAX;
    repr(b, v, cut);
    if (b->n <= cut) return;
    while (cut > start && ((unsigned char)b->p[cut] & 0xC0) == 0x80) cut--;
    b->n = cut;
    fd_buf_puts(b, "...");
}

/* Exact comparison across int64, bigint and double, as Python compares an
 * int with a float: neither side is rounded. */
static int deccmp(const char *a, const char *b)
{
    int na = *a == '-', nb = *b == '-';
    if (na != nb) return na ? -1 : 1;
    a += na;
    b += nb;
    size_t la = strlen(a), lb = strlen(b);
    int r = la != lb ? (la < lb ? -1 : 1) : strcmp(a, b);
    r = (r > 0) - (r < 0);
    return na ? -r : r;
}

static const char *digits_of(const jv *v, char *buf, size_t cap)
{
    if (v->t == JV_BIGINT) return v->u.s.p;
    snprintf(buf, cap, "%lld", (long long)v->u.i);
    return buf;
}

static int numcmp(const jv *a, const jv *b)
{
    char ba[32], bb[400];
    if (a->t == JV_INT && b->t == JV_INT) return (a->u.i > b->u.i) - (a->u.i < b->u.i);
    if (a->t == JV_FLOAT && b->t == JV_FLOAT) return (a->u.f > b->u.f) - (a->u.f < b->u.f);
    if (a->t != JV_FLOAT && b->t != JV_FLOAT)
        return deccmp(digits_of(a, ba, sizeof ba), digits_of(b, bb, sizeof bb));
    int flip = a->t == JV_FLOAT;
    if (flip) { const jv *t = a; a = b; b = t; }
    const char *d = digits_of(a, ba, sizeof ba);
    double x = strtod(d, NULL), f = b->u.f;
    int r;
    /* Rounding is monotonic, so a strict order between the rounded integer
     * and f is the true order; on a tie f is integral and printable exactly. */
    if (x != f) r = x < f ? -1 : 1;
    else if (f == 0) r = 0;
    else {
        snprintf(bb, sizeof bb, "%.0f", f);
        r = deccmp(d, bb);
    }
    return flip ? -r : r;
}

/* JSON Schema equality: numbers by value (1 == 1.0), booleans distinct. */
static int veq(const jv *a, const jv *b)
{
    int an = jv_is_num(a), bn = jv_is_num(b);
    if (an || bn) return an && bn && numcmp(a, b) == 0;
    if (a->t != b->t) return 0;
    switch (a->t) {
    case JV_BOOL: return a->u.b == b->u.b;
    case JV_STR: return a->u.s.n == b->u.s.n && !memcmp(a->u.s.p, b->u.s.p, a->u.s.n);
    case JV_ARR:
        if (a->u.a.n != b->u.a.n) return 0;
        for (size_t i = 0; i < a->u.a.n; i++)
            if (!veq(a->u.a.v[i], b->u.a.v[i])) return 0;
        return 1;
    case JV_OBJ:
        if (a->u.o.n != b->u.o.n) return 0;
        for (size_t i = 0; i < a->u.o.n; i++) {
            const jv_member *x = &a->u.o.m[i], *y = &b->u.o.m[i];
            if (x->klen != y->klen || memcmp(x->k, y->k, x->klen) || !veq(x->v, y->v)) return 0;
        }
        return 1;
    default: return 1;
    }
}

static int has_type(const jv *v, const char *t)
{
    switch (v->t) {
    case JV_NULL: return !strcmp(t, "null");
    case JV_BOOL: return !strcmp(t, "boolean");
    case JV_INT: case JV_BIGINT: return !strcmp(t, "integer") || !strcmp(t, "number");
    /* The Python validators (and the spec) count 1.0 as an integer. */
    case JV_FLOAT: return !strcmp(t, "number") || (!strcmp(t, "integer") && v->u.f == floor(v->u.f));
    case JV_STR: return !strcmp(t, "string");
    case JV_ARR: return !strcmp(t, "array");
    case JV_OBJ: return !strcmp(t, "object");
    }
    return 0;
}

/* ------------------------------------------------------------ validate */

typedef struct {
    const fd_schema *s;
    void (*cb)(void *, const char *);
    void *ctx;
    fd_err *e;
    pcre2_match_data *md;
    fd_buf path, msg;
    int n, quiet, bad;
} V;

/* Message: "<path>: " + repr(a) + mid + repr(b) + tail (a, b optional). */
static void fail(V *c, const jv *a, const char *mid, const jv *b, const char *tail)
{
    c->n++;
    if (c->quiet || !c->cb) return;
    c->msg.n = 0;
    if (c->path.n) fd_buf_put(&c->msg, c->path.p, c->path.n);
    else fd_buf_puts(&c->msg, "<root>");
    fd_buf_puts(&c->msg, ": ");
    if (a) repr_short(&c->msg, a);
    fd_buf_puts(&c->msg, mid);
    if (b) repr_short(&c->msg, b);
    fd_buf_puts(&c->msg, tail);
    c->cb(c->ctx, fd_buf_cstr(&c->msg));
}

static void internal(V *c, const char *what)
{
    if (!c->bad) fd_fail(c->e, "bad_schema", "", "schema validation at %s: %s",
                         c->path.n ? fd_buf_cstr(&c->path) : "<root>", what);
    c->bad = 1;
}

static int matches(V *c, const jv *p, const jv *in)
{
    const pcre2_code *re = NULL;
    for (size_t i = 0; i < c->s->npats && !re; i++)
        if (c->s->pats[i].src == p) re = c->s->pats[i].re;
    if (!re) { internal(c, "pattern was not compiled"); return 1; }
    int r = pcre2_match(re, (PCRE2_SPTR)in->u.s.p, in->u.s.n, 0, 0, c->md, NULL);
    if (r >= 0 || r == PCRE2_ERROR_NOMATCH) return r >= 0;
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(r, msg, sizeof msg);
    internal(c, (const char *)msg);
    return 1;
}

static void check(V *c, const jv *in, const jv *sc, int depth);

static void check_at(V *c, const jv *in, const jv *sc, int depth, const char *k, size_t kn, long idx)
{
    size_t n0 = c->path.n;
    if (k) {
        if (n0) fd_buf_putc(&c->path, '.');
        fd_buf_put(&c->path, k, kn);
    } else {
        fd_buf_printf(&c->path, "[%ld]", idx);
    }
    check(c, in, sc, depth + 1);
    c->path.n = n0;
}

/* Validates without reporting: oneOf branches and `if` must not leak errors. */
static int silent_ok(V *c, const jv *in, const jv *sc, int depth)
{
    int n0 = c->n, q0 = c->quiet;
    c->n = 0;
    c->quiet = 1;
    check(c, in, sc, depth + 1);
    int ok = c->n == 0;
    c->n = n0;
    c->quiet = q0;
    return ok;
}

static size_t codepoints(const jv *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->u.s.n; i++) n += ((unsigned char)s->u.s.p[i] & 0xC0) != 0x80;
    return n;
}

static void check_obj(V *c, const jv *in, const jv *sc, int depth)
{
    const jv *req = jv_get(sc, "required"), *props = jv_get(sc, "properties"),
             *ap = jv_get(sc, "additionalProperties");
    for (size_t i = 0; req && i < req->u.a.n; i++)
        if (!jv_get(in, req->u.a.v[i]->u.s.p)) fail(c, req->u.a.v[i], " is a required property", NULL, "");
    for (size_t i = 0; i < in->u.o.n; i++) {
        const jv_member *m = &in->u.o.m[i];
        /* A key with an embedded NUL must not alias a shorter declared name. */
        const jv *sub = props && strlen(m->k) == m->klen ? jv_get(props, m->k) : NULL;
        if (!sub && ap && ap->t == JV_BOOL && !ap->u.b) {
            jv key = {.t = JV_STR, .u.s = {m->k, m->klen}};
            fail(c, NULL, "Additional properties are not allowed (", &key, " was unexpected)");
            continue;
        }
        if (!sub) sub = ap;
        if (sub) check_at(c, m->v, sub, depth, m->k, m->klen, 0);
    }
}

static void check(V *c, const jv *in, const jv *sc, int depth)
{
    const jv *k;
    if (c->bad || (c->quiet && c->n)) return;
    if (depth > MAX_DEPTH) { internal(c, "schema recursion deeper than 64 levels (cyclic $ref?)"); return; }
    if (sc->t == JV_BOOL) {
        if (!sc->u.b) fail(c, NULL, "False schema does not allow ", in, "");
        return;
    }
    if ((k = jv_get(sc, "$ref"))) check(c, in, jv_get(c->s->defs, k->u.s.p + 8), depth + 1);
    if ((k = jv_get(sc, "type"))) {
        int ok = k->t == JV_STR && has_type(in, k->u.s.p);
        for (size_t i = 0; k->t == JV_ARR && i < k->u.a.n; i++) ok |= has_type(in, k->u.a.v[i]->u.s.p);
        if (!ok) fail(c, in, " is not of type ", k, "");
    }
    if ((k = jv_get(sc, "enum"))) {
        int ok = 0;
        for (size_t i = 0; i < k->u.a.n && !ok; i++) ok = veq(in, k->u.a.v[i]);
        if (!ok) fail(c, in, " is not one of ", k, "");
    }
    if ((k = jv_get(sc, "const")) && !veq(in, k)) fail(c, in, " != const ", k, "");
    if (in->t == JV_STR) {
        if ((k = jv_get(sc, "minLength")) && codepoints(in) < (size_t)k->u.i)
            fail(c, in, " is shorter than minLength ", k, "");
        if ((k = jv_get(sc, "pattern")) && !matches(c, k, in)) fail(c, in, " does not match ", k, "");
    }
    if (jv_is_num(in) && (k = jv_get(sc, "minimum")) && numcmp(in, k) < 0)
        fail(c, in, " is less than the minimum of ", k, "");
    if (jv_is_num(in) && (k = jv_get(sc, "maximum")) && numcmp(in, k) > 0)
        fail(c, in, " is greater than the maximum of ", k, "");
    if (in->t == JV_OBJ) check_obj(c, in, sc, depth);
    if (in->t == JV_ARR) {
        if ((k = jv_get(sc, "minItems")) && in->u.a.n < (size_t)k->u.i)
            fail(c, in, " has fewer than minItems ", k, "");
        if ((k = jv_get(sc, "maxItems")) && in->u.a.n > (size_t)k->u.i)
            fail(c, in, " has more than maxItems ", k, "");
        if ((k = jv_get(sc, "items")))
            for (size_t i = 0; i < in->u.a.n; i++) check_at(c, in->u.a.v[i], k, depth, NULL, 0, (long)i);
    }
    if ((k = jv_get(sc, "allOf")))
        for (size_t i = 0; i < k->u.a.n; i++) check(c, in, k->u.a.v[i], depth + 1);
    if ((k = jv_get(sc, "oneOf"))) {
        int n = 0;
        for (size_t i = 0; i < k->u.a.n && n < 2; i++) n += silent_ok(c, in, k->u.a.v[i], depth);
        if (n == 0) fail(c, in, " is not valid under any of the given schemas", NULL, "");
        if (n > 1) fail(c, in, " is valid under more than one of the given schemas", NULL, "");
    }
    if ((k = jv_get(sc, "if")) && (jv_get(sc, "then") || jv_get(sc, "else"))) {
        const jv *br = jv_get(sc, silent_ok(c, in, k, depth) ? "then" : "else");
        if (br) check(c, in, br, depth + 1);
    }
}

int fd_schema_validate(fd_schema *s, const jv *instance,
                       void (*cb)(void *ctx, const char *message), void *ctx, fd_err *e)
{
    V c = {.s = s, .cb = cb, .ctx = ctx, .e = e};
    /* One pair is enough: only match/no-match matters. */
    if (!(c.md = pcre2_match_data_create(1, NULL)))
        return fd_fail(e, "bad_schema", "", "schema validation: out of memory");
    check(&c, instance, s->root, 0);
    pcre2_match_data_free(c.md);
    fd_buf_free(&c.path);
    fd_buf_free(&c.msg);
    return c.bad ? -1 : c.n;
}
