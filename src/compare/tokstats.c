/* Token statistics (tokstats.h).  Build with -ffp-contract=off like stats.c. */
#include "tokstats.h"
#include "replay.h"
#include "kernels/kl.h"
#include "util/buf.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

const double FD_TOK_KL_QS[FD_TOK_KL_Q] = {0.001, 0.01, 0.05, 0.10, 0.90, 0.95, 0.99, 0.999};
const double FD_TOK_DP_QS[FD_TOK_DP_Q] = {1.0, 0.999, 0.99, 0.95, 0.90, 0.75, 0.5, 0.25, 0.10, 0.05, 0.01, 0.001, 0.0};
const int FD_TOK_KS[FD_TOK_K] = {1, 5, 10};
static const char *const KL_QN[FD_TOK_KL_Q] = {"p0_1", "p1", "p5", "p10", "p90", "p95", "p99", "p99_9"};
static const char *const DP_QN[FD_TOK_DP_Q] = {"max", "p99_9", "p99", "p95", "p90", "p75", "median",
                                               "p25", "p10", "p5", "p1", "p0_1", "min"};

/* llama.cpp's mean_and_uncertainty over the numpy sums */
static void mean_se(const double *x, const double *x2, size_t n, double *mean, double *se)
{
    double s1 = fd_np_sum(x, n), s2 = fd_np_sum(x2, n);
    double f = s1 / (double)n, v = s2 / (double)n - f * f;
    *mean = f;
    *se = v > 0 && n > 10 ? sqrt(v / (double)(n - 1)) : 0.0;
}

/* p = exp(lp) with the canonical exp (lp <= 0 by construction; a rounding
 * above 0 is taken as 0) */
static double prob(double lp) { return fd_exp_canonical(lp > 0.0 ? 0.0 : lp); }

static int in_topk(const uint32_t *set, uint32_t id, int k)
{
    for (int i = 0; i < k; i++)
        if (set[i] == id) return 1;
    return 0;
}

