/* Statistics of a comparison receipt (COMPARE.md §2, receipt keys §4),
 * bit-exact with numpy 2.x float64 where numpy defines the value.
 *
 * numpy algorithms replicated (checked bitwise against numpy 2.4.6 by
 * tests/py/stats_oracle.py and tests/c/test_stats.c):
 *  - x.sum() on a contiguous 1-D float64 array: the add-reduction starts from
 *    the identity 0.0 and adds numpy's pairwise_sum over the WHOLE array in
 *    one inner-loop call (no 8192-element buffer chunks for contiguous,
 *    uncast float64: verified empirically).  So sum = 0.0 + pairwise(x, n),
 *    which also turns an all-(-0.0) sum into +0.0 like numpy does.
 *    pairwise(x, n) (numpy/_core/src/umath/loops_utils.h.src):
 *      n < 8:    r = 0.0; r += x[i] left to right (the sign of the start
 *                is unobservable behind the outer 0.0 +)
 *      n <= 128: r[k] = x[k] (k<8); r[k] += x[i+k] for each full block of 8;
 *                res = ((r0+r1)+(r2+r3))+((r4+r5)+(r6+r7)); then the
 *                n%8 remainder added left to right
 *      else:     n2 = n/2; n2 -= n2%8; pairwise(x,n2) + pairwise(x+n2,n-n2)
 *  - x.mean() = sum / (double)n.
 *  - np.quantile(x, q) default method 'linear' (Hyndman&Fan 7): virtual index
 *    v = (n-1)*q; if v >= n-1 both neighbours are the last element and
 *    gamma = v - (-1); else lo = floor(v), hi = lo+1, gamma = v - lo; then
 *    numpy's _lerp: d = b - a; r = a + d*gamma, but r = b - d*(1-gamma) where
 *    gamma >= 0.5.  A NaN at the end of the sorted array gives NaN.
 * Everything here is single-threaded, allocation-checked (fd_xmalloc aborts
 * on OOM) and has no global mutable state. */
#ifndef FD_COMPARE_STATS_H
#define FD_COMPARE_STATS_H
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

/* numpy float64 x.sum() (0.0 for n == 0). */
double fd_np_sum(const double *x, size_t n);
/* numpy float64 x.mean() (NaN for n == 0, where numpy warns and gives nan). */
double fd_np_mean(const double *x, size_t n);
/* numpy x.max(): NaN if any element is NaN; NaN for n == 0 (numpy raises). */
double fd_np_max(const double *x, size_t n);
/* numpy.quantile(sorted, q) with method 'linear', for an ascending array.
 * NaN for n == 0 or q outside [0, 1] (numpy raises for both). */
double fd_np_quantile(const double *sorted, size_t n, double q);
/* Sorts ascending in a total order (-0.0 before +0.0, NaN last), so the
 * result does not depend on the input order. */
void fd_sort_doubles(double *x, size_t n);

/* Context-depth buckets (dsformat.CONTEXT_DEPTH_BUCKETS): depth = 0-based row
 * index within a context; bucket i is [lo, hi). Rows >= 2047 fall in none. */
#define FD_DEPTH_BUCKETS 5
typedef struct fd_depth_bucket_def {
    const char *name;
    size_t lo, hi;
} fd_depth_bucket_def;
/* name "0000-0255" [0,256), "0256-0511", "0512-1023", "1024-1535",
 * "1536-2046" [1536,2047). i < FD_DEPTH_BUCKETS. */
const fd_depth_bucket_def *fd_depth_bucket(int i);

/* Input: the tokenwise array in context order plus one entry per context. */
typedef struct fd_kl_input {
    const double *kl;          /* n_rows values: context 0's rows, then 1's... */
    size_t n_rows;             /* must equal the sum of rows[] */
    size_t n_contexts;
    const size_t *rows;        /* scored rows per context, each >= 1 */
    const char *const *domain; /* per-context group key, or NULL: no per_domain */
    const char *const *stratum;/* per-context group key, or NULL: no per_stratum */
    const size_t *top1_matches;/* per-context top-1 matches (<= rows), or NULL */
} fd_kl_input;

