/* A small block-style YAML emitter for card front matter (PyYAML-like
 * layout).  Strings are written plain only when that cannot be read back as
 * anything else; otherwise single-quoted, or double-quoted with JSON escapes
 * when they hold control characters. */
#include "writer.h"
#include "yaml_resolve.h"
#include <math.h>
#include <string.h>

static int plain_ok(const char *s, size_t n)
{
    static const char *const reserved[] = {"null", "Null", "NULL", "~", "true", "True", "TRUE", "false", "False",
                                           "FALSE", "yes", "Yes", "no", "No", "on", "On", "off", "Off", "y", "n", NULL};
    if (!n) return 0;
    for (const char *const *r = reserved; *r; r++)
        if (strlen(*r) == n && !memcmp(*r, s, n)) return 0;
    int digits = 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.' || c == '/' || c == '@' || (c == ' ' && i && i + 1 < n && s[i + 1] != ' ')))
            return 0;
        if (!((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')) digits = 0;
    }
    if (digits) return 0;                      /* would read back as a number */
    if (s[0] == '-' || s[0] == '.' || s[0] == '@') return 0;
    if (strstr(s, " -") || strstr(s, ": ")) return 0;
    return !fd_yaml_plain_is_typed(s, n);  /* e.g. 0x1F, 1_000, 2026-01-02 */
}

static void scalar(const jv *v, fd_buf *o)
{
    fd_err e;
    if (v->t == JV_FLOAT) { /* PyYAML represent_float: repr, with ".0" before a bare exponent */
        size_t at = o->n;
        jv_dump(v, &JV_CANON, o, &e);
        fd_buf_cstr(o);
        char *ex = strchr(o->p + at, 'e');
        if (ex && !memchr(o->p + at, '.', (size_t)(ex - (o->p + at)))) {
            size_t off = (size_t)(ex - o->p), tail = o->n - off;
            fd_buf_reserve(o, 2);
            memmove(o->p + off + 2, o->p + off, tail);
            memcpy(o->p + off, ".0", 2);
            o->n += 2;
        }
        return;
    }
    if (v->t != JV_STR) { jv_dump(v, &JV_CANON, o, &e); return; }
    const char *s = v->u.s.p;
    size_t n = v->u.s.n;
    int ctrl = 0;
    for (size_t i = 0; i < n; i++) ctrl |= (unsigned char)s[i] < 0x20 || s[i] == 0x7f;
    if (ctrl) { jv_dump(v, &JV_CANON, o, &e); return; }
    if (plain_ok(s, n)) { fd_buf_put(o, s, n); return; }
    fd_buf_putc(o, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'') fd_buf_putc(o, '\'');
        fd_buf_putc(o, s[i]);
    }
    fd_buf_putc(o, '\'');
}

static int is_block(const jv *v) { return (v->t == JV_OBJ && v->u.o.n) || (v->t == JV_ARR && v->u.a.n); }

static void pad(fd_buf *o, int n) { for (int i = 0; i < n; i++) fd_buf_putc(o, ' '); }

static void emit(const jv *v, int indent, fd_buf *o);

static void emit_map_body(const jv *v, int indent, int first_inline, fd_buf *o)
{
    for (size_t i = 0; i < v->u.o.n; i++) {
        if (i || !first_inline) pad(o, indent);
        jv key = {.t = JV_STR, .u.s = {v->u.o.m[i].k, v->u.o.m[i].klen}};
        scalar(&key, o);
        const jv *val = v->u.o.m[i].v;
        if (is_block(val)) {
            fd_buf_puts(o, ":\n");
            emit(val, val->t == JV_ARR ? indent : indent + 2, o);
        } else {
            fd_buf_puts(o, ": ");
            if (val->t == JV_ARR) fd_buf_puts(o, "[]");
            else if (val->t == JV_OBJ) fd_buf_puts(o, "{}");
            else scalar(val, o);
            fd_buf_putc(o, '\n');
        }
    }
}

static void emit(const jv *v, int indent, fd_buf *o)
{
    if (v->t == JV_OBJ) { emit_map_body(v, indent, 0, o); return; }
    for (size_t i = 0; i < v->u.a.n; i++) {
        const jv *it = v->u.a.v[i];
        pad(o, indent);
        fd_buf_puts(o, "- ");
        if (it->t == JV_OBJ && it->u.o.n) emit_map_body(it, indent + 2, 1, o);
        else if (is_block(it)) { fd_buf_putc(o, '\n'); emit(it, indent + 2, o); }
        else {
            if (it->t == JV_ARR) fd_buf_puts(o, "[]");
            else if (it->t == JV_OBJ) fd_buf_puts(o, "{}");
            else scalar(it, o);
            fd_buf_putc(o, '\n');
        }
    }
}

void fd_yaml_emit(const jv *v, fd_buf *out)
{
    if (is_block(v)) emit(v, 0, out);
    else { scalar(v, out); fd_buf_putc(out, '\n'); }
}
