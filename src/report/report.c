/* report: loading and checking the inputs (report/report.h).  A receipt is
 * used only if fd_validate_receipt finds nothing (schema, seal, SC/BIAS
 * rules); its tokenwise file only if its size and sha256 equal what the
 * sealed receipt binds, so every plotted value is covered by a seal. */
#include "report.h"
#include "capture/panel.h"
#include "tokenizer/tokenizer.h"
#include "compare/compare.h"
#include "compare/stats.h"
#include "format/npy.h"
#include "format/paths.h"
#include "format/sha.h"
#include "format/validate.h"
#include "util/fsio.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECEIPT_NAME "comparison-receipt.json"
#define TOKENWISE_MAX ((size_t)1 << 36)

double fd_rpt_num(const jv *obj, const char *key)
{
    const jv *v = jv_get(obj, key);
    if (v && v->t == JV_FLOAT) return v->u.f;
    if (v && v->t == JV_INT) return (double)v->u.i;
    return NAN;
}

const char *fd_rpt_str(const jv *obj, const char *key)
{
    const char *s = jv_get_str(obj, key);
    return s ? s : "n/a";
}

const char *fd_rpt_label(const fd_rpt_cand *c) { return fd_rpt_str(jv_get(c->receipt, "candidate"), "label"); }

typedef struct { char msg[512]; int n; } first_finding;

static void keep_first(void *ctx, const char *code, const char *rule, const char *msg)
{
    first_finding *f = ctx;
    if (!f->n++) snprintf(f->msg, sizeof f->msg, "%s (%s): %s", code, rule, msg);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* A receipt argument: the file itself, a directory holding one, or the
 * OUT of a multi-candidate compare (its NN-LABEL/ subdirectories, sorted). */
static int expand(const char *arg, char ***paths, size_t *n, size_t *cap, fd_err *e)
{
    if (fd_is_file(arg)) {
        if (*n == *cap) *paths = fd_xrealloc(*paths, (*cap = *cap * 2 + 4) * sizeof **paths);
        (*paths)[(*n)++] = fd_xstrdup(arg);
        return 0;
    }
    if (!fd_is_dir(arg)) return fd_fail(e, "receipt_invalid", "REPORT-1", "%s: no such receipt file or directory", arg);
    char *direct = fd_path_join(arg, RECEIPT_NAME);
    if (fd_is_file(direct)) {
        int rc = expand(direct, paths, n, cap, e);
        free(direct);
        return rc;
    }
    free(direct);
    DIR *d = opendir(arg);
    if (!d) return fd_fail(e, "receipt_invalid", "REPORT-1", "%s: cannot list the directory", arg);
    char **found = NULL;
    size_t nf = 0, capf = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char *sub = fd_path_join(arg, de->d_name), *p = fd_path_join(sub, RECEIPT_NAME);
        free(sub);
        if (!fd_is_file(p)) { free(p); continue; }
        if (nf == capf) found = fd_xrealloc(found, (capf = capf * 2 + 4) * sizeof *found);
        found[nf++] = p;
    }
    closedir(d);
    if (!nf) return fd_fail(e, "receipt_invalid", "REPORT-1", "%s: holds no %s (nor NN-LABEL/%s)", arg, RECEIPT_NAME, RECEIPT_NAME);
    qsort(found, nf, sizeof *found, cmp_str);
    for (size_t i = 0; i < nf; i++) {
        if (*n == *cap) *paths = fd_xrealloc(*paths, (*cap = *cap * 2 + 4) * sizeof **paths);
        (*paths)[(*n)++] = found[i];
    }
    free(found);
    return 0;
}

/* Rows per context in tokenwise order, summed; 0 if per_context is unusable. */
static size_t context_rows(const jv *receipt)
{
    const jv *pc = jv_get(receipt, "per_context");
    size_t total = 0;
    for (size_t i = 0; pc && pc->t == JV_ARR && i < pc->u.a.n; i++) {
        int64_t rows;
        if (jv_get_i64(pc->u.a.v[i], "scored_rows", &rows) || rows < 1) return 0;
        total += (size_t)rows;
    }
    return total;
}

