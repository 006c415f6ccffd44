/* The generic forward over the architecture table (engine/model.h). */
#include "engine/model.h"
#include "format/npy.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fd_fwd {
    const fd_arch *a;
    void *st;
};

void fd_arch_layer_prefix(const fd_arch *a, long long L, char *out, size_t cap)
{
    snprintf(out, cap, "%slayers.%lld.", a->prefix, L);
}

void fd_arch_prefix(const fd_arch *a, const char *what, char *out, size_t cap)
{
    if (a->final_name && !strcmp(what, "norm")) what = a->final_name;
    snprintf(out, cap, "%s%s.", a->prefix, what);
}

fd_fwd *fd_forward_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    void *st = c->arch->begin(w, c, ids, S, e);
    if (!st) return NULL;
    fd_fwd *f = fd_xcalloc(1, sizeof *f);
    f->a = c->arch;
    f->st = st;
    return f;
}

/* FIDELITY_FORWARD_INJECT=L:PATH (tests/parity/layer_parity.py --inject):
 * before layer L of every forward, the residual stream (fd_arch.stream) is
 * replaced by PATH, a .npy of that many uint16/int16 elements holding bf16
 * bits ([S, H]; glm5_next [S, hc_mult, H]): transformers' own input of layer
 * L, so our layer L is judged on it alone.  Unset or empty: nothing happens;
 * anything unusable is refused (bad_usage) naming the file and the reason. */
static int inject(const fd_fwd *f, const fd_glm_config *c, long long L, fd_err *e)
{
    const char *spec = getenv("FIDELITY_FORWARD_INJECT");
    if (!spec || !*spec) return 0;
    char *end;
    long long at = strtoll(spec, &end, 10);
    if (end == spec || *end != ':' || !end[1] || at < 0)
        return fd_fail(e, "bad_usage", "", "FIDELITY_FORWARD_INJECT: '%.200s' is not LAYER:PATH", spec);
    if (at != L) return 0;
    const char *path = end + 1;
    if (!f->a->stream)
        return fd_fail(e, "bad_usage", "", "FIDELITY_FORWARD_INJECT: architecture %s has no injectable stream",
                       f->a->info.model_type);
    size_t n;
    uint16_t *x = f->a->stream(c, f->st, &n);
    fd_buf b = {0};
    char descr[16];
    uint64_t shape[4];
    int ndim;
    size_t off;
    int rc = fd_read_file(path, n * 2 + 65536, &b, e);
    if (!rc) rc = fd_npy_parse((const unsigned char *)b.p, b.n, descr, shape, &ndim, &off, e);
    if (!rc) {
        uint64_t cnt = 1;
        for (int d = 0; d < ndim; d++) cnt *= shape[d];
        if (strcmp(descr, "<u2") && strcmp(descr, "<i2"))
            rc = fd_fail(e, "bad_usage", "", "%s: dtype %s, not <u2/<i2 (bf16 bits)", path, descr);
        else if (cnt != n || b.n - off != n * 2)
            rc = fd_fail(e, "bad_usage", "", "%s: %llu elements, layer %lld's stream has %zu", path,
                         (unsigned long long)cnt, L, n);
        else memcpy(x, b.p + off, n * 2);
    }
    if (rc) fd_err_prefix(e, "FIDELITY_FORWARD_INJECT");
    fd_buf_free(&b);
    return rc;
}

int fd_forward_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, fd_fwd *f, fd_err *e)
{
    if (inject(f, c, L, e)) return -1;
    return f->a->layer(m, w, c, L, f->st, e);
}

int fd_forward_end(const fd_weights *w, const fd_glm_config *c, fd_fwd *f, uint16_t *out_bf16, fd_err *e)
{
    return f->a->end(w, c, f->st, out_bf16, e);
}

void fd_forward_free(fd_fwd *f)
{
    if (!f) return;
    f->a->free_state(f->st);
    free(f);
}

int fd_forward_hidden(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S,
                      uint16_t *out_bf16, fd_err *e)
{
    fd_fwd *f = fd_forward_begin(w, c, ids, S, e);
    if (!f) return -1;
    int rc = 0;
    for (long long L = 0; L < c->num_hidden_layers && !rc; L++) rc = fd_forward_layer(m, w, c, L, f, e);
    if (!rc) rc = fd_forward_end(w, c, f, out_bf16, e);
    fd_forward_free(f);
    return rc;
}

/* ------------------------------------------------------------ config.json */

/* the architecture named by model_type (engine/model.h's table) parses the rest */
static int parse(const jv *d, fd_glm_config *c, fd_err *e)
{
    if (!d || d->t != JV_OBJ) return fd_fail(e, "bad_config", "", "config is not a JSON object");
    const jv *mt = jv_get(d, "model_type");
    if (!mt) return fd_fail(e, "bad_config", "", "config field model_type: is missing");
    if (mt->t != JV_STR) return fd_fail(e, "bad_config", "", "config field model_type: is not a string");
    const fd_arch *a = fd_arch_of(mt->u.s.p);
    if (!a) {
        char names[256];
        fd_arch_names(names, sizeof names);
        return fd_fail(e, "unsupported_model_type", "", "model_type \"%.200s\" is not supported (%s)", mt->u.s.p, names);
    }
    c->arch = a;
    return a->parse(d, c, e);
}

int fd_glm_config_from_json(const jv *doc, fd_glm_config *c, fd_err *e)
{
    memset(c, 0, sizeof *c);
    if (parse(doc, c, e)) {
        fd_glm_config_free(c);
        return -1;
    }
    return 0;
}

int fd_glm_config_load(const char *path, fd_glm_config *c, fd_err *e)
{
    memset(c, 0, sizeof *c);
    size_t n = strlen(path);
    char *p = n > 5 && !strcmp(path + n - 5, ".json") ? fd_xstrdup(path) : fd_path_join(path, "config.json");
    jv *doc = jv_parse_file(p, e);
    int rc = -1;
    if (doc) {
        rc = fd_glm_config_from_json(doc, c, e);
        if (rc && !strcmp(e->code, "bad_config")) fd_err_prefix(e, p);
    }
    jv_free(doc);
    free(p);
    return rc;
}

void fd_glm_config_free(fd_glm_config *c)
{
    free(c->mlp_sparse);
    free(c->indexer_full);
    c->mlp_sparse = c->indexer_full = NULL;
    if (c->arch && c->arch->free_ext) c->arch->free_ext(c->ext);
    c->ext = NULL;
}

