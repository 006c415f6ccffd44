#include "observed.h"
#include "format/npy.h"
#include "format/paths.h"
#include "util/fsio.h"
#include <stdlib.h>
#include <string.h>

enum { TOKENS_MAX = 64u << 20, NPY_HEADER_MAX = 1u << 16 };

/* reads a root-relative pointer (confined, regular file, bounded) */
static int read_rel(const fd_side *s, const char *rel, size_t max, fd_buf *b, fd_err *e)
{
    if (!rel || !*rel) return fd_fail(e, "bad_panel_tokens", "tokens", "%s: a panel record has no token file", s->root);
    if (fd_check_relpath(rel, "panel record", 0, e)) return -1;
    char *full = fd_path_join(s->root, rel);
    int rc = 0;
    if (!fd_is_file(full)) rc = fd_fail(e, "bad_panel_tokens", "tokens", "%s is not a regular file", full);
    else if (fd_read_file(full, max, b, e)) rc = -1;
    free(full);
    return rc;
}

/* the 0/1 mask of a window of n ids into m (all ones when the record has none) */
static int read_mask(const fd_side *s, const jv *prec, size_t n, unsigned char *m, fd_err *e)
{
    const char *mf = jv_get_str(prec, "attention_mask_file");
    memset(m, 1, n);
    if (!mf || !*mf) return 0;
    fd_buf b = {0};
    if (read_rel(s, mf, n * 8 + NPY_HEADER_MAX, &b, e)) { free(b.p); return -1; }
    char descr[16];
    uint64_t shape[4];
    int ndim = 0;
    size_t off = 0, w = 0;
    int rc = fd_npy_parse((const unsigned char *)b.p, b.n, descr, shape, &ndim, &off, e);
    if (!rc) {
        w = !strcmp(descr, "<i8") ? 8 : !strcmp(descr, "<i4") ? 4 : (!strcmp(descr, "|b1") || !strcmp(descr, "|u1")) ? 1 : 0;
        if (!w || ndim != 1 || shape[0] != n || b.n - off != n * w)
            rc = fd_fail(e, "bad_panel_tokens", "tokens", "%s/%s: not a 1-D 0/1 mask of %zu elements", s->root, mf, n);
    }
    for (size_t i = 0; !rc && i < n; i++) {
        const unsigned char *d = (const unsigned char *)b.p + off + i * w;
        int nz = 0;
        for (size_t k = 0; k < w; k++) nz |= d[k] != 0;
        m[i] = (unsigned char)nz;
    }
    free(b.p);
    return rc;
}

int fd_observed_tokens(const fd_side *s, const int64_t *shared, size_t nshared, size_t npos, uint32_t **out, fd_err *e)
{
    return fd_observed_tokens_at(s, shared, nshared, npos, out, NULL, e);
}

int fd_observed_tokens_at(const fd_side *s, const int64_t *shared, size_t nshared, size_t npos, uint32_t **out,
                          uint32_t **pos_out, fd_err *e)
{
    int64_t from = 0;
    const jv *sf = jv_get(jv_get(jv_get(s->manifest, "panel"), "scoring_window"), "score_from");
    if (sf && sf->t == JV_INT) from = sf->u.i;
    uint32_t *tok = fd_xmalloc((npos + 1) * sizeof *tok), *at_p = fd_xmalloc((npos + 1) * sizeof *at_p);
    size_t at = 0;
    int rc = 0;
    for (size_t c = 0; c < nshared && !rc; c++) {
        const fd_ctx *x = fd_side_find(s, shared[c]);
        if (!x || !x->panel_rec) {
            rc = fd_fail(e, "bad_panel_tokens", "tokens", "%s: context %lld has no panel record", s->root,
                         (long long)shared[c]);
            break;
        }
        fd_buf b = {0};
        jv *ids = NULL;
        const char *tf = jv_get_str(x->panel_rec, "token_file");
        if (read_rel(s, tf, TOKENS_MAX, &b, e)) rc = -1;
        else if (!(ids = jv_parse(b.p, b.n, e)) || ids->t != JV_ARR || ids->u.a.n < 2)
            rc = fd_fail(e, "bad_panel_tokens", "tokens", "%s/%s: not a JSON array of at least 2 token ids", s->root, tf);
        free(b.p);
        size_t n = rc ? 0 : ids->u.a.n;
        unsigned char *m = fd_xmalloc(n + 1);
        if (!rc) rc = read_mask(s, x->panel_rec, n, m, e);
        int64_t causal = 0, taken = 0;
        for (size_t p = 0; !rc && p + 1 < n && taken < x->rows; p++) {
            if (!(m[p] && m[p + 1])) continue;
            if (causal++ < from) continue;
            const jv *t = ids->u.a.v[p + 1];
            if (t->t != JV_INT || t->u.i < 0 || t->u.i >= s->vocab) {
                rc = fd_fail(e, "token_out_of_range", "tokens", "%s/%s: token %zu is not an id in [0, %lld)", s->root, tf,
                             p + 1, (long long)s->vocab);
                break;
            }
            if (at >= npos) break;
            at_p[at] = (uint32_t)p;
            tok[at++] = (uint32_t)t->u.i;
            taken++;
        }
        if (!rc && taken != x->rows)
            rc = fd_fail(e, "bad_panel_tokens", "tokens", "%s/%s: the mask and score_from %lld give %lld scored positions, "
                         "the record scores %lld rows", s->root, tf, (long long)from, (long long)taken, (long long)x->rows);
        free(m);
        jv_free(ids);
    }
    if (!rc && at != npos)
        rc = fd_fail(e, "bad_panel_tokens", "tokens", "%s: %zu observed tokens for %zu positions", s->root, at, npos);
    if (rc) { free(tok); free(at_p); return -1; }
    *out = tok;
    if (pos_out) *pos_out = at_p;
    else free(at_p);
    return 0;
}