static int load_tokenwise(const char *receipt_path, fd_rpt_cand *c, fd_err *e)
{
    const jv *tw = jv_get(c->receipt, "tokenwise");
    const char *rel = jv_get_str(tw, "path"), *want = jv_get_str(tw, "sha256");
    int64_t bytes;
    if (!rel || !want || jv_get_i64(tw, "bytes", &bytes))
        return fd_fail(e, "tokenwise_missing", "REPORT-2", "%s: the receipt names no tokenwise file", receipt_path);
    if (fd_check_relpath(rel, "tokenwise.path", 0, e)) {
        fd_err_prefix(e, receipt_path);
        snprintf(e->code, sizeof e->code, "tokenwise_missing");
        return -1;
    }
    char dir[4096];
    const char *slash = strrchr(receipt_path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - receipt_path) : 1, slash ? receipt_path : ".");
    char *path = fd_path_join(dir, rel);
    fd_buf b = {0};
    int rc = -1;
    char got[65];
    char descr[16];
    uint64_t shape[4];
    int ndim;
    size_t off;
    if (!fd_is_file(path)) {
        fd_fail(e, "tokenwise_missing", "REPORT-2", "%s: missing (the receipt binds it by sha256)", path);
    } else if (fd_read_file(path, TOKENWISE_MAX, &b, e)) {
        snprintf(e->code, sizeof e->code, "tokenwise_missing");
    } else if ((int64_t)b.n != bytes || (fd_sha256_hex(b.p, b.n, got), strcmp(got, want))) {
        fd_fail(e, "tokenwise_mismatch", "REPORT-2", "%s: %zu bytes, sha256 %s; the receipt binds %lld bytes, sha256 %s",
                path, b.n, got, (long long)bytes, want);
    } else if (fd_npy_parse((const unsigned char *)b.p, b.n, descr, shape, &ndim, &off, e) || strcmp(descr, "<f8") ||
               ndim != 1 || (b.n - off) / 8 != shape[0] || (b.n - off) % 8) {
        fd_fail(e, "tokenwise_mismatch", "REPORT-2", "%s: not a 1-D little-endian float64 .npy array", path);
    } else {
        int64_t scored;
        size_t rows = context_rows(c->receipt);
        if (jv_get_i64(jv_get(c->receipt, "measurement_scope"), "scored_positions", &scored) ||
            (uint64_t)scored != shape[0] || rows != shape[0]) {
            fd_fail(e, "tokenwise_mismatch", "REPORT-2",
                    "%s: %llu values, but the receipt scores %lld positions over per_context rows summing to %zu", path,
                    (unsigned long long)shape[0], (long long)scored, rows);
        } else {
            c->ntok = (size_t)shape[0];
            c->tok = fd_xmalloc((c->ntok ? c->ntok : 1) * sizeof *c->tok);
            memcpy(c->tok, b.p + off, c->ntok * sizeof *c->tok); /* little-endian host (x86-64/aarch64) */
            rc = 0;
            for (size_t i = 0; i < c->ntok && !rc; i++)
                if (!isfinite(c->tok[i]))
                    rc = fd_fail(e, "non_finite", "REPORT-2", "%s: value %zu is not finite", path, i);
            /* a forger who edits the numbers and reseals the receipt keeps the
             * old array: its numpy-exact mean and max must be the receipt's */
            const jv *kl = jv_get(c->receipt, "kl");
            double m = fd_np_mean(c->tok, c->ntok), mx = fd_np_max(c->tok, c->ntok);
            if (!rc && (m != fd_rpt_num(kl, "mean") || mx != fd_rpt_num(kl, "max")))
                rc = fd_fail(e, "tokenwise_mismatch", "REPORT-2",
                             "%s: its mean %.17g and max %.17g are not the receipt's kl.mean and kl.max", path, m, mx);
        }
    }
    if (rc) { free(c->tok); c->tok = NULL; c->ntok = 0; }
    fd_buf_free(&b);
    free(path);
    return rc;
}

static int load_receipt(const char *path, const fd_rpt_opts *o, fd_rpt_cand *c, fd_err *e)
{
    c->receipt = jv_parse_file(path, e);
    if (!c->receipt) {
        snprintf(e->code, sizeof e->code, "receipt_invalid");
        return -1;
    }
    first_finding f = {{0}, 0};
    if (c->receipt->t != JV_OBJ || fd_validate_receipt(c->receipt, keep_first, &f))
        return fd_fail(e, "receipt_invalid", "REPORT-1", "%s: not a valid sealed comparison receipt: %s", path,
                       f.n ? f.msg : "not a JSON object");
    if (load_tokenwise(path, c, e)) {
        if (!o->summary_only) return -1;
        snprintf(c->tok_note, sizeof c->tok_note, "[%s] %.400s", e->code, e->msg);
        fd_err_clear(e);
    } else if (fd_rpt_load_csv(path, c, e)) {
        if (!o->summary_only) return -1;
        snprintf(c->csv_note, sizeof c->csv_note, "tokenwise.csv left out: [%s] %.400s", e->code, e->msg);
        fd_err_clear(e);
    }
    return 0;
}

