/* Token statistics of a comparison (issue 22 items 1 and 3): perplexity of
 * both sides on the panel's observed next tokens, delta-p at the observed
 * token, same-top, top-k agreement, KL percentiles, KL by reference
 * confidence and by depth.  Definitions: docs/COMPARE-IMPL.md "Token
 * statistics"; numpy oracle: tests/py/test_token_stats.py.
 *
 * Sums are fd_np_sum (numpy's pairwise float64 sum) over per-position
 * arrays, quantiles fd_np_quantile (numpy 'linear'); the standard errors are
 * llama.cpp's (tools/perplexity/perplexity.cpp): for a sum S1 and a sum of
 * squares S2 over n values, mean = S1/n, var = S2/n - mean^2, and
 * SE = sqrt(var/(n-1)) when var > 0 and n > 10, else 0. */
#ifndef FD_COMPARE_TOKSTATS_H
#define FD_COMPARE_TOKSTATS_H
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include "format/json.h"
#include "stats.h"

typedef struct fd_tok_input {
    size_t n;                       /* positions, context order then row order */
    const double *kl;               /* tokenwise KL(reference || candidate) */
    const double *lp_ref, *lp_cand; /* log p of the observed token */
    const double *lp_ref_top1;      /* log p of the reference's top-1 token */
    const uint8_t *top1;            /* argmax equal */
    const uint32_t *topk_ref, *topk_cand; /* FD_TOPK ids per position */
    size_t n_contexts;
    const size_t *rows;             /* per context, summing to n */
} fd_tok_input;

#define FD_TOK_KL_Q 8      /* 0.1 1 5 10 90 95 99 99.9 % */
#define FD_TOK_DP_Q 13     /* max 99.9 99 95 90 75 50 25 10 5 1 0.1 min (llama.cpp's lines) */
#define FD_TOK_K 3         /* k = 1, 5, 10 */
#define FD_CONF_BINS 5     /* reference top-1 probability [0,.2) [.2,.4) [.4,.6) [.6,.8) [.8,1] */

typedef struct fd_tok_bin {
    size_t positions;
    double kl_mean;        /* NaN when empty */
    double same_top;       /* NaN when empty */
} fd_tok_bin;

typedef struct fd_tok_stats {
    size_t n;
    double nll_ref, nll_ref_se, nll_cand, nll_cand_se;   /* mean -log p, its SE */
    double ppl_ref, ppl_ref_se, ppl_cand, ppl_cand_se;   /* exp(mean nll), exp(..)*SE */
    double cov, cor;                                     /* of the per-position nll, llama.cpp's */
    double ln_ratio, ln_ratio_se;                        /* ln(PPL(cand)/PPL(ref)) */
    double ppl_ratio, ppl_ratio_se, ppl_diff, ppl_diff_se;
    double kl_mean, kl_se, kl_min, kl_median, kl_max, kl_q[FD_TOK_KL_Q];
    double dp_mean, dp_se, dp_q[FD_TOK_DP_Q];            /* dp = p_cand - p_ref at the observed token */
    double dp_rms, dp_rms_se;
    double same_top, same_top_se;
    double cand_top1_in_ref_topk[FD_TOK_K], ref_top1_in_cand_topk[FD_TOK_K];
    fd_tok_bin conf[FD_CONF_BINS];
    fd_tok_bin depth[FD_DEPTH_BUCKETS];
} fd_tok_stats;

extern const double FD_TOK_KL_QS[FD_TOK_KL_Q], FD_TOK_DP_QS[FD_TOK_DP_Q];
extern const int FD_TOK_KS[FD_TOK_K];

/* Refusals: bad_stats_input (n == 0, rows not summing to n), non_finite. */
int fd_tok_stats_compute(const fd_tok_input *in, fd_tok_stats *out, fd_err *e);
/* The receipt's x_fidelity.token_statistics block. */
jv *fd_tok_stats_json(const fd_tok_stats *s);
/* llama.cpp's summary lines (perplexity.cpp kl_divergence) on f, from a
 * token_statistics block (so a written receipt prints the same). */
void fd_tok_stats_print(const jv *block, FILE *f);

#endif
