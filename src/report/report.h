/* `fidelity report`: one self-contained HTML page (inline SVG, no script)
 * comparing the candidates of one or more sealed comparison receipts
 * (docs/REPORT.md).  report.c loads and checks the inputs, plots.c draws
 * the SVG figures, html.c lays out the page. */
#ifndef FD_REPORT_H
#define FD_REPORT_H
#include <stddef.h>
#include <stdint.h>
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
    const char *tokenizer;   /* tokenizer.json: the drill-down decodes token ids */
    const char *panel;       /* panel dir: the drill-down's left context (bound row by row) */
} fd_rpt_opts;

/* One row of the tokenwise.csv compare --csv writes beside a receipt. */
typedef struct fd_rpt_row {
    int64_t ctx, row, pos, tok;   /* context index, row, position p, observed token ids[p+1] */
    int64_t ref1, cand1;          /* each side's top-1 id, -1 when the file has none */
    double rkl, dp, pr, pc;       /* pr/pc NaN when empty (hash-proven rows) */
    int top1;
} fd_rpt_row;

typedef struct fd_rpt_cand {
    jv *receipt;             /* owned; passed fd_validate_receipt */
    double *tok;             /* tokenwise KL (sha256-checked), NULL without */
    size_t ntok;
    char tok_note[512];      /* why tok is NULL (summary-only mode) */
    int has_bpw;
    double bpw;              /* the candidate dataset's declared_bits */
    fd_rpt_row *rows;        /* tokenwise.csv, ntok rows whose kl is tok[] bit for bit; NULL without */
    char csv_note[512];      /* why rows is NULL */
} fd_rpt_cand;

typedef struct fd_rpt {
    fd_rpt_cand *c;
    size_t n;
    const char *title;       /* borrowed from the options, may be NULL */
    struct fd_tokenizer *tk; /* --tokenizer, owned, may be NULL */
    struct fd_panel *panel;  /* --panel, owned, may be NULL */
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

/* The headline table as CSV (the page's download link carries it). */
void fd_rpt_headline_csv(const fd_rpt *r, fd_buf *csv);

/* Helpers shared by plots.c and html.c. */
double fd_rpt_num(const jv *obj, const char *key);        /* NaN unless a number */
const char *fd_rpt_str(const jv *obj, const char *key);   /* "n/a" unless a string */
const char *fd_rpt_label(const fd_rpt_cand *c);

/* drill.c: tokenwise.csv beside RECEIPT_PATH read into c->rows when present
 * (refused as tokenwise_mismatch when it does not match the sealed array);
 * the --panel windows checked against every row (panel_mismatch). */
int fd_rpt_load_csv(const char *receipt_path, fd_rpt_cand *c, fd_err *e);
int fd_rpt_check_panel(const fd_rpt *r, fd_err *e);
/* The per-candidate drill-down: worst positions by KL and by delta-p, and a
 * per-token strip of the windows they fall in. */
void fd_rpt_drill(fd_buf *b, const fd_rpt *r, size_t i);

#endif
