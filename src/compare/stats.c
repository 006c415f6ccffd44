/* Receipt statistics, bit-exact with numpy float64 (see stats.h for the
 * replicated algorithms).  Build with -ffp-contract=off: a fused a+b*c would
 * change the quantile interpolation and break bit-exactness. */
#include "compare/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/rng.h"

/* ---- numpy reductions ---------------------------------------------------- */

#define PW_BLOCKSIZE 128

/* numpy/_core/src/umath/loops_utils.h.src, DOUBLE_pairwise_sum (stride 1). */
static double pairwise_sum(const double *a, size_t n)
{
    if (n < 8) {
        double res = 0.0;
        for (size_t i = 0; i < n; i++) res += a[i];
        return res;
    }
    if (n <= PW_BLOCKSIZE) {
        double r[8];
        for (int k = 0; k < 8; k++) r[k] = a[k];
        size_t i;
        for (i = 8; i < n - (n % 8); i += 8) {
            r[0] += a[i + 0];
            r[1] += a[i + 1];
            r[2] += a[i + 2];
            r[3] += a[i + 3];
            r[4] += a[i + 4];
            r[5] += a[i + 5];
            r[6] += a[i + 6];
            r[7] += a[i + 7];
        }
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++) res += a[i];
        return res;
    }
    size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

double fd_np_sum(const double *x, size_t n)
{
    /* add.reduce starts from the identity 0.0 and adds one inner-loop call
     * over the whole contiguous array. */
    double io = 0.0;
    io += pairwise_sum(x, n);
    return io;
}

double fd_np_mean(const double *x, size_t n)
{
    if (n == 0) return NAN;
    return fd_np_sum(x, n) / (double)n;
}

double fd_np_max(const double *x, size_t n)
{
    if (n == 0) return NAN;
    double m = x[0];
    for (size_t i = 1; i < n; i++) {
        if (isnan(x[i])) return x[i];
        if (x[i] > m) m = x[i];
    }
    return m;
}

double fd_np_quantile(const double *sorted, size_t n, double q)
{
    if (n == 0 || !(q >= 0.0 && q <= 1.0)) return NAN;
    if (isnan(sorted[n - 1])) return sorted[n - 1]; /* numpy: NaNs sort last */
    double v = (double)(n - 1) * q;                 /* (n - 1) * quantiles */
    double prev;                                     /* floor(v), as a float */
    size_t lo, hi;
    if (v >= (double)(n - 1)) {                      /* indexes_above_bounds */
        prev = -1.0;
        lo = hi = n - 1;
    } else {
        prev = floor(v);
        lo = (size_t)prev;
        hi = lo + 1;
    }
    double t = v - prev; /* gamma */
    double a = sorted[lo], b = sorted[hi];
    double d = b - a;
    /* _lerp: add(a, d*t), then subtract(b, d*(1-t)) where t >= 0.5 */
    if (t >= 0.5) {
        double w = d * (1.0 - t);
        return b - w;
    }
    double w = d * t;
    return a + w;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    int na = isnan(a), nb = isnan(b);
    if (na || nb) return na - nb;
    if (a < b) return -1;
    if (a > b) return 1;
    return (int)(signbit(b) != 0) - (int)(signbit(a) != 0); /* -0.0 first */
}

void fd_sort_doubles(double *x, size_t n)
{
    if (n > 1) qsort(x, n, sizeof *x, cmp_double);
}

/* ---- depth buckets --------------------------------------------------------- */

static const fd_depth_bucket_def BUCKETS[FD_DEPTH_BUCKETS] = {
    {"0000-0255", 0, 256},     {"0256-0511", 256, 512},   {"0512-1023", 512, 1024},
    {"1024-1535", 1024, 1536}, {"1536-2046", 1536, 2047},
};

const fd_depth_bucket_def *fd_depth_bucket(int i)
{
    return i >= 0 && i < FD_DEPTH_BUCKETS ? &BUCKETS[i] : NULL;
}

/* ---- input checks ------------------------------------------------------------ */

static int check_input(const fd_kl_input *in, fd_err *e)
{
    if (!in || in->n_contexts == 0 || !in->rows || (in->n_rows && !in->kl))
        return fd_fail(e, "bad_stats_input", "", "statistics need at least one context");
    size_t total = 0;
    for (size_t c = 0; c < in->n_contexts; c++) {
        if (in->rows[c] == 0)
            return fd_fail(e, "bad_stats_input", "", "context %zu has no scored rows", c);
        if (in->rows[c] > in->n_rows - total)
            return fd_fail(e, "bad_stats_input", "",
                           "per-context rows exceed the %zu tokenwise values", in->n_rows);
        total += in->rows[c];
        if (in->top1_matches && in->top1_matches[c] > in->rows[c])
            return fd_fail(e, "bad_stats_input", "",
                           "context %zu: %zu top-1 matches for %zu rows", c,
                           in->top1_matches[c], in->rows[c]);
    }
    if (total != in->n_rows)
        return fd_fail(e, "bad_stats_input", "",
                       "per-context rows sum to %zu, the tokenwise array has %zu", total,
                       in->n_rows);
    for (size_t i = 0; i < in->n_rows; i++)
        if (!isfinite(in->kl[i]))
            return fd_fail(e, "non_finite", "", "tokenwise KL value %zu is not finite", i);
    return 0;
}

