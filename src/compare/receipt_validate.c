/* validate --receipt (dsvalidate.validate_receipt): the schema, the seal and
 * the SC-1/SC-2/SC-3/BIAS-001/BIAS-006 rules. */
#include "compare.h"
#include "format/schema.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const unsigned char fd_schema_receipt_json[];
extern const unsigned int fd_schema_receipt_json_len;

typedef struct {
    void (*cb)(void *, const char *, const char *, const char *);
    void *ctx;
    int n;
} sink;

static void finding(sink *s, const char *code, const char *rule, const char *msg)
{
    s->n++;
    if (s->cb) s->cb(s->ctx, code, rule, msg);
}

static void schema_cb(void *ctx, const char *msg) { finding(ctx, "schema_invalid", "SCHEMA", msg); }

static int truthy(const jv *v)
{
    return v && !(v->t == JV_NULL || (v->t == JV_BOOL && !v->u.b) || (v->t == JV_INT && !v->u.i) ||
                  (v->t == JV_STR && !v->u.s.n) || (v->t == JV_OBJ && !v->u.o.n) || (v->t == JV_ARR && !v->u.a.n));
}

static int is_num(const jv *v, double want)
{
    if (!v) return 0;
    if (v->t == JV_FLOAT) return v->u.f == want;
    if (v->t == JV_INT) return (double)v->u.i == want;
    return 0;
}

/* ---- values a receipt cannot hold, whatever its seal (issue 16.11) ------ */

static int num(const jv *v, double *out)
{
    if (!v) return 0;
    if (v->t == JV_FLOAT) { *out = v->u.f; return 1; }
    if (v->t == JV_INT) { *out = (double)v->u.i; return 1; }
    return 0;
}

static void impossible(sink *s, const char *rule, const char *fmt, const char *a, double x, double y)
{
    char m[512];
    snprintf(m, sizeof m, fmt, a, x, y);
    finding(s, "receipt_impossible", rule, m);
}

static void inconsistent(sink *s, const char *what, double x, const char *other, double y)
{
    char m[512];
    snprintf(m, sizeof m, "%s is %.17g but %s is %.17g", what, x, other, y);
    finding(s, "receipt_inconsistent", "RCPT-COUNT", m);
}

/* KL, JS and entropy values are >= 0 in exact arithmetic, but a per-position
 * value computed in fp64 can be a few ulps below 0 when the two
 * distributions (nearly) agree (docs/NUMERICS.md §2b bounds the error at
 * about 1.5e-13 x (KL + ln V)): a statistic is impossible only below this. */
#define KL_FLOOR (-1e-9)

/* A value that must be a finite number >= lo (and <= hi when hi >= lo). */
static void in_range(sink *s, const jv *parent, const char *key, const char *where, double lo, double hi)
{
    double x;
    if (!num(jv_get(parent, key), &x)) return;
    char w[160];
    snprintf(w, sizeof w, "%s%s", where, key);
    if (!isfinite(x) || x < lo || (hi >= lo && x > hi)) {
        if (hi >= lo) impossible(s, "RCPT-RANGE", "%s is %.17g, outside [0, %g]", w, x, hi);
        else impossible(s, "RCPT-RANGE", "%s is %.17g, below %g", w, x, lo);
    }
}

static void ordered(sink *s, const jv *parent, const char *lo_key, const char *hi_key, const char *where)
{
    double a, b;
    if (!num(jv_get(parent, lo_key), &a) || !num(jv_get(parent, hi_key), &b) || a <= b) return;
    char m[512];
    snprintf(m, sizeof m, "%s%s %.17g > %s%s %.17g", where, lo_key, a, where, hi_key, b);
    finding(s, "receipt_impossible", "RCPT-ORDER", m);
}

static int close_to(double a, double b, double rel)
{
    double scale = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= rel * scale + 1e-300;
}