typedef struct fd_kl_context {
    size_t index;       /* position in the input order */
    size_t scored_rows;
    double mean;        /* fd_np_mean over the context's rows */
    double max;
    double sum;         /* fd_np_sum over the context's rows (bootstrap input) */
    double top1_agreement; /* matches / rows; NaN without top1_matches */
} fd_kl_context;

typedef struct fd_kl_group {
    const char *key;    /* borrowed from the input's key array */
    double mean;        /* fd_np_mean of the members' per-context means */
    size_t contexts;    /* members, in context order */
} fd_kl_group;

typedef struct fd_kl_bucket {
    int present;        /* 0: no context reaches the bucket (receipt: null) */
    double mean;        /* fd_np_mean over contexts of each one's bucket mean */
    size_t contexts;
} fd_kl_bucket;

#define FD_KL_TOP 5
typedef struct fd_kl_stats {
    /* kl block over the whole array */
    double mean, median, p95, p99, p99_9, max;
    size_t n_contexts;
    fd_kl_context *per_context;   /* n_contexts entries, input order */
    size_t n_domains, n_strata;
    fd_kl_group *per_domain;      /* ordered by key (strcmp = code point order) */
    fd_kl_group *per_stratum;
    double macro_stratum_mean;    /* fd_np_mean of per_stratum means in key
                                     order; NaN without strata */
    fd_kl_bucket buckets[FD_DEPTH_BUCKETS];
    /* indices into per_context */
    size_t n_high, high_kld[FD_KL_TOP];         /* by descending mean, stable */
    size_t n_discordant, discordant[FD_KL_TOP]; /* agreement < 1, ascending
                                                   agreement then index */
    int has_top1;
    double top1_agreement;        /* sum(matches) / sum(rows); NaN if none */
} fd_kl_stats;

/* Computes everything above.  Refusals: "non_finite" (a NaN/inf value),
 * "bad_stats_input" (no contexts, a context with 0 rows, rows not summing
 * to n_rows, matches > rows).  On failure *out is left zeroed/freed. */
int fd_kl_stats_compute(const fd_kl_input *in, fd_kl_stats *out, fd_err *e);
void fd_kl_stats_free(fd_kl_stats *s);

/* Context-cluster bootstrap of the token-weighted mean KL.
 *  generator: splitmix64 (util/rng.h fd_rng_next), state = seed;
 *  draw in [0,C): Lemire's multiply-shift with rejection (unbiased):
 *      x = next(); m = (u128)x*C; l = (u64)m;
 *      if (l < C) { t = (2^64 - C) % C; while (l < t) { x = next();
 *                   m = (u128)x*C; l = (u64)m; } }
 *      index = m >> 64
 *  resample b (b = 0..B-1, in order): C draws; s = 0.0; s += sum[idx] and
 *  r += rows[idx] (integer) in draw order; mean_b = s / (double)r, where
 *  sum[i] = fd_np_sum of context i's rows.
 *  interval: the B means sorted (fd_sort_doubles), then
 *  fd_np_quantile(.., 0.025) and (.., 0.975) (percentile interval). */
#define FD_BOOTSTRAP_SEED 20260829u
#define FD_BOOTSTRAP_SAMPLES 10000u
typedef struct fd_bootstrap {
    int computed;           /* 0: method "none", every other field null */
    const char *method;     /* "context_cluster_bootstrap" or "none" */
    const char *cluster_unit;  /* "context" (NULL when not computed) */
    const char *generator;     /* "splitmix64" */
    const char *interval_kind; /* "percentile" */
    size_t clusters, samples;
    uint64_t seed;
    double ci95_low, ci95_high;
} fd_bootstrap;

/* C = in->n_contexts; C < 2 gives computed = 0 (method "none") and returns 0.
 * samples must be >= 1.  Same refusals as fd_kl_stats_compute. */
int fd_bootstrap_ci(const fd_kl_input *in, size_t samples, uint64_t seed, fd_bootstrap *out,
                    fd_err *e);

#endif
