/* The report's per-token drill-down (docs/REPORT.md "Drill-down"): the
 * worst positions of each candidate by KL (from the sealed tokenwise array)
 * and by delta-p (from the tokenwise.csv compare --csv writes, accepted only
 * when its kl column is the sealed array bit for bit), each linked to a
 * per-token strip of its window; token ids decoded with --tokenizer, the
 * left context read from --panel (every row's observed token checked
 * against the panel window).  Deterministic; no script. */
#include "report.h"
#include "svg.h"
#include "capture/panel.h"
#include "tokenizer/tokenizer.h"
#include "util/fsio.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WORST 20        /* rows per worst-positions table */
#define STRIPS 8        /* windows drawn as per-token strips */
#define LEFT 16         /* tokens of left context */

static const char H10[] = "context,row,position,token_id,kl,reverse_kl,delta_p,p_reference,p_candidate,top1_match";
static const char H12[] = "context,row,position,token_id,kl,reverse_kl,delta_p,p_reference,p_candidate,top1_match,"
                          "top1_reference,top1_candidate";

/* ------------------------------------------------------------ tokenwise.csv */

static int parse_i64(const char *s, int64_t *v)
{
    if (!*s) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (*end || errno) return -1;
    *v = x;
    return 0;
}

static int parse_f64(const char *s, double *v, int empty_ok)
{
    if (!*s) { *v = NAN; return empty_ok ? 0 : -1; }
    char *end;
    *v = strtod(s, &end);
    return *end ? -1 : 0;
}

/* The expected (context index, row) of every tokenwise position, from per_context. */
static int64_t *expected_contexts(const jv *receipt, size_t ntok)
{
    const jv *pc = jv_get(receipt, "per_context");
    int64_t *ctx = fd_xmalloc((ntok ? ntok : 1) * sizeof *ctx);
    size_t at = 0;
    for (size_t k = 0; pc && pc->t == JV_ARR && k < pc->u.a.n; k++) {
        int64_t idx, rows;
        if (jv_get_i64(pc->u.a.v[k], "index", &idx) || jv_get_i64(pc->u.a.v[k], "scored_rows", &rows)) idx = -1, rows = 0;
        for (int64_t q = 0; q < rows && at < ntok; q++) ctx[at++] = idx;
    }
    while (at < ntok) ctx[at++] = -1;
    return ctx;
}

static int parse_rows(const char *path, const fd_buf *b, fd_rpt_cand *c, fd_err *e)
{
    const char *p = b->p, *end = b->p + b->n;
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    size_t hl = nl ? (size_t)(nl - p) : 0;
    int ncol = !nl ? 0 : hl == sizeof H12 - 1 && !memcmp(p, H12, hl) ? 12 : hl == sizeof H10 - 1 && !memcmp(p, H10, hl) ? 10 : 0;
    if (!ncol) return fd_fail(e, "tokenwise_mismatch", "REPORT-4", "%s: the header is not compare --csv's", path);
    p = nl + 1;
    int64_t *want = expected_contexts(c->receipt, c->ntok);
    c->rows = fd_xcalloc(c->ntok ? c->ntok : 1, sizeof *c->rows);
    int rc = 0;
    size_t i = 0, row_in_ctx = 0;
    for (; !rc && p < end; i++) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || i >= c->ntok) {
            rc = fd_fail(e, "tokenwise_mismatch", "REPORT-4", "%s: more rows than the %zu scored positions, or an "
                         "unterminated line", path, c->ntok);
            break;
        }
        char line[1024], *f[12];
        size_t n = (size_t)(nl - p), nf = 0;
        if (n >= sizeof line) { rc = fd_fail(e, "tokenwise_mismatch", "REPORT-4", "%s: line %zu is too long", path, i + 2); break; }
        memcpy(line, p, n);
        line[n] = 0;
        p = nl + 1;
        for (char *s = line; nf < 12;) {
            f[nf++] = s;
            char *comma = strchr(s, ',');
            if (!comma) break;
            *comma = 0;
            s = comma + 1;
        }
        fd_rpt_row *r = &c->rows[i];
        double kl;
        int64_t top1 = 0;
        r->ref1 = r->cand1 = -1;
        int bad = (int)nf != ncol || parse_i64(f[0], &r->ctx) || parse_i64(f[1], &r->row) || parse_i64(f[2], &r->pos) ||
                  parse_i64(f[3], &r->tok) || parse_f64(f[4], &kl, 0) || parse_f64(f[5], &r->rkl, 0) ||
                  parse_f64(f[6], &r->dp, 0) || parse_f64(f[7], &r->pr, 1) || parse_f64(f[8], &r->pc, 1) ||
                  parse_i64(f[9], &top1) || (top1 != 0 && top1 != 1) || r->pos < 0 || r->tok < 0;
        if (!bad && ncol == 12 && (*f[10] || *f[11]) && (parse_i64(f[10], &r->ref1) || parse_i64(f[11], &r->cand1)))
            bad = 1;
        r->top1 = (int)top1;
        if (bad) { rc = fd_fail(e, "tokenwise_mismatch", "REPORT-4", "%s: line %zu is not a compare --csv row", path, i + 2); break; }
        row_in_ctx = i && c->rows[i - 1].ctx == r->ctx ? row_in_ctx + 1 : 0;
        if (memcmp(&kl, &c->tok[i], sizeof kl) || r->ctx != want[i] || r->row != (int64_t)row_in_ctx)
            rc = fd_fail(e, "tokenwise_mismatch", "REPORT-4", "%s: line %zu (context %lld, row %lld, kl %.17g) is not the "
                         "sealed tokenwise array's position %zu (context %lld, kl %.17g)", path, i + 2, (long long)r->ctx,
                         (long long)r->row, kl, i, (long long)want[i], c->tok[i]);
    }
    if (!rc && i != c->ntok)
        rc = fd_fail(e, "tokenwise_mismatch", "REPORT-4", "%s: %zu rows, the receipt scores %zu positions", path, i, c->ntok);
    free(want);
    if (rc) { free(c->rows); c->rows = NULL; }
    return rc;
}