static void check_values(const jv *r, sink *s)
{
    static const char *const KL_KEYS[] = {"mean", "median", "p50", "p90", "p95", "p99", "p99_9", "max", "min", NULL};
    static const char *const KL_ORDER[] = {"min", "median", "p95", "p99", "p99_9", "max", NULL};
    const jv *kl = jv_get(r, "kl");
    for (const char *const *k = KL_KEYS; *k; k++) in_range(s, kl, *k, "kl.", KL_FLOOR, -1);
    const char *prev = NULL;
    for (const char *const *k = KL_ORDER; *k; k++)
        if (jv_get(kl, *k) && jv_get(kl, *k)->t != JV_NULL) {
            if (prev) ordered(s, kl, prev, *k, "kl.");
            prev = *k;
        }
    ordered(s, kl, "min", "mean", "kl.");
    ordered(s, kl, "mean", "max", "kl.");
    const jv *metric = jv_get(r, "metric");
    const char *units = jv_get_str(metric, "units");
    if (units && !strcmp(units, "nats")) in_range(s, metric, "value", "metric.", KL_FLOOR, -1);
    static const char *const TOP[] = {"kl_micro_token_mean", "kl_macro_stratum_mean", "kl_reverse_mean",
                                      "reference_entropy_mean", "candidate_entropy_mean", NULL};
    for (const char *const *k = TOP; *k; k++) in_range(s, r, *k, "", KL_FLOOR, -1);
    in_range(s, r, "js", "", KL_FLOOR, 0.69314718055994540 + 1e-9); /* Jensen-Shannon divergence <= ln 2 nats */
    in_range(s, r, "top1_agreement", "", 0, 1);
    static const char *const MAPS[] = {"context_depth_buckets", "per_domain", "per_stratum", NULL};
    for (const char *const *k = MAPS; *k; k++) {
        const jv *o = jv_get(r, *k);
        char w[96];
        snprintf(w, sizeof w, "%s.", *k);
        for (size_t i = 0; o && o->t == JV_OBJ && i < o->u.o.n; i++) in_range(s, o, o->u.o.m[i].k, w, KL_FLOOR, -1);
    }
    const jv *unc = jv_get(r, "uncertainty");
    in_range(s, unc, "ci95_low", "uncertainty.", KL_FLOOR, -1);
    in_range(s, unc, "ci95_high", "uncertainty.", KL_FLOOR, -1);
    in_range(s, unc, "clusters", "uncertainty.", 0, -1);
    in_range(s, unc, "samples", "uncertainty.", 0, -1);
    ordered(s, unc, "ci95_low", "ci95_high", "uncertainty.");
    const jv *scope = jv_get(r, "measurement_scope"), *panel = jv_get(r, "panel");
    static const char *const COUNTS[] = {"contexts", "scored_positions", "positions_per_context", NULL};
    for (const char *const *k = COUNTS; *k; k++) {
        in_range(s, scope, *k, "measurement_scope.", 0, -1);
        in_range(s, panel, *k, "panel.", 0, -1);
    }
    in_range(s, panel, "context_length", "panel.", 0, -1);
    const jv *det = jv_get(r, "determinism");
    in_range(s, det, "run_count", "determinism.", 0, -1);
    in_range(s, det, "min_run_mean", "determinism.", KL_FLOOR, -1);
    in_range(s, det, "max_run_mean", "determinism.", KL_FLOOR, -1);
    in_range(s, det, "population_stddev_of_run_means", "determinism.", 0, -1);
    ordered(s, det, "min_run_mean", "max_run_mean", "determinism.");
    const jv *means = jv_get(det, "run_means");
    double x;
    for (size_t i = 0; means && means->t == JV_ARR && i < means->u.a.n; i++)
        if (num(means->u.a.v[i], &x) && (!isfinite(x) || x < 0))
            impossible(s, "RCPT-RANGE", "%s[%.0f] is %.17g, below 0", "determinism.run_means", (double)i, x);
    if (means && means->t == JV_ARR && num(jv_get(det, "run_count"), &x) && x != (double)means->u.a.n)
        inconsistent(s, "determinism.run_count", x, "len(determinism.run_means)", (double)means->u.a.n);

    /* per context: ranges and orders, then the sums they must add up to */
    static const char *const LISTS[] = {"per_context", "high_kld_contexts", "top1_discordant_contexts", NULL};
    for (const char *const *l = LISTS; *l; l++) {
        const jv *pc = jv_get(r, *l);
        for (size_t i = 0; pc && pc->t == JV_ARR && i < pc->u.a.n; i++) {
            const jv *c = pc->u.a.v[i];
            char w[96];
            snprintf(w, sizeof w, "%s[%zu].", *l, i);
            in_range(s, c, "mean", w, KL_FLOOR, -1);
            in_range(s, c, "max", w, KL_FLOOR, -1);
            in_range(s, c, "scored_rows", w, 0, -1);
            in_range(s, c, "top1_agreement", w, 0, 1);
            ordered(s, c, "mean", "max", w);
        }
    }
    const jv *pc = jv_get(r, "per_context");
    double contexts, positions;
    if (pc && pc->t == JV_ARR && num(jv_get(scope, "contexts"), &contexts) && contexts == (double)pc->u.a.n && pc->u.a.n) {
        double rows = 0, weighted = 0, cmax = 0;
        int all = 1;
        for (size_t i = 0; i < pc->u.a.n; i++) {
            double n, m, mx;
            if (!num(jv_get(pc->u.a.v[i], "scored_rows"), &n) || !num(jv_get(pc->u.a.v[i], "mean"), &m)) { all = 0; break; }
            rows += n;
            weighted += n * m;
            if (num(jv_get(pc->u.a.v[i], "max"), &mx) && mx > cmax) cmax = mx;
        }
        if (all && num(jv_get(scope, "scored_positions"), &positions) && positions != rows)
            inconsistent(s, "measurement_scope.scored_positions", positions, "sum(per_context[].scored_rows)", rows);
        double mean, kmax;
        if (all && rows > 0 && num(jv_get(kl, "mean"), &mean) && isfinite(mean) && !close_to(mean, weighted / rows, 1e-9))
            inconsistent(s, "kl.mean", mean, "the row-weighted mean of per_context[].mean", weighted / rows);
        if (all && num(jv_get(kl, "max"), &kmax) && isfinite(kmax) && !close_to(kmax, cmax, 1e-12))
            inconsistent(s, "kl.max", kmax, "max(per_context[].max)", cmax);
    } else if (pc && pc->t == JV_ARR && num(jv_get(scope, "contexts"), &contexts) && contexts < (double)pc->u.a.n) {
        inconsistent(s, "measurement_scope.contexts", contexts, "len(per_context)", (double)pc->u.a.n);
    }
    double clusters;
    const char *unit = jv_get_str(unc, "cluster_unit");
    if (unit && !strcmp(unit, "context") && num(jv_get(unc, "clusters"), &clusters) &&
        num(jv_get(scope, "contexts"), &contexts) && clusters != contexts)
        inconsistent(s, "uncertainty.clusters", clusters, "measurement_scope.contexts", contexts);
    const jv *full = jv_get(scope, "covers_full_panel");
    double pp;
    if (full && full->t == JV_BOOL && full->u.b && num(jv_get(panel, "scored_positions"), &pp) &&
        num(jv_get(scope, "scored_positions"), &positions) && pp != positions)
        inconsistent(s, "panel.scored_positions", pp, "measurement_scope.scored_positions (covers_full_panel)", positions);
    const char *mname = jv_get_str(metric, "name");
    double mv, mean;
    if (mname && !strcmp(mname, "mean_tokenwise_kld") && num(jv_get(metric, "value"), &mv) && num(jv_get(kl, "mean"), &mean) &&
        !close_to(mv, mean, 1e-12))
        inconsistent(s, "metric.value", mv, "kl.mean", mean);
}