static int load_dataset(const char *dir, fd_rpt *r, fd_err *e)
{
    fd_validate_opts vo = {.manifest_only = 1};
    fd_report rep = {0};
    fd_validate_dataset(dir, &vo, &rep);
    int rc = 0;
    if (rep.n_errors || !rep.manifest) {
        rc = fd_fail(e, "seal_failed", "REPORT-3", "%s: the dataset manifest does not verify: %s", dir,
                     rep.n_errors ? rep.errors[0].message : "no manifest");
    } else {
        const char *seal = jv_get_str(rep.manifest, "dataset_sha256");
        const jv *bits = jv_get(jv_get(rep.manifest, "weights"), "declared_bits");
        size_t matched = 0;
        for (size_t i = 0; seal && i < r->n; i++) {
            const char *cs = jv_get_str(jv_get(r->c[i].receipt, "candidate"), "dataset_sha256");
            if (!cs || strcmp(cs, seal)) continue;
            matched++;
            if (bits && (bits->t == JV_FLOAT || bits->t == JV_INT)) {
                r->c[i].has_bpw = 1;
                r->c[i].bpw = bits->t == JV_FLOAT ? bits->u.f : (double)bits->u.i;
            }
        }
        if (!matched)
            rc = fd_fail(e, "dataset_unmatched", "REPORT-3", "%s: dataset_sha256 %s is no receipt's candidate", dir,
                         seal ? seal : "n/a");
    }
    fd_report_free(&rep);
    return rc;
}

int fd_rpt_load(const fd_rpt_opts *o, fd_rpt *r, fd_err *e)
{
    memset(r, 0, sizeof *r);
    r->title = o->title;
    char **paths = NULL;
    size_t np = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < o->nreceipts && !rc; i++) rc = expand(o->receipts[i], &paths, &np, &cap, e);
    if (!rc && !np) rc = fd_fail(e, "receipt_invalid", "REPORT-1", "no receipt given");
    if (!rc) r->c = fd_xcalloc(np, sizeof *r->c);
    for (size_t i = 0; i < np && !rc; i++, r->n++) rc = load_receipt(paths[i], o, &r->c[i], e);
    for (size_t i = 0; i < o->ndatasets && !rc; i++) rc = load_dataset(o->datasets[i], r, e);
    if (!rc && o->tokenizer && !(r->tk = fd_tok_load(o->tokenizer, e))) {
        fd_err_prefix(e, o->tokenizer);
        snprintf(e->code, sizeof e->code, "bad_tokenizer");
        rc = -1;
    }
    if (!rc && o->panel) {
        r->panel = fd_xcalloc(1, sizeof *r->panel);
        if (fd_panel_load(o->panel, NULL, 0, r->tk ? fd_tok_vocab_size(r->tk) : INT32_MAX, r->panel, e)) {
            free(r->panel);
            r->panel = NULL;
            fd_err_prefix(e, o->panel);
            snprintf(e->code, sizeof e->code, "panel_invalid");
            rc = -1;
        } else rc = fd_rpt_check_panel(r, e);
    }
    for (size_t i = 0; i < np; i++) free(paths[i]);
    free(paths);
    if (rc) fd_rpt_free(r);
    return rc;
}

void fd_rpt_free(fd_rpt *r)
{
    for (size_t i = 0; i < r->n; i++) {
        jv_free(r->c[i].receipt);
        free(r->c[i].tok);
        free(r->c[i].rows);
    }
    free(r->c);
    if (r->tk) fd_tok_free(r->tk);
    if (r->panel) { fd_panel_free(r->panel); free(r->panel); }
    memset(r, 0, sizeof *r);
}

int fd_rpt_write(const fd_rpt_opts *o, const char *out, fd_err *e)
{
    fd_rpt r;
    if (fd_rpt_load(o, &r, e)) return -1;
    fd_buf html = {0};
    fd_rpt_render(&r, &html);
    int rc = fd_write_atomic(out, html.p, html.n, e);
    fd_buf_free(&html);
    fd_rpt_free(&r);
    return rc;
}
