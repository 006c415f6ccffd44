/* `fidelity report`: one self-contained HTML page (inline SVG, no script)
 * comparing the candidates of one or more sealed comparison receipts
 * (docs/REPORT.md).  report.c loads and checks the inputs, plots.c draws
 * the SVG figures, html.c lays out the page. */
#ifndef FD_REPORT_H
#define FD_REPORT_H
#include <stddef.h>
#include "format/json.h"
#include "util/buf.h"
#include "util/err.h"

typedef struct fd_rpt_opts {
    const char **receipts;   /* receipt files, or directories compare wrote */
    size_t nreceipts;
    const char **datasets;   /* candidate dataset dirs: weights.declared_bits */
    size_t ndatasets;
    int summary_only;        /* tolerate a missing/mismatched tokenwise file */
    const char *title;       /* NULL: derived from the reference */
} fd_rpt_opts;

typedef struct fd_rpt_cand {
    jv *receipt;             /* owned; passed fd_validate_receipt */
    double *tok;             /* tokenwise KL (sha256-checked), NULL without */
    size_t ntok;
    char tok_note[512];      /* why tok is NULL (summary-only mode) */
    int has_bpw;
    double bpw;              /* the candidate dataset's declared_bits */
} fd_rpt_cand;

typedef struct fd_rpt {
    fd_rpt_cand *c;
    size_t n;
    const char *title;       /* borrowed from the options, may be NULL */
} fd_rpt;

/* Loads every receipt (refusals: receipt_invalid, tokenwise_missing,
 * tokenwise_mismatch, non_finite, dataset_unmatched, seal_failed). */
int fd_rpt_load(const fd_rpt_opts *o, fd_rpt *r, fd_err *e);
void fd_rpt_free(fd_rpt *r);

/* The page, deterministic in its inputs.  Robust to any JSON shape (missing
 * or mistyped fields render as "n/a"), so it can be fuzzed on raw input. */
void fd_rpt_render(const fd_rpt *r, fd_buf *html);

/* Load, render and write atomically to out. */
int fd_rpt_write(const fd_rpt_opts *o, const char *out, fd_err *e);

/* Helpers shared by plots.c and html.c. */
double fd_rpt_num(const jv *obj, const char *key);        /* NaN unless a number */
const char *fd_rpt_str(const jv *obj, const char *key);   /* "n/a" unless a string */
const char *fd_rpt_label(const fd_rpt_cand *c);

#endif
