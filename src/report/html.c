/* The report page (report/report.h fd_rpt_render): a headline table whose
 * numeric cells carry the receipt value exactly (data-field = the receipt
 * key path, data-value = its Python repr), the figures of plots.c and an
 * identity table.  No script, no external resource, no clock. */
#include "report.h"
#include "plots.h"
#include "svg.h"
#include "format/version.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char CSS[] =
    "body{font-family:'DejaVu Sans',Arial,sans-serif;color:#222;margin:24px}"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}"
    "p{font-size:13px;line-height:1.45}"
    "table{border-collapse:collapse;font-size:12px;margin:8px 0}"
    "th,td{border:1px solid #ccc;padding:4px 6px;vertical-align:top}th{background:#f2f2f2}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "td.cand{min-width:150px}td.why{font-size:11px;min-width:220px;max-width:300px}td.na{color:#999;text-align:center}"
    ".sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:baseline}"
    ".strict{color:#1a7f37;font-weight:bold}.advisory{color:#b35900;font-weight:bold}"
    ".note{background:#fff6dd;border:1px solid #e0c060;padding:6px 10px;font-size:13px}"
    "details.ids{margin:6px 0 14px}details.ids summary{cursor:pointer;font-size:12px;color:#555}"
    ".mono{font-family:'DejaVu Sans Mono',monospace;font-size:11px;word-break:break-all}"
    "figure{margin:12px 0}svg{display:block}"
    "h3{font-size:15px;margin:18px 0 6px}a{color:#2255aa}.jump{font-size:13px;margin:2px 0 8px}"
    "table.worst td.ctx{max-width:360px;color:#555}table.worst td.miss{background:#fde0dd}"
    ".tk{white-space:pre-wrap;font-family:'DejaVu Sans Mono',monospace;font-size:11px}.id{color:#999;font-size:10px}"
    ".win{margin:8px 0 14px}.win p{margin:2px 0}.strip{display:flex;flex-wrap:wrap;gap:1px;max-width:1180px}"
    ".t{display:inline-block;min-width:14px;padding:2px 3px;font-family:'DejaVu Sans Mono',monospace;font-size:11px;"
    "white-space:pre;border:1px solid #ddd}.t.w{outline:2px solid #222}"
    ".h0{background:#ffffff}.h1{background:#fff5eb}.h2{background:#fee6ce}.h3{background:#fdd0a2}"
    ".h4{background:#fdae6b}.h5{background:#fd8d3c}.h6{background:#e6550d;color:#fff}.h7{background:#a63603;color:#fff}";

static void esc(fd_buf *b, const char *s) { fd_xml_escape(b, s, 0); }

static const jv *path_get(const jv *r, const char *path)
{
    char key[128];
    const jv *v = r;
    while (v && *path) {
        const char *dot = strchr(path, '.');
        size_t n = dot ? (size_t)(dot - path) : strlen(path);
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        v = jv_get(v, key);
        path += n + (dot ? 1 : 0);
    }
    return v;
}

/* A numeric cell: the exact receipt value in data-value, 4 digits shown. */
static void num_cell(fd_buf *b, const char *field, const jv *v)
{
    if (!v || (v->t != JV_FLOAT && v->t != JV_INT)) {
        fd_buf_puts(b, "<td class=\"na\">n/a</td>");
        return;
    }
    fd_buf_printf(b, "<td class=\"num\" data-field=\"%s\" data-value=\"", field);
    if (v->t == JV_INT) fd_buf_printf(b, "%lld\">%lld</td>", (long long)v->u.i, (long long)v->u.i);
    else {
        fd_put_repr(b, v->u.f);
        fd_buf_puts(b, "\">");
        fd_put_short(b, v->u.f);
        fd_buf_puts(b, "</td>");
    }
}

static void field_cell(fd_buf *b, const fd_rpt_cand *c, const char *field)
{
    num_cell(b, field, path_get(c->receipt, field));
}

/* Why the class is what it is: overridden gates, then every disclosure that
 * affects comparability or is not informational. */
static void why(fd_buf *b, const fd_rpt_cand *c)
{
    const jv *gates = jv_get(c->receipt, "gates"), *disc = jv_get(c->receipt, "disclosures");
    const jv *cmp = jv_get(c->receipt, "comparability");
    int any = 0;
    for (size_t i = 0; gates && gates->t == JV_OBJ && i < gates->u.o.n; i++) {
        const char *by = jv_get_str(gates->u.o.m[i].v, "overridden_by");
        if (!by) continue;
        fd_buf_puts(b, any++ ? "; " : "");
        fd_buf_puts(b, "gate ");
        esc(b, gates->u.o.m[i].k);
        fd_buf_puts(b, " overridden by ");
        esc(b, by);
    }
    for (size_t i = 0; disc && disc->t == JV_ARR && i < disc->u.a.n; i++) {
        const jv *d = disc->u.a.v[i], *aff = jv_get(d, "affects_comparability");
        const char *sev = fd_rpt_str(d, "severity");
        if (!(aff && aff->t == JV_BOOL && aff->u.b) && !strcmp(sev, "info")) continue;
        fd_buf_puts(b, any++ ? "; " : "");
        esc(b, fd_rpt_str(d, "code"));
        fd_buf_puts(b, " (");
        esc(b, sev);
        fd_buf_puts(b, "): ");
        esc(b, fd_rpt_str(d, "detail"));
    }
    const jv *bias = jv_get(cmp, "bias");
    if (bias && bias->t == JV_OBJ) {
        fd_buf_puts(b, any++ ? "; " : "");
        fd_buf_puts(b, "bias ");
        esc(b, fd_rpt_str(bias, "kind"));
        fd_buf_puts(b, ", direction ");
        esc(b, fd_rpt_str(bias, "direction"));
    }
    if (!any) fd_buf_puts(b, "every gate passed without override; no disclosure affects comparability");
    const jv *floor = jv_get(cmp, "usable_as_floor");
    if (floor && floor->t == JV_BOOL && !floor->u.b) fd_buf_puts(b, "; not usable as a floor");
}

static int any_js(const fd_rpt *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (jv_get(jv_get(r->c[i].receipt, "js"), "mean")) return 1;
    return 0;
}

static void headline(fd_buf *b, const fd_rpt *r)
{
    int js = any_js(r);
    unsigned char *pareto = fd_xcalloc(r->n + 1, 1);
    fd_rpt_pareto(r, pareto);
    fd_buf_puts(b, "<table id=\"headline\">\n<tr><th>candidate</th><th>class and why</th><th>bits / weight</th>"
                   "<th>mean KL(ref&#8214;cand)</th><th>bootstrap 95% CI</th><th>mean KL(cand&#8214;ref)</th>"
                   "<th>top-1 agreement</th><th>median</th><th>p99</th><th>max</th>");
    if (js) fd_buf_puts(b, "<th>mean JS</th>");
    fd_buf_puts(b, "<th>positions</th><th>contexts</th></tr>\n");
    for (size_t i = 0; i < r->n; i++) {
        const fd_rpt_cand *c = &r->c[i];
        const char *cls = fd_rpt_str(jv_get(c->receipt, "comparability"), "class");
        fd_buf_printf(b, "<tr data-candidate=\"%zu\"%s data-receipt=\"", i + 1, pareto[i] ? " data-pareto=\"1\"" : "");
        esc(b, fd_rpt_str(c->receipt, "receipt_sha256"));
        fd_buf_printf(b, "\"><td class=\"cand\"><span class=\"sw\" style=\"background:%s\"></span>[%zu] <span data-field=\"candidate.label\">",
                      fd_svg_colour(i), i + 1);
        esc(b, fd_rpt_label(c));
        fd_buf_printf(b, "</span></td><td class=\"why\"><span class=\"%s\" data-field=\"comparability.class\" "
                         "data-value=\"", !strcmp(cls, "strict") ? "strict" : "advisory");
        esc(b, cls);
        fd_buf_puts(b, "\">");
        esc(b, cls);
        fd_buf_puts(b, "</span>: ");
        why(b, c);
        fd_buf_puts(b, "</td>");
        if (c->has_bpw) {
            jv *bits = jv_float(c->bpw);
            num_cell(b, "declared_bits", bits);
            jv_free(bits);
        } else fd_buf_puts(b, "<td class=\"na\">not declared</td>");
        field_cell(b, c, "kl.mean");
        const jv *u = jv_get(c->receipt, "uncertainty"), *lo = jv_get(u, "ci95_low"), *hi = jv_get(u, "ci95_high");
        if (lo && hi && lo->t == JV_FLOAT && hi->t == JV_FLOAT) {
            fd_buf_puts(b, "<td class=\"num\"><span data-field=\"uncertainty.ci95_low\" data-value=\"");
            fd_put_repr(b, lo->u.f);
            fd_buf_puts(b, "\">");
            fd_put_short(b, lo->u.f);
            fd_buf_puts(b, "</span> &#8211; <span data-field=\"uncertainty.ci95_high\" data-value=\"");
            fd_put_repr(b, hi->u.f);
            fd_buf_puts(b, "\">");
            fd_put_short(b, hi->u.f);
            fd_buf_puts(b, "</span></td>");
        } else {
            fd_buf_puts(b, "<td class=\"na\">none (");
            esc(b, fd_rpt_str(u, "method"));
            fd_buf_puts(b, ")</td>");
        }
        field_cell(b, c, "kl_reverse_mean");
        field_cell(b, c, "top1_agreement");
        field_cell(b, c, "kl.median");
        field_cell(b, c, "kl.p99");
        field_cell(b, c, "kl.max");
        if (js) field_cell(b, c, "js.mean");
        field_cell(b, c, "measurement_scope.scored_positions");
        field_cell(b, c, "measurement_scope.contexts");
        fd_buf_puts(b, "</tr>\n");
    }
    fd_buf_puts(b, "</table>\n");
    free(pareto);
}

/* ---- the headline as CSV, a data: link (the page stays one file) ---------------------- */

static void csv_text(fd_buf *b, const char *s)
{
    fd_buf_putc(b, '"');
    for (; *s; s++) {
        if (*s == '"') fd_buf_putc(b, '"');
        fd_buf_putc(b, *s);
    }
    fd_buf_putc(b, '"');
}

static void csv_num(fd_buf *b, const jv *v)
{
    if (v && v->t == JV_FLOAT) fd_put_repr(b, v->u.f);
    else if (v && v->t == JV_INT) fd_buf_printf(b, "%lld", (long long)v->u.i);
}

static const char *const CSV_FIELDS[] = {"kl.mean", "uncertainty.ci95_low", "uncertainty.ci95_high", "kl_reverse_mean",
                                         "top1_agreement", "kl.median", "kl.p99", "kl.max", "js.mean",
                                         "measurement_scope.scored_positions", "measurement_scope.contexts"};

/* One header line and a row per candidate: the exact receipt numbers
 * (shortest round-trip), empty where the receipt has none. */
void fd_rpt_headline_csv(const fd_rpt *r, fd_buf *b)
{
    unsigned char *pareto = fd_xcalloc(r->n + 1, 1);
    fd_rpt_pareto(r, pareto);
    fd_buf_puts(b, "candidate,label,class,declared_bits,pareto");
    for (size_t k = 0; k < sizeof CSV_FIELDS / sizeof *CSV_FIELDS; k++) fd_buf_printf(b, ",%s", CSV_FIELDS[k]);
    fd_buf_puts(b, ",receipt_sha256\r\n");
    for (size_t i = 0; i < r->n; i++) {
        const fd_rpt_cand *c = &r->c[i];
        fd_buf_printf(b, "%zu,", i + 1);
        csv_text(b, fd_rpt_label(c));
        fd_buf_putc(b, ',');
        csv_text(b, fd_rpt_str(jv_get(c->receipt, "comparability"), "class"));
        fd_buf_putc(b, ',');
        if (c->has_bpw) fd_put_repr(b, c->bpw);
        fd_buf_printf(b, ",%d", pareto[i]);
        for (size_t k = 0; k < sizeof CSV_FIELDS / sizeof *CSV_FIELDS; k++) {
            fd_buf_putc(b, ',');
            csv_num(b, path_get(c->receipt, CSV_FIELDS[k]));
        }
        fd_buf_putc(b, ',');
        csv_text(b, fd_rpt_str(c->receipt, "receipt_sha256"));
        fd_buf_puts(b, "\r\n");
    }
    free(pareto);
}

static void csv_link(fd_buf *b, const fd_rpt *r)
{
    fd_buf csv = {0};
    fd_rpt_headline_csv(r, &csv);
    fd_buf_puts(b, "<p class=\"csv\"><a download=\"fidelity-headline.csv\" href=\"data:text/csv;charset=utf-8,");
    fd_buf_url_quote(b, fd_buf_cstr(&csv), ""); /* every byte but the unreserved ones as %XX */
    fd_buf_puts(b, "\">Download the headline table (CSV)</a>: the exact receipt values, one row per candidate.</p>\n");
    fd_buf_free(&csv);
}

static void id_row(fd_buf *b, const char *name, const char *value)
{
    fd_buf_puts(b, "<tr><th>");
    esc(b, name);
    fd_buf_puts(b, "</th><td class=\"mono\">");
    esc(b, value);
    fd_buf_puts(b, "</td></tr>\n");
}

static void identities(fd_buf *b, const fd_rpt_cand *c, size_t i)
{
    const jv *r = c->receipt, *cand = jv_get(r, "candidate"), *ref = jv_get(r, "reference"), *pan = jv_get(r, "panel");
    fd_buf_puts(b, "<details class=\"ids\"><summary>identities: the receipt's seal and the sha256 of what it "
                   "compared</summary>\n");
    fd_buf_printf(b, "<table class=\"ids\" data-candidate=\"%zu\">\n", i + 1);
    id_row(b, "receipt_sha256", fd_rpt_str(r, "receipt_sha256"));
    id_row(b, "created_utc", fd_rpt_str(r, "created_utc"));
    id_row(b, "comparison_kind", fd_rpt_str(r, "comparison_kind"));
    id_row(b, "candidate dataset_id", fd_rpt_str(cand, "dataset_id"));
    id_row(b, "candidate dataset_sha256", fd_rpt_str(cand, "dataset_sha256"));
    id_row(b, "candidate scope_digest", fd_rpt_str(cand, "scope_digest"));
    id_row(b, "reference dataset_id", fd_rpt_str(ref, "dataset_id"));
    id_row(b, "reference dataset_sha256", fd_rpt_str(ref, "dataset_sha256"));
    id_row(b, "panel_id", fd_rpt_str(pan, "panel_id"));
    id_row(b, "panel suite_token_hash_sha256", fd_rpt_str(pan, "suite_token_hash_sha256"));
    id_row(b, "tokenwise sha256", fd_rpt_str(jv_get(r, "tokenwise"), "sha256"));
    id_row(b, "comparability key", fd_rpt_str(jv_get(r, "comparability"), "key"));
    id_row(b, "replay backend", fd_rpt_str(jv_get(r, "comparator"), "replay_backend"));
    fd_buf_puts(b, "</table>\n</details>\n");
}

static void notes(fd_buf *b, const fd_rpt *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->c[i].tok) continue;
        fd_buf_printf(b, "<p class=\"note\">[%zu] ", i + 1);
        esc(b, fd_rpt_label(&r->c[i]));
        fd_buf_puts(b, ": no usable tokenwise file (--summary-only): ");
        esc(b, r->c[i].tok_note);
        fd_buf_puts(b, ". Its histogram and CDF are left out and its depth curve shows the receipt's depth "
                       "buckets; every other number is the receipt's own.</p>\n");
    }
    for (size_t i = 1; i < r->n; i++) {
        const char *a = fd_rpt_str(jv_get(r->c[0].receipt, "reference"), "dataset_sha256"),
                   *bb = fd_rpt_str(jv_get(r->c[i].receipt, "reference"), "dataset_sha256"),
                   *pa = fd_rpt_str(jv_get(r->c[0].receipt, "panel"), "suite_token_hash_sha256"),
                   *pb = fd_rpt_str(jv_get(r->c[i].receipt, "panel"), "suite_token_hash_sha256");
        if (strcmp(a, bb) || strcmp(pa, pb)) {
            fd_buf_puts(b, "<p class=\"note\">These receipts do not share one reference dataset and panel: their "
                           "numbers measure different things and are not directly comparable.</p>\n");
            break;
        }
    }
}

