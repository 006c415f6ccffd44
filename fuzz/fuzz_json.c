/* libFuzzer target for src/format/json*.c (json_parse.c: the parser): any input either is refused or
 * parses into a value whose canonical, pretty and ASCII dumps all succeed,
 * re-parse to an equal value, and re-dump to identical bytes (abort()
 * otherwise, so the fuzzer reports it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/json.h"

static void die(const char *what, const fd_buf *a, const fd_buf *b)
{
    fprintf(stderr, "fuzz_json: %s\n", what);
    if (a && a->p) fprintf(stderr, "  first:  %.*s\n", (int)(a->n > 400 ? 400 : a->n), a->p);
    if (b && b->p) fprintf(stderr, "  second: %.*s\n", (int)(b->n > 400 ? 400 : b->n), b->p);
    abort();
}

/* Dumps v with st, re-parses, checks equality with v; the re-parsed value's
 * dump must be byte-identical.  Returns nothing; aborts on a mismatch. */
static void round_trip(const jv *v, const jv_style *st, const char *name)
{
    fd_buf a = {0}, b = {0};
    fd_err e = {0};
    char what[96];
    if (jv_dump(v, st, &a, &e)) {
        snprintf(what, sizeof what, "%s dump of a parsed value failed: %s", name, e.msg);
        die(what, NULL, NULL);
    }
    jv *w = jv_parse(a.p ? a.p : "", a.n, &e);
    if (!w) {
        snprintf(what, sizeof what, "%s output does not re-parse: %.60s", name, e.msg);
        die(what, &a, NULL);
    }
    if (!jv_equal(v, w)) {
        snprintf(what, sizeof what, "%s re-parse is not equal to the first parse", name);
        die(what, &a, NULL);
    }
    if (jv_dump(w, st, &b, &e)) {
        snprintf(what, sizeof what, "%s re-dump failed", name);
        die(what, &a, NULL);
    }
    if (a.n != b.n || memcmp(a.p, b.p, a.n)) {
        snprintf(what, sizeof what, "%s re-dump differs", name);
        die(what, &a, &b);
    }
    jv_free(w);
    fd_buf_free(&a);
    fd_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fd_err e = {0};
    jv *v = jv_parse((const char *)data, size, &e);
    if (!v) return 0;
    round_trip(v, &JV_CANON, "canonical");
    round_trip(v, &JV_PRETTY, "pretty");
    round_trip(v, &JV_CANON_ASCII, "canonical-ascii");
    round_trip(v, &JV_DEFAULT, "default");
    /* a copy is equal and dumps identically */
    jv *c = jv_copy(v);
    if (!jv_equal(v, c)) die("jv_copy is not equal", NULL, NULL);
    jv_free(c);
    if (v->t == JV_OBJ) {
        char hex[65];
        if (jv_seal(v, "dataset_sha256", hex, &e)) die("jv_seal of a parsed object failed", NULL, NULL);
    }
    jv_free(v);
    return 0;
}
