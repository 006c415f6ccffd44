/* The kimi-k3-shaped comparison summary: his compare-kimi-k3-hidden-replay.py
 * result keys (stats(), context_depth_ranges, the per-context report, top-20
 * lists, micro/macro means), each computed with his numpy definition from
 * THIS comparison's per-position fp64 values.  What we cannot reproduce
 * exactly (numpy PCG64 bootstraps, logit absolute errors) is listed under
 * x_fidelity.omitted instead of being approximated. */
#include "k3summary.h"
#include "stats.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOP 20   /* his [:20] */

static jv *copy_or_null(const jv *v) { return v ? jv_copy(v) : jv_null(); }

/* his torch clamp_min_(0): a negative value becomes +0.0 */
static double *clamped(const double *x, size_t n, size_t *nneg)
{
    double *v = fd_xmalloc((n + 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[i] = x[i] < 0 ? (++*nneg, 0.0) : x[i];
    }
    return v;
}

/* his stats(): np.mean, np.median, np.quantile(.95/.99/.999) (linear), np.max.
 * np.median of a sorted array is the mean of its one or two middle values. */
static jv *stats_of(const double *x, size_t n)
{
    double *s = fd_xmalloc((n + 1) * sizeof *s);
    memcpy(s, x, n * sizeof *s);
    fd_sort_doubles(s, n);
    jv *o = jv_obj();
    jv_set(o, "mean", jv_float(fd_np_mean(x, n)));
    jv_set(o, "median", jv_float(n % 2 ? fd_np_mean(&s[n / 2], 1) : fd_np_mean(&s[n / 2 - 1], 2)));
    jv_set(o, "p95", jv_float(fd_np_quantile(s, n, 0.95)));
    jv_set(o, "p99", jv_float(fd_np_quantile(s, n, 0.99)));
    jv_set(o, "p99_9", jv_float(fd_np_quantile(s, n, 0.999)));
    jv_set(o, "max", jv_float(fd_np_max(x, n)));
    free(s);
    return o;
}

/* dict.get(key, default) on a suite row (our panel record) */
static const jv *get_or(const jv *rec, const char *key, const jv *dflt)
{
    const jv *v = rec ? jv_get(rec, key) : NULL;
    return v ? v : dflt;
}

/* str(value): the grouping key of his per-stratum dicts */
static char *str_key(const jv *v)
{
    fd_buf b = {0};
    if (!v || v->t == JV_NULL) fd_buf_printf(&b, "None");
    else if (v->t == JV_STR) fd_buf_printf(&b, "%.*s", (int)v->u.s.n, v->u.s.p);
    else if (v->t == JV_BOOL) fd_buf_printf(&b, "%s", v->u.b ? "True" : "False");
    else if (v->t == JV_INT) fd_buf_printf(&b, "%lld", (long long)v->u.i);
    else { fd_err e; jv_dump(v, &JV_CANON, &b, &e); }
    return fd_buf_cstr(&b);
}

typedef struct bucket { char key[48]; double *v; size_t n, cap; } bucket;

static void bucket_add(bucket **bs, size_t *nb, const char *key, const double *x, size_t n)
{
    size_t i = 0;
    while (i < *nb && strcmp((*bs)[i].key, key)) i++;
    if (i == *nb) {
        *bs = fd_xrealloc(*bs, (*nb + 1) * sizeof **bs);
        memset(&(*bs)[i], 0, sizeof **bs);
        snprintf((*bs)[i].key, sizeof (*bs)[i].key, "%s", key);
        (*nb)++;
    }
    bucket *b = &(*bs)[i];
    if (!n) return;   /* an empty slice (R below the range's start) adds nothing */
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 16;
        b->v = fd_xrealloc(b->v, b->cap * sizeof *b->v);
    }
    memcpy(b->v + b->n, x, n * sizeof *x);
    b->n += n;
}

/* context_depth_ranges(scored_rows): edges (0,256,512,1024,1536,R), pairs
 * with start < end, key "%04d-%04d" (start, end-1), values kl[start:end]
 * pooled over contexts in order.  A key that pools no value is left out
 * (his np.quantile raises on it; only R <= 1024 gets one). */
static jv *depth_buckets(const fd_k3_summary_in *in, const double *kl)
{
    bucket *bs = NULL;
    size_t nb = 0, off = 0;
    for (size_t c = 0; c < in->nctx; c++) {
        size_t R = (size_t)in->ctx[c]->rows, edge[6] = {0, 256, 512, 1024, 1536, R};
        for (int j = 0; j < 5; j++) {
            if (edge[j] >= edge[j + 1]) continue;
            char key[48];
            snprintf(key, sizeof key, "%04zu-%04zu", edge[j], edge[j + 1] - 1);
            size_t lo = edge[j] < R ? edge[j] : R, hi = edge[j + 1] < R ? edge[j + 1] : R;
            bucket_add(&bs, &nb, key, kl + off + lo, hi - lo);
        }
        off += R;
    }
    jv *o = jv_obj();
    for (size_t i = 0; i < nb; i++) {
        if (bs[i].n) jv_set(o, bs[i].key, stats_of(bs[i].v, bs[i].n));
        free(bs[i].v);
    }
    free(bs);
    return o;
}