int fd_tok_stats_compute(const fd_tok_input *in, fd_tok_stats *o, fd_err *e)
{
    memset(o, 0, sizeof *o);
    size_t n = in->n, tot = 0;
    if (!n || !in->n_contexts) return fd_fail(e, "bad_stats_input", "", "token statistics need at least one position");
    for (size_t c = 0; c < in->n_contexts; c++) tot += in->rows[c];
    if (tot != n) return fd_fail(e, "bad_stats_input", "", "per-context rows sum to %zu, not %zu positions", tot, n);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(in->lp_ref[i]) || !isfinite(in->lp_cand[i]) || !isfinite(in->kl[i]) || !isfinite(in->lp_ref_top1[i]))
            return fd_fail(e, "non_finite", "", "position %zu has a non-finite log-probability or KL", i);
    o->n = n;
    double *a = fd_xmalloc(n * sizeof *a), *b = fd_xmalloc(n * sizeof *b), *c = fd_xmalloc(n * sizeof *c);
    double *d = fd_xmalloc(n * sizeof *d), *dp = fd_xmalloc(n * sizeof *dp);
    /* perplexity: nll = -lp on each side */
    for (size_t i = 0; i < n; i++) { a[i] = -in->lp_ref[i]; b[i] = a[i] * a[i]; }
    mean_se(a, b, n, &o->nll_ref, &o->nll_ref_se);
    for (size_t i = 0; i < n; i++) { c[i] = -in->lp_cand[i]; b[i] = c[i] * c[i]; d[i] = c[i] * a[i]; }
    mean_se(c, b, n, &o->nll_cand, &o->nll_cand_se);
    o->ppl_ref = exp(o->nll_ref);
    o->ppl_ref_se = o->ppl_ref * o->nll_ref_se;
    o->ppl_cand = exp(o->nll_cand);
    o->ppl_cand_se = o->ppl_cand * o->nll_cand_se;
    if (n >= 10) {
        double sa = fd_np_sum(c, n), sb = fd_np_sum(a, n), sab = fd_np_sum(d, n), nn = (double)n;
        o->cov = (sab / nn - (sa / nn) * (sb / nn)) / (double)(n - 1);
    }
    o->cor = o->nll_cand_se > 0 && o->nll_ref_se > 0 ? o->cov / (o->nll_cand_se * o->nll_ref_se) : NAN;
    o->ln_ratio = o->nll_cand - o->nll_ref;
    double v = o->nll_cand_se * o->nll_cand_se + o->nll_ref_se * o->nll_ref_se - 2.0 * o->cov;
    o->ln_ratio_se = sqrt(v > 0 ? v : 0.0);
    o->ppl_ratio = exp(o->ln_ratio);
    o->ppl_ratio_se = o->ppl_ratio * o->ln_ratio_se;
    o->ppl_diff = o->ppl_cand - o->ppl_ref;
    v = o->ppl_cand_se * o->ppl_cand_se + o->ppl_ref_se * o->ppl_ref_se - 2.0 * (o->ppl_cand * o->ppl_ref * o->cov);
    o->ppl_diff_se = sqrt(v > 0 ? v : 0.0);
    /* KL */
    for (size_t i = 0; i < n; i++) b[i] = in->kl[i] * in->kl[i];
    mean_se(in->kl, b, n, &o->kl_mean, &o->kl_se);
    memcpy(a, in->kl, n * sizeof *a);
    fd_sort_doubles(a, n);
    o->kl_min = a[0];
    o->kl_max = a[n - 1];
    o->kl_median = fd_np_quantile(a, n, 0.5);
    for (int q = 0; q < FD_TOK_KL_Q; q++) o->kl_q[q] = fd_np_quantile(a, n, FD_TOK_KL_QS[q]);
    /* delta p at the observed token */
    for (size_t i = 0; i < n; i++) {
        dp[i] = prob(in->lp_cand[i]) - prob(in->lp_ref[i]);
        b[i] = dp[i] * dp[i];
        c[i] = b[i] * b[i];
    }
    mean_se(dp, b, n, &o->dp_mean, &o->dp_se);
    double mse, mse_se;
    mean_se(b, c, n, &mse, &mse_se);
    o->dp_rms = sqrt(mse);
    o->dp_rms_se = o->dp_rms > 0 ? 0.5 / o->dp_rms * mse_se : 0.0;
    memcpy(a, dp, n * sizeof *a);
    fd_sort_doubles(a, n);
    for (int q = 0; q < FD_TOK_DP_Q; q++) o->dp_q[q] = fd_np_quantile(a, n, FD_TOK_DP_QS[q]);
    /* same top, top-k */
    size_t same = 0, ck[FD_TOK_K] = {0}, rk[FD_TOK_K] = {0};
    for (size_t i = 0; i < n; i++) {
        same += in->top1[i] != 0;
        const uint32_t *tr = in->topk_ref + i * FD_TOPK, *tc = in->topk_cand + i * FD_TOPK;
        for (int k = 0; k < FD_TOK_K; k++) {
            ck[k] += (size_t)in_topk(tr, tc[0], FD_TOK_KS[k]);
            rk[k] += (size_t)in_topk(tc, tr[0], FD_TOK_KS[k]);
        }
    }
    o->same_top = (double)same / (double)n;
    o->same_top_se = n > 1 ? sqrt(o->same_top * (1.0 - o->same_top) / (double)(n - 1)) : 0.0;
    for (int k = 0; k < FD_TOK_K; k++) {
        o->cand_top1_in_ref_topk[k] = (double)ck[k] / (double)n;
        o->ref_top1_in_cand_topk[k] = (double)rk[k] / (double)n;
    }
    /* KL by the reference's top-1 probability, and by depth (row within its context) */
    size_t *depth = fd_xmalloc(n * sizeof *depth), at = 0;
    for (size_t k = 0; k < in->n_contexts; k++)
        for (size_t r = 0; r < in->rows[k]; r++) depth[at++] = r;
    for (int pass = 0; pass < 2; pass++) {
        int nb = pass ? FD_DEPTH_BUCKETS : FD_CONF_BINS;
        for (int bi = 0; bi < nb; bi++) {
            size_t m = 0, s = 0;
            for (size_t i = 0; i < n; i++) {
                int inb;
                if (pass) inb = depth[i] >= fd_depth_bucket(bi)->lo && depth[i] < fd_depth_bucket(bi)->hi;
                else {
                    double p = prob(in->lp_ref_top1[i]);
                    int bin = p < 0.2 ? 0 : p < 0.4 ? 1 : p < 0.6 ? 2 : p < 0.8 ? 3 : 4;
                    inb = bin == bi;
                }
                if (!inb) continue;
                a[m++] = in->kl[i];
                s += in->top1[i] != 0;
            }
            fd_tok_bin *t = pass ? &o->depth[bi] : &o->conf[bi];
            t->positions = m;
            t->kl_mean = m ? fd_np_mean(a, m) : NAN;
            t->same_top = m ? (double)s / (double)m : NAN;
        }
    }
    free(depth);
    free(a); free(b); free(c); free(d); free(dp);
    return 0;
}

static jv *num(double d) { return isfinite(d) ? jv_float(d) : jv_null(); }

static jv *val_se(double v, double se)
{
    jv *o = jv_obj();
    jv_set(o, "value", num(v));
    jv_set(o, "se", num(se));
    return o;
}

