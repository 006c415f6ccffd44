/* SVG plot primitives (report/svg.h). */
#include "svg.h"
#include "format/json.h"
#include "format/pyfloat.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void fd_xml_escape(fd_buf *b, const char *s, size_t max_cp)
{
    const unsigned char *p = (const unsigned char *)(s ? s : ""), *end = p + strlen((const char *)p);
    size_t cps = 0;
    while (*p) {
        int ok = fd_utf8_len(p, end);
        size_t len = ok > 0 ? (size_t)ok : 1; /* invalid UTF-8 (never from the JSON parser): one '?' per byte */
        if (max_cp && cps == max_cp) {
            fd_buf_puts(b, "\xe2\x80\xa6");
            return;
        }
        cps++;
        if (len == 1) {
            switch (*p) {
            case '&': fd_buf_puts(b, "&amp;"); break;
            case '<': fd_buf_puts(b, "&lt;"); break;
            case '>': fd_buf_puts(b, "&gt;"); break;
            case '"': fd_buf_puts(b, "&quot;"); break;
            case '\'': fd_buf_puts(b, "&#39;"); break;
            default: fd_buf_putc(b, (*p < 0x20 && *p != '\t' && *p != '\n') || *p >= 0x80 ? '?' : (char)*p);
            }
        } else if (len == 3 && p[0] == 0xEF && p[1] == 0xBF && (p[2] == 0xBE || p[2] == 0xBF)) {
            fd_buf_putc(b, '?');
        } else {
            fd_buf_put(b, p, len);
        }
        p += len;
    }
}

void fd_put_repr(fd_buf *b, double v)
{
    char tmp[40];
    if (isnan(v)) fd_buf_puts(b, "nan");
    else if (isinf(v)) fd_buf_puts(b, v > 0 ? "inf" : "-inf");
    else if (fd_pyfloat_repr(v, tmp, sizeof tmp) > 0) fd_buf_puts(b, tmp);
}

void fd_put_short(fd_buf *b, double v)
{
    if (!isfinite(v)) { fd_put_repr(b, v); return; }
    fd_buf_printf(b, "%.4g", v);
}

double fd_axis_map(const fd_axis *a, double v)
{
    double t;
    if (a->log) t = v > 0 ? (log10(v) - a->lo) / (a->hi - a->lo) : 0.0;
    else t = (v - a->lo) / (a->hi - a->lo);
    if (!(t > 0)) t = 0; /* also NaN */
    if (t > 1) t = 1;
    return a->px0 + t * (a->px1 - a->px0);
}

void fd_axis_nice(double *lo, double *hi, double *step)
{
    double span = *hi - *lo;
    if (!(span > 0) || !isfinite(span)) span = fabs(*hi) > 0 ? fabs(*hi) : 1.0;
    double raw = span / 5.0, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
    double s = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    *step = s;
    double nlo = floor(*lo / s) * s, nhi = ceil(*hi / s) * s;
    if (nhi <= nlo) nhi = nlo + s;
    *lo = nlo;
    *hi = nhi;
}

static const char *const PALETTE[] = {"#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1",
                                      "#9c755f", "#76b7b2", "#edc948", "#ff9da7", "#5f5f5f"};
#define NPAL (sizeof PALETTE / sizeof *PALETTE)

const char *fd_svg_colour(size_t i) { return PALETTE[i % NPAL]; }

const char *fd_svg_dash(size_t i)
{
    static const char *const DASH[] = {NULL, "6 3", "2 2", "8 3 2 3"};
    return DASH[(i / NPAL) % 4];
}

void fd_svg_open(fd_buf *b, int w, int h, const char *label)
{
    fd_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                     "role=\"img\" aria-label=\"", w, h, w, h);
    fd_xml_escape(b, label, 0);
    fd_buf_puts(b, "\">\n<title>");
    fd_xml_escape(b, label, 0);
    /* the style travels with each figure, so an SVG copied out alone still reads */
    fd_buf_puts(b, "</title>\n<style>text{font-family:'DejaVu Sans',Arial,sans-serif;font-size:12px;fill:#222}"
                   ".title{font-size:15px;font-weight:bold}.small{font-size:11px;fill:#555}"
                   ".mono{font-family:'DejaVu Sans Mono',monospace;font-size:10px;fill:#444}</style>\n");
    fd_buf_printf(b, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
}

void fd_svg_close(fd_buf *b) { fd_buf_puts(b, "</svg>\n"); }

void fd_svg_text(fd_buf *b, double x, double y, const char *anchor, const char *cls, const char *text, size_t max_cp)
{
    fd_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\" class=\"%s\">", x, y, anchor ? anchor : "start",
                  cls ? cls : "t");
    fd_xml_escape(b, text, max_cp);
    fd_buf_puts(b, "</text>\n");
}

void fd_svg_textf(fd_buf *b, double x, double y, const char *anchor, const char *cls, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    fd_svg_text(b, x, y, anchor, cls, tmp, 0);
}

void fd_svg_rect(fd_buf *b, double x, double y, double w, double h, const char *fill, const char *stroke)
{
    fd_buf_printf(b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"", x, y, w > 0 ? w : 0,
                  h > 0 ? h : 0, fill ? fill : "none");
    if (stroke) fd_buf_printf(b, " stroke=\"%s\"", stroke);
    fd_buf_puts(b, "/>\n");
}