static jv *context_report(const fd_k3_summary_in *in, size_t c, const double *kl, const double *js, size_t off)
{
    const fd_ctx *x = in->ctx[c];
    const jv *r = x->panel_rec, *none = NULL;
    size_t R = (size_t)x->rows;
    jv *o = jv_obj();
    const jv *sem = get_or(r, "semantic_class", get_or(r, "domain", none));
    static const char *const plain[] = {"dataset", "dataset_config", "dataset_revision", "dataset_split", "partition",
                                        "representation_type", "language", "source_cluster_id",
                                        "source_content_sha256", "source_id"};
    for (size_t k = 0; k < sizeof plain / sizeof *plain; k++) jv_set(o, plain[k], copy_or_null(get_or(r, plain[k], none)));
    jv_set(o, "allocation_stratum", copy_or_null(get_or(r, "allocation_stratum", sem)));
    jv_set(o, "semantic_class", copy_or_null(sem));
    const jv *sent = get_or(r, "sentinel", none);
    jv_set(o, "sentinel", sent ? jv_copy(sent) : jv_bool(0));
    jv_set(o, "context_index", jv_int(x->index));
    jv_set(o, "positions", jv_int((int64_t)R));
    jv_set(o, "kl_reference_to_candidate", stats_of(kl + off, R));
    if (js) jv_set(o, "js", stats_of(js + off, R));
    jv_set(o, "top1_agreement", jv_float((double)in->matches[c] / (double)R));
    return o;
}

typedef struct rank { size_t i; double key; } rank;
static int by_key_desc(const void *a, const void *b)   /* sorted(reverse=True) is stable */
{
    const rank *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}
