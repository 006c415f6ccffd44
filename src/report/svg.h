/* Plot primitives that append well-formed SVG (XML) to a buffer: escaping,
 * linear and log10 axes with ticks and grid lines, text, polylines, rects,
 * markers.  Coordinates are printed with two decimals, so the same inputs
 * always give the same bytes. */
#ifndef FD_REPORT_SVG_H
#define FD_REPORT_SVG_H
#include <stddef.h>
#include "util/buf.h"

/* XML/HTML text and attribute escaping of UTF-8 text: & < > " ' become
 * entities; C0 controls other than tab/newline and the non-characters
 * U+FFFE/U+FFFF (not allowed in XML 1.0) become '?'.  max_cp > 0 truncates
 * to that many code points, ending in U+2026. */
void fd_xml_escape(fd_buf *b, const char *s, size_t max_cp);

/* A shortest round-trip decimal (Python repr) for data-value attributes;
 * "nan"/"inf" spelled as Python does for the rare non-finite value. */
void fd_put_repr(fd_buf *b, double v);
/* A short human form: 4 significant digits ("8.456e-06", "0.9841"). */
void fd_put_short(fd_buf *b, double v);

/* An axis maps data values onto pixels [px0, px1].  For a log axis lo/hi
 * are exponents (decades: 10^lo .. 10^hi) and map() takes the plain value
 * (> 0).  Values outside the range clamp to the ends. */
typedef struct fd_axis {
    double lo, hi;
    int log;
    double px0, px1;
} fd_axis;

double fd_axis_map(const fd_axis *a, double v);
/* A "nice" linear range covering [lo, hi] (1/2/5 steps); lo/hi updated. */
void fd_axis_nice(double *lo, double *hi, double *step);

/* The colour of series i (a fixed 10-colour palette, cycled). */
const char *fd_svg_colour(size_t i);
/* Stroke dash pattern of series i: solid for the first palette cycle. */
const char *fd_svg_dash(size_t i);

void fd_svg_open(fd_buf *b, int w, int h, const char *label);
void fd_svg_close(fd_buf *b);
/* cls: a class from the page stylesheet ("t", "small", "mono", "title"). */
void fd_svg_text(fd_buf *b, double x, double y, const char *anchor, const char *cls, const char *text, size_t max_cp);
void fd_svg_textf(fd_buf *b, double x, double y, const char *anchor, const char *cls, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
void fd_svg_rect(fd_buf *b, double x, double y, double w, double h, const char *fill, const char *stroke);
void fd_svg_line(fd_buf *b, double x1, double y1, double x2, double y2, const char *stroke, double width,
                 const char *dash);
void fd_svg_circle(fd_buf *b, double x, double y, double r, const char *fill, const char *stroke);
/* A polyline through n points (xs[i], ys[i]) in pixels; n >= 2. */
void fd_svg_polyline(fd_buf *b, const double *xs, const double *ys, size_t n, const char *stroke,
                     const char *dash);

/* Frame, grid, ticks and tick labels of both axes plus their titles.
 * Log axes tick every decade (labels "1e-5"); linear ones at nice steps. */
void fd_svg_axes(fd_buf *b, const fd_axis *x, const fd_axis *y, const char *xtitle, const char *ytitle);

#endif
