/* The report's figures (report/plots.h).  Every figure is sized before it
 * is opened (the footer lines of seals are counted first) and draws only
 * values read from validated receipts or their sha256-bound tokenwise
 * files. */
#include "plots.h"
#include "svg.h"
#include "compare/stats.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define W 960
#define PX0 90          /* left edge of a plot frame: room for tick labels */
#define PX1 930         /* right edge without a legend */
#define PX1_LEG 700     /* right edge when a legend sits to the right */
#define LEG_X 716
#define TOP 58          /* title and subtitle above */
#define AXIS_H 56       /* tick labels and axis title below the frame */
#define LINE 14         /* one footer line */
#define LABEL_CP 28     /* legend labels are cut to this many code points */

static const jv *rc_get(const fd_rpt_cand *c, const char *key) { return jv_get(c->receipt, key); }

static void heading(fd_buf *b, const char *title, const char *sub)
{
    fd_svg_text(b, 10, 22, "start", "title", title, 0);
    if (sub) fd_svg_text(b, 10, 41, "start", "small", sub, 0);
}

static double footer(fd_buf *b, double y, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static double footer(fd_buf *b, double y, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    fd_svg_text(b, 10, y, "start", "mono", tmp, 0);
    return y + LINE;
}

/* Cuts a label to LABEL_CP code points for footer lines (escaping happens
 * when the line is written). */
static void short_label(const char *s, char *out, size_t cap)
{
    size_t cps = 0, i = 0;
    const unsigned char *p = (const unsigned char *)s;
    while (p[i] && cps < LABEL_CP && i + 4 < cap) {
        size_t len = p[i] < 0x80 ? 1 : (p[i] >> 5) == 6 ? 2 : (p[i] >> 4) == 14 ? 3 : 4;
        for (size_t k = 0; k < len && p[i]; k++) out[i] = (char)p[i], i++;
        cps++;
    }
    out[i] = 0;
}

/* Distinct reference seals and panel hashes, in receipt order. */
typedef struct { const char *refs[64], *panels[64]; size_t nref, npanel; } idents;

static void collect_idents(const fd_rpt *r, idents *id)
{
    memset(id, 0, sizeof *id);
    for (size_t i = 0; i < r->n; i++) {
        const char *rs = fd_rpt_str(rc_get(&r->c[i], "reference"), "dataset_sha256");
        const char *ps = fd_rpt_str(rc_get(&r->c[i], "panel"), "suite_token_hash_sha256");
        size_t k;
        for (k = 0; k < id->nref && strcmp(id->refs[k], rs); k++) {}
        if (k == id->nref && id->nref < 64) id->refs[id->nref++] = rs;
        for (k = 0; k < id->npanel && strcmp(id->panels[k], ps); k++) {}
        if (k == id->npanel && id->npanel < 64) id->panels[id->npanel++] = ps;
    }
}

static size_t overlay_footer_lines(const fd_rpt *r, const idents *id) { return r->n + id->nref + id->npanel; }

static void overlay_footer(fd_buf *b, double y, const fd_rpt *r, const idents *id)
{
    char lab[160];
    for (size_t i = 0; i < r->n; i++) {
        short_label(fd_rpt_label(&r->c[i]), lab, sizeof lab);
        y = footer(b, y, "[%zu] %-28s receipt_sha256 %s", i + 1, lab, fd_rpt_str(r->c[i].receipt, "receipt_sha256"));
    }
    for (size_t k = 0; k < id->nref; k++) y = footer(b, y, "reference dataset_sha256 %s", id->refs[k]);
    for (size_t k = 0; k < id->npanel; k++) y = footer(b, y, "panel suite_token_hash_sha256 %s", id->panels[k]);
}

#define CAND_FOOTER_LINES 4

static void cand_footer(fd_buf *b, double y, const fd_rpt_cand *c, int tokenwise)
{
    const jv *cand = rc_get(c, "candidate"), *ref = rc_get(c, "reference");
    y = footer(b, y, "receipt_sha256 %s", fd_rpt_str(c->receipt, "receipt_sha256"));
    y = footer(b, y, "candidate dataset_sha256 %s", fd_rpt_str(cand, "dataset_sha256"));
    y = footer(b, y, "reference dataset_sha256 %s", fd_rpt_str(ref, "dataset_sha256"));
    if (tokenwise) footer(b, y, "tokenwise sha256 %s", fd_rpt_str(rc_get(c, "tokenwise"), "sha256"));
    else footer(b, y, "panel suite_token_hash_sha256 %s", fd_rpt_str(rc_get(c, "panel"), "suite_token_hash_sha256"));
}

static void legend(fd_buf *b, const fd_rpt *r, double y0)
{
    for (size_t i = 0; i < r->n; i++) {
        double y = y0 + 18.0 * (double)i;
        fd_svg_line(b, LEG_X, y - 4, LEG_X + 26, y - 4, fd_svg_colour(i), 3, fd_svg_dash(i));
        char num[32];
        snprintf(num, sizeof num, "[%zu] ", i + 1);
        fd_buf_printf(b, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"start\" class=\"t\">%s", LEG_X + 32, y, num);
        fd_xml_escape(b, fd_rpt_label(&r->c[i]), LABEL_CP);
        fd_buf_puts(b, "</text>\n");
    }
}

/* A decade range [lo, hi] covering the positive values seen (at most 12
 * decades, the top kept); lo < hi always. */
typedef struct { double min_pos, max; int any; } prange;

static void prange_add(prange *p, double v)
{
    if (!(v > 0) || !isfinite(v)) return;
    if (!p->any || v < p->min_pos) p->min_pos = v;
    if (!p->any || v > p->max) p->max = v;
    p->any = 1;
}

static void prange_decades(const prange *p, double *lo, double *hi)
{
    if (!p->any) { *lo = -9; *hi = 0; return; }
    *lo = floor(log10(p->min_pos));
    *hi = ceil(log10(p->max));
    if (*hi <= *lo) *hi = *lo + 1;
    if (*hi - *lo > 12) *lo = *hi - 12;
}

static prange tokenwise_range(const fd_rpt *r)
{
    prange p = {0};
    for (size_t i = 0; i < r->n; i++)
        for (size_t k = 0; k < r->c[i].ntok; k++) prange_add(&p, r->c[i].tok[k]);
    return p;
}

static int plot_height(size_t nseries) { int h = 18 * (int)nseries + 24; return h > 260 ? h : 260; }

/* ---- mean KL with CI, both directions ------------------------------------------- */

void fd_plot_means(fd_buf *b, const fd_rpt *r)
{
    const int px0 = 250, row = 26;
    prange p = {0};
    for (size_t i = 0; i < r->n; i++) {
        const jv *u = rc_get(&r->c[i], "uncertainty");
        prange_add(&p, fd_rpt_num(rc_get(&r->c[i], "kl"), "mean"));
        prange_add(&p, fd_rpt_num(u, "ci95_low"));
        prange_add(&p, fd_rpt_num(u, "ci95_high"));
        prange_add(&p, fd_rpt_num(r->c[i].receipt, "kl_reverse_mean"));
    }
    fd_axis x = {0, 1, 1, px0, PX1}, y = {0, 0, 0, 0, TOP}; /* lo == hi: a frame without y ticks */
    prange_decades(&p, &x.lo, &x.hi);
    y.px0 = TOP + row * (double)r->n + 10;
    idents id;
    collect_idents(r, &id);
    int h = (int)(y.px0 + AXIS_H + LINE * (double)overlay_footer_lines(r, &id) + 8);
    fd_svg_open(b, W, h, "Mean KL per candidate, both directions");
    heading(b, "Mean KL per candidate, both directions",
            "filled dot: mean KL(reference || candidate) with its bootstrap 95% CI (bar); hollow diamond: mean "
            "KL(candidate || reference); nats, log scale");
    fd_svg_axes(b, &x, &y, "KL (nats)", NULL);
    for (size_t i = 0; i < r->n; i++) {
        const fd_rpt_cand *c = &r->c[i];
        const jv *u = rc_get(c, "uncertainty");
        double cy = TOP + row * (double)i + row / 2.0 + 4;
        double mean = fd_rpt_num(rc_get(c, "kl"), "mean"), lo = fd_rpt_num(u, "ci95_low"),
               hi = fd_rpt_num(u, "ci95_high"), rev = fd_rpt_num(c->receipt, "kl_reverse_mean");
        char num[32];
        snprintf(num, sizeof num, "[%zu] ", i + 1);
        fd_buf_printf(b, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" class=\"t\">%s", px0 - 10, cy + 4, num);
        fd_xml_escape(b, fd_rpt_label(c), LABEL_CP);
        fd_buf_puts(b, "</text>\n");
        const char *col = fd_svg_colour(i);
        if (lo > 0 && hi > 0)
            fd_svg_line(b, fd_axis_map(&x, lo), cy, fd_axis_map(&x, hi), cy, col, 3, NULL);
        if (rev > 0) { /* under the dot and larger: both stay visible when the directions agree */
            double rx = fd_axis_map(&x, rev);
            fd_buf_printf(b, "<path d=\"M%.2f %.2fL%.2f %.2fL%.2f %.2fL%.2f %.2fZ\" fill=\"#ffffff\" stroke=\"%s\" "
                             "stroke-width=\"2\"/>\n", rx, cy - 9, rx + 9, cy, rx, cy + 9, rx - 9, cy, col);
        }
        if (mean > 0) fd_svg_circle(b, fd_axis_map(&x, mean), cy, 4.5, col, "#222222");
        else fd_svg_text(b, px0 + 4, cy + 4, "start", "small", "mean = 0 (not on a log axis)", 0);
    }
    overlay_footer(b, y.px0 + AXIS_H, r, &id);
    fd_svg_close(b);
}

/* ---- tokenwise CDF ---------------------------------------------------------------- */

#define CDF_POINTS 512

void fd_plot_cdf(fd_buf *b, const fd_rpt *r)
{
    prange p = tokenwise_range(r);
    fd_axis x = {0, 1, 1, PX0, PX1_LEG}, y = {0, 1, 0, 0, TOP};
    prange_decades(&p, &x.lo, &x.hi);
    y.px0 = TOP + plot_height(r->n);
    idents id;
    collect_idents(r, &id);
    int h = (int)(y.px0 + AXIS_H + LINE * (double)overlay_footer_lines(r, &id) + 8);
    fd_svg_open(b, W, h, "Distribution of per-position KL (CDF)");
    heading(b, "Distribution of per-position KL (CDF)",
            "fraction of scored positions with KL(reference || candidate) <= x; log x; values below the axis "
            "(including exact zeros) count at its left edge");
    fd_svg_axes(b, &x, &y, "per-position KL (nats)", "fraction of positions");
    double floor_v = pow(10.0, x.lo);
    for (size_t i = 0; i < r->n; i++) {
        const fd_rpt_cand *c = &r->c[i];
        if (!c->tok || !c->ntok) continue;
        double *v = fd_xmalloc(c->ntok * sizeof *v);
        memcpy(v, c->tok, c->ntok * sizeof *v);
        fd_sort_doubles(v, c->ntok);
        size_t n = c->ntok, below = 0;
        while (below < n && v[below] < floor_v) below++;
        double *xs = fd_xmalloc((CDF_POINTS + 4) * sizeof *xs), *ys = fd_xmalloc((CDF_POINTS + 4) * sizeof *ys);
        size_t m = 0;
        xs[m] = x.px0, ys[m++] = fd_axis_map(&y, (double)below / (double)n);
        size_t rest = n - below;
        for (size_t k = 0; rest && k < CDF_POINTS; k++) {
            size_t idx = below + (rest - 1) * k / (CDF_POINTS - 1 > 0 ? CDF_POINTS - 1 : 1);
            if (k && idx == below + (rest - 1) * (k - 1) / (CDF_POINTS - 1)) continue;
            xs[m] = fd_axis_map(&x, v[idx]), ys[m++] = fd_axis_map(&y, (double)(idx + 1) / (double)n);
        }
        xs[m] = x.px1, ys[m] = ys[m - 1], m++;
        fd_svg_polyline(b, xs, ys, m, fd_svg_colour(i), fd_svg_dash(i));
        free(xs);
        free(ys);
        free(v);
    }
    legend(b, r, TOP + 14);
    double ly = TOP + 14 + 18.0 * (double)r->n + 6;
    for (size_t i = 0; i < r->n; i++)
        if (!r->c[i].tok) {
            fd_svg_textf(b, LEG_X, ly, "start", "small", "[%zu] no tokenwise file: not drawn", i + 1);
            ly += 16;
        }
    overlay_footer(b, y.px0 + AXIS_H, r, &id);
    fd_svg_close(b);
}

/* ---- context depth ---------------------------------------------------------------- */

#define DEPTH_BINS 64

static size_t max_rows(const fd_rpt_cand *c)
{
    const jv *pc = rc_get(c, "per_context");
    size_t m = 0;
    for (size_t k = 0; pc && pc->t == JV_ARR && k < pc->u.a.n; k++) {
        int64_t rows;
        if (!jv_get_i64(pc->u.a.v[k], "scored_rows", &rows) && rows > 0 && (size_t)rows > m) m = (size_t)rows;
    }
    return m;
}

/* Per-bin mean over every position at those depths (a token mean, not the
 * receipt's mean of per-context bucket means). */
static void depth_bins(const fd_rpt_cand *c, size_t width, size_t nb, double *mean)
{
    double *sum = fd_xcalloc(nb, sizeof *sum);
    size_t *cnt = fd_xcalloc(nb, sizeof *cnt), off = 0;
    const jv *pc = rc_get(c, "per_context");
    for (size_t k = 0; pc && pc->t == JV_ARR && k < pc->u.a.n; k++) {
        int64_t rows = 0;
        jv_get_i64(pc->u.a.v[k], "scored_rows", &rows);
        for (size_t d = 0; d < (size_t)rows && off + d < c->ntok; d++) {
            size_t bin = d / width;
            if (bin < nb) sum[bin] += c->tok[off + d], cnt[bin]++;
        }
        off += (size_t)rows;
    }
    for (size_t k = 0; k < nb; k++) mean[k] = cnt[k] ? sum[k] / (double)cnt[k] : NAN;
    free(sum);
    free(cnt);
}

/* The receipt's own depth buckets, for a candidate without tokenwise data. */
static void receipt_buckets(fd_buf *b, const fd_rpt_cand *c, size_t i, const fd_axis *x, const fd_axis *y)
{
    const jv *bk = rc_get(c, "context_depth_buckets");
    for (int k = 0; k < FD_DEPTH_BUCKETS; k++) {
        const fd_depth_bucket_def *d = fd_depth_bucket(k);
        double v = fd_rpt_num(bk, d->name), mid = (double)(d->lo + d->hi) / 2.0;
        if (v > 0 && mid <= x->hi) fd_svg_circle(b, fd_axis_map(x, mid), fd_axis_map(y, v), 5, "#ffffff", fd_svg_colour(i));
    }
}

void fd_plot_depth(fd_buf *b, const fd_rpt *r)
{
    size_t maxr = 1;
    for (size_t i = 0; i < r->n; i++) {
        size_t m = max_rows(&r->c[i]);
        if (m > maxr) maxr = m;
    }
    size_t width = (maxr + DEPTH_BINS - 1) / DEPTH_BINS, nb = (maxr + width - 1) / width;
    double **means = fd_xcalloc(r->n, sizeof *means);
    prange p = {0};
    for (size_t i = 0; i < r->n; i++) {
        if (r->c[i].tok) {
            means[i] = fd_xmalloc(nb * sizeof **means);
            depth_bins(&r->c[i], width, nb, means[i]);
            for (size_t k = 0; k < nb; k++) prange_add(&p, means[i][k]);
        } else {
            const jv *bk = rc_get(&r->c[i], "context_depth_buckets");
            for (int k = 0; k < FD_DEPTH_BUCKETS; k++) prange_add(&p, fd_rpt_num(bk, fd_depth_bucket(k)->name));
        }
    }
    fd_axis x = {0, (double)maxr, 0, PX0, PX1_LEG}, y = {0, 1, 1, 0, TOP};
    prange_decades(&p, &y.lo, &y.hi);
    y.px0 = TOP + plot_height(r->n);
    idents id;
    collect_idents(r, &id);
    int h = (int)(y.px0 + AXIS_H + LINE * (double)overlay_footer_lines(r, &id) + 8);
    fd_svg_open(b, W, h, "Mean KL by context depth");
    char sub[256];
    snprintf(sub, sizeof sub, "mean KL(reference || candidate) over all positions at depth d (row index within a "
                              "context), bins of %zu row%s; log y", width, width == 1 ? "" : "s");
    heading(b, "Mean KL by context depth", sub);
    fd_svg_axes(b, &x, &y, "depth (scored row index within the context)", "mean KL (nats)");
    if (!p.any)
        fd_svg_text(b, x.px0 + 12, y.px1 + 22, "start", "t", "every mean is 0 (an exact self-compare): nothing to draw on a log axis", 0);
    double *xs = fd_xmalloc(nb * sizeof *xs), *ys = fd_xmalloc(nb * sizeof *ys);
    for (size_t i = 0; i < r->n; i++) {
        if (!means[i]) { receipt_buckets(b, &r->c[i], i, &x, &y); continue; }
        size_t m = 0;
        for (size_t k = 0; k <= nb; k++) { /* runs of drawable bins become polylines */
            double v = k < nb ? means[i][k] : NAN;
            if (v > 0) {
                double mid = (double)(k * width) + (double)(width - 1) / 2.0;
                xs[m] = fd_axis_map(&x, mid), ys[m++] = fd_axis_map(&y, v);
                continue;
            }
            fd_svg_polyline(b, xs, ys, m, fd_svg_colour(i), fd_svg_dash(i));
            if (m == 1) fd_svg_circle(b, xs[0], ys[0], 3, fd_svg_colour(i), NULL);
            m = 0;
        }
        free(means[i]);
    }
    free(xs);
    free(ys);
    free(means);
    legend(b, r, TOP + 14);
    double ly = TOP + 14 + 18.0 * (double)r->n + 6;
    for (size_t i = 0; i < r->n; i++)
        if (!r->c[i].tok) {
            fd_svg_textf(b, LEG_X, ly, "start", "small", "[%zu] hollow dots: receipt depth buckets", i + 1);
            ly += 16;
        }
    overlay_footer(b, y.px0 + AXIS_H, r, &id);
    fd_svg_close(b);
}

/* ---- size against KL -------------------------------------------------------------- */

void fd_rpt_pareto(const fd_rpt *r, unsigned char *on)
{
    for (size_t i = 0; i < r->n; i++) {
        const fd_rpt_cand *a = &r->c[i];
        double ka = fd_rpt_num(rc_get(a, "kl"), "mean");
        on[i] = a->has_bpw && isfinite(a->bpw) && isfinite(ka);
        for (size_t j = 0; on[i] && j < r->n; j++) {
            const fd_rpt_cand *o = &r->c[j];
            double ko = fd_rpt_num(rc_get(o, "kl"), "mean");
            if (j == i || !o->has_bpw || !isfinite(o->bpw) || !isfinite(ko)) continue;
            if (o->bpw <= a->bpw && ko <= ka && (o->bpw < a->bpw || ko < ka)) on[i] = 0; /* dominated */
        }
    }
}

/* The frontier's points in order of bits (then KL) joined by a dashed line, each ringed; its members
 * listed under the legend from ly on. */
static void pareto_marks(fd_buf *b, const fd_rpt *r, const fd_axis *x, const fd_axis *y, double ly)
{
    unsigned char *on = fd_xcalloc(r->n + 1, 1);
    size_t *ix = fd_xcalloc(r->n + 1, sizeof *ix), n = 0;
    fd_rpt_pareto(r, on);
    for (size_t i = 0; i < r->n; i++) {
        if (!on[i]) continue;
        size_t k = n++;
        double bi = r->c[i].bpw, ki = fd_rpt_num(rc_get(&r->c[i], "kl"), "mean");
        for (; k > 0; k--) { /* insertion by (bits, KL, index) */
            const fd_rpt_cand *o = &r->c[ix[k - 1]];
            double ko = fd_rpt_num(rc_get(o, "kl"), "mean");
            if (o->bpw < bi || (o->bpw == bi && ko <= ki)) break;
            ix[k] = ix[k - 1];
        }
        ix[k] = i;
    }
    double *xs = fd_xmalloc((n + 1) * sizeof *xs), *ys = fd_xmalloc((n + 1) * sizeof *ys);
    fd_buf list = {0};
    fd_buf_puts(&list, "Pareto frontier:");
    for (size_t k = 0; k < n; k++) {
        const fd_rpt_cand *c = &r->c[ix[k]];
        double mean = fd_rpt_num(rc_get(c, "kl"), "mean");
        xs[k] = fd_axis_map(x, c->bpw);
        ys[k] = fd_axis_map(y, mean > 0 ? mean : pow(10, y->lo));
        fd_svg_circle(b, xs[k], ys[k], 10, "none", "#222222");
        fd_buf_printf(&list, " [%zu]", ix[k] + 1);
    }
    fd_svg_polyline(b, xs, ys, n, "#555555", "6 4");
    if (n) fd_svg_text(b, LEG_X, ly, "start", "small", fd_buf_cstr(&list), 0);
    fd_buf_free(&list);
    free(xs), free(ys), free(ix), free(on);
}

int fd_plot_scatter(fd_buf *b, const fd_rpt *r)
{
    size_t npts = 0;
    double blo = INFINITY, bhi = -INFINITY;
    prange p = {0};
    for (size_t i = 0; i < r->n; i++) {
        if (!r->c[i].has_bpw || !isfinite(r->c[i].bpw)) continue;
        npts++;
        blo = fmin(blo, r->c[i].bpw);
        bhi = fmax(bhi, r->c[i].bpw);
        const jv *u = rc_get(&r->c[i], "uncertainty");
        prange_add(&p, fd_rpt_num(rc_get(&r->c[i], "kl"), "mean"));
        prange_add(&p, fd_rpt_num(u, "ci95_low"));
        prange_add(&p, fd_rpt_num(u, "ci95_high"));
    }
    if (!npts) return 0;
    double step;
    blo -= 0.5, bhi += 0.5;
    fd_axis_nice(&blo, &bhi, &step);
    fd_axis x = {blo, bhi, 0, PX0, PX1_LEG}, y = {0, 1, 1, 0, TOP};
    prange_decades(&p, &y.lo, &y.hi);
    y.px0 = TOP + plot_height(r->n);
    idents id;
    collect_idents(r, &id);
    int h = (int)(y.px0 + AXIS_H + LINE * (double)overlay_footer_lines(r, &id) + 8);
    fd_svg_open(b, W, h, "Size against mean KL");
    heading(b, "Size against mean KL",
            "declared bits per weight (candidate dataset weights.declared_bits) against mean KL(reference || "
            "candidate) with its 95% CI; log y; ringed and dashed: the Pareto frontier");
    fd_svg_axes(b, &x, &y, "declared bits per weight", "mean KL (nats)");
    for (size_t i = 0; i < r->n; i++) {
        const fd_rpt_cand *c = &r->c[i];
        if (!c->has_bpw || !isfinite(c->bpw)) continue;
        const jv *u = rc_get(c, "uncertainty");
        double mean = fd_rpt_num(rc_get(c, "kl"), "mean"), lo = fd_rpt_num(u, "ci95_low"), hi = fd_rpt_num(u, "ci95_high");
        double px = fd_axis_map(&x, c->bpw), py = fd_axis_map(&y, mean);
        if (lo > 0 && hi > 0) fd_svg_line(b, px, fd_axis_map(&y, lo), px, fd_axis_map(&y, hi), fd_svg_colour(i), 2, NULL);
        fd_svg_circle(b, px, py, 6, fd_svg_colour(i), "#222222");
        fd_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"start\" class=\"small\">[%zu] ", px + 9, py - 7, i + 1);
        fd_xml_escape(b, fd_rpt_label(c), LABEL_CP);
        fd_buf_puts(b, "</text>\n");
    }
    legend(b, r, TOP + 14);
    double ly = TOP + 14 + 18.0 * (double)r->n + 6;
    for (size_t i = 0; i < r->n; i++)
        if (!r->c[i].has_bpw) {
            fd_svg_textf(b, LEG_X, ly, "start", "small", "[%zu] declares no bits: not drawn", i + 1);
            ly += 16;
        }
    pareto_marks(b, r, &x, &y, ly);
    overlay_footer(b, y.px0 + AXIS_H, r, &id);
    fd_svg_close(b);
    return 1;
}