jv *fd_tok_stats_json(const fd_tok_stats *s)
{
    jv *o = jv_obj(), *ppl = jv_obj(), *kl = jv_obj(), *dp = jv_obj(), *tk = jv_obj();
    jv_set(o, "positions", jv_int((int64_t)s->n));
    jv_set(o, "observed_token", jv_str("the panel's next token ids[p+1] at each scored position p (docs/COMPARE-IMPL.md)"));
    jv_set(o, "standard_error", jv_str("llama.cpp perplexity.cpp: sqrt((S2/n - (S1/n)^2)/(n-1)) when positive and n > 10, else 0; "
                                       "positions treated as independent"));
    jv *side[2];
    for (int k = 0; k < 2; k++) {
        side[k] = jv_obj();
        jv_set(side[k], "ppl", num(k ? s->ppl_cand : s->ppl_ref));
        jv_set(side[k], "ppl_se", num(k ? s->ppl_cand_se : s->ppl_ref_se));
        jv_set(side[k], "mean_nll", num(k ? s->nll_cand : s->nll_ref));
        jv_set(side[k], "mean_nll_se", num(k ? s->nll_cand_se : s->nll_ref_se));
    }
    jv_set(ppl, "reference", side[0]);
    jv_set(ppl, "candidate", side[1]);
    jv_set(ppl, "ln_ratio", val_se(s->ln_ratio, s->ln_ratio_se));
    jv_set(ppl, "ratio", val_se(s->ppl_ratio, s->ppl_ratio_se));
    jv_set(ppl, "difference", val_se(s->ppl_diff, s->ppl_diff_se));
    jv_set(ppl, "covariance", num(s->cov));
    jv_set(ppl, "correlation", num(s->cor));
    jv_set(o, "perplexity", ppl);
    jv_set(kl, "mean", num(s->kl_mean));
    jv_set(kl, "se", num(s->kl_se));
    jv_set(kl, "min", num(s->kl_min));
    for (int q = 0; q < 4; q++) jv_set(kl, KL_QN[q], num(s->kl_q[q]));
    jv_set(kl, "median", num(s->kl_median));
    for (int q = 4; q < FD_TOK_KL_Q; q++) jv_set(kl, KL_QN[q], num(s->kl_q[q]));
    jv_set(kl, "max", num(s->kl_max));
    jv_set(o, "kl", kl);
    jv_set(dp, "definition", jv_str("p_candidate - p_reference of the observed token"));
    jv_set(dp, "mean", num(s->dp_mean));
    jv_set(dp, "se", num(s->dp_se));
    for (int q = 0; q < FD_TOK_DP_Q; q++) jv_set(dp, DP_QN[q], num(s->dp_q[q]));
    jv_set(dp, "rms", num(s->dp_rms));
    jv_set(dp, "rms_se", num(s->dp_rms_se));
    jv_set(o, "delta_p", dp);
    jv_set(o, "same_top", val_se(s->same_top, s->same_top_se));
    jv *ks = jv_arr(), *c = jv_arr(), *r = jv_arr();
    for (int k = 0; k < FD_TOK_K; k++) {
        jv_push(ks, jv_int(FD_TOK_KS[k]));
        jv_push(c, num(s->cand_top1_in_ref_topk[k]));
        jv_push(r, num(s->ref_top1_in_cand_topk[k]));
    }
    jv_set(tk, "k", ks);
    jv_set(tk, "candidate_top1_in_reference_topk", c);
    jv_set(tk, "reference_top1_in_candidate_topk", r);
    jv_set(o, "top_k_agreement", tk);
    jv *cb = jv_arr(), *db = jv_arr();
    for (int b = 0; b < FD_CONF_BINS; b++) {
        jv *x = jv_obj();
        char name[32];
        snprintf(name, sizeof name, "[%.1f, %.1f%s", b * 0.2, (b + 1) * 0.2, b == FD_CONF_BINS - 1 ? "]" : ")");
        jv_set(x, "bin", jv_str(name));
        jv_set(x, "positions", jv_int((int64_t)s->conf[b].positions));
        jv_set(x, "kl_mean", num(s->conf[b].kl_mean));
        jv_set(x, "same_top", num(s->conf[b].same_top));
        jv_push(cb, x);
    }
    for (int b = 0; b < FD_DEPTH_BUCKETS; b++) {
        jv *x = jv_obj();
        jv_set(x, "bucket", jv_str(fd_depth_bucket(b)->name));
        jv_set(x, "positions", jv_int((int64_t)s->depth[b].positions));
        jv_set(x, "kl_mean", num(s->depth[b].kl_mean));
        jv_set(x, "same_top", num(s->depth[b].same_top));
        jv_push(db, x);
    }
    jv_set(o, "kl_by_reference_confidence", cb);
    jv_set(o, "kl_by_depth", db);
    return o;
}

