/* compare's output directory: per candidate the sealed receipt,
 * tokenwise-kld.npy (and tokenwise.csv, the --emit-k3-compat summary),
 * staged then renamed into place (compare_internal.h fd_cmp_write_outputs). */
#include "compare_internal.h"
#include "stats.h"
#include "observed.h"
#include "tokstats.h"
#include "format/npy.h"
#include "format/sha.h"
#include "format/version.h"
#include "mpi/dist.h"
#include "util/fsio.h"
#include "util/utc.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The absolute path OUT will have (its parent resolved; OUT itself need not
 * exist yet). */
static char *final_realpath(const char *out, fd_err *e)
{
    char parent[4096];
    const char *base;
    fd_dirname(out, parent, sizeof parent);
    if (!parent[0] && out[0] == '/') snprintf(parent, sizeof parent, "/");
    base = strrchr(out, '/');
    base = base ? base + 1 : out;
    if (parent[0] && fd_mkdirs(parent, e)) return NULL;   /* as capture: OUT's parents are created */
    char *rp = realpath(parent[0] ? parent : ".", NULL);
    if (!rp) { fd_fail(e, "unwritable", "", "%s: %s", parent[0] ? parent : ".", strerror(errno)); return NULL; }
    char *r = fd_path_join(rp, base);
    free(rp);
    return r;
}

/* Moves the complete staging directory into place: the only moment OUT
 * appears (or, with --force, changes).  An existing OUT is first renamed
 * aside, so a failure in between leaves the old one or the new one whole. */
static int commit_out(const char *stage, const char *out, fd_err *e)
{
    struct stat sb;
    if (lstat(out, &sb) == 0) {
        fd_buf old = {0};
        fd_buf_printf(&old, "%s.old-%ld", out, (long)getpid());
        fd_rmtree(old.p);
        if (rename(out, old.p)) {
            fd_fail(e, "unwritable", "", "%s: cannot move the existing destination aside: %s", out, strerror(errno));
            fd_buf_free(&old);
            return -1;
        }
        if (rename(stage, out)) {
            fd_fail(e, "unwritable", "", "%s: %s", out, strerror(errno));
            if (rename(old.p, out)) {}
            fd_buf_free(&old);
            return -1;
        }
        fd_rmtree(old.p);
        fd_buf_free(&old);
        return 0;
    }
    return rename(stage, out) ? fd_fail(e, "unwritable", "", "%s: %s", out, strerror(errno)) : 0;
}

/* --csv: tokenwise.csv, one row per scored position (docs/COMPARE-IMPL.md); the
 * hash proof's rows are its asserted zeros.  Not part of the sealed receipt. */
static int write_csv(const fd_side *ref, const cand_run *c, const char *dir, fd_err *e)
{
    fd_buf b = {0};
    fd_buf_printf(&b, "context,row,position,token_id,kl,reverse_kl,delta_p,p_reference,p_candidate,top1_match,"
                      "top1_reference,top1_candidate\n");
    size_t at = 0;
    int lp = c->compute && c->r.lp_ref;
    for (size_t k = 0; k < c->g.nshared; k++) {
        const fd_ctx *x = fd_side_find(ref, c->g.shared[k]);
        for (int64_t q = 0; q < x->rows; q++, at++) {
            fd_buf_printf(&b, "%lld,%lld,%u,%u,%.17g,%.17g,", (long long)x->index, (long long)q, c->obs_pos[at], c->obs[at],
                          c->kl[at], c->compute ? c->r.rkl[at] : 0.0);
            if (lp) {
                double pr = fd_exp_canonical(c->r.lp_ref[at] > 0 ? 0.0 : c->r.lp_ref[at]);
                double pc = fd_exp_canonical(c->r.lp_cand[at] > 0 ? 0.0 : c->r.lp_cand[at]);
                fd_buf_printf(&b, "%.17g,%.17g,%.17g,", pc - pr, pr, pc);
            } else fd_buf_printf(&b, "0,,,");
            fd_buf_printf(&b, "%d,", c->top1[at] ? 1 : 0);
            if (lp && c->r.topk_ref && c->r.topk_cand)
                fd_buf_printf(&b, "%u,%u\n", c->r.topk_ref[at * FD_TOPK], c->r.topk_cand[at * FD_TOPK]);
            else fd_buf_puts(&b, ",\n");
        }
    }
    char *path = fd_path_join(dir, "tokenwise.csv");
    int rc = fd_write_atomic(path, b.p, b.n, e);
    free(path);
    fd_buf_free(&b);
    return rc;
}

static void receipt_finding(void *ctx, const char *code, const char *rule, const char *msg)
{
    fd_err *e = ctx;
    if (!e->code[0]) fd_fail(e, "receipt_invalid", rule, "the receipt fails its own validation: [%s] %s", code, msg);
}