/* ---- one candidate: histogram ------------------------------------------------------ */

void fd_plot_hist(fd_buf *b, const fd_rpt *r, size_t i)
{
    const fd_rpt_cand *c = &r->c[i];
    if (!c->tok || !c->ntok) return;
    prange p = tokenwise_range(r); /* one x range for every candidate: histograms line up */
    fd_axis x = {0, 1, 1, PX0, PX1}, y = {0, 1, 0, 0, TOP};
    prange_decades(&p, &x.lo, &x.hi);
    int span = (int)(x.hi - x.lo), per = span <= 6 ? 10 : 5;
    size_t nb = (size_t)(span * per), nonpos = 0, below = 0;
    size_t *cnt = fd_xcalloc(nb, sizeof *cnt);
    for (size_t k = 0; k < c->ntok; k++) {
        double v = c->tok[k];
        if (!(v > 0)) { nonpos++; continue; }
        double t = (log10(v) - x.lo) * per;
        if (t < 0) below++;
        long bin = t < 0 ? 0 : (long)t;
        if (bin >= (long)nb) bin = (long)nb - 1;
        cnt[bin]++;
    }
    size_t top = 0;
    for (size_t k = 0; k < nb; k++) top = cnt[k] > top ? cnt[k] : top;
    double ylo = 0, yhi = (double)top / (double)c->ntok, step;
    if (!(yhi > 0)) yhi = 1;
    fd_axis_nice(&ylo, &yhi, &step);
    y.lo = 0, y.hi = yhi;
    y.px0 = TOP + 260;
    int h = (int)(y.px0 + AXIS_H + LINE * CAND_FOOTER_LINES + 8);
    char title[256], sub[512];
    snprintf(title, sizeof title, "[%zu] Per-position KL histogram", i + 1);
    snprintf(sub, sizeof sub, "%zu scored positions, %d bins per decade, log x; dashed: the receipt's median, p99, max"
                              "%s%zu value(s) <= 0 not drawn; %zu below the axis counted in the first bin",
             c->ntok, per, "; ", nonpos, below);
    fd_svg_open(b, W, h, title);
    heading(b, title, sub);
    fd_svg_axes(b, &x, &y, "per-position KL (nats)", "fraction of positions");
    if (nonpos == c->ntok)
        fd_svg_text(b, x.px0 + 12, y.px1 + 22, "start", "t", "every value is <= 0 (an exact self-compare): nothing to draw on a log axis", 0);
    for (size_t k = 0; k < nb; k++) {
        if (!cnt[k]) continue;
        double x0 = fd_axis_map(&x, pow(10.0, x.lo + (double)k / per)),
               x1 = fd_axis_map(&x, pow(10.0, x.lo + (double)(k + 1) / per)),
               yt = fd_axis_map(&y, (double)cnt[k] / (double)c->ntok);
        fd_svg_rect(b, x0 + 0.5, yt, x1 - x0 - 1, y.px0 - yt, fd_svg_colour(i), NULL);
    }
    static const char *const MARK[] = {"median", "p99", "max"};
    for (int k = 0; k < 3; k++) {
        double v = fd_rpt_num(rc_get(c, "kl"), MARK[k]);
        if (!(v > 0)) continue;
        double px = fd_axis_map(&x, v);
        fd_svg_line(b, px, y.px1, px, y.px0, "#222222", 1.2, "5 3");
        fd_svg_text(b, px + 3, y.px1 + 14 + 14 * k, "start", "small", MARK[k], 0);
    }
    free(cnt);
    cand_footer(b, y.px0 + AXIS_H, c, 1);
    fd_svg_close(b);
}

