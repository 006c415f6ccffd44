/* compare --emit-k3-compat (docs/ADAPTERS.md "compare --emit-k3-compat"):
 * a kimi-k3 compat/ view of each compared dataset written into the
 * comparison output, and per candidate a summary shaped like the --output
 * of his compare-kimi-k3-hidden-replay.py, computed from this comparison's
 * own per-position fp64 values with his statistics (numpy definitions). */
#ifndef FD_COMPARE_K3SUMMARY_H
#define FD_COMPARE_K3SUMMARY_H
#include <stddef.h>
#include <stdint.h>
#include "side.h"

#define FD_K3_COMPATIBLE_WITH "kimi-k3-distribution-fidelity/1"

typedef struct fd_k3_view {
    char name[96];              /* folder under OUT/k3-compat/ */
    char kind[8];               /* his source kind: "hidden" | "logits" */
    char manifest_rel[128];     /* "reference-hidden/manifest.json" (logit form: reference-logits) */
    char suite_sha256[65], manifest_sha256[65];
} fd_k3_view;

/* His comparator scores rows 0 .. context_length-2 of every suite context
 * (score_from 0).  A panel that scores from N > 0, or a shared context whose
 * scored rows differ from context_length - 1, has no kimi-k3 form:
 * k3_incompatible_panel (checked before any replay or output). */
int fd_k3_check_panel(const fd_side *s, const int64_t *shared, size_t n, fd_err *e);

/* Writes a view of each side into OUT/k3-compat/<names[i]>/ (staged in
 * OUT/.k3-compat-staging-PID, then renamed in; a previous view of the same
 * name is replaced) plus OUT/k3-compat/README.md, and fills views[i].
 * final_real: the absolute path OUT will have once compare renames its
 * staging directory into place (the views' relative aliases start there). */
int fd_k3_write_views(const char *out, const char *final_real, const fd_side *const *sides, const char *const *names,
                      size_t n, fd_k3_view *views, fd_err *e);

typedef struct fd_k3_summary_in {
    const double *kl, *js;          /* npos values in context order; js NULL without --js */
    size_t npos, nctx;
    const fd_ctx *const *ctx;       /* the reference's shared contexts, in order */
    const size_t *matches;          /* top-1 matches per context */
    const fd_k3_view *ref, *cand;
    const char *ref_label, *cand_label;
    const char *views_rel;          /* OUT/k3-compat seen from the summary's folder */
    const char *tokenwise_sha256;
    size_t tokenwise_bytes;
    jv *comparator;                 /* his "comparator" block (consumed) */
} fd_k3_summary_in;

/* The summary document (k3-summary.json); numbers as docs/ADAPTERS.md. */
jv *fd_k3_summary(const fd_k3_summary_in *in);

#endif