void fd_svg_line(fd_buf *b, double x1, double y1, double x2, double y2, const char *stroke, double width,
                 const char *dash)
{
    fd_buf_printf(b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"%.2f\"", x1,
                  y1, x2, y2, stroke, width);
    if (dash) fd_buf_printf(b, " stroke-dasharray=\"%s\"", dash);
    fd_buf_puts(b, "/>\n");
}

void fd_svg_circle(fd_buf *b, double x, double y, double r, const char *fill, const char *stroke)
{
    fd_buf_printf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"%.2f\" fill=\"%s\"", x, y, r, fill ? fill : "none");
    if (stroke) fd_buf_printf(b, " stroke=\"%s\" stroke-width=\"1.5\"", stroke);
    fd_buf_puts(b, "/>\n");
}

void fd_svg_polyline(fd_buf *b, const double *xs, const double *ys, size_t n, const char *stroke, const char *dash)
{
    if (n < 2) return;
    fd_buf_puts(b, "<polyline fill=\"none\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"");
    for (size_t i = 0; i < n; i++) fd_buf_printf(b, "%s%.2f,%.2f", i ? " " : "", xs[i], ys[i]);
    fd_buf_printf(b, "\" stroke=\"%s\"", stroke);
    if (dash) fd_buf_printf(b, " stroke-dasharray=\"%s\"", dash);
    fd_buf_puts(b, "/>\n");
}

static void log_label(char *out, size_t cap, int k)
{
    if (k == 0) snprintf(out, cap, "1");
    else if (k == 1) snprintf(out, cap, "10");
    else if (k == -1) snprintf(out, cap, "0.1");
    else snprintf(out, cap, "1e%d", k);
}

/* Tick positions of an axis: callback per (pixel, label, major). */
typedef void (*tick_fn)(fd_buf *, const fd_axis *, const fd_axis *, double px, const char *label, int major);

static void each_tick(fd_buf *b, const fd_axis *a, const fd_axis *other, tick_fn fn)
{
    char lab[32];
    if (!(a->hi > a->lo)) return; /* an empty range: frame only */
    if (a->log) {
        int k0 = (int)ceil(a->lo - 1e-9), k1 = (int)floor(a->hi + 1e-9), every = k1 - k0 > 8 ? 2 : 1;
        for (int k = k0; k <= k1; k++) {
            log_label(lab, sizeof lab, k);
            fn(b, a, other, fd_axis_map(a, pow(10.0, k)), (k - k0) % every ? "" : lab, 1);
            if (k1 - k0 <= 6 && k < k1)
                for (int m = 2; m <= 9; m++) fn(b, a, other, fd_axis_map(a, m * pow(10.0, k)), "", 0);
        }
        return;
    }
    double lo = a->lo, hi = a->hi, step;
    fd_axis_nice(&lo, &hi, &step);
    double first = ceil(a->lo / step - 1e-9) * step;
    for (int i = 0; i <= 20; i++) {
        double v = first + i * step;
        if (v > a->hi + step * 1e-6) break;
        v = round(v / step) * step;
        snprintf(lab, sizeof lab, "%.3g", v == 0 ? 0.0 : v);
        fn(b, a, other, fd_axis_map(a, v), lab, 1);
    }
}

static void xtick(fd_buf *b, const fd_axis *x, const fd_axis *y, double px, const char *label, int major)
{
    (void)x;
    double base = y->px0; /* y pixels run bottom (px0) to top (px1) */
    if (major) fd_svg_line(b, px, y->px1, px, base, "#e4e4e4", 1, NULL);
    fd_svg_line(b, px, base, px, base + (major ? 5 : 3), "#333333", 1, NULL);
    if (*label) fd_svg_text(b, px, base + 17, "middle", "t", label, 0);
}

static void ytick(fd_buf *b, const fd_axis *y, const fd_axis *x, double px, const char *label, int major)
{
    (void)y;
    if (major) fd_svg_line(b, x->px0, px, x->px1, px, "#e4e4e4", 1, NULL);
    fd_svg_line(b, x->px0 - (major ? 5 : 3), px, x->px0, px, "#333333", 1, NULL);
    if (*label) fd_svg_text(b, x->px0 - 8, px + 4, "end", "t", label, 0);
}

void fd_svg_axes(fd_buf *b, const fd_axis *x, const fd_axis *y, const char *xtitle, const char *ytitle)
{
    each_tick(b, x, y, xtick);
    each_tick(b, y, x, ytick);
    fd_svg_rect(b, x->px0, y->px1, x->px1 - x->px0, y->px0 - y->px1, NULL, "#333333");
    if (xtitle) fd_svg_text(b, (x->px0 + x->px1) / 2, y->px0 + 36, "middle", "t", xtitle, 0);
    if (ytitle) {
        double cy = (y->px0 + y->px1) / 2, cx = x->px0 - 58;
        fd_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" class=\"t\" "
                         "transform=\"rotate(-90 %.2f %.2f)\">", cx, cy, cx, cy);
        fd_xml_escape(b, ytitle, 0);
        fd_buf_puts(b, "</text>\n");
    }
}