int fd_rpt_load_csv(const char *receipt_path, fd_rpt_cand *c, fd_err *e)
{
    if (!c->tok) return 0;
    char dir[4096];
    const char *slash = strrchr(receipt_path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - receipt_path) : 1, slash ? receipt_path : ".");
    char *path = fd_path_join(dir, "tokenwise.csv");
    struct stat st;
    int rc = 0;
    if (lstat(path, &st) && errno == ENOENT) {
        snprintf(c->csv_note, sizeof c->csv_note, "no tokenwise.csv beside the receipt (compare --csv writes it): "
                 "no delta-p, token ids or top-1 tokens");
    } else if (!fd_is_file(path)) {
        rc = fd_fail(e, "tokenwise_mismatch", "REPORT-4", "%s: not a regular file", path);
    } else {
        fd_buf b = {0};
        /* a row is at most ~250 bytes (%.17g floats, 32-bit ids) */
        if (fd_read_file(path, c->ntok * 512 + 4096, &b, e)) {
            snprintf(e->code, sizeof e->code, "tokenwise_mismatch");
            rc = -1;
        } else rc = parse_rows(path, &b, c, e);
        fd_buf_free(&b);
    }
    free(path);
    return rc;
}

/* ------------------------------------------------------------ --panel */

static const fd_panel_window *window_of(const fd_panel *p, const char *id)
{
    for (size_t k = 0; id && k < p->n; k++)
        if (!strcmp(p->w[k].window_id, id)) return &p->w[k];
    return NULL;
}

static const char *window_id_of(const jv *receipt, int64_t ctx)
{
    const jv *pc = jv_get(receipt, "per_context");
    for (size_t k = 0; pc && pc->t == JV_ARR && k < pc->u.a.n; k++) {
        int64_t idx;
        if (!jv_get_i64(pc->u.a.v[k], "index", &idx) && idx == ctx) return jv_get_str(pc->u.a.v[k], "window_id");
    }
    return NULL;
}

int fd_rpt_check_panel(const fd_rpt *r, fd_err *e)
{
    for (size_t i = 0; r->panel && i < r->n; i++) {
        const fd_rpt_cand *c = &r->c[i];
        const fd_panel_window *w = NULL;
        for (size_t k = 0; c->rows && k < c->ntok; k++) {
            const fd_rpt_row *x = &c->rows[k];
            if (!k || x->ctx != c->rows[k - 1].ctx) {
                const char *id = window_id_of(c->receipt, x->ctx);
                if (!(w = window_of(r->panel, id)))
                    return fd_fail(e, "panel_mismatch", "REPORT-5", "--panel %s has no window %s (context %lld of [%zu])",
                                   r->panel->dir, id ? id : "n/a", (long long)x->ctx, i + 1);
            }
            if ((size_t)x->pos + 1 >= w->n_ids || w->ids[x->pos + 1] != x->tok)
                return fd_fail(e, "panel_mismatch", "REPORT-5", "--panel %s window %s: the token after position %lld is "
                               "not %lld, the observed token of [%zu]'s tokenwise.csv", r->panel->dir, w->window_id,
                               (long long)x->pos, (long long)x->tok, i + 1);
        }
    }
    return 0;
}

