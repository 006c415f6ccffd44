/* Unit tests for src/format/schema.c: one small schema per keyword, then the
 * real fidelity-dataset schema against the published root vector and against
 * mutations of it that each break one rule.  Run from the repository root. */
#include <stdio.h>
#include <string.h>
#include "format/json.h"
#include "format/schema.h"

#define SCHEMA_PATH "schema/fidelity-dataset.schema.json"
#define VECTOR_PATH "tests/vectors/fidelity-dataset.root-glm53-bf16.json"

typedef struct { int n; fd_buf all; } sink;

static void collect(void *ctx, const char *m)
{
    sink *s = ctx;
    s->n++;
    fd_buf_puts(&s->all, m);
    fd_buf_putc(&s->all, '\n');
}

/* Validates and checks the violation count (want < 0: "at least one") and,
 * if msg is set, that some message contains it.  Returns 1 on failure. */
static int expect(fd_schema *s, const jv *inst, int want, const char *msg, const char *label)
{
    sink k = {0, {0}};
    fd_err e = {0};
    int n = fd_schema_validate(s, inst, collect, &k, &e);
    const char *all = k.all.n ? fd_buf_cstr(&k.all) : "";
    int bad = n < 0 || (want < 0 ? n == 0 : n != want) || n != k.n || (msg && !strstr(all, msg));
    if (bad)
        printf("FAIL: schema %s: got %d violations (want %d%s%s)%s%s\n%s", label, n, want,
               msg ? ", containing " : "", msg ? msg : "", n < 0 ? ": " : "", n < 0 ? e.msg : "", all);
    fd_buf_free(&k.all);
    return bad;
}

/* Compiles schema text, validates instance text. */
static int t(const char *schema, const char *inst, int want, const char *msg)
{
    fd_err e = {0};
    jv *sj = jv_parse(schema, strlen(schema), &e), *ij = jv_parse(inst, strlen(inst), &e);
    fd_schema *s = sj ? fd_schema_new(sj, &e) : NULL;
    char label[200];
    snprintf(label, sizeof label, "%.120s on %.60s", schema, inst);
    int bad = 1;
    if (!s || !ij) printf("FAIL: schema %s: setup: %s\n", label, e.msg);
    else bad = expect(s, ij, want, msg, label);
    fd_schema_free(s);
    jv_free(sj);
    jv_free(ij);
    return bad;
}

static int refused(const char *schema, const char *msg)
{
    fd_err e = {0};
    jv *sj = jv_parse(schema, strlen(schema), &e);
    fd_schema *s = sj ? fd_schema_new(sj, &e) : NULL;
    int bad = !sj || s || !strstr(e.msg, msg);
    if (bad) printf("FAIL: schema %s: expected compile refusal containing %s, got '%s'\n", schema, msg, e.msg);
    fd_schema_free(s);
    jv_free(sj);
    return bad;
}