static double jv_num(const jv *v) { return v && v->t == JV_FLOAT ? v->u.f : v && v->t == JV_INT ? (double)v->u.i : NAN; }
static double g(const jv *o, const char *k) { return jv_num(jv_get(o, k)); }

void fd_tok_stats_print(const jv *t, FILE *f)
{
    const jv *ppl = jv_get(t, "perplexity"), *pr = jv_get(ppl, "reference"), *pc = jv_get(ppl, "candidate");
    const jv *kl = jv_get(t, "kl"), *dp = jv_get(t, "delta_p"), *st = jv_get(t, "same_top");
    fprintf(f, "====== Perplexity statistics ======\n");
    fprintf(f, "Mean PPL(Q)                   : %10.6lf ± %10.6lf\n", g(pc, "ppl"), g(pc, "ppl_se"));
    fprintf(f, "Mean PPL(base)                : %10.6lf ± %10.6lf\n", g(pr, "ppl"), g(pr, "ppl_se"));
    fprintf(f, "Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100.0 * g(ppl, "correlation"));
    fprintf(f, "Mean ln(PPL(Q)/PPL(base))     : %10.6lf ± %10.6lf\n", g(jv_get(ppl, "ln_ratio"), "value"),
            g(jv_get(ppl, "ln_ratio"), "se"));
    fprintf(f, "Mean PPL(Q)/PPL(base)         : %10.6lf ± %10.6lf\n", g(jv_get(ppl, "ratio"), "value"),
            g(jv_get(ppl, "ratio"), "se"));
    fprintf(f, "Mean PPL(Q)-PPL(base)         : %10.6lf ± %10.6lf\n", g(jv_get(ppl, "difference"), "value"),
            g(jv_get(ppl, "difference"), "se"));
    fprintf(f, "\n====== KL divergence statistics ======\n");
    fprintf(f, "Mean    KLD: %10.6lf ± %10.6lf\n", g(kl, "mean"), g(kl, "se"));
    fprintf(f, "Maximum KLD: %10.6f\n", g(kl, "max"));
    static const char *const kq[] = {"p99_9", "99.9%", "p99", "99.0%", "p95", "95.0%", "p90", "90.0%", "median", "Median",
                                     "p10", "10.0%", "p5", " 5.0%", "p1", " 1.0%", "p0_1", " 0.1%"};
    for (size_t i = 0; i < sizeof kq / sizeof *kq; i += 2) fprintf(f, "%-7s KLD: %10.6f\n", kq[i + 1], g(kl, kq[i]));
    fprintf(f, "Minimum KLD: %10.6f\n", g(kl, "min"));
    fprintf(f, "\n====== Token probability statistics ======\n");
    fprintf(f, "Mean    Δp: %6.3lf ± %5.3lf %%\n", 100.0 * g(dp, "mean"), 100.0 * g(dp, "se"));
    static const char *const dq[] = {"max", "Maximum", "p99_9", "99.9%", "p99", "99.0%", "p95", "95.0%", "p90", "90.0%",
                                     "p75", "75.0%", "median", "Median", "p25", "25.0%", "p10", "10.0%", "p5", " 5.0%",
                                     "p1", " 1.0%", "p0_1", " 0.1%", "min", "Minimum"};
    for (size_t i = 0; i < sizeof dq / sizeof *dq; i += 2) fprintf(f, "%-7s Δp: %6.3lf%%\n", dq[i + 1], 100.0 * g(dp, dq[i]));
    fprintf(f, "RMS Δp    : %6.3lf ± %5.3lf %%\n", 100.0 * g(dp, "rms"), 100.0 * g(dp, "rms_se"));
    fprintf(f, "Same top p: %6.3lf ± %5.3lf %%\n", 100.0 * g(st, "value"), 100.0 * g(st, "se"));
    const jv *tk = jv_get(t, "top_k_agreement"), *ks = jv_get(tk, "k"), *c = jv_get(tk, "candidate_top1_in_reference_topk"),
             *r = jv_get(tk, "reference_top1_in_candidate_topk");
    for (size_t i = 0; ks && ks->t == JV_ARR && c && r && i < ks->u.a.n && i < c->u.a.n && i < r->u.a.n; i++) {
        double cv = jv_num(c->u.a.v[i]), rv = jv_num(r->u.a.v[i]);
        fprintf(f, "Top-%-2lld     : Q top-1 in base top-%lld %7.3lf %%, base top-1 in Q top-%lld %7.3lf %%\n",
                (long long)ks->u.a.v[i]->u.i, (long long)ks->u.a.v[i]->u.i, 100.0 * cv,
                (long long)ks->u.a.v[i]->u.i, 100.0 * rv);
    }
}