/* ---- one candidate: per-context bars ------------------------------------------------ */

#define CAT_H 64      /* room for the slanted category labels under a frame */
#define CAT_MAX 40    /* at most this many labelled categories (every k-th beyond) */

/* A categorical x axis under a bar chart: each context's window_id (cut to
 * 14 code points), slanted, under its bar; with more than CAT_MAX contexts
 * every k-th is labelled (k = ceil(n / CAT_MAX)) and ticked; the axis title
 * under them. */
static void category_labels(fd_buf *b, const jv *pc, size_t n, double px0, double bw, double base)
{
    size_t every = n <= CAT_MAX ? 1 : (n + CAT_MAX - 1) / CAT_MAX;
    for (size_t k = 0; k < n; k += every) {
        double cx = px0 + bw * ((double)k + 0.5), cy = base + 12;
        fd_svg_line(b, cx, base, cx, base + 4, "#333333", 1, NULL);
        fd_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\" class=\"small\" "
                         "transform=\"rotate(-40 %.2f %.2f)\">", cx, cy, cx, cy);
        fd_xml_escape(b, fd_rpt_str(pc->u.a.v[k], "window_id"), 14);
        fd_buf_puts(b, "</text>\n");
    }
    char t[160];
    snprintf(t, sizeof t, "context (window_id, in the receipt's per_context order%s)",
             every > 1 ? "; every k-th labelled" : "");
    fd_svg_text(b, (px0 + bw * (double)n / 2), base + CAT_H + 16, "middle", "t", t, 0);
}

