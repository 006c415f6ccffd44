/* libFuzzer target for the report renderer (src/report/): any JSON object is
 * rendered as an unvalidated receipt, once alone and once with a tokenwise
 * array made from the input's bytes, so hostile shapes, strings and values
 * reach every figure.  Invariants: no raw "<script" from receipt strings
 * and every <svg> closed. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "report/report.h"

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fd_err e = {0};
    jv *r = jv_parse((const char *)data, size, &e);
    if (!r) return 0;
    if (r->t != JV_OBJ) { jv_free(r); return 0; }
    size_t n = size / 8 < 512 ? size / 8 : 512, k = 0;
    double *tok = calloc(n + 1, sizeof *tok);
    for (size_t i = 0; i < n; i++) { /* the loader admits finite values only */
        double v;
        memcpy(&v, data + 8 * i, 8);
        if (isfinite(v)) tok[k++] = v;
    }
    fd_rpt_cand c[2] = {{.receipt = r}, {.receipt = r, .tok = tok, .ntok = k, .has_bpw = size % 2, .bpw = (double)(size % 17)}};
    fd_rpt rep = {.c = c, .n = 2};
    fd_buf html = {0};
    fd_rpt_render(&rep, &html);
    const char *p = fd_buf_cstr(&html);
    if (strstr(p, "<script") || count(p, "<svg ") != count(p, "</svg>")) {
        fprintf(stderr, "fuzz_report: raw markup or an unclosed figure in the page\n");
        abort();
    }
    fd_buf_free(&html);
    free(tok);
    jv_free(r);
    return 0;
}
