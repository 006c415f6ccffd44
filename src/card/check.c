/* card --check: the card re-read (libyaml), then held against the receipts
 * it cites: GEN-2/7/9 and XC-1/2/3 by name, then every value of both layers
 * equal to what the receipts rebuild to. */
#include "card.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first path where a and b differ, into path. */
static int diff(const jv *a, const jv *b, fd_buf *path)
{
    if (!a || !b) return a != b;
    if (a->t == JV_OBJ && b->t == JV_OBJ) {
        for (size_t i = 0; i < a->u.o.n; i++) {
            size_t n = path->n;
            fd_buf_printf(path, ".%s", a->u.o.m[i].k);
            if (diff(a->u.o.m[i].v, jv_get(b, a->u.o.m[i].k), path)) return 1;
            path->n = n;
        }
        for (size_t i = 0; i < b->u.o.n; i++)
            if (!jv_get(a, b->u.o.m[i].k)) { fd_buf_printf(path, ".%s", b->u.o.m[i].k); return 1; }
        return 0;
    }
    if (a->t == JV_ARR && b->t == JV_ARR && a->u.a.n == b->u.a.n) {
        for (size_t i = 0; i < a->u.a.n; i++) {
            size_t n = path->n;
            fd_buf_printf(path, "[%zu]", i);
            if (diff(a->u.a.v[i], b->u.a.v[i], path)) return 1;
            path->n = n;
        }
        return 0;
    }
    return !jv_equal(a, b);
}

static int null_in_args(const jv *v)
{
    if (!v) return 0;
    if (v->t == JV_OBJ) {
        for (size_t i = 0; i < v->u.o.n; i++) {
            const jv *c = v->u.o.m[i].v;
            if (!strcmp(v->u.o.m[i].k, "args") && c->t == JV_OBJ)
                for (size_t k = 0; k < c->u.o.n; k++) if (c->u.o.m[k].v->t == JV_NULL) return 1;
            if (null_in_args(c)) return 1;
        }
    } else if (v->t == JV_ARR)
        for (size_t i = 0; i < v->u.a.n; i++) if (null_in_args(v->u.a.v[i])) return 1;
    return 0;
}

static int structural(const jv *mi, const jv *x, fd_err *e)
{
    if (!mi || mi->t != JV_ARR || mi->u.a.n != 1)
        return fd_fail(e, "card_mismatch", "GEN-2", "model-index must hold exactly one entry");
    const jv *res = jv_get(mi->u.a.v[0], "results"), *ms = jv_get(x, "measurements");
    if (!res || res->t != JV_ARR || !ms || ms->t != JV_ARR || res->u.a.n != ms->u.a.n)
        return fd_fail(e, "card_mismatch", "XC-3", "model-index results and x_fidelity.measurements are not 1:1");
    if (null_in_args(mi)) return fd_fail(e, "card_mismatch", "GEN-9", "a null value inside an args block");
    for (size_t i = 0; i < res->u.a.n; i++) {
        const jv *r = res->u.a.v[i], *m = ms->u.a.v[i], *kl = NULL, *mets = jv_get(r, "metrics");
        if (jv_get(r, "verified") || jv_get(r, "verifyToken"))
            return fd_fail(e, "card_mismatch", "GEN-7", "result %zu sets verified/verifyToken (Hub-controlled)", i);
        for (size_t k = 0; mets && mets->t == JV_ARR && k < mets->u.a.n; k++) {
            const char *t = jv_get_str(mets->u.a.v[k], "type");
            if (t && !strcmp(t, "kl_divergence")) kl = mets->u.a.v[k];
        }
        const char *split = jv_get_str(jv_get(r, "dataset"), "split"), *lane = jv_get_str(m, "lane");
        if (!split || !lane || strcmp(split, lane))
            return fd_fail(e, "card_mismatch", "XC-2", "result %zu: dataset.split %s is not the lane %s", i,
                           split ? split : "None", lane ? lane : "None");
        const char *mid = jv_get_str(jv_get(kl, "args"), "measurement_id"), *id = jv_get_str(m, "id");
        if (!kl || !jv_equal(jv_get(kl, "value"), jv_get(m, "value")) || !mid || !id || strcmp(mid, id))
            return fd_fail(e, "card_mismatch", "XC-1", "result %zu: the kl_divergence value/id differs from "
                           "x_fidelity.measurements[%zu]", i, i);
    }
    return 0;
}