static void figure(fd_buf *b, const char *id)
{
    fd_buf_printf(b, "<figure id=\"%s\">\n", id);
}

void fd_rpt_render(const fd_rpt *r, fd_buf *b)
{
    const jv *first = r->n ? r->c[0].receipt : NULL;
    fd_buf title = {0};
    if (r->title) fd_buf_puts(&title, r->title);
    else {
        fd_buf_puts(&title, "Fidelity comparison against ");
        fd_buf_puts(&title, fd_rpt_str(jv_get(first, "reference"), "dataset_id"));
    }
    fd_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>");
    esc(b, fd_buf_cstr(&title));
    fd_buf_printf(b, "</title>\n<meta name=\"generator\" content=\"%s/%s\">\n<style>%s</style>\n</head>\n<body>\n<h1>",
                  FD_ENGINE_NAME, FD_VERSION, CSS);
    esc(b, fd_buf_cstr(&title));
    fd_buf_free(&title);
    fd_buf_printf(b, "</h1>\n<p>%zu candidate%s. Every number on this page is read from a sealed comparison receipt "
                     "that passed <code>fidelity validate --receipt</code>, or from the tokenwise file whose size "
                     "and sha256 that receipt binds. KL in nats; lower is better. Generated by %s/%s.</p>\n",
                  r->n, r->n == 1 ? "" : "s", FD_ENGINE_NAME, FD_VERSION);
    notes(b, r);
    fd_buf_puts(b, "<h2>Headline</h2>\n");
    headline(b, r);
    csv_link(b, r);
    figure(b, "fig-means");
    fd_plot_means(b, r);
    fd_buf_puts(b, "</figure>\n");
    fd_buf dom = {0};
    if (fd_plot_domains(&dom, r)) {
        fd_buf_puts(b, "<h2>Per domain</h2>\n");
        figure(b, "fig-domains");
        fd_buf_put(b, dom.p, dom.n);
        fd_buf_puts(b, "</figure>\n");
    }
    fd_buf_free(&dom);
    fd_buf_puts(b, "<h2>Distribution of per-position KL</h2>\n");
    figure(b, "fig-cdf");
    fd_plot_cdf(b, r);
    fd_buf_puts(b, "</figure>\n<h2>Context depth</h2>\n");
    figure(b, "fig-depth");
    fd_plot_depth(b, r);
    fd_buf_puts(b, "</figure>\n<h2>Size against KL</h2>\n");
    figure(b, "fig-scatter");
    if (!fd_plot_scatter(b, r))
        fd_buf_puts(b, "<p class=\"note\">No candidate declares its bits per weight (the candidate dataset's "
                       "<code>weights.declared_bits</code>, read with <code>--dataset DIR</code>), so there is no "
                       "size-against-KL plot.</p>\n");
    fd_buf_puts(b, "</figure>\n");
    for (size_t i = 0; i < r->n; i++) {
        fd_buf_printf(b, "<h2 id=\"cand-%zu\"><span class=\"sw\" style=\"background:%s\"></span>[%zu] ", i + 1,
                      fd_svg_colour(i), i + 1);
        esc(b, fd_rpt_label(&r->c[i]));
        fd_buf_printf(b, "</h2>\n<p class=\"jump\"><a href=\"#drill-%zu\">drill-down: the worst positions and their "
                         "windows</a></p>\n", i + 1);
        char id[48];
        if (r->c[i].tok) {
            snprintf(id, sizeof id, "fig-hist-%zu", i + 1);
            figure(b, id);
            fd_plot_hist(b, r, i);
            fd_buf_puts(b, "</figure>\n");
        }
        snprintf(id, sizeof id, "fig-contexts-%zu", i + 1);
        figure(b, id);
        fd_plot_contexts(b, r, i);
        fd_buf_puts(b, "</figure>\n");
        fd_rpt_drill(b, r, i);
        identities(b, &r->c[i], i);
    }
    fd_buf_puts(b, "</body>\n</html>\n");
}