/* ------------------------------------------------------------ rendering */

static void esc(fd_buf *b, const char *s) { fd_xml_escape(b, s, 0); }

static void put_tokens(fd_buf *b, const fd_rpt *r, const int64_t *ids, size_t n)
{
    if (r->tk) {
        int32_t *v = fd_xmalloc((n ? n : 1) * sizeof *v);
        for (size_t k = 0; k < n; k++) v[k] = ids[k] > INT32_MAX ? -1 : (int32_t)ids[k];
        char *text = NULL;
        size_t len = 0;
        fd_err e;
        if (!fd_tok_decode(r->tk, v, n, 0, &text, &len, &e)) {
            fd_buf_puts(b, "<span class=\"tk\">");
            esc(b, text);
            fd_buf_puts(b, "</span>");
            free(text);
            free(v);
            return;
        }
        free(text);
        free(v);
    }
    for (size_t k = 0; k < n; k++) fd_buf_printf(b, "%s%lld", k ? " " : "", (long long)ids[k]);
}

static void put_token(fd_buf *b, const fd_rpt *r, int64_t id)
{
    if (id < 0) { fd_buf_puts(b, "n/a"); return; }
    put_tokens(b, r, &id, 1);
    if (r->tk) fd_buf_printf(b, " <span class=\"id\">%lld</span>", (long long)id);
}

/* One number format per column: KL and reverse KL %.3e, delta-p %+.3e, p %.4f. */
static void num(fd_buf *b, const char *field, double v, const char *fmt)
{
    if (isnan(v)) { fd_buf_puts(b, "<td class=\"na\">n/a</td>"); return; }
    fd_buf_printf(b, "<td class=\"num\" data-field=\"%s\" data-value=\"", field);
    fd_put_repr(b, v);
    fd_buf_puts(b, "\">");
    fd_buf_printf(b, fmt, v);
    fd_buf_puts(b, "</td>");
}

typedef struct ord {
    const fd_rpt_cand *c;
    int by_dp;
} ord;

static int cmp_kl(const void *a, const void *b, void *ctx)
{
    const ord *o = ctx;
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    double x = o->by_dp ? o->c->rows[i].dp : -o->c->tok[i], y = o->by_dp ? o->c->rows[j].dp : -o->c->tok[j];
    return x < y ? -1 : x > y ? 1 : i < j ? -1 : i > j;
}

/* Position indices sorted (stable: ties by position) and cut to k. */
static size_t worst(const fd_rpt_cand *c, int by_dp, size_t *idx)
{
    size_t n = 0;
    for (size_t i = 0; i < c->ntok; i++) {
        double v = by_dp ? c->rows[i].dp : c->tok[i];
        if (by_dp ? v < 0 : v > 0) idx[n++] = i;
    }
    ord o = {c, by_dp};
    qsort_r(idx, n, sizeof *idx, cmp_kl, &o);
    return n < WORST ? n : WORST;
}

static void left_context(fd_buf *b, const fd_rpt *r, const fd_rpt_cand *c, const fd_rpt_row *x)
{
    const fd_panel_window *w = r->panel ? window_of(r->panel, window_id_of(c->receipt, x->ctx)) : NULL;
    if (!w) { fd_buf_puts(b, "<td class=\"na\">n/a</td>"); return; }
    size_t end = (size_t)x->pos + 1, start = end > LEFT ? end - LEFT : 0;
    fd_buf_printf(b, "<td class=\"ctx\">%s", start ? "&#8230;" : "");
    put_tokens(b, r, w->ids + start, end - start);
    fd_buf_puts(b, "</td>");
}