void fd_plot_contexts(fd_buf *b, const fd_rpt *r, size_t i)
{
    const fd_rpt_cand *c = &r->c[i];
    const jv *pc = rc_get(c, "per_context"), *worst = rc_get(c, "high_kld_contexts");
    size_t n = pc && pc->t == JV_ARR ? pc->u.a.n : 0, nw = worst && worst->t == JV_ARR ? worst->u.a.n : 0;
    double top = 0;
    for (size_t k = 0; k < n; k++) {
        double v = fd_rpt_num(pc->u.a.v[k], "mean");
        if (v > top) top = v;
    }
    double ylo = 0, yhi = top > 0 ? top * 1.12 : 1, step, xhi = n ? (double)n : 1;
    fd_axis_nice(&ylo, &yhi, &step);
    fd_axis x = {0, xhi, 0, PX0, PX1}, y = {0, yhi, 0, TOP + 260, TOP};
    int h = (int)(y.px0 + AXIS_H + CAT_H + LINE * (double)(nw + CAND_FOOTER_LINES) + 8);
    char title[256], sub[512];
    snprintf(title, sizeof title, "[%zu] Mean KL per context", i + 1);
    snprintf(sub, sizeof sub, "%zu contexts in receipt order (per_context); #k marks the k-th highest mean "
                              "(high_kld_contexts); dashed: the token mean kl.mean", n);
    fd_svg_open(b, W, h, title);
    heading(b, title, sub);
    fd_axis frame = x;
    frame.hi = frame.lo; /* categories, not numbers: the frame without numeric ticks */
    fd_svg_axes(b, &frame, &y, NULL, "mean KL (nats)");
    double bw = (x.px1 - x.px0) / xhi, gap = bw > 4 ? 1 : 0;
    category_labels(b, pc, n, x.px0, bw, y.px0);
    for (size_t k = 0; k < n; k++) {
        double v = fd_rpt_num(pc->u.a.v[k], "mean");
        if (!(v > 0)) continue;
        double yt = fd_axis_map(&y, v);
        fd_svg_rect(b, x.px0 + bw * (double)k + gap, yt, bw - 2 * gap, y.px0 - yt, fd_svg_colour(i), NULL);
    }
    double km = fd_rpt_num(rc_get(c, "kl"), "mean");
    if (km > 0) fd_svg_line(b, x.px0, fd_axis_map(&y, km), x.px1, fd_axis_map(&y, km), "#222222", 1.2, "5 3");
    double fy = y.px0 + AXIS_H + CAT_H, placed_x[FD_KL_TOP * 4];
    int placed_lv[FD_KL_TOP * 4];
    size_t nplaced = 0;
    for (size_t w = 0; w < nw; w++) {
        const jv *e = worst->u.a.v[w];
        int64_t idx;
        if (jv_get_i64(e, "index", &idx)) continue;
        for (size_t k = 0; k < n; k++) {
            int64_t pidx;
            if (jv_get_i64(pc->u.a.v[k], "index", &pidx) || pidx != idx) continue;
            double v = fd_rpt_num(pc->u.a.v[k], "mean"), px = x.px0 + bw * ((double)k + 0.5);
            int level = 0; /* the lowest level free of an earlier label within 24 px */
            for (int clash = 1; clash && level < 8;) {
                clash = 0;
                for (size_t q = 0; q < nplaced; q++)
                    if (placed_lv[q] == level && fabs(placed_x[q] - px) < 24) { clash = 1; level++; break; }
            }
            if (nplaced < sizeof placed_x / sizeof *placed_x) placed_x[nplaced] = px, placed_lv[nplaced++] = level;
            fd_svg_textf(b, px, (v > 0 ? fd_axis_map(&y, v) : y.px0) - 4 - 13.0 * level, "middle", "small", "#%zu", w + 1);
            break;
        }
        fd_buf lineb = {0};
        fd_buf_printf(&lineb, "#%zu context index %lld, window_id ", w + 1, (long long)idx);
        fd_buf_puts(&lineb, fd_rpt_str(e, "window_id"));
        fd_buf_puts(&lineb, ": mean ");
        fd_put_short(&lineb, fd_rpt_num(e, "mean"));
        fd_buf_puts(&lineb, ", max ");
        fd_put_short(&lineb, fd_rpt_num(e, "max"));
        fd_buf_puts(&lineb, ", top-1 ");
        fd_put_short(&lineb, fd_rpt_num(e, "top1_agreement"));
        fd_svg_text(b, 10, fy, "start", "small", fd_buf_cstr(&lineb), 140);
        fd_buf_free(&lineb);
        fy += LINE;
    }
    cand_footer(b, fy, c, 0);
    fd_svg_close(b);
}

