/* Paired A-vs-B: two comparison receipts against the same reference over the
 * same positions -> B - A per context, a context-cluster bootstrap CI of the
 * token-weighted difference, win counts with a stated tie tolerance, an exact
 * sign test at the document level, the largest differences, sealed as a
 * fidelity.paired-comparison-receipt.v1 (docs/COMPARE-IMPL.md "Paired").  */
#ifndef FD_COMPARE_PAIRED_H
#define FD_COMPARE_PAIRED_H
#include <stddef.h>
#include <stdio.h>
#include "format/json.h"

#define FD_PAIRED_SCHEMA "fidelity.paired-comparison-receipt.v1"
#define FD_PAIRED_TIE_DEFAULT 1e-6

typedef struct fd_paired_opts {
    const char *receipt_a, *receipt_b;  /* comparison-receipt.json paths (tokenwise-kld.npy beside each) */
    const char *reference;              /* the reference dataset (document ids), or NULL: document = context */
    double tie_tolerance;               /* nats, >= 0 */
    int no_bootstrap;
    const char *created_utc;            /* NULL: now */
} fd_paired_opts;

/* Builds the sealed paired receipt.  Refusals: receipt_invalid (an input
 * fails validate --receipt), paired_mismatch (other reference, panel or
 * positions), tokenwise_mismatch (a tokenwise file that is not the one the
 * receipt seals), hash_proof (a receipt without tokenwise arithmetic is
 * fine: its zeros are used), bad_reference. */
int fd_paired_build(const fd_paired_opts *o, jv **out, fd_err *e);
/* Exact two-sided sign test: P(X <= min(w,l)) * 2 capped at 1, X ~ Bin(w+l, 1/2);
 * 1.0 when w + l == 0. */
double fd_sign_test_p(size_t w, size_t l);
/* A paired receipt checked by seal and by meaning: schema and version, the
 * seal recomputes (seal_failed), and the figures cohere (paired_invalid):
 * wins and sign-test counts add up, per_context covers `contexts` and
 * `scored_positions`, delta = b_mean - a_mean, each per-context delta = b - a,
 * ci95_low <= ci95_high, 0 <= p <= 1, tie tolerance >= 0. */
int fd_paired_check(const jv *p, fd_err *e);
/* The paired summary lines (terminal) from a paired receipt. */
void fd_paired_print(const jv *p, FILE *f);

#endif