static void worst_table(fd_buf *b, const fd_rpt *r, size_t i, const size_t *idx, size_t k, const char *id)
{
    const fd_rpt_cand *c = &r->c[i];
    fd_buf_printf(b, "<table class=\"worst\" id=\"%s-%zu\">\n<tr><th>#</th><th>context</th><th>row</th>"
                     "<th>left context</th><th>observed next</th><th>ref top-1</th><th>cand top-1</th>"
                     "<th>KL(ref&#8214;cand)</th><th>KL(cand&#8214;ref)</th><th>&#916;p</th><th>p ref</th>"
                     "<th>p cand</th></tr>\n", id, i + 1);
    int64_t *ctx = c->rows ? NULL : expected_contexts(c->receipt, c->ntok);
    for (size_t n = 0; n < k; n++) {
        size_t at = idx[n];
        const fd_rpt_row *x = c->rows ? &c->rows[at] : NULL;
        int64_t cx = x ? x->ctx : ctx[at];
        int64_t row = 0;
        for (size_t q = at; !x && q > 0 && ctx[q - 1] == cx; q--) row++;
        const char *wid = window_id_of(c->receipt, cx);
        fd_buf_printf(b, "<tr data-position=\"%zu\"><td class=\"num\">%zu</td><td><a href=\"#win-%zu-%lld\">%lld</a> ",
                      at, n + 1, i + 1, (long long)cx, (long long)cx);
        esc(b, wid ? wid : "");
        fd_buf_printf(b, "</td><td class=\"num\">%lld</td>", (long long)(x ? x->row : row));
        if (x) {
            left_context(b, r, c, x);
            fd_buf_puts(b, "<td>");
            put_token(b, r, x->tok);
            fd_buf_puts(b, "</td><td>");
            put_token(b, r, x->ref1);
            fd_buf_printf(b, "</td><td%s>", x->top1 ? "" : " class=\"miss\"");
            put_token(b, r, x->cand1);
            fd_buf_puts(b, "</td>");
        } else fd_buf_puts(b, "<td class=\"na\">n/a</td><td class=\"na\">n/a</td><td class=\"na\">n/a</td><td class=\"na\">n/a</td>");
        num(b, "kl", c->tok[at], "%.3e");
        num(b, "reverse_kl", x ? x->rkl : NAN, "%.3e");
        num(b, "delta_p", x ? x->dp : NAN, "%+.3e");
        num(b, "p_reference", x ? x->pr : NAN, "%.4f");
        num(b, "p_candidate", x ? x->pc : NAN, "%.4f");
        fd_buf_puts(b, "</tr>\n");
    }
    free(ctx);
    fd_buf_puts(b, "</table>\n");
}

/* Heat level 0..7 of one position: 7 at the candidate's max, one level per
 * half decade below it, 0 for an exact zero or 3.5 decades down. */
static int heat(double v, double max)
{
    if (!(v > 0) || !(max > 0)) return 0;
    double l = 7.0 + floor(2.0 * log10(v / max));
    return !(l >= 0) ? 0 : l > 7 ? 7 : (int)l; /* NaN (an infinite value: fuzzed input) is 0 */
}

static void strip(fd_buf *b, const fd_rpt *r, size_t i, int64_t cx, const char *marks)
{
    const fd_rpt_cand *c = &r->c[i];
    const jv *pc = jv_get(c->receipt, "per_context"), *rec = NULL;
    size_t start = 0;
    for (size_t k = 0; pc && pc->t == JV_ARR && k < pc->u.a.n; k++) {
        int64_t idx, rows;
        if (jv_get_i64(pc->u.a.v[k], "index", &idx) || jv_get_i64(pc->u.a.v[k], "scored_rows", &rows) || rows < 0 ||
            (uint64_t)rows > c->ntok)
            return;
        if (idx == cx) { rec = pc->u.a.v[k]; break; }
        start += (size_t)rows;
    }
    int64_t rows;
    if (!rec || jv_get_i64(rec, "scored_rows", &rows) || start + (size_t)rows > c->ntok) return;
    double max = 0;
    for (size_t k = 0; k < c->ntok; k++) max = c->tok[k] > max ? c->tok[k] : max;
    fd_buf_printf(b, "<div class=\"win\" id=\"win-%zu-%lld\"><p>context %lld, window ", i + 1, (long long)cx, (long long)cx);
    esc(b, fd_rpt_str(rec, "window_id"));
    fd_buf_puts(b, ", domain ");
    esc(b, fd_rpt_str(rec, "domain"));
    fd_buf_puts(b, ": mean KL ");
    fd_put_short(b, fd_rpt_num(rec, "mean"));
    fd_buf_printf(b, " over %lld positions (the receipt's per_context)</p>\n<div class=\"strip\">", (long long)rows);
    for (size_t q = 0; q < (size_t)rows; q++) {
        size_t at = start + q;
        const fd_rpt_row *x = c->rows ? &c->rows[at] : NULL;
        fd_buf_printf(b, "<span class=\"t h%d%s\" title=\"row %zu, KL %.3e", heat(c->tok[at], max),
                      marks[at] ? " w" : "", q, c->tok[at]);
        if (x && !isnan(x->dp)) fd_buf_printf(b, ", &#916;p %+.3e", x->dp);
        if (x && !x->top1) fd_buf_puts(b, ", top-1 differs");
        fd_buf_puts(b, "\">");
        if (x) put_tokens(b, r, &x->tok, 1);
        else fd_buf_printf(b, "%zu", q);
        fd_buf_puts(b, "</span>");
    }
    fd_buf_puts(b, "</div></div>\n");
}