/* per shared context: rows, top-1 matches, domain and stratum (NULL arrays when no context has one) */
typedef struct ctx_arrays {
    size_t *rows, *matches;
    const char **dom, **strat;
    int have_dom, have_strat;
} ctx_arrays;

static void ctx_arrays_of(const fd_side *ref, const cand_run *c, ctx_arrays *a)
{
    size_t nctx = c->g.nshared, at = 0;
    a->rows = fd_xmalloc(nctx * sizeof *a->rows);
    a->matches = fd_xmalloc(nctx * sizeof *a->matches);
    a->dom = fd_xmalloc(nctx * sizeof *a->dom);
    a->strat = fd_xmalloc(nctx * sizeof *a->strat);
    a->have_dom = a->have_strat = 0;
    for (size_t k = 0; k < nctx; k++) {
        const fd_ctx *x = fd_side_find(ref, c->g.shared[k]);
        a->rows[k] = (size_t)x->rows;
        a->matches[k] = 0;
        for (int64_t q = 0; q < x->rows; q++) a->matches[k] += c->top1[at + (size_t)q];
        at += (size_t)x->rows;
        const char *d = jv_get_str(x->rec, "domain"), *s = jv_get_str(x->rec, "allocation_stratum");
        if (!d && x->panel_rec) d = jv_get_str(x->panel_rec, "domain");
        if (!s && x->panel_rec) s = jv_get_str(x->panel_rec, "allocation_stratum");
        a->have_dom |= d != NULL;
        a->have_strat |= s != NULL;
        a->dom[k] = d ? d : "null";
        a->strat[k] = s ? s : "null";
    }
}

static void ctx_arrays_free(ctx_arrays *a)
{
    free(a->rows); free(a->matches); free(a->dom); free(a->strat);
}

/* x_fidelity: the token statistics (none under the hash proof, which replays nothing); NULL, e set, on failure */
static jv *x_fidelity_block(const cand_run *c, const ctx_arrays *a, fd_err *e)
{
    jv *xfid = jv_obj();
    jv_set(xfid, "schema", jv_str("fidelity.receipt-extension.v1"));
    if (c->compute && c->r.lp_ref) {
        fd_tok_input ti = {c->npos, c->kl, c->r.lp_ref, c->r.lp_cand, c->r.lp_ref_top1, c->top1, c->r.topk_ref,
                           c->r.topk_cand, c->g.nshared, a->rows};
        fd_tok_stats ts;
        if (fd_tok_stats_compute(&ti, &ts, e)) { jv_free(xfid); return NULL; }
        jv_set(xfid, "token_statistics", fd_tok_stats_json(&ts));
    } else {
        jv_set(xfid, "token_statistics", jv_null());
        jv_set(xfid, "token_statistics_note", jv_str("the SC-1 hash proof replays nothing: no per-token statistics "
                                                     "(--force-compute computes them)"));
    }
    return xfid;
}

/* STAGING/tokenwise-kld.npy; its sha256 and size */
static int write_tokenwise(const char *staging, const cand_run *c, char np_sha[65], size_t *np_bytes, fd_err *e)
{
    char *np = fd_path_join(staging, "tokenwise-kld.npy");
    int rc = fd_npy_write_f64(np, c->kl, c->npos, e);
    if (!rc) {
        fd_buf hb = {0};
        uint64_t shape[1] = {c->npos};
        fd_npy_header(&hb, "<f8", shape, 1);
        *np_bytes = hb.n + c->npos * 8;
        fd_buf_free(&hb);
        rc = fd_sha256_file(np, np_sha, e);
    }
    free(np);
    return rc;
}

/* the receipt checked against the schema, then STAGING/comparison-receipt.json */
static int write_receipt_file(const jv *receipt, const char *staging, fd_err *e)
{
    fd_err ve = {0};
    if (fd_validate_receipt(receipt, receipt_finding, &ve)) {
        *e = ve;
        return -1;
    }
    fd_buf b = {0};
    int rc = jv_dump(receipt, &JV_PRETTY, &b, e);
    if (!rc) {
        fd_buf_putc(&b, '\n');
        char *rp = fd_path_join(staging, "comparison-receipt.json");
        rc = fd_write_atomic(rp, b.p, b.n, e);
        free(rp);
    }
    fd_buf_free(&b);
    return rc;
}

/* candidate i's outputs in the stage: its folder (OUT itself for one candidate), tokenwise-kld.npy,
 * tokenwise.csv, the k3 summary, the receipt; res gets its path, class and receipt */
