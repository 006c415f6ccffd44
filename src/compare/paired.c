/* Paired A-vs-B (paired.h).  -ffp-contract=off like stats.c. */
#include "paired.h"
#include "compare.h"
#include "stats.h"
#include "format/npy.h"
#include "format/paths.h"
#include "format/sha.h"
#include "util/buf.h"
#include "util/fsio.h"
#include "util/utc.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LARGEST 5

typedef struct side_in {
    jv *r;
    double *kl;
    size_t n;
} side_in;

static void finding(void *ctx, const char *code, const char *rule, const char *msg)
{
    fd_err *e = ctx;
    if (!e->code[0]) fd_fail(e, "receipt_invalid", rule, "[%s] %s", code, msg);
}

/* the receipt, validated, and its tokenwise array (the file its seal names, beside it) */
static int load_side(const char *path, side_in *s, fd_err *e)
{
    memset(s, 0, sizeof *s);
    if (!(s->r = jv_parse_file(path, e))) return -1;
    fd_err ve = {0};
    if (fd_validate_receipt(s->r, finding, &ve)) {
        *e = ve;
        fd_err_prefix(e, path);
        return -1;
    }
    const jv *tw = jv_get(s->r, "tokenwise");
    const char *rel = jv_get_str(tw, "path"), *want = jv_get_str(tw, "sha256");
    int64_t npos = 0;
    if (!rel || !want || jv_get_i64(jv_get(s->r, "measurement_scope"), "scored_positions", &npos) || npos < 1)
        return fd_fail(e, "tokenwise_mismatch", "paired", "%s: the receipt names no tokenwise array", path);
    if (fd_check_relpath(rel, "tokenwise.path", 0, e)) return -1;
    const char *slash = strrchr(path, '/');
    fd_buf dir = {0};
    fd_buf_printf(&dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    char *np = fd_path_join(dir.p, rel);
    fd_buf_free(&dir);
    fd_buf b = {0};
    char got[65], descr[16];
    uint64_t shape[4];
    int ndim = 0, rc = 0;
    size_t off = 0;
    if (!fd_is_file(np)) rc = fd_fail(e, "tokenwise_mismatch", "paired", "%s is not a regular file", np);
    else if (fd_read_file(np, (size_t)npos * 8 + (1u << 16), &b, e)) rc = -1;
    else if ((fd_sha256_hex(b.p, b.n, got), strcmp(got, want)))
        rc = fd_fail(e, "tokenwise_mismatch", "paired", "%s hashes to %s, the receipt seals %s", np, got, want);
    else if (fd_npy_parse((const unsigned char *)b.p, b.n, descr, shape, &ndim, &off, e)) rc = -1;
    else if (strcmp(descr, "<f8") || ndim != 1 || shape[0] != (uint64_t)npos || b.n - off != (size_t)npos * 8)
        rc = fd_fail(e, "tokenwise_mismatch", "paired", "%s: not a 1-D <f8 array of the %lld scored positions", np,
                     (long long)npos);
    if (!rc) {
        s->n = (size_t)npos;
        s->kl = fd_xmalloc(s->n * 8 + 8);
        memcpy(s->kl, b.p + off, s->n * 8);
    }
    free(b.p);
    free(np);
    return rc;
}

static void side_free(side_in *s)
{
    jv_free(s->r);
    free(s->kl);
}

double fd_sign_test_p(size_t w, size_t l)
{
    size_t n = w + l, k = w < l ? w : l;
    if (!n) return 1.0;
    double s = 0.0, ln2 = log(2.0);
    for (size_t i = 0; i <= k; i++)
        s += exp(lgamma((double)n + 1) - lgamma((double)i + 1) - lgamma((double)(n - i) + 1) - (double)n * ln2);
    s *= 2.0;
    return s > 1.0 ? 1.0 : s;
}

/* index -> document id from the reference's panel, bound to the receipts by the dataset seal */
static int documents(const char *ref, const char *want_sha, const int64_t *idx, size_t nc, char **doc, fd_err *e)
{
    char *mp = fd_path_join(ref, "fidelity-dataset.json");
    jv *m = jv_parse_file(mp, e), *panel = NULL;
    free(mp);
    if (!m) return -1;
    int rc = 0;
    char seal[65];
    const char *stored = jv_get_str(m, "dataset_sha256");
    if (jv_seal(m, "dataset_sha256", seal, e) || !stored || strcmp(seal, stored) || strcmp(seal, want_sha))
        rc = fd_fail(e, "bad_reference", "paired", "%s: the manifest's seal is not the reference dataset_sha256 %s the "
                     "receipts name", ref, want_sha);
    const char *pf = jv_get_str(jv_get(m, "panel"), "panel_file"), *psha = jv_get_str(jv_get(m, "panel"), "panel_file_sha256");
    char *pp = NULL;
    if (!rc && (!pf || !psha || fd_check_relpath(pf, "panel.panel_file", 0, e)))
        rc = e->code[0] ? -1 : fd_fail(e, "bad_reference", "paired", "%s: no sealed panel file", ref);
    if (!rc) {
        pp = fd_path_join(ref, pf);
        char got[65];
        if (!fd_is_file(pp) || fd_sha256_file(pp, got, e) || strcmp(got, psha))
            rc = fd_fail(e, "bad_reference", "paired", "%s is not the panel file the manifest seals", pp);
        else if (!(panel = jv_parse_file(pp, e))) rc = -1;
    }
    const jv *recs = jv_get(panel, "records");
    for (size_t c = 0; !rc && c < nc; c++) {
        const char *d = NULL;
        for (size_t j = 0; recs && recs->t == JV_ARR && j < recs->u.a.n; j++) {
            int64_t pi;
            if (!jv_get_i64(recs->u.a.v[j], "index", &pi) && pi == idx[c]) d = jv_get_str(recs->u.a.v[j], "document_id");
        }
        fd_buf b = {0};
        if (d) fd_buf_printf(&b, "%s", d);
        else fd_buf_printf(&b, "context-%lld", (long long)idx[c]);
        doc[c] = fd_buf_cstr(&b);
    }
    free(pp);
    jv_free(panel);
    jv_free(m);
    return rc;
}

static jv *side_summary(const side_in *s, const char *path)
{
    jv *o = jv_obj();
    const jv *c = jv_get(s->r, "candidate"), *t = jv_get(jv_get(s->r, "x_fidelity"), "token_statistics");
    jv_set(o, "label", jv_copy(jv_get(c, "label") ? jv_get(c, "label") : jv_null()));
    jv_set(o, "dataset_sha256", jv_copy(jv_get(c, "dataset_sha256") ? jv_get(c, "dataset_sha256") : jv_null()));
    jv_set(o, "receipt_sha256", jv_str(jv_get_str(s->r, "receipt_sha256")));
    jv_set(o, "receipt_path", jv_str(path));
    jv_set(o, "tokenwise_sha256", jv_str(jv_get_str(jv_get(s->r, "tokenwise"), "sha256")));
    jv_set(o, "comparability_class", jv_copy(jv_get(jv_get(s->r, "comparability"), "class")));
    jv_set(o, "kl_mean", jv_copy(jv_get(jv_get(s->r, "kl"), "mean")));
    const jv *ppl = jv_get(jv_get(jv_get(t, "perplexity"), "candidate"), "ppl");
    jv_set(o, "ppl", ppl ? jv_copy(ppl) : jv_null());
    jv_set(o, "top1_agreement", jv_copy(jv_get(s->r, "top1_agreement") ? jv_get(s->r, "top1_agreement") : jv_null()));
    return o;
}

typedef struct { size_t i; double d; } absd;
static int cmp_absd(const void *pa, const void *pb)
{
    const absd *a = pa, *b = pb;
    double x = fabs(a->d), y = fabs(b->d);
    if (x != y) return x > y ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* the paired receipt's delta: the two means, B - A, its bootstrap interval */
static jv *delta_json(double mean_a, double mean_b, const fd_bootstrap *b)
{
    double delta = mean_b - mean_a;
    jv *d = jv_obj(), *u = jv_obj();
    jv_set(d, "a_mean", jv_float(mean_a));
    jv_set(d, "b_mean", jv_float(mean_b));
    jv_set(d, "value", jv_float(delta));
    jv_set(d, "relative", mean_a > 0 ? jv_float(delta / mean_a) : jv_null());
    jv_set(u, "method", jv_str(b->method));
    jv_set(u, "statistic", jv_str("token-weighted mean of the per-position differences B - A over the resampled contexts"));
    jv_set(u, "ci95_low", b->computed ? jv_float(b->ci95_low) : jv_null());
    jv_set(u, "ci95_high", b->computed ? jv_float(b->ci95_high) : jv_null());
    jv_set(u, "clusters", b->computed ? jv_int((int64_t)b->clusters) : jv_null());
    jv_set(u, "samples", b->computed ? jv_int((int64_t)b->samples) : jv_null());
    jv_set(u, "seed", b->computed ? jv_int((int64_t)b->seed) : jv_null());
    jv_set(u, "generator", b->computed ? jv_str(b->generator) : jv_null());
    jv_set(u, "interval_kind", b->computed ? jv_str(b->interval_kind) : jv_null());
    jv_set(u, "excludes_zero", b->computed ? jv_bool(b->ci95_low > 0 || b->ci95_high < 0) : jv_null());
    jv_set(d, "uncertainty", u);
    return d;
}

/* the sign test over documents: contexts grouped by document id (the reference panel's, else one per context) */
static jv *sign_test_json(const fd_paired_opts *o, size_t nc, const int64_t *idx, const char *const *doc,
                          const double *sd, const size_t *rows)
{
    /* documents: contexts grouped by document id (first appearance order), token-weighted */
    size_t ndoc = 0, dbw = 0, daw = 0, dt = 0;
    char **keys = fd_xcalloc(nc + 1, sizeof *keys);
    double *dsum = fd_xcalloc(nc + 1, sizeof *dsum);
    size_t *drows = fd_xcalloc(nc + 1, sizeof *drows);
    for (size_t c = 0; c < nc; c++) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "context-%lld", (long long)idx[c]);
        const char *k = o->reference ? doc[c] : tmp;
        size_t j = 0;
        while (j < ndoc && strcmp(keys[j], k)) j++;
        if (j == ndoc) keys[ndoc++] = fd_xstrdup(k);
        dsum[j] += sd[c];
        drows[j] += rows[c];
    }
    for (size_t j = 0; j < ndoc; j++) {
        double dd = dsum[j] / (double)drows[j];
        if (dd < -o->tie_tolerance) dbw++;
        else if (dd > o->tie_tolerance) daw++;
        else dt++;
    }
    jv *sg = jv_obj();
    jv_set(sg, "unit", jv_str(o->reference ? "document" : "context"));
    jv_set(sg, "unit_note", jv_str(o->reference ? "contexts grouped by the reference panel's document_id; per document the "
                                                  "token-weighted mean of B - A"
                                                : "no reference dataset given: each context is its own document"));
    jv_set(sg, "documents", jv_int((int64_t)ndoc));
    jv_set(sg, "b_better", jv_int((int64_t)dbw));
    jv_set(sg, "a_better", jv_int((int64_t)daw));
    jv_set(sg, "ties", jv_int((int64_t)dt));
    jv_set(sg, "method", jv_str("exact two-sided binomial sign test, ties dropped: p = min(1, 2 P(X <= min(b,a))), X ~ Bin(b+a, 1/2)"));
    jv_set(sg, "p_value", jv_float(fd_sign_test_p(dbw, daw)));
    for (size_t j = 0; j < ndoc; j++) free(keys[j]);
    free(keys); free(dsum); free(drows);
    return sg;
}