/* ---- mean KL per domain ------------------------------------------------------------ */

#define DOMAINS_MAX 24

/* The domain names of every receipt's per_domain object, sorted by bytes, at most DOMAINS_MAX
 * (*more set when there are others). */
static size_t domain_keys(const fd_rpt *r, const char **keys, int *more, prange *p)
{
    size_t nk = 0;
    *more = 0;
    for (size_t i = 0; i < r->n; i++) {
        const jv *pd = rc_get(&r->c[i], "per_domain");
        if (!pd || pd->t != JV_OBJ) continue;
        for (size_t m = 0; m < pd->u.o.n; m++) {
            const char *k = pd->u.o.m[m].k;
            prange_add(p, fd_rpt_num(pd, k));
            size_t at = 0;
            while (at < nk && strcmp(keys[at], k) < 0) at++;
            if (at < nk && !strcmp(keys[at], k)) continue;
            if (nk == DOMAINS_MAX) { *more = 1; if (at == nk) continue; nk--; }
            memmove(keys + at + 1, keys + at, (nk - at) * sizeof *keys);
            keys[at] = k;
            nk++;
        }
    }
    return nk;
}

int fd_plot_domains(fd_buf *b, const fd_rpt *r)
{
    const char *keys[DOMAINS_MAX];
    int more;
    prange p = {0};
    size_t nk = domain_keys(r, keys, &more, &p);
    if (!nk) return 0;
    const int px0 = 250;
    const double bar = 9, group = bar * (double)r->n + 14;
    fd_axis x = {0, 1, 1, px0, PX1_LEG}, y = {0, 0, 0, 0, TOP};
    prange_decades(&p, &x.lo, &x.hi);
    y.px0 = TOP + group * (double)nk + 10;
    if (y.px0 < TOP + 18.0 * (double)r->n + 30) y.px0 = TOP + 18.0 * (double)r->n + 30; /* room for the legend */
    idents id;
    collect_idents(r, &id);
    int h = (int)(y.px0 + AXIS_H + LINE * (double)(overlay_footer_lines(r, &id) + (size_t)more) + 8);
    fd_svg_open(b, W, h, "Mean KL per domain");
    heading(b, "Mean KL per domain",
            "each receipt's per_domain: mean KL(reference || candidate) over the positions of each panel domain; "
            "one bar per candidate; nats, log scale");
    fd_svg_axes(b, &x, &y, "mean KL (nats)", NULL);
    for (size_t k = 0; k < nk; k++) {
        double gy = TOP + group * (double)k + 7;
        fd_buf_printf(b, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" class=\"t\">", px0 - 10,
                      gy + bar * (double)r->n / 2 + 4);
        fd_xml_escape(b, keys[k], LABEL_CP);
        fd_buf_puts(b, "</text>\n");
        for (size_t i = 0; i < r->n; i++) {
            const jv *pd = rc_get(&r->c[i], "per_domain");
            double v = fd_rpt_num(pd, keys[k]), by = gy + bar * (double)i; /* NaN: not in this receipt */
            if (v > 0) fd_svg_rect(b, x.px0, by, fd_axis_map(&x, v) - x.px0, bar - 1, fd_svg_colour(i), NULL);
            else if (v == 0) fd_svg_textf(b, x.px0 + 4, by + bar - 1, "start", "small", "[%zu] 0", i + 1);
        }
    }
    legend(b, r, TOP + 14);
    double fy = y.px0 + AXIS_H;
    if (more) fy = footer(b, fy, "more than %d domains: the first %d by name are drawn", DOMAINS_MAX, DOMAINS_MAX);
    overlay_footer(b, fy, r, &id);
    fd_svg_close(b);
    return 1;
}