static int keywords(void)
{
    int f = 0;
    const char *num = "{\"type\":\"number\"}", *integer = "{\"type\":\"integer\"}";
    f += t(integer, "1", 0, NULL);
    f += t(integer, "1.0", 0, NULL); /* Python: float.is_integer() counts */
    f += t(integer, "123456789012345678901234567890", 0, NULL);
    f += t(integer, "1.5", 1, "<root>: 1.5 is not of type 'integer'");
    f += t(integer, "true", 1, "True is not of type 'integer'");
    f += t(integer, "\"1\"", 1, NULL);
    f += t(num, "false", 1, NULL);
    f += t(num, "2.5e-3", 0, NULL);
    f += t("{\"type\":[\"string\",\"null\"]}", "null", 0, NULL);
    f += t("{\"type\":[\"string\",\"null\"]}", "{}", 1, "{} is not of type ['string', 'null']");
    f += t("{\"type\":\"boolean\"}", "0", 1, NULL);
    f += t("{\"type\":\"array\"}", "[]", 0, NULL);

    const char *obj = "{\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"],"
                      "\"additionalProperties\":false}";
    f += t(obj, "{\"a\":\"x\"}", 0, NULL);
    f += t(obj, "{}", 1, "<root>: 'a' is a required property");
    f += t(obj, "{\"a\":\"x\",\"b\":1}", 1, "<root>: Additional properties are not allowed ('b' was unexpected)");
    f += t(obj, "{\"a\":7}", 1, "a: 7 is not of type 'string'");
    f += t(obj, "[1]", 0, NULL); /* object keywords ignore non-objects */
    f += t("{\"additionalProperties\":{\"type\":\"integer\"},\"properties\":{\"p\":true}}",
           "{\"p\":\"s\",\"x\":\"s\"}", 1, "x: 's' is not of type 'integer'");
    f += t("{\"properties\":{\"a\":false}}", "{\"a\":1}", 1, "a: False schema does not allow 1");

    f += t("{\"enum\":[1,\"a\",null]}", "1.0", 0, NULL);
    f += t("{\"enum\":[1,\"a\",null]}", "true", 1, "True is not one of [1, 'a', None]");
    f += t("{\"enum\":[\"a\"]}", "\"it's\"", 1, "\"it's\" is not one of ['a']");
    f += t("{\"enum\":[[1,2],{\"a\":1}]}", "{\"a\":1.0}", 0, NULL);
    f += t("{\"enum\":[[1,2],{\"a\":1}]}", "[1,2,3]", 1, NULL);
    f += t("{\"enum\":[9007199254740993]}", "9007199254740992.0", 1, NULL); /* exact, not via double */
    f += t("{\"const\":1}", "1.0", 0, NULL);
    f += t("{\"const\":1}", "true", 1, "True != const 1");
    f += t("{\"const\":true}", "1", 1, NULL);
    f += t("{\"const\":false}", "0", 1, NULL);
    f += t("{\"const\":null}", "null", 0, NULL);
    f += t("{\"const\":12345678901234567890}", "12345678901234567890", 0, NULL);
    f += t("{\"const\":12345678901234567890}", "1.2345678901234567e19", 1, NULL); /* 12345678901234567168 */
    f += t("{\"const\":{\"format\":1}}", "{\"format\":1}", 0, NULL); /* data, not a schema */

    f += t("{\"pattern\":\"b+\"}", "\"abbbc\"", 0, NULL); /* re.search: unanchored */
    f += t("{\"pattern\":\"b+\"}", "\"ac\"", 1, "'ac' does not match 'b+'");
    f += t("{\"pattern\":\"^a$\"}", "\"a\\n\"", 0, NULL); /* Python's $ matches before a final \n */
    f += t("{\"pattern\":\"^[^\\\\u0000]+$\"}", "\"ab\"", 0, NULL);
    f += t("{\"pattern\":\"^[^\\\\u0000]+$\"}", "\"a\\u0000b\"", 1, "'a\\x00b' does not match");
    f += t("{\"pattern\":\"^.{2}$\"}", "\"\xc3\xa9\xe2\x82\xac\"", 0, NULL);
    f += t("{\"pattern\":\"^\\\\w+$\"}", "\"h\xc3\xa9llo\"", 0, NULL);
    f += t("{\"pattern\":\"^x\"}", "5", 0, NULL);
    f += t("{\"minLength\":2}", "\"\xc3\xa9\"", 1, "is shorter than minLength 2");
    f += t("{\"minLength\":2}", "\"\xc3\xa9\xc3\xa9\"", 0, NULL);
    f += t("{\"minLength\":1}", "\"\"", 1, "<root>: '' is shorter than minLength 1");

    f += t("{\"minimum\":1}", "0", 1, "0 is less than the minimum of 1");
    f += t("{\"minimum\":1}", "1", 0, NULL);
    f += t("{\"minimum\":1}", "0.5", 1, NULL);
    f += t("{\"minimum\":1}", "1.0", 0, NULL);
    f += t("{\"minimum\":1}", "false", 0, NULL); /* booleans are not numbers */
    f += t("{\"minimum\":0.5}", "0", 1, NULL);
    f += t("{\"minimum\":0}", "-0.0", 0, NULL);
    f += t("{\"minimum\":9007199254740993}", "9007199254740992.0", 1, NULL);
    f += t("{\"minimum\":9007199254740993}", "9007199254740993", 0, NULL);
    f += t("{\"minimum\":-99999999999999999999}", "-100000000000000000000", 1, NULL);
    f += t("{\"minimum\":-99999999999999999999}", "-1e20", 1, NULL);
    f += t("{\"minimum\":-99999999999999999999}", "-9e19", 0, NULL);

    const char *arr = "{\"minItems\":1,\"maxItems\":2,\"items\":{\"type\":\"integer\"}}";
    f += t(arr, "[]", 1, "[] has fewer than minItems 1");
    f += t(arr, "[1,2,3]", 1, "[1, 2, 3] has more than maxItems 2");
    f += t(arr, "[1,\"x\"]", 1, "[1]: 'x' is not of type 'integer'");
    f += t("{\"properties\":{\"a\":{\"items\":{\"properties\":{\"b\":{\"type\":\"string\"}}}}}}",
           "{\"a\":[{\"b\":\"ok\"},{\"b\":2}]}", 1, "a[1].b: 2 is not of type 'string'");

    const char *one = "{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":0}]}";
    f += t(one, "-1", 0, NULL);
    f += t(one, "1.5", 0, NULL);
    f += t(one, "1", 1, "1 is valid under more than one of the given schemas");
    f += t(one, "-1.5", 1, "-1.5 is not valid under any of the given schemas");
    f += t("{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":3}]}", "2", 1, "2 is less than");
    f += t("{\"allOf\":[{\"type\":\"integer\"},{\"minimum\":3}]}", "\"x\"", 1, NULL);
    const char *ite = "{\"if\":{\"properties\":{\"k\":{\"const\":\"a\"}},\"required\":[\"k\"]},"
                      "\"then\":{\"required\":[\"x\"]},\"else\":{\"required\":[\"y\"]}}";
    f += t(ite, "{\"k\":\"a\"}", 1, "'x' is a required property");
    f += t(ite, "{\"k\":\"b\"}", 1, "'y' is a required property");
    f += t(ite, "{}", 1, "'y' is a required property");
    f += t(ite, "{\"k\":\"a\",\"x\":0}", 0, NULL);
    f += t("{\"if\":{\"type\":\"string\"}}", "1", 0, NULL);
    f += t("{\"$defs\":{\"p\":{\"type\":\"string\"}},\"properties\":{\"a\":{\"$ref\":\"#/$defs/p\"}}}",
           "{\"a\":1}", 1, "a: 1 is not of type 'string'");
    f += t("{\"$schema\":\"x\",\"$id\":\"y\",\"$comment\":\"c\",\"title\":\"t\",\"description\":\"d\","
           "\"default\":{\"foo\":1},\"examples\":[{\"bar\":2}]}", "{\"z\":1}", 0, NULL);
    f += t("true", "1", 0, NULL);
    f += t("false", "1", 1, "<root>: False schema does not allow 1");

    f += refused("{\"format\":\"date\"}", "unsupported schema keyword 'format'");
    f += refused("{\"properties\":{\"a\":{\"oneOf\":[{\"maxLength\":3}]}}}",
                 "unsupported schema keyword 'maxLength' at #/properties/a/oneOf/0");
    f += refused("{\"$ref\":\"#/$defs/missing\"}", "'$ref'");
    f += refused("{\"$defs\":{\"a\":true},\"$ref\":\"other.json#/$defs/a\"}", "'$ref'");
    f += refused("{\"pattern\":\"(\"}", "pattern");
    f += refused("{\"type\":\"int\"}", "'type'");
    f += refused("{\"minLength\":-1}", "'minLength'");
    f += refused("{\"oneOf\":[]}", "'oneOf'");
    f += refused("{\"items\":[{}]}", "a schema must be an object or a boolean");

    /* A cyclic $ref is an internal error, not a stack overflow. */
    fd_err e = {0};
    const char *cyc = "{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}";
    jv *cj = jv_parse(cyc, strlen(cyc), &e), *one_j = jv_int(1);
    fd_schema *cs = cj ? fd_schema_new(cj, &e) : NULL;
    int rc = cs ? fd_schema_validate(cs, one_j, NULL, NULL, &e) : 0;
    if (rc != -1 || !strstr(e.msg, "deeper than")) {
        printf("FAIL: schema cyclic $ref: rc %d, '%s'\n", rc, e.msg);
        f++;
    }
    fd_schema_free(cs);
    jv_free(cj);
    jv_free(one_j);
    return f;
}