int fd_card_check(const char *card_path, const fd_card_opts *o, fd_err *e)
{
    fd_buf text = {0};
    jv *front = NULL, *mi = NULL, *x = NULL, *top = NULL;
    const char **order = NULL;
    int rc = -1;
    size_t body;
    if (fd_read_file(card_path, 16 << 20, &text, e) || fd_card_split(text.p, text.n, &front, &body, e)) goto out;
    if (!front) { fd_fail(e, "card_invalid", "YAML", "%s: no front matter", card_path); goto out; }
    const jv *cmi = jv_get(front, "model-index"), *cx = jv_get(front, "x_fidelity");
    if (!cx || cx->t != JV_OBJ) { fd_fail(e, "card_invalid", "YAML", "%s: no x_fidelity block", card_path); goto out; }
    if (structural(cmi, cx, e)) goto out;
    /* XC-3: the receipts given are exactly the receipts cited, taken in the card's order */
    const jv *ms = jv_get(cx, "measurements");
    if (ms->u.a.n != o->nreceipts) {
        fd_fail(e, "card_mismatch", "XC-3", "%s cites %zu receipt(s); %zu given", card_path, ms->u.a.n, o->nreceipts);
        goto out;
    }
    order = fd_xcalloc(o->nreceipts + 1, sizeof *order);
    for (size_t i = 0; i < ms->u.a.n; i++) {
        const char *want = jv_get_str(ms->u.a.v[i], "receipt_sha256");
        for (size_t k = 0; want && k < o->nreceipts && !order[i]; k++) {
            fd_err pe;
            jv *r = jv_parse_file(o->receipts[k], &pe);
            const char *have = r ? jv_get_str(r, "receipt_sha256") : NULL;
            if (have && !strcmp(have, want)) order[i] = o->receipts[k];
            jv_free(r);
        }
        if (!order[i]) {
            fd_fail(e, "card_mismatch", "XC-3", "%s: measurement %zu cites receipt %.64s, which no --receipt holds",
                    card_path, i, want ? want : "None");
            goto out;
        }
    }
    const jv *results = jv_get(cmi->u.a.v[0], "results");
    const jv *ds0 = jv_get(results->u.a.n ? results->u.a.v[0] : NULL, "dataset");
    fd_card_opts ro = {.receipts = order, .nreceipts = o->nreceipts,
                       .model_name = jv_get_str(cmi->u.a.v[0], "name"), .base_model = jv_get_str(front, "base_model"),
                       .panel_repository = jv_get_str(ds0, "type"), .panel_revision = jv_get_str(ds0, "revision")};
    if (fd_card_build(&ro, &mi, &x, &top, e)) goto out;
    fd_buf path = {0};
    fd_buf_puts(&path, "model-index");
    int bad = diff(cmi, mi, &path);
    if (!bad) {
        path.n = 0;
        fd_buf_puts(&path, "x_fidelity");
        bad = diff(cx, x, &path);
    }
    if (bad) fd_fail(e, "card_mismatch", "XC-VALUES", "%s: %s differs from what the cited receipts say", card_path,
                     fd_buf_cstr(&path));
    fd_buf_free(&path);
    if (bad) goto out;
    rc = 0;
out:
    free(order);
    jv_free(front);
    jv_free(mi);
    jv_free(x);
    jv_free(top);
    fd_buf_free(&text);
    return rc;
}