/* per_context of p and its largest |B - A| (largest_differences) */
static void per_context_json(const fd_paired_opts *o, size_t nc, const jv *pa, const int64_t *idx, const char *const *doc,
                             const size_t *rows, const double *ma, const double *mb, jv *p)
{
    /* per context, and the largest |B - A| */
    jv *pc = jv_arr(), *lg = jv_arr();
    absd *order = fd_xmalloc((nc + 1) * sizeof *order);
    for (size_t c = 0; c < nc; c++) {
        jv *x = jv_obj();
        jv_set(x, "index", jv_int(idx[c]));
        jv_set(x, "window_id", jv_copy(jv_get(pa->u.a.v[c], "window_id") ? jv_get(pa->u.a.v[c], "window_id") : jv_null()));
        jv_set(x, "domain", jv_copy(jv_get(pa->u.a.v[c], "domain") ? jv_get(pa->u.a.v[c], "domain") : jv_null()));
        jv_set(x, "document_id", o->reference ? jv_str(doc[c]) : jv_null());
        jv_set(x, "scored_rows", jv_int((int64_t)rows[c]));
        jv_set(x, "a", jv_float(ma[c]));
        jv_set(x, "b", jv_float(mb[c]));
        jv_set(x, "delta", jv_float(mb[c] - ma[c]));
        jv_push(pc, x);
        order[c] = (absd){c, mb[c] - ma[c]};
    }
    qsort(order, nc, sizeof *order, cmp_absd);
    for (size_t k = 0; k < nc && k < LARGEST; k++) jv_push(lg, jv_copy(pc->u.a.v[order[k].i]));
    free(order);
    jv_set(p, "per_context", pc);
    jv_set(p, "largest_differences", lg);
}

