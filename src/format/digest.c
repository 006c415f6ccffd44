#include "digest.h"
#include "pyfloat.h"
#include "sha.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fd_token_ids_sha256(const int64_t *ids, size_t n, int legacy, char hex[65])
{
    fd_buf b = {0};
    fd_buf_putc(&b, '[');
    for (size_t i = 0; i < n; i++) fd_buf_printf(&b, "%s%lld", i ? (legacy ? ", " : ",") : "", (long long)ids[i]);
    fd_buf_putc(&b, ']');
    fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
}

void fd_suite_token_hash(char *const *per_record, size_t n, int legacy, char hex[65])
{
    fd_sha *s = fd_sha_new();
    for (size_t i = 0; i < n; i++) {
        if (i && !legacy) fd_sha_update(s, "\n", 1);
        fd_sha_update(s, per_record[i], strlen(per_record[i]));
    }
    fd_sha_final_hex(s, hex);
}

typedef struct { int64_t index; const char *content; } idx_rec;

static int cmp_idx(const void *a, const void *b)
{
    const idx_rec *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

int fd_capture_content_digest(const jv *records, char hex[65], fd_err *e)
{
    size_t n = records && records->t == JV_ARR ? records->u.a.n : 0;
    idx_rec *r = fd_xmalloc((n ? n : 1) * sizeof *r);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const jv *rec = records->u.a.v[i];
        const jv *ix = jv_get(rec, "index");
        if (!ix || ix->t != JV_INT)
            rc = fd_fail(e, "digest_mismatch", "5.2", "record %zu has no integer index", i);
        else {
            r[i].index = ix->u.i;
            r[i].content = jv_get_str(rec, "tensor_content_sha256");
            if (!r[i].content || !*r[i].content)
                rc = fd_fail(e, "digest_mismatch", "5.2",
                             "record %lld has no tensor_content_sha256; a container digest is not an identity",
                             (long long)ix->u.i);
        }
    }
    if (!rc) {
        qsort(r, n, sizeof *r, cmp_idx);
        for (size_t i = 1; i < n && !rc; i++)
            if (r[i].index == r[i - 1].index)
                rc = fd_fail(e, "digest_mismatch", "5.2", "duplicate record index %lld", (long long)r[i].index);
    }
    if (!rc) {
        fd_sha *s = fd_sha_new();
        char line[64];
        for (size_t i = 0; i < n; i++) {
            int k = snprintf(line, sizeof line, "%s%lld:", i ? "\n" : "", (long long)r[i].index);
            fd_sha_update(s, line, (size_t)k);
            fd_sha_update(s, r[i].content, strlen(r[i].content));
        }
        fd_sha_final_hex(s, hex);
    }
    free(r);
    return rc;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* format_bpw: integral values as str(int), others as repr(float). */
static int format_bpw(const jv *v, fd_buf *out)
{
    char t[40];
    if (v->t == JV_INT) { fd_buf_printf(out, "%lld", (long long)v->u.i); return 0; }
    if (v->t == JV_BIGINT) { fd_buf_put(out, v->u.s.p, v->u.s.n); return 0; }
    if (v->t != JV_FLOAT || !isfinite(v->u.f)) return -1;
    if (v->u.f == floor(v->u.f)) { /* str(int(x)): every integral double prints exactly */
        fd_buf_printf(out, "%.0f", v->u.f == 0 ? 0.0 : v->u.f); /* int(-0.0) is 0 */
        return 0;
    }
    fd_pyfloat_repr(v->u.f, t, sizeof t);
    fd_buf_puts(out, t);
    return 0;
}

/* Renders a str()-like value: strings verbatim, null as None, others as JSON. */
static void py_str(const jv *v, fd_buf *out)
{
    if (!v || v->t == JV_NULL) fd_buf_puts(out, "None");
    else if (v->t == JV_STR) fd_buf_put(out, v->u.s.p, v->u.s.n);
    else if (v->t == JV_BOOL) fd_buf_puts(out, v->u.b ? "True" : "False");
    else { fd_err e; jv_dump(v, &JV_CANON, out, &e); }
}

int fd_scope_digest(const jv *scope, fd_buf *out, fd_err *e)
{
    const jv *as = jv_get(scope, "assignments");
    if (!as || as->t != JV_ARR) return fd_fail(e, "schema_invalid", "SCOPE", "scope.assignments is not a list");
    size_t n = as->u.a.n;
    char **seg = fd_xcalloc(n + 1, sizeof *seg);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const jv *a = as->u.a.v[i];
        fd_buf s = {0};
        py_str(jv_get(a, "tensor_class"), &s);
        fd_buf_putc(&s, '=');
        py_str(jv_get(a, "treatment"), &s);
        fd_buf_putc(&s, ':');
        py_str(jv_get(a, "format"), &s);
        const jv *bits = jv_get(a, "bits_per_weight");
        if (bits && bits->t != JV_NULL) {
            fd_buf_putc(&s, '@');
            if (format_bpw(bits, &s)) rc = fd_fail(e, "schema_invalid", "SCOPE", "bits_per_weight is not a number");
        }
        seg[i] = fd_buf_cstr(&s);
    }
    if (!rc) {
        qsort(seg, n, sizeof *seg, cmp_str);
        for (size_t i = 0; i < n; i++) fd_buf_printf(out, "%s%s", i ? "|" : "", seg[i]);
        fd_buf_puts(out, "|head=");
        py_str(jv_get(scope, "head_policy"), out);
        fd_buf_puts(out, "|kv=");
        py_str(jv_get(scope, "kv_cache_dtype"), out);
    }
    for (size_t i = 0; i < n; i++) free(seg[i]);
    free(seg);
    return rc;
}

const char *const FD_SCOPE_CLASSES[FD_N_SCOPE_CLASSES] = {"embed_tokens", "attn.qkv", "attn.o", "mlp.gate",
                                                         "mlp.up", "mlp.down", "moe.experts", "norm", "lm_head"};

jv *fd_scope_block(const char *quantized_class, const char *format, int64_t bits)
{
    jv *s = jv_obj(), *as = jv_arr();
    for (size_t i = 0; i < FD_N_SCOPE_CLASSES; i++) {
        int q = quantized_class && !strcmp(FD_SCOPE_CLASSES[i], quantized_class);
        jv *a = jv_obj();
        jv_set(a, "tensor_class", jv_str(FD_SCOPE_CLASSES[i]));
        jv_set(a, "treatment", jv_str(q ? "quantized" : "native"));
        jv_set(a, "format", jv_str(q ? format : "bf16"));
        jv_set(a, "bits_per_weight", jv_int(q ? bits : 16));
        jv_set(a, "layer_range", jv_null());
        jv_push(as, a);
    }
    jv_set(s, "policy", jv_str(quantized_class ? "mixed" : "native"));
    jv_set(s, "head_policy", jv_str("native"));
    jv_set(s, "kv_cache_dtype", jv_str("bf16"));
    jv_set(s, "assignments", as);
    return s;
}

jv *fd_native_scope(void)
{
    jv *s = fd_scope_block(NULL, NULL, 0);
    fd_buf d = {0};
    fd_err e;
    fd_scope_digest(s, &d, &e);
    jv_set(s, "scope_digest", jv_strn(d.p, d.n));
    fd_buf_free(&d);
    return s;
}