static int write_candidate(const fd_cmp_opts *o, const fd_side *ref, cand_run *c, size_t i, const char *stage,
                           const fd_k3_view *views, fd_path path, fd_cmp_result *res, fd_err *e)
{
    ctx_arrays a;
    ctx_arrays_of(ref, c, &a);
    fd_kl_input in = {c->kl, c->npos, c->g.nshared, a.rows, a.have_dom ? a.dom : NULL, a.have_strat ? a.strat : NULL,
                      a.matches};
    fd_kl_stats st;
    fd_bootstrap bs = {0};
    bs.method = "none";
    int rc = fd_kl_stats_compute(&in, &st, e);
    if (!rc && !o->no_bootstrap) rc = fd_bootstrap_ci(&in, FD_BOOTSTRAP_SAMPLES, FD_BOOTSTRAP_SEED, &bs, e);
    if (!rc && !bs.method) bs.method = "none";
    double extra[2] = {0.0, 0.0};
    if (!rc && c->compute) {
        extra[0] = fd_np_mean(c->r.rkl, c->npos);
        extra[1] = fd_np_mean(c->r.entropy, c->npos);
    }
    jv *xfid = NULL;
    if (!rc && !(xfid = x_fidelity_block(c, &a, e))) rc = -1;
    char *dir = NULL, *staging = NULL;   /* the final directory, and its place in the stage */
    if (!rc) {
        if (o->ncand == 1) {
            dir = fd_xstrdup(o->out);
            staging = fd_xstrdup(stage);
        } else {
            fd_buf d = {0}, s = {0};
            char comp[96];
            fd_path_component(c->side.label, comp, sizeof comp);   /* --candidate-label ../../x stays in OUT */
            fd_buf_printf(&d, "%s/%02zu-%s", o->out, i + 1, comp);
            fd_buf_printf(&s, "%s/%02zu-%s", stage, i + 1, comp);
            dir = fd_buf_cstr(&d);
            staging = fd_buf_cstr(&s);
            rc = fd_mkdirs(staging, e);
        }
    }
    if (!rc) {
        char np_sha[65] = {0};
        size_t np_bytes = 0;
        rc = write_tokenwise(staging, c, np_sha, &np_bytes, e);
        if (!rc && o->csv) rc = write_csv(ref, c, staging, e);
        jv *interop = NULL;
        if (!rc && views &&
            !(interop = fd_cmp_k3_emit_summary(o, ref, c, i, views, a.matches, staging, np_sha, np_bytes, e)))
            rc = -1;
        jv *receipt = rc ? NULL : fd_cmp_build_receipt(o, ref, c, &st, &bs, c->compute ? extra : NULL, path, np_sha,
                                                       np_bytes, interop, xfid);
        jv_free(interop);
        if (receipt) rc = write_receipt_file(receipt, staging, e);
        if (!rc) {
            res->receipt_paths[i] = fd_path_join(dir, "comparison-receipt.json");
            res->classes[i] = fd_xstrdup(c->g.advisory ? "advisory" : "strict");
            res->receipts[i] = receipt;
            receipt = NULL;
        }
        jv_free(receipt);
    }
    jv_free(xfid);
    free(staging);
    free(dir);
    fd_kl_stats_free(&st);
    ctx_arrays_free(&a);
    return rc;
}

int fd_cmp_write_outputs(const fd_cmp_opts *o, const fd_side *ref, cand_run *cr, fd_cmp_result *res, fd_path path,
                         fd_err *e)
{
    res->n = o->ncand;
    res->receipt_paths = fd_xcalloc(o->ncand, sizeof *res->receipt_paths);
    res->classes = fd_xcalloc(o->ncand, sizeof *res->classes);
    res->receipts = fd_xcalloc(o->ncand, sizeof *res->receipts);
    /* all or nothing: everything is written under OUT.partial-PID and renamed
     * into place once every receipt is written (as capture does) */
    char *final_real = final_realpath(o->out, e);
    if (!final_real) return -1;
    fd_buf sb = {0};
    fd_buf_printf(&sb, "%s.partial-%ld", o->out, (long)getpid());
    char *stage = fd_buf_cstr(&sb);
    fd_rmtree(stage);
    int wrc = fd_mkdirs(stage, e);
    fd_k3_view *views = NULL;
    if (!wrc && o->emit_k3_compat && !(views = fd_cmp_k3_views(o, stage, final_real, ref, cr, e))) wrc = -1;
    for (size_t i = 0; i < o->ncand && !wrc; i++) wrc = write_candidate(o, ref, &cr[i], i, stage, views, path, res, e);
    free(views);
    if (!wrc) wrc = commit_out(stage, o->out, e);
    if (wrc) fd_rmtree(stage);   /* a refusal leaves no OUT and no stage behind */
    free(stage);
    free(final_real);
    return wrc;
}