/* Replaces the value at a dotted path of the copy, or deletes it (v NULL). */
static void mutate(jv *doc, const char *parent, const char *key, jv *v)
{
    jv *o = parent ? jv_get(doc, parent) : doc;
    if (v) jv_set(o, key, v);
    else jv_del(o, key);
}

static int manifest(void)
{
    fd_err e = {0};
    jv *sj = jv_parse_file(SCHEMA_PATH, &e);
    fd_schema *s = sj ? fd_schema_new(sj, &e) : NULL;
    jv *doc = s ? jv_parse_file(VECTOR_PATH, &e) : NULL;
    int f = 0;
    if (!doc) {
        printf("FAIL: schema manifest setup: %s\n", e.msg);
        fd_schema_free(s);
        jv_free(sj);
        return 1;
    }
    f += expect(s, doc, 0, NULL, "root vector");
    static const struct { const char *parent, *key, *val, *msg; } muts[] = {
        {"dataset", "role", "\"bogus\"", "dataset.role: 'bogus' is not one of ['root', 'quant', 'derived']"},
        {NULL, "capture", NULL, "<root>: 'capture' is a required property"},
        {"weights", "quantized", "true", "weights.quantized: True != const False"},
        {"capture", "manifest_file", "\"/abs\"", "capture.manifest_file: '/abs' does not match '^(?!/)"},
        {"runtime", "file", "\"https://x/y\"", "runtime.file: 'https://x/y' does not match"},
        {"head", "file", "\"head/a\\u0000b\"", "head.file: 'head/a\\x00b' is not valid under any"},
        {NULL, "format_version", "\"1\"", "format_version: '1' != const 1"},
        {NULL, "format_version", "true", "format_version: True != const 1"},
        /* the current schema takes a panel.json's declared id verbatim (no "panel--" prefix): non-empty, no whitespace */
        {"panel", "panel_id", "\"panel 25\"", "panel.panel_id: 'panel 25' does not match"},
        {"panel", "panel_id", "\"\"", "panel.panel_id: '' does not match"},
        {"panel", "contexts", "0", "panel.contexts: 0 is less than the minimum of 1"},
        {"capture", "form", "\"logit\"", "capture.tensor_key: 'hidden_states' != const 'logits'"},
        {"scope", "extra", "1", "scope: Additional properties are not allowed ('extra' was unexpected)"},
        {"determinism", "run_count", "1", "determinism.run_count: 1 is less than the minimum of 2"},
        {NULL, "dataset_sha256", "\"FB95\"", "dataset_sha256: 'FB95' does not match '^[0-9a-f]{64}$'"},
        {"dataset", "base_capture", "{\"dataset_sha256\":null}", "dataset.base_capture: {'dataset_sha256': None} is not of type 'null'"},
    };
    for (size_t i = 0; i < sizeof muts / sizeof *muts; i++) {
        jv *m = jv_copy(doc);
        mutate(m, muts[i].parent, muts[i].key, muts[i].val ? jv_parse(muts[i].val, strlen(muts[i].val), &e) : NULL);
        char label[96];
        snprintf(label, sizeof label, "vector with %s.%s=%s", muts[i].parent ? muts[i].parent : "",
                 muts[i].key, muts[i].val ? muts[i].val : "(deleted)");
        f += expect(s, m, -1, muts[i].msg, label);
        jv_free(m);
    }
    /* ... and an id without the prefix, as the Python capture writes it, is accepted */
    jv *pm = jv_copy(doc);
    mutate(pm, "panel", "panel_id", jv_str("fixture-tiny-seed7"));
    f += expect(s, pm, 0, NULL, "vector with panel.panel_id=fixture-tiny-seed7");
    jv_free(pm);
    /* Numeric const equality: format_version 1.0 is Python-equal to 1. */
    jv *m = jv_copy(doc);
    mutate(m, NULL, "format_version", jv_float(1.0));
    f += expect(s, m, 0, NULL, "vector with format_version=1.0");
    jv_free(m);
    jv_free(doc);
    fd_schema_free(s);
    jv_free(sj);
    return f;
}

int test_schema(void)
{
    return keywords() + manifest();
}