/* ---- grouping ------------------------------------------------------------------ */

typedef struct keyed {
    const char *key;
    size_t idx;
} keyed;

static int cmp_keyed(const void *pa, const void *pb)
{
    const keyed *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    if (c) return c;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Groups contexts by key (keys ordered by strcmp, members in context order);
 * each group's value is fd_np_mean of its members' means. */
static fd_kl_group *group_means(const char *const *keys, const fd_kl_context *ctx, size_t nc,
                                size_t *ngroups)
{
    keyed *k = fd_xmalloc(nc * sizeof *k);
    double *vals = fd_xmalloc(nc * sizeof *vals);
    fd_kl_group *g = fd_xmalloc(nc * sizeof *g);
    for (size_t i = 0; i < nc; i++) {
        k[i].key = keys[i] ? keys[i] : "";
        k[i].idx = i;
    }
    qsort(k, nc, sizeof *k, cmp_keyed);
    size_t ng = 0;
    for (size_t i = 0; i < nc;) {
        size_t j = i;
        for (; j < nc && strcmp(k[j].key, k[i].key) == 0; j++) vals[j - i] = ctx[k[j].idx].mean;
        g[ng].key = k[i].key;
        g[ng].contexts = j - i;
        g[ng].mean = fd_np_mean(vals, j - i);
        ng++;
        i = j;
    }
    free(k);
    free(vals);
    *ngroups = ng;
    return g;
}

/* ---- fd_kl_stats ------------------------------------------------------------------ */

/* Inserts context i into a top list ordered by `better`; an equal entry stays
 * ahead of a later one (a stable sort's order). */
static void top_insert(size_t *list, size_t *n, size_t i, const fd_kl_context *ctx,
                       int (*better)(const fd_kl_context *, const fd_kl_context *))
{
    size_t pos = *n;
    while (pos > 0 && better(&ctx[i], &ctx[list[pos - 1]])) pos--;
    if (pos >= FD_KL_TOP) return;
    size_t end = *n < FD_KL_TOP ? *n : FD_KL_TOP - 1;
    memmove(list + pos + 1, list + pos, (end - pos) * sizeof *list);
    list[pos] = i;
    if (*n < FD_KL_TOP) (*n)++;
}

static int higher_mean(const fd_kl_context *a, const fd_kl_context *b)
{
    return a->mean > b->mean;
}

/* Contexts arrive in index order, so "then index" is the insertion order. */
static int lower_agreement(const fd_kl_context *a, const fd_kl_context *b)
{
    return a->top1_agreement < b->top1_agreement;
}

int fd_kl_stats_compute(const fd_kl_input *in, fd_kl_stats *out, fd_err *e)
{
    memset(out, 0, sizeof *out);
    if (check_input(in, e)) return -1;
    size_t n = in->n_rows, nc = in->n_contexts;

    out->mean = fd_np_mean(in->kl, n);
    out->max = fd_np_max(in->kl, n);
    double *sorted = fd_xmalloc(n * sizeof *sorted);
    memcpy(sorted, in->kl, n * sizeof *sorted);
    fd_sort_doubles(sorted, n);
    out->median = fd_np_quantile(sorted, n, 0.5);
    out->p95 = fd_np_quantile(sorted, n, 0.95);
    out->p99 = fd_np_quantile(sorted, n, 0.99);
    out->p99_9 = fd_np_quantile(sorted, n, 0.999);
    free(sorted);

    out->n_contexts = nc;
    out->per_context = fd_xcalloc(nc, sizeof *out->per_context);
    size_t off = 0, matches = 0;
    double *bmeans[FD_DEPTH_BUCKETS];
    for (int b = 0; b < FD_DEPTH_BUCKETS; b++) bmeans[b] = fd_xmalloc(nc * sizeof(double));
    for (size_t c = 0; c < nc; c++) {
        fd_kl_context *x = &out->per_context[c];
        const double *row = in->kl + off;
        size_t r = in->rows[c];
        x->index = c;
        x->scored_rows = r;
        x->mean = fd_np_mean(row, r);
        x->max = fd_np_max(row, r);
        x->sum = fd_np_sum(row, r);
        x->top1_agreement = NAN;
        if (in->top1_matches) {
            x->top1_agreement = (double)in->top1_matches[c] / (double)r;
            matches += in->top1_matches[c];
        }
        for (int b = 0; b < FD_DEPTH_BUCKETS; b++) {
            if (r <= BUCKETS[b].lo) continue;
            size_t hi = r < BUCKETS[b].hi ? r : BUCKETS[b].hi;
            bmeans[b][out->buckets[b].contexts++] = fd_np_mean(row + BUCKETS[b].lo, hi - BUCKETS[b].lo);
        }
        top_insert(out->high_kld, &out->n_high, c, out->per_context, higher_mean);
        if (in->top1_matches && x->top1_agreement < 1.0)
            top_insert(out->discordant, &out->n_discordant, c, out->per_context, lower_agreement);
        off += r;
    }
    for (int b = 0; b < FD_DEPTH_BUCKETS; b++) {
        fd_kl_bucket *k = &out->buckets[b];
        k->present = k->contexts > 0;
        k->mean = k->present ? fd_np_mean(bmeans[b], k->contexts) : NAN;
        free(bmeans[b]);
    }
    out->has_top1 = in->top1_matches != NULL;
    out->top1_agreement = out->has_top1 ? (double)matches / (double)n : NAN;

    if (in->domain) out->per_domain = group_means(in->domain, out->per_context, nc, &out->n_domains);
    out->macro_stratum_mean = NAN;
    if (in->stratum) {
        out->per_stratum = group_means(in->stratum, out->per_context, nc, &out->n_strata);
        double *v = fd_xmalloc(out->n_strata * sizeof *v);
        for (size_t i = 0; i < out->n_strata; i++) v[i] = out->per_stratum[i].mean;
        out->macro_stratum_mean = fd_np_mean(v, out->n_strata);
        free(v);
    }
    return 0;
}

void fd_kl_stats_free(fd_kl_stats *s)
{
    if (!s) return;
    free(s->per_context);
    free(s->per_domain);
    free(s->per_stratum);
    memset(s, 0, sizeof *s);
}

/* ---- bootstrap ---------------------------------------------------------------------- */

/* Lemire, "Fast random integer generation in an interval" (2019): unbiased
 * index in [0, c) from splitmix64 outputs; c >= 1. */
static size_t draw_index(uint64_t *state, uint64_t c)
{
    unsigned __int128 m = (unsigned __int128)fd_rng_next(state) * c;
    uint64_t l = (uint64_t)m;
    if (l < c) {
        uint64_t t = (0 - c) % c;
        while (l < t) {
            m = (unsigned __int128)fd_rng_next(state) * c;
            l = (uint64_t)m;
        }
    }
    return (size_t)(m >> 64);
}

int fd_bootstrap_ci(const fd_kl_input *in, size_t samples, uint64_t seed, fd_bootstrap *out,
                    fd_err *e)
{
    memset(out, 0, sizeof *out);
    out->method = "none";
    out->ci95_low = out->ci95_high = NAN;
    if (check_input(in, e)) return -1;
    size_t nc = in->n_contexts;
    if (nc < 2) return 0;
    if (samples == 0) return fd_fail(e, "bad_stats_input", "", "bootstrap needs samples >= 1");

    double *sum = fd_xmalloc(nc * sizeof *sum);
    size_t off = 0;
    for (size_t c = 0; c < nc; c++) {
        sum[c] = fd_np_sum(in->kl + off, in->rows[c]);
        off += in->rows[c];
    }
    double *means = fd_xmalloc(samples * sizeof *means);
    uint64_t state = seed;
    for (size_t b = 0; b < samples; b++) {
        double s = 0.0;
        uint64_t r = 0;
        for (size_t j = 0; j < nc; j++) {
            size_t i = draw_index(&state, nc);
            s += sum[i];
            r += in->rows[i];
        }
        means[b] = s / (double)r;
        if (!isfinite(means[b])) {
            free(sum);
            free(means);
            return fd_fail(e, "non_finite", "", "bootstrap resample %zu has a non-finite mean", b);
        }
    }
    fd_sort_doubles(means, samples);
    out->computed = 1;
    out->method = "context_cluster_bootstrap";
    out->cluster_unit = "context";
    out->generator = "splitmix64";
    out->interval_kind = "percentile";
    out->clusters = nc;
    out->samples = samples;
    out->seed = seed;
    out->ci95_low = fd_np_quantile(means, samples, 0.025);
    out->ci95_high = fd_np_quantile(means, samples, 0.975);
    free(sum);
    free(means);
    return 0;
}
