/* report/svg.c primitives and fd_rpt_render on hand-made receipts: escaping
 * of hostile text (the only way receipt bytes reach the page), log-axis
 * mapping, repr output, and a page whose figures are balanced and carry no
 * raw markup from a label. */
#include "check.h"
#include "report/report.h"
#include "report/svg.h"
#include <math.h>
#include <stdlib.h>

static int escaped_is(const char *in, size_t max_cp, const char *want)
{
    fd_buf b = {0};
    fd_xml_escape(&b, in, max_cp);
    int ok = !strcmp(fd_buf_cstr(&b), want);
    if (!ok) printf("  escape(%s) = '%s', want '%s'\n", in, b.p, want);
    fd_buf_free(&b);
    return ok;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

int test_report(void)
{
    int fails = 0;
    CHECK(escaped_is("a<b>&\"'", 0, "a&lt;b&gt;&amp;&quot;&#39;"), "the five XML specials");
    CHECK(escaped_is("\x01x\ty\n\x1f", 0, "?x\ty\n?"), "C0 controls become ?, tab/newline stay");
    CHECK(escaped_is("\xff\xc3", 0, "??"), "invalid UTF-8: one ? per byte");
    CHECK(escaped_is("a\xef\xbf\xbe" "b", 0, "a?b"), "U+FFFE is not XML");
    CHECK(escaped_is("h\xc3\xa9llo", 3, "h\xc3\xa9l\xe2\x80\xa6"), "truncation counts code points");
    CHECK(escaped_is("abc", 3, "abc"), "no ellipsis at exactly the limit");
    fd_buf b = {0};
    fd_put_repr(&b, 8.45552165257198e-06);
    fd_buf_putc(&b, ' ');
    fd_put_repr(&b, 0.1);
    fd_buf_putc(&b, ' ');
    fd_put_repr(&b, 1.0);
    CHECK_STR(fd_buf_cstr(&b), "8.45552165257198e-06 0.1 1.0", "repr round-trip form");
    fd_buf_free(&b);
    fd_axis a = {-3, 0, 1, 0, 300};
    CHECK(fabs(fd_axis_map(&a, 1e-3)) < 1e-9 && fabs(fd_axis_map(&a, 1.0) - 300) < 1e-9 &&
              fabs(fd_axis_map(&a, 0.01) - 100) < 1e-9, "log axis maps decades evenly");
    CHECK(fd_axis_map(&a, 0.0) == 0 && fd_axis_map(&a, NAN) == 0 && fd_axis_map(&a, 1e9) == 300, "clamped ends");
    double lo = 0, hi = 0.00037, step;
    fd_axis_nice(&lo, &hi, &step);
    CHECK(lo == 0 && fabs(step - 1e-4) < 1e-18 && fabs(hi - 4e-4) < 1e-15, "nice range 0..4e-4 by 1e-4");

    const char *json = "{\"candidate\":{\"label\":\"<script>alert(1)</script>\",\"dataset_sha256\":\"c\"},"
                       "\"reference\":{\"dataset_id\":\"</title><script>\",\"dataset_sha256\":\"r\"},"
                       "\"kl\":{\"mean\":0.25,\"max\":1.0,\"median\":0.125,\"p99\":0.9},\"receipt_sha256\":\"s\","
                       "\"per_context\":[{\"index\":0,\"scored_rows\":2,\"mean\":0.25,\"window_id\":\"<w>\"},"
                       "{\"index\":1,\"scored_rows\":2,\"mean\":0.25}],"
                       "\"high_kld_contexts\":[{\"index\":0,\"mean\":0.25,\"window_id\":\"<w>\"}],"
                       "\"comparability\":{\"class\":\"<i>\"}}";
    fd_err e;
    jv *r = jv_parse(json, strlen(json), &e);
    CHECK(r != NULL, "test receipt parses");
    double tok[4] = {0.0, 0.5, 0.25, 0.25};
    fd_rpt_cand c[2] = {{.receipt = r, .tok = tok, .ntok = 4, .has_bpw = 1, .bpw = 4.0}, {.receipt = r}};
    fd_rpt rep = {.c = c, .n = 2, .title = NULL};
    fd_buf html = {0};
    fd_rpt_render(&rep, &html);
    const char *p = fd_buf_cstr(&html);
    CHECK(!strstr(p, "<script") && !strstr(p, "<w>") && !strstr(p, "<i>"), "no raw markup from receipt strings");
    CHECK(count(p, "<svg ") == count(p, "</svg>") && count(p, "<svg ") == 4 + 2 + 1, "7 balanced figures");
    CHECK(strstr(p, "data-field=\"kl.mean\" data-value=\"0.25\"") != NULL, "exact value attribute");
    fd_buf again = {0};
    fd_rpt_render(&rep, &again);
    CHECK(again.n == html.n && !memcmp(again.p, html.p, html.n), "render is deterministic");
    fd_buf_free(&again);
    fd_buf_free(&html);
    jv_free(r);
    return fails;
}