int fd_paired_build(const fd_paired_opts *o, jv **out, fd_err *e)
{
    *out = NULL;
    if (!(o->tie_tolerance >= 0.0) || !isfinite(o->tie_tolerance))
        return fd_fail(e, "usage", "paired", "the tie tolerance must be a finite number >= 0");
    side_in A, B;
    if (load_side(o->receipt_a, &A, e)) { side_free(&A); return -1; }
    if (load_side(o->receipt_b, &B, e)) { side_free(&A); side_free(&B); return -1; }
    int rc = 0;
    const char *ra = jv_get_str(jv_get(A.r, "reference"), "dataset_sha256"), *rb = jv_get_str(jv_get(B.r, "reference"), "dataset_sha256");
    const jv *pa = jv_get(A.r, "per_context"), *pb = jv_get(B.r, "per_context");
    if (!ra || !rb || strcmp(ra, rb))
        rc = fd_fail(e, "paired_mismatch", "paired", "the receipts compare against different references (%s, %s)",
                     ra ? ra : "none", rb ? rb : "none");
    else if (!jv_equal(jv_get(jv_get(A.r, "panel"), "suite_token_hash_sha256"), jv_get(jv_get(B.r, "panel"), "suite_token_hash_sha256")))
        rc = fd_fail(e, "paired_mismatch", "paired", "the receipts are over different panels");
    else if (A.n != B.n || !pa || !pb || pa->t != JV_ARR || pb->t != JV_ARR || pa->u.a.n != pb->u.a.n || !pa->u.a.n)
        rc = fd_fail(e, "paired_mismatch", "paired", "the receipts cover different positions (%zu and %zu)", A.n, B.n);
    size_t nc = rc ? 0 : pa->u.a.n, tot = 0;
    int64_t *idx = fd_xcalloc(nc + 1, sizeof *idx);
    size_t *rows = fd_xcalloc(nc + 1, sizeof *rows);
    for (size_t c = 0; !rc && c < nc; c++) {
        int64_t ia, ib, na, nb;
        if (jv_get_i64(pa->u.a.v[c], "index", &ia) || jv_get_i64(pb->u.a.v[c], "index", &ib) || ia != ib ||
            jv_get_i64(pa->u.a.v[c], "scored_rows", &na) || jv_get_i64(pb->u.a.v[c], "scored_rows", &nb) || na != nb || na < 1)
            rc = fd_fail(e, "paired_mismatch", "paired", "per_context entry %zu differs between the receipts (index or rows)", c);
        else {
            idx[c] = ia;
            rows[c] = (size_t)na;
            tot += (size_t)na;
        }
    }
    if (!rc && tot != A.n) rc = fd_fail(e, "paired_mismatch", "paired", "per_context rows sum to %zu, not %zu positions", tot, A.n);
    char **doc = fd_xcalloc(nc + 1, sizeof *doc);
    if (!rc && o->reference) rc = documents(o->reference, ra, idx, nc, doc, e);
    if (rc) {
        for (size_t c = 0; c < nc; c++) free(doc[c]);
        free(doc); free(idx); free(rows);
        side_free(&A); side_free(&B);
        return -1;
    }
    size_t n = A.n;
    double *diff = fd_xmalloc(n * 8 + 8), *ma = fd_xmalloc(nc * 8 + 8), *mb = fd_xmalloc(nc * 8 + 8);
    double *sd = fd_xmalloc(nc * 8 + 8);
    for (size_t i = 0; i < n; i++) diff[i] = B.kl[i] - A.kl[i];
    size_t off = 0, bw = 0, aw = 0, ties = 0;
    for (size_t c = 0; c < nc; c++) {
        ma[c] = fd_np_mean(A.kl + off, rows[c]);
        mb[c] = fd_np_mean(B.kl + off, rows[c]);
        sd[c] = fd_np_sum(diff + off, rows[c]);
        double d = mb[c] - ma[c];
        if (d < -o->tie_tolerance) bw++;
        else if (d > o->tie_tolerance) aw++;
        else ties++;
        off += rows[c];
    }
    double mean_a = fd_np_mean(A.kl, n), mean_b = fd_np_mean(B.kl, n);
    fd_kl_input in = {diff, n, nc, rows, NULL, NULL, NULL};
    fd_bootstrap bs = {0};
    bs.method = "none";
    if (!o->no_bootstrap) rc = fd_bootstrap_ci(&in, FD_BOOTSTRAP_SAMPLES, FD_BOOTSTRAP_SEED, &bs, e);
    jv *p = NULL;
    if (!rc) {
        p = jv_obj();
        char created[32];
        if (o->created_utc) snprintf(created, sizeof created, "%s", o->created_utc);
        else fd_utc_now(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ");
        jv_set(p, "schema", jv_str(FD_PAIRED_SCHEMA));
        jv_set(p, "format_version", jv_int(1));
        jv_set(p, "receipt_sha256", jv_str(""));
        jv_set(p, "created_utc", jv_str(created));
        jv *ref = jv_obj();
        jv_set(ref, "label", jv_copy(jv_get(jv_get(A.r, "reference"), "label")));
        jv_set(ref, "dataset_sha256", jv_str(ra));
        jv_set(ref, "documents_from", o->reference ? jv_str("the reference panel's document_id") : jv_null());
        jv_set(p, "reference", ref);
        jv_set(p, "panel_suite_token_hash_sha256", jv_copy(jv_get(jv_get(A.r, "panel"), "suite_token_hash_sha256")));
        jv_set(p, "a", side_summary(&A, o->receipt_a));
        jv_set(p, "b", side_summary(&B, o->receipt_b));
        jv_set(p, "metric", jv_str("mean_tokenwise_kld"));
        jv_set(p, "direction", jv_str("b_minus_a"));
        jv_set(p, "lower_is_better", jv_bool(1));
        jv_set(p, "contexts", jv_int((int64_t)nc));
        jv_set(p, "scored_positions", jv_int((int64_t)n));
        jv_set(p, "delta", delta_json(mean_a, mean_b, &bs));
        jv *wins = jv_obj();
        jv_set(wins, "unit", jv_str("context"));
        jv_set(wins, "tie_tolerance_nats", jv_float(o->tie_tolerance));
        jv_set(wins, "rule", jv_str("per-context mean KL: B better when B - A < -tol, A better when > tol, else a tie"));
        jv_set(wins, "b_better", jv_int((int64_t)bw));
        jv_set(wins, "a_better", jv_int((int64_t)aw));
        jv_set(wins, "ties", jv_int((int64_t)ties));
        jv_set(p, "wins", wins);
        jv_set(p, "sign_test", sign_test_json(o, nc, idx, (const char *const *)doc, sd, rows));
        per_context_json(o, nc, pa, idx, (const char *const *)doc, rows, ma, mb, p);
        char seal[65];
        if (jv_seal(p, "receipt_sha256", seal, e)) rc = -1;
        else jv_set(p, "receipt_sha256", jv_str(seal));
        if (!rc && fd_paired_check(p, e)) rc = -1;   /* what is written passes its own check */
    }
    for (size_t c = 0; c < nc; c++) free(doc[c]);
    free(doc); free(idx); free(rows); free(diff); free(ma); free(mb); free(sd);
    side_free(&A);
    side_free(&B);
    if (rc) { jv_free(p); return -1; }
    *out = p;
    return 0;
}

static double num(const jv *v) { return v && v->t == JV_FLOAT ? v->u.f : v && v->t == JV_INT ? (double)v->u.i : NAN; }
static long long inum(const jv *v) { return v && v->t == JV_INT ? (long long)v->u.i : -1; }

void fd_paired_print(const jv *p, FILE *f)
{
    const jv *a = jv_get(p, "a"), *b = jv_get(p, "b"), *d = jv_get(p, "delta"), *u = jv_get(d, "uncertainty");
    const jv *w = jv_get(p, "wins"), *s = jv_get(p, "sign_test");
    fprintf(f, "====== Paired B - A (A = %s, B = %s; lower KL is better) ======\n", jv_get_str(a, "label"), jv_get_str(b, "label"));
    fprintf(f, "Mean KLD A  : %10.6f\n", num(jv_get(d, "a_mean")));
    fprintf(f, "Mean KLD B  : %10.6f\n", num(jv_get(d, "b_mean")));
    if (jv_get(u, "ci95_low") && jv_get(u, "ci95_low")->t == JV_FLOAT)
        fprintf(f, "Δ KLD (B-A) : %10.6f  95%% CI [%.6f, %.6f] (context-cluster bootstrap, %lld contexts)\n",
                num(jv_get(d, "value")), num(jv_get(u, "ci95_low")), num(jv_get(u, "ci95_high")), inum(jv_get(u, "clusters")));
    else fprintf(f, "Δ KLD (B-A) : %10.6f  (no bootstrap)\n", num(jv_get(d, "value")));
    if (num(jv_get(a, "ppl")) == num(jv_get(a, "ppl")) && num(jv_get(b, "ppl")) == num(jv_get(b, "ppl")))
        fprintf(f, "PPL A, B    : %10.6f, %10.6f\n", num(jv_get(a, "ppl")), num(jv_get(b, "ppl")));
    fprintf(f, "Contexts    : B better %lld, A better %lld, ties %lld (|Δ| <= %g nats)\n", inum(jv_get(w, "b_better")),
            inum(jv_get(w, "a_better")), inum(jv_get(w, "ties")), num(jv_get(w, "tie_tolerance_nats")));
    fprintf(f, "Sign test   : %s level, B better %lld, A better %lld, ties %lld of %lld: p = %.4g (two-sided)\n",
            jv_get_str(s, "unit"), inum(jv_get(s, "b_better")), inum(jv_get(s, "a_better")), inum(jv_get(s, "ties")),
            inum(jv_get(s, "documents")), num(jv_get(s, "p_value")));
    const jv *lg = jv_get(p, "largest_differences");
    fprintf(f, "Largest |B - A| (context: A -> B):\n");
    for (size_t i = 0; lg && lg->t == JV_ARR && i < lg->u.a.n; i++) {
        const jv *x = lg->u.a.v[i];
        const char *wid = jv_get_str(x, "window_id");
        fprintf(f, "  %6lld %-20s %10.6f -> %10.6f  (%+.6f)\n", inum(jv_get(x, "index")), wid ? wid : "-",
                num(jv_get(x, "a")), num(jv_get(x, "b")), num(jv_get(x, "delta")));
    }
}

static int i64(const jv *o, const char *k, int64_t *v) { return jv_get_i64(o, k, v) || *v < 0; }

int fd_paired_check(const jv *p, fd_err *e)
{
    const char *schema = jv_get_str(p, "schema"), *stored = jv_get_str(p, "receipt_sha256");
    int64_t fv = 0;
    if (!p || p->t != JV_OBJ || !schema || strcmp(schema, FD_PAIRED_SCHEMA) || jv_get_i64(p, "format_version", &fv) || fv != 1)
        return fd_fail(e, "bad_schema", "paired", "not a %s document (format_version 1)", FD_PAIRED_SCHEMA);
    char seal[65];
    if (!stored || jv_seal(p, "receipt_sha256", seal, e) || strcmp(seal, stored))
        return fd_fail(e, "seal_failed", "paired", "receipt_sha256 %s does not recompute (%s)", stored ? stored : "absent", seal);
    const jv *w = jv_get(p, "wins"), *sg = jv_get(p, "sign_test"), *d = jv_get(p, "delta"), *u = jv_get(d, "uncertainty");
    const jv *pc = jv_get(p, "per_context");
    int64_t nc, npos, bw, aw, t, docs, sb, sa, st;
    if (i64(p, "contexts", &nc) || i64(p, "scored_positions", &npos) || i64(w, "b_better", &bw) || i64(w, "a_better", &aw) ||
        i64(w, "ties", &t) || i64(sg, "documents", &docs) || i64(sg, "b_better", &sb) || i64(sg, "a_better", &sa) ||
        i64(sg, "ties", &st) || !pc || pc->t != JV_ARR)
        return fd_fail(e, "paired_invalid", "paired", "a count is missing or negative");
    if (bw + aw + t != nc || sb + sa + st != docs || docs > nc || docs < 1 || (int64_t)pc->u.a.n != nc)
        return fd_fail(e, "paired_invalid", "paired", "wins (%lld+%lld+%lld), documents (%lld+%lld+%lld of %lld) or per_context "
                       "(%zu) do not add up to %lld contexts", (long long)bw, (long long)aw, (long long)t, (long long)sb,
                       (long long)sa, (long long)st, (long long)docs, pc->u.a.n, (long long)nc);
    int64_t rows = 0;
    for (size_t i = 0; i < pc->u.a.n; i++) {
        int64_t r;
        double a = num(jv_get(pc->u.a.v[i], "a")), b = num(jv_get(pc->u.a.v[i], "b")), dd = num(jv_get(pc->u.a.v[i], "delta"));
        if (i64(pc->u.a.v[i], "scored_rows", &r) || r < 1 || !(a >= 0) || !(b >= 0) || dd != b - a)
            return fd_fail(e, "paired_invalid", "paired", "per_context entry %zu is impossible (rows, means, delta = b - a)", i);
        rows += r;
    }
    double am = num(jv_get(d, "a_mean")), bm = num(jv_get(d, "b_mean")), dv = num(jv_get(d, "value"));
    double pv = num(jv_get(sg, "p_value")), tol = num(jv_get(w, "tie_tolerance_nats"));
    const jv *lo = jv_get(u, "ci95_low"), *hi = jv_get(u, "ci95_high");
    if (rows != npos || !(am >= 0) || !(bm >= 0) || dv != bm - am || !(pv >= 0 && pv <= 1) || !(tol >= 0) ||
        (lo && lo->t != JV_NULL && !(num(lo) <= num(hi))))
        return fd_fail(e, "paired_invalid", "paired", "the figures do not cohere (rows %lld of %lld, delta = b_mean - a_mean, "
                       "0 <= p <= 1, tolerance >= 0, ci95_low <= ci95_high)", (long long)rows, (long long)npos);
    return 0;
}