static int by_key_asc(const void *a, const void *b)
{
    const rank *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static jv *top_list(const jv *reports, const double *key, size_t n, int desc)
{
    rank *r = fd_xmalloc((n + 1) * sizeof *r);
    for (size_t i = 0; i < n; i++) r[i] = (rank){i, key[i]};
    qsort(r, n, sizeof *r, desc ? by_key_desc : by_key_asc);
    jv *o = jv_arr();
    for (size_t i = 0; i < n && i < TOP; i++) jv_push(o, jv_copy(reports->u.a.v[r[i].i]));
    free(r);
    return o;
}

/* np.mean over groups (first-appearance order of str(allocation_stratum)) of
 * np.mean of each group's context means */
static double macro_stratum(const jv *reports, const double *cmean, size_t n)
{
    char **keys = fd_xcalloc(n + 1, sizeof *keys);
    size_t *of = fd_xmalloc((n + 1) * sizeof *of), ng = 0;
    for (size_t i = 0; i < n; i++) {
        char *k = str_key(jv_get(reports->u.a.v[i], "allocation_stratum"));
        size_t g = 0;
        while (g < ng && strcmp(keys[g], k)) g++;
        if (g == ng) keys[ng++] = k;
        else free(k);
        of[i] = g;
    }
    double *gm = fd_xmalloc((ng + 1) * sizeof *gm), *buf = fd_xmalloc((n + 1) * sizeof *buf);
    for (size_t g = 0; g < ng; g++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (of[i] == g) buf[m++] = cmean[i];
        gm[g] = fd_np_mean(buf, m);
        free(keys[g]);
    }
    double v = fd_np_mean(gm, ng);
    free(keys); free(of); free(gm); free(buf);
    return v;
}

static jv *side(const fd_k3_view *v, const char *label)
{
    jv *o = jv_obj();
    jv_set(o, "kind", jv_str(v->kind));
    jv_set(o, "label", jv_str(label));
    jv_set(o, "manifest_sha256", jv_str(v->manifest_sha256));
    return o;
}

static void omit(jv *list, const char *key, const char *reason)
{
    jv *o = jv_obj();
    jv_set(o, "key", jv_str(key));
    jv_set(o, "reason", jv_str(reason));
    jv_push(list, o);
}

static jv *fidelity_block(const fd_k3_summary_in *in, size_t neg_kl, size_t neg_js)
{
    jv *x = jv_obj(), *om = jv_arr(), *tw = jv_obj(), *views = jv_obj();
    static const char *const boot[] = {"kl_context_bootstrap", "kl_source_cluster_bootstrap",
                                       "kl_stratified_source_cluster_bootstrap", "allocation_strata", "semantic_classes"};
    for (size_t i = 0; i < 5; i++)
        omit(om, boot[i], "numpy default_rng (PCG64) bootstrap resamples: not reproduced bit for bit here, so not "
                          "approximated; the receipt's uncertainty block has this tool's own context bootstrap");
    omit(om, "logit_absolute_error_mean", "needs every logit difference; this comparator keeps only per-position KL/JS/top-1");
    omit(om, "logit_absolute_error_max", "as logit_absolute_error_mean");
    omit(om, "per_context[].logit_absolute_error_mean", "as logit_absolute_error_mean");
    omit(om, "per_context[].logit_absolute_error_max", "as logit_absolute_error_mean");
    omit(om, "comparator.cublas_workspace_config", "CUDA setting; this replay runs on the CPU");
    omit(om, "comparator.live_logit_input_cache", "his device cache policy; not applicable");
    if (!in->js) {
        omit(om, "js", "run compare with --js to compute the Jensen-Shannon divergence");
        omit(om, "per_context[].js", "as js");
    }
    jv_set(x, "schema", jv_str("fidelity.k3-comparison-summary.v1"));
    jv_set(x, "compatible_with", jv_str(FD_K3_COMPATIBLE_WITH));
    jv_set(x, "summary_of", jv_str("comparison-receipt.json"));
    jv_set(tw, "path", jv_str("tokenwise-kld.npy"));
    jv_set(tw, "sha256", jv_str(in->tokenwise_sha256));
    jv_set(tw, "bytes", jv_int((int64_t)in->tokenwise_bytes));
    jv_set(x, "tokenwise", tw);
    char p[512];
    snprintf(p, sizeof p, "%s/%s", in->views_rel, in->ref->name);
    jv_set(views, "reference", jv_str(p));
    snprintf(p, sizeof p, "%s/%s", in->views_rel, in->cand->name);
    jv_set(views, "candidate", jv_str(p));
    snprintf(p, sizeof p, "%s/%s/suite-manifest.json", in->views_rel, in->ref->name);
    jv_set(views, "suite_manifest", jv_str(p));
    jv_set(x, "views", views);
    jv_set(x, "negative_kl_positions_clamped", jv_int((int64_t)neg_kl));
    jv_set(x, "negative_js_positions_clamped", in->js ? jv_int((int64_t)neg_js) : jv_null());
    jv_set(x, "omitted", om);
    jv_set(x, "definitions",
           jv_str("Every value is his statistic of THIS comparison's per-position values: KL(reference || candidate) "
                  "as in tokenwise-kld.npy (fp64 full-vocabulary, docs/NUMERICS.md), each negative value clamped to "
                  "+0.0 as his clamp_min_(0); top-1 = first-index argmax equality of the replayed logits. stats() = "
                  "numpy mean (pairwise sum / n), median (mean of the middle one or two sorted values), quantile "
                  "0.95/0.99/0.999 (linear), max. context_depth_buckets pool the rows [start, end) of every context "
                  "over edges 0/256/512/1024/1536/scored_rows (his context_depth_ranges); a bucket with no row is "
                  "left out. high_kld_contexts: the 20 largest context means, stable; top1_discordant_contexts: the 20 "
                  "lowest context top-1 agreements, stable (contexts with agreement 1.0 included, as his). "
                  "kl_macro_allocation_stratum_mean: np.mean over str(allocation_stratum) groups in first-appearance "
                  "order of np.mean of their context means. Context fields come from the suite rows (panel records)."));
    return x;
}

jv *fd_k3_summary(const fd_k3_summary_in *in)
{
    size_t neg_kl = 0, neg_js = 0, n = in->nctx, total_top1 = 0;
    double *kl = clamped(in->kl, in->npos, &neg_kl), *js = in->js ? clamped(in->js, in->npos, &neg_js) : NULL;
    double *cmean = fd_xmalloc((n + 1) * sizeof *cmean), *agree = fd_xmalloc((n + 1) * sizeof *agree);
    jv *reports = jv_arr(), *s = jv_obj();
    for (size_t c = 0, off = 0; c < n; c++) {
        size_t R = (size_t)in->ctx[c]->rows;
        cmean[c] = fd_np_mean(kl + off, R);
        agree[c] = (double)in->matches[c] / (double)R;
        total_top1 += in->matches[c];
        jv_push(reports, context_report(in, c, kl, js, off));
        off += R;
    }
    jv_set(s, "comparator", in->comparator);
    jv_set(s, "contexts", jv_int((int64_t)n));
    jv_set(s, "context_depth_buckets", depth_buckets(in, kl));
    jv_set(s, "direction", jv_str("KL(reference || candidate)"));
    jv_set(s, "high_kld_contexts", top_list(reports, cmean, n, 1));
    if (js) jv_set(s, "js", stats_of(js, in->npos));
    jv_set(s, "kl_reference_to_candidate", stats_of(kl, in->npos));
    jv_set(s, "kl_macro_allocation_stratum_mean", jv_float(macro_stratum(reports, cmean, n)));
    jv_set(s, "kl_micro_token_mean", jv_float(fd_np_mean(kl, in->npos)));
    jv_set(s, "positions", jv_int((int64_t)in->npos));
    jv_set(s, "reference", side(in->ref, in->ref_label));
    jv_set(s, "candidate", side(in->cand, in->cand_label));
    jv_set(s, "suite_manifest_sha256", jv_str(in->ref->suite_sha256));
    jv_set(s, "top1_agreement", jv_float((double)total_top1 / (double)in->npos));
    jv_set(s, "top1_discordant_contexts", top_list(reports, agree, n, 0));
    jv_set(s, "per_context", reports);
    jv_set(s, "x_fidelity", fidelity_block(in, neg_kl, neg_js));
    free(kl); free(js); free(cmean); free(agree);
    return s;
}
