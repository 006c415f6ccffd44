#include "engine/config.h"
#include "engine/model.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

/* Integer field: absent -> def; null -> refused unless nullable (then *isnull). */
static int get_int(const jv *d, const char *k, int64_t def, int64_t lo, int64_t *out, fd_err *e)
{
    const jv *v = jv_get(d, k);
    if (!v) { *out = def; return 0; }
    if (v->t == JV_NULL) return bad(e, k, "is null");
    if (v->t != JV_INT) return bad(e, k, "is not an integer");
    if (v->u.i < lo || v->u.i > ((int64_t)1 << 40)) {
        char m[96];
        snprintf(m, sizeof m, "value %lld out of range (>= %lld)", (long long)v->u.i, (long long)lo);
        return bad(e, k, m);
    }
    *out = v->u.i;
    return 0;
}

static int get_num(const jv *d, const char *k, double def, double *out, fd_err *e)
{
    const jv *v = jv_get(d, k);
    if (!v) { *out = def; return 0; }
    if (v->t == JV_INT) *out = (double)v->u.i;
    else if (v->t == JV_FLOAT) *out = v->u.f;
    else return bad(e, k, "is not a number");
    return 0;
}

static int get_bool(const jv *d, const char *k, int def, int *out, fd_err *e)
{
    const jv *v = jv_get(d, k);
    if (!v) { *out = def; return 0; }
    if (v->t != JV_BOOL) return bad(e, k, "is not a boolean");
    *out = v->u.b;
    return 0;
}

static int get_str(const jv *d, const char *k, const char *def, char *out, size_t cap, fd_err *e)
{
    const jv *v = jv_get(d, k);
    const char *s = def;
    if (v) {
        if (v->t != JV_STR) return bad(e, k, "is not a string");
        if (v->u.s.n >= cap || memchr(v->u.s.p, 0, v->u.s.n)) return bad(e, k, "string too long");
        s = v->u.s.p;
    }
    snprintf(out, cap, "%s", s);
    return 0;
}

/* A per-layer list of strings: each entry must be a or b; writes 1 for a. */
static int get_types(const jv *v, const char *k, int64_t L, const char *a, const char *b, unsigned char *out, fd_err *e)
{
    if (v->t != JV_ARR) return bad(e, k, "is not a list");
    if ((int64_t)v->u.a.n != L) {
        char m[96];
        snprintf(m, sizeof m, "has %zu entries, num_hidden_layers is %lld", v->u.a.n, (long long)L);
        return bad(e, k, m);
    }
    for (size_t i = 0; i < v->u.a.n; i++) {
        const jv *x = v->u.a.v[i];
        if (x->t == JV_STR && !strcmp(x->u.s.p, a)) out[i] = 1;
        else if (x->t == JV_STR && !strcmp(x->u.s.p, b)) out[i] = 0;
        else {
            char m[96];
            snprintf(m, sizeof m, "entry %zu is not \"%s\" or \"%s\"", i, a, b);
            return bad(e, k, m);
        }
    }
    return 0;
}

int64_t fd_glm_config_count_full(const fd_glm_config *c)
{
    int64_t n = 0;
    for (int64_t i = 0; i < c->num_hidden_layers; i++) n += c->indexer_full[i];
    return n;
}

int64_t fd_glm_config_count_sparse(const fd_glm_config *c)
{
    int64_t n = 0;
    for (int64_t i = 0; i < c->num_hidden_layers; i++) n += c->mlp_sparse[i];
    return n;
}

int fd_cfg_is_dsa_layer(const char *s)
{
    return !strcmp(s, "indexed_attention") || !strcmp(s, "deepseek_sparse_attention") || !strcmp(s, "full_attention");
}

int fd_cfg_int(const jv *d, const char *k, int64_t def, int64_t lo, int64_t *out, fd_err *e)
{
    return get_int(d, k, def, lo, out, e);
}
int fd_cfg_num(const jv *d, const char *k, double def, double *out, fd_err *e) { return get_num(d, k, def, out, e); }
int fd_cfg_bool(const jv *d, const char *k, int def, int *out, fd_err *e) { return get_bool(d, k, def, out, e); }
int fd_cfg_str(const jv *d, const char *k, const char *def, char *out, size_t cap, fd_err *e)
{
    return get_str(d, k, def, out, cap, e);
}
int fd_cfg_types(const jv *v, const char *k, int64_t L, const char *a, const char *b, unsigned char *out, fd_err *e)
{
    return get_types(v, k, L, a, b, out, e);
}