static int seen(const int64_t *v, size_t n, int64_t x)
{
    for (size_t k = 0; k < n; k++)
        if (v[k] == x) return 1;
    return 0;
}

void fd_rpt_drill(fd_buf *b, const fd_rpt *r, size_t i)
{
    const fd_rpt_cand *c = &r->c[i];
    fd_buf_printf(b, "<section class=\"drill\" id=\"drill-%zu\">\n<h3>Drill-down: the worst positions of [%zu]</h3>\n",
                  i + 1, i + 1);
    if (!c->tok) {
        fd_buf_puts(b, "<p class=\"note\">No tokenwise data (--summary-only): no drill-down.</p>\n</section>\n");
        return;
    }
    if (!c->rows && c->csv_note[0]) {
        fd_buf_puts(b, "<p class=\"note\">");
        esc(b, c->csv_note);
        fd_buf_puts(b, ".</p>\n");
    }
    size_t *idx = fd_xmalloc((c->ntok ? c->ntok : 1) * sizeof *idx);
    char *marks = fd_xcalloc(c->ntok ? c->ntok : 1, 1);
    int64_t wins[STRIPS];
    size_t nw = 0;
    const jv *hk = jv_get(c->receipt, "high_kld_contexts");
    for (size_t k = 0; hk && hk->t == JV_ARR && k < hk->u.a.n && nw < STRIPS; k++) {
        int64_t x;
        if (!jv_get_i64(hk->u.a.v[k], "index", &x) && !seen(wins, nw, x)) wins[nw++] = x;
    }
    int64_t *ctx = expected_contexts(c->receipt, c->ntok);
    size_t k = worst(c, 0, idx);
    if (!k) fd_buf_puts(b, "<p>Every position's KL is exactly 0.</p>\n");
    else {
        fd_buf_printf(b, "<p>By KL(ref&#8214;cand), the %zu largest of %zu positions (sealed tokenwise array).</p>\n", k, c->ntok);
        worst_table(b, r, i, idx, k, "worst-kl");
    }
    for (size_t n = 0; n < k; n++) {
        marks[idx[n]] = 1;
        if (nw < STRIPS && !seen(wins, nw, ctx[idx[n]])) wins[nw++] = ctx[idx[n]];
    }
    if (c->rows) {
        k = worst(c, 1, idx);
        if (!k) fd_buf_puts(b, "<p>No position loses probability on its observed next token (&#916;p &#8805; 0 everywhere).</p>\n");
        else {
            fd_buf_printf(b, "<p>By &#916;p = p(cand) &#8722; p(ref) at the observed next token, the %zu most negative "
                             "(tokenwise.csv, its kl column checked against the sealed array).</p>\n", k);
            worst_table(b, r, i, idx, k, "worst-dp");
        }
        for (size_t n = 0; n < k; n++) {
            marks[idx[n]] = 1;
            if (nw < STRIPS && !seen(wins, nw, ctx[idx[n]])) wins[nw++] = ctx[idx[n]];
        }
    }
    if (nw) {
        fd_buf_puts(b, "<p>Per-token view of the windows above (the receipt's high-KL contexts first): each cell is one "
                       "scored position, shaded by its KL (darkest at this candidate's maximum, one step per half "
                       "decade below it); outlined cells are in a table above; hover for the numbers.</p>\n");
        for (size_t n = 0; n < nw; n++) strip(b, r, i, wins[n], marks);
    }
    free(ctx);
    free(marks);
    free(idx);
    fd_buf_puts(b, "</section>\n");
}
