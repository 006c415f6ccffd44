/* A libyaml event parser into jv, typed like PyYAML's safe_load (YAML 1.1
 * implicit resolvers) so a card reads back here as it does in Python. */
#include "card.h"
#include "format/yaml_resolve.h"
#include <math.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64

/* PyYAML construct_yaml_int: '_' dropped, 0b binary, 0x hex, a leading 0
 * octal; the sexagesimal form is refused (nobody means it in a card). */
static jv *int_value(const char *s, size_t n, fd_err *e)
{
    char buf[128];
    size_t w = 0, i = 0;
    int neg = 0;
    if (s[0] == '-' || s[0] == '+') { neg = s[0] == '-'; i = 1; }
    for (; i < n && w + 1 < sizeof buf; i++) if (s[i] != '_') buf[w++] = s[i];
    buf[w] = 0;
    int base = 10;
    const char *digits = buf;
    if (strchr(buf, ':')) { fd_fail(e, "card_invalid", "YAML", "sexagesimal integer '%.40s' is not accepted", s); return NULL; }
    if (!strncmp(buf, "0b", 2)) { base = 2; digits = buf + 2; }
    else if (!strncmp(buf, "0x", 2)) { base = 16; digits = buf + 2; }
    else if (buf[0] == '0' && buf[1]) { base = 8; digits = buf + 1; }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(digits, &end, base);
    if (!*digits || *end || errno || v > (unsigned long long)INT64_MAX) {
        fd_fail(e, "card_invalid", "YAML", "integer '%.40s' is out of range", s);
        return NULL;
    }
    return jv_int(neg ? -(int64_t)v : (int64_t)v);
}

static jv *scalar(const yaml_event_t *ev, fd_err *e)
{
    const char *s = (const char *)ev->data.scalar.value;
    size_t n = ev->data.scalar.length;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (tag && strcmp(tag, "tag:yaml.org,2002:str") && strcmp(tag, "!")) {
        fd_fail(e, "card_invalid", "YAML", "line %zu: tag %.60s is not accepted in a card", ev->start_mark.line + 1, tag);
        return NULL;
    }
    if (tag || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return jv_strn(s, n);
    if (fd_yaml_rx(FD_YAML_NULL, s, n)) return jv_null();
    if (fd_yaml_rx(FD_YAML_BOOL, s, n)) return jv_bool(s[0] == 'y' || s[0] == 'Y' || s[0] == 't' || s[0] == 'T' || !strcmp(s, "on") ||
                                          !strcmp(s, "On") || !strcmp(s, "ON"));
    if (fd_yaml_rx(FD_YAML_INT, s, n)) return int_value(s, n, e);
    if (fd_yaml_rx(FD_YAML_FLOAT, s, n)) {
        char buf[128];
        size_t w = 0;
        for (size_t i = 0; i < n && w + 1 < sizeof buf; i++) if (s[i] != '_') buf[w++] = s[i];
        buf[w] = 0;
        char *end;
        double v = strtod(buf, &end);
        if (*end || !isfinite(v) || strchr(buf, ':')) {
            fd_fail(e, "card_invalid", "YAML", "line %zu: float '%.40s' is not a finite decimal", ev->start_mark.line + 1, s);
            return NULL;
        }
        return jv_float(v);
    }
    if (fd_yaml_rx(FD_YAML_TS, s, n) || (n == 2 && !memcmp(s, "<<", 2)) || (n == 1 && s[0] == '=')) {
        fd_fail(e, "card_invalid", "YAML", "line %zu: '%.40s' (timestamp/merge/value) is not accepted in a card",
                ev->start_mark.line + 1, s);
        return NULL;
    }
    return jv_strn(s, n);
}

typedef struct rd { yaml_parser_t p; fd_err *e; } rd;

static int next(rd *r, yaml_event_t *ev)
{
    if (yaml_parser_parse(&r->p, ev)) return 0;
    return fd_fail(r->e, "card_invalid", "YAML", "line %zu: %s", r->p.problem_mark.line + 1,
                   r->p.problem ? r->p.problem : "malformed YAML");
}

static jv *node(rd *r, yaml_event_t *ev, int depth);

static jv *collection(rd *r, yaml_event_t *start, int depth)
{
    int map = start->type == YAML_MAPPING_START_EVENT;
    const char *tag = (const char *)(map ? start->data.mapping_start.tag : start->data.sequence_start.tag);
    if (tag && strcmp(tag, map ? "tag:yaml.org,2002:map" : "tag:yaml.org,2002:seq")) {
        fd_fail(r->e, "card_invalid", "YAML", "line %zu: tag %.60s is not accepted", start->start_mark.line + 1, tag);
        return NULL;
    }
    if (depth > MAX_DEPTH) { fd_fail(r->e, "card_invalid", "YAML", "nesting deeper than %d", MAX_DEPTH); return NULL; }
    jv *out = map ? jv_obj() : jv_arr();
    for (;;) {
        yaml_event_t ev;
        if (next(r, &ev)) { jv_free(out); return NULL; }
        if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) { yaml_event_delete(&ev); return out; }
        if (!map) {
            jv *v = node(r, &ev, depth + 1);
            yaml_event_delete(&ev);
            if (!v) { jv_free(out); return NULL; }
            jv_push(out, v);
            continue;
        }
        if (ev.type != YAML_SCALAR_EVENT) {
            fd_fail(r->e, "card_invalid", "YAML", "line %zu: a mapping key must be a scalar", ev.start_mark.line + 1);
            yaml_event_delete(&ev);
            jv_free(out);
            return NULL;
        }
        jv *k = scalar(&ev, r->e);
        size_t line = ev.start_mark.line + 1;
        yaml_event_delete(&ev);
        if (!k || k->t != JV_STR) {
            if (k) fd_fail(r->e, "card_invalid", "YAML", "line %zu: a mapping key must be a string", line);
            jv_free(k);
            jv_free(out);
            return NULL;
        }
        if (jv_get(out, k->u.s.p)) {
            fd_fail(r->e, "card_invalid", "YAML", "line %zu: duplicate key '%.60s'", line, k->u.s.p);
            jv_free(k);
            jv_free(out);
            return NULL;
        }
        yaml_event_t vev;
        if (next(r, &vev)) { jv_free(k); jv_free(out); return NULL; }
        jv *v = node(r, &vev, depth + 1);
        yaml_event_delete(&vev);
        if (!v) { jv_free(k); jv_free(out); return NULL; }
        jv_set(out, k->u.s.p, v);
        jv_free(k);
    }
}

