/* validate --receipt (dsvalidate.validate_receipt): the schema, the seal and
 * the SC-1/SC-2/SC-3/BIAS-001/BIAS-006 rules. */
#include "compare.h"
#include "format/schema.h"
#include <math.h>
#include <stdio.h>
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

int fd_validate_receipt(const jv *r, void (*cb)(void *, const char *, const char *, const char *), void *ctx)
{
    sink s = {cb, ctx, 0};
    char m[512];
    const char *schema = jv_get_str(r, "schema");
    if (!schema || strcmp(schema, "malaiwah.fidelity-comparison-receipt.v1")) {
        finding(&s, "bad_schema", "SCHEMA", "schema is not 'malaiwah.fidelity-comparison-receipt.v1'");
        return s.n;
    }
    fd_err e;
    jv *sd = jv_parse((const char *)fd_schema_receipt_json, fd_schema_receipt_json_len, &e);
    fd_schema *sc = sd ? fd_schema_new(sd, &e) : NULL;
    if (!sc || fd_schema_validate(sc, r, schema_cb, &s, &e) < 0) finding(&s, "schema_invalid", "SCHEMA", e.msg);
    fd_schema_free(sc);
    jv_free(sd);
    char seal[65];
    const char *claimed = jv_get_str(r, "receipt_sha256");
    if (jv_seal(r, "receipt_sha256", seal, &e) || !claimed || strcmp(seal, claimed))
        finding(&s, "seal_failed", "SEAL-1", "receipt_sha256 does not recompute");
    const char *kind = jv_get_str(r, "comparison_kind");
    const jv *metric = jv_get(r, "metric"), *sc_ = jv_get(r, "self_compare");
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