struct fd_receipt_schema {
    jv *doc;
    fd_schema *sc;
};

fd_receipt_schema *fd_receipt_schema_new(fd_err *e)
{
    fd_receipt_schema *rs = fd_xcalloc(1, sizeof *rs);
    rs->doc = jv_parse((const char *)fd_schema_receipt_json, fd_schema_receipt_json_len, e);
    rs->sc = rs->doc ? fd_schema_new(rs->doc, e) : NULL;
    if (!rs->sc) {
        fd_receipt_schema_free(rs);
        return NULL;
    }
    return rs;
}

void fd_receipt_schema_free(fd_receipt_schema *rs)
{
    if (!rs) return;
    fd_schema_free(rs->sc);
    jv_free(rs->doc);
    free(rs);
}

int fd_validate_receipt(const jv *r, void (*cb)(void *, const char *, const char *, const char *), void *ctx)
{
    return fd_validate_receipt_with(NULL, r, cb, ctx);
}

int fd_validate_receipt_with(const fd_receipt_schema *given, const jv *r,
                             void (*cb)(void *, const char *, const char *, const char *), void *ctx)
{
    sink s = {cb, ctx, 0};
    char m[512];
    const char *schema = jv_get_str(r, "schema");
    if (!schema || strcmp(schema, "malaiwah.fidelity-comparison-receipt.v1")) {
        finding(&s, "bad_schema", "SCHEMA", "schema is not 'malaiwah.fidelity-comparison-receipt.v1'");
        return s.n;
    }
    fd_err e = {0};
    fd_receipt_schema *own = given ? NULL : fd_receipt_schema_new(&e);
    const fd_receipt_schema *rs = given ? given : own;
    if (!rs || fd_schema_validate(rs->sc, r, schema_cb, &s, &e) < 0) finding(&s, "schema_invalid", "SCHEMA", e.msg);
    fd_receipt_schema_free(own);
    char seal[65];
    const char *claimed = jv_get_str(r, "receipt_sha256");
    if (jv_seal(r, "receipt_sha256", seal, &e) || !claimed || strcmp(seal, claimed))
        finding(&s, "seal_failed", "SEAL-1", "receipt_sha256 does not recompute");
    const char *kind = jv_get_str(r, "comparison_kind");
    const jv *metric = jv_get(r, "metric"), *sc_ = jv_get(r, "self_compare");
    check_values(r, &s);
    if (kind && !strcmp(kind, "reproduction_confirmation")) {
        if (!is_num(jv_get(metric, "value"), 0.0))
            finding(&s, "self_compare_invalid", "SC-1", "metric.value is not exactly 0.0 in a reproduction confirmation");
        if (!is_num(jv_get(r, "top1_agreement"), 1.0))
            finding(&s, "self_compare_invalid", "SC-1", "top1_agreement is not exactly 1.0 in a reproduction confirmation");
        const jv *kl = jv_get(r, "kl");
        for (size_t i = 0; kl && kl->t == JV_OBJ && i < kl->u.o.n; i++) {
            const jv *v = kl->u.o.m[i].v;
            if (!is_num(v, 0.0)) {
                snprintf(m, sizeof m, "kl.%s is not 0.0", kl->u.o.m[i].k);
                finding(&s, "self_compare_invalid", "SC-1", m);
            } else if (v->t == JV_FLOAT && signbit(v->u.f)) {
                snprintf(m, sizeof m, "kl.%s is -0.0", kl->u.o.m[i].k);
                finding(&s, "self_compare_invalid", "SC-1", m);
            }
        }
        if (!truthy(jv_get(sc_, "capture_content_digest_equal")))
            finding(&s, "self_compare_invalid", "SC-1", "reproduction_confirmation without capture_content_digest_equal");
    }
    if (kind && !strcmp(kind, "run_to_run_floor") && truthy(jv_get(sc_, "capture_content_digest_equal")))
        finding(&s, "self_compare_invalid", "SC-2", "run_to_run_floor with equal capture digests is a reproduction, not a floor");
    if (kind && strcmp(kind, "measurement") && truthy(jv_get(jv_get(r, "submission"), "emitted")))
        finding(&s, "not_submittable", "SC-3", "only comparison_kind == 'measurement' may be handed to the registry");
    const jv *cmp = jv_get(r, "comparability"), *same_lane = jv_get(cmp, "same_lane");
    if (same_lane && same_lane->t == JV_BOOL && !same_lane->u.b && truthy(jv_get(cmp, "usable_as_floor")))
        finding(&s, "bias_invalid", "BIAS-006", "a cross-lane comparison may never be cited as a floor");
    const char *rel = jv_get_str(jv_get(r, "estimator"), "stack_relation");
    if (rel && !strcmp(rel, "cross_stack") && !truthy(jv_get(cmp, "bias")))
        finding(&s, "bias_invalid", "BIAS-001", "cross_stack requires a bias block");
    return s.n;
}