static jv *node(rd *r, yaml_event_t *ev, int depth)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        if (ev->data.scalar.anchor) break;
        return scalar(ev, r->e);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if ((ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor)) break;
        return collection(r, ev, depth);
    default:
        break;
    }
    fd_fail(r->e, "card_invalid", "YAML", "line %zu: anchors and aliases are not accepted in a card",
            ev->start_mark.line + 1);
    return NULL;
}

jv *fd_yaml_parse(const char *text, size_t n, fd_err *e)
{
    rd r = {.e = e};
    if (!yaml_parser_initialize(&r.p)) { fd_fail(e, "card_invalid", "YAML", "libyaml did not initialise"); return NULL; }
    yaml_parser_set_input_string(&r.p, (const unsigned char *)text, n);
    jv *doc = NULL;
    yaml_event_t ev;
    int ok = 1, docs = 0;
    while (ok) {
        if (next(&r, &ev)) { ok = 0; break; }
        yaml_event_type_t t = ev.type;
        if (t == YAML_STREAM_END_EVENT) { yaml_event_delete(&ev); break; }
        if (t == YAML_DOCUMENT_START_EVENT && ++docs > 1) {
            fd_fail(e, "card_invalid", "YAML", "more than one YAML document");
            ok = 0;
        } else if (t != YAML_STREAM_START_EVENT && t != YAML_DOCUMENT_START_EVENT && t != YAML_DOCUMENT_END_EVENT) {
            if (!(doc = node(&r, &ev, 0))) ok = 0;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&r.p);
    if (!ok) { jv_free(doc); return NULL; }
    return doc ? doc : jv_null();
}

int fd_card_split(const char *text, size_t n, jv **front, size_t *body_off, fd_err *e)
{
    *front = NULL;
    *body_off = 0;
    /* first line must strip to "---"; the front ends at the next line that does */
    size_t i = 0, line_start = 0;
    int first = 1;
    size_t fstart = 0;
    for (i = 0; i <= n; i++) {
        if (i < n && text[i] != '\n') continue;
        size_t a = line_start, b = i;
        while (a < b && strchr(" \t\r\f\v", text[a])) a++;
        while (b > a && strchr(" \t\r\f\v", text[b - 1])) b--;
        int dashes = b - a == 3 && !memcmp(text + a, "---", 3);
        if (first) {
            if (!dashes || n < 3 || memcmp(text, "---", 3)) return 0;
            first = 0;
            fstart = i + 1;
        } else if (dashes) {
            jv *f = fd_yaml_parse(text + fstart, line_start - fstart, e);
            if (!f) return -1;
            if (f->t == JV_NULL) { jv_free(f); f = jv_obj(); }
            if (f->t != JV_OBJ) { jv_free(f); return fd_fail(e, "card_invalid", "YAML", "the front matter is not a mapping"); }
            *front = f;
            *body_off = i < n ? i + 1 : n;
            return 0;
        }
        line_start = i + 1;
    }
    return 0; /* no closing line: no front matter (as split_card) */
}
