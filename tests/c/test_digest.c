/* Unit tests for src/format/digest.c and npy.c: the frozen preimages of
 * FORMAT.md §3.  Expected digests were computed with CPython hashlib/json. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "check.h"
#include "format/digest.h"
#include "format/npy.h"
#include "format/sha.h"
#include "util/fsio.h"

#define NATIVE_ROOT_SCOPE                                                                          \
    "attn.o=native:bf16@16|attn.qkv=native:bf16@16|embed_tokens=native:bf16@16|lm_head=native:bf16@16|" \
    "mlp.down=native:bf16@16|mlp.gate=native:bf16@16|mlp.up=native:bf16@16|moe.experts=native:bf16@16|" \
    "norm=native:bf16@16|head=native|kv=bf16"

static int token_ids(void)
{
    int fails = 0;
    char hex[65];
    const int64_t ids[] = {1, 2, 3};
    /* sha256(b"[1,2,3]") and sha256(b"[1, 2, 3]") */
    fd_token_ids_sha256(ids, 3, 0, hex);
    CHECK_STR(hex, "a615eeaee21de5179de080de8c3052c8da901138406ba71c38c032845f7d54f4", "token ids [1,2,3] compact");
    fd_token_ids_sha256(ids, 3, 1, hex);
    CHECK_STR(hex, "a36b1f2c3f84522dd1005145646617d7054c0851e97c72a039c0bdfac9fa07f3", "token ids [1,2,3] legacy");
    const int64_t big[] = {0, -1, 151643, INT64_MAX};
    fd_token_ids_sha256(big, 4, 0, hex);
    CHECK_STR(hex, "484da3e3633a3973d13ad2d63274c2f8b06871b8e849c76f334c822e99ea3c99", "token ids mixed compact");
    fd_token_ids_sha256(big, 4, 1, hex);
    CHECK_STR(hex, "f4a4320ef79cd538f586311c0b0f3728d468a43a487c9f1d865dab7662eeb94e", "token ids mixed legacy");
    fd_token_ids_sha256(ids, 0, 0, hex);
    CHECK_STR(hex, "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945", "token ids [] compact");
    fd_token_ids_sha256(ids, 0, 1, hex);
    CHECK_STR(hex, "4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945", "token ids [] legacy");
    return fails;
}

static int suite_hash(void)
{
    int fails = 0;
    char hex[65];
    char a[65], b[65], c[65];
    memset(a, 'a', 64);
    memset(b, 'b', 64);
    memset(c, 'c', 64);
    a[64] = b[64] = c[64] = 0;
    char *recs[] = {a, b, c};
    fd_suite_token_hash(recs, 3, 0, hex);
    CHECK_STR(hex, "3a9126ada7449a9ae43078e666cc5105bcd9700245277275a7a95ab954d338df", "suite hash \\n-joined");
    fd_suite_token_hash(recs, 3, 1, hex);
    CHECK_STR(hex, "b20dd8bdd812e18599a5f4b49437265f5ef51619181f1b0f6f57775bf1fbae60", "suite hash legacy");
    fd_suite_token_hash(recs, 0, 0, hex);
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "suite hash of nothing");
    fd_suite_token_hash(recs, 1, 0, hex);
    char want[65];
    fd_sha256_hex(a, 64, want);
    CHECK_STR(hex, want, "suite hash of one record has no newline");
    return fails;
}

static jv *rec(int64_t index, const char *digest)
{
    jv *r = jv_obj();
    jv_set(r, "index", jv_int(index));
    if (digest) jv_set(r, "tensor_content_sha256", jv_str(digest));
    return r;
}

static int content_digest(void)
{
    int fails = 0;
    char hex[65];
    fd_err e = {0};
    /* sha256("0:aa\n1:bb\n2:cc") whatever the record order */
    jv *rs = jv_arr();
    jv_push(rs, rec(2, "cc"));
    jv_push(rs, rec(0, "aa"));
    jv_push(rs, rec(1, "bb"));
    CHECK(fd_capture_content_digest(rs, hex, &e) == 0, "capture_content_digest succeeds");
    CHECK_STR(hex, "0ed39d68a02b9e870a798fe8868d31d73cdb39b756acf8544f975e4881232fd7", "capture_content_digest");
    /* index order is numeric, not textual: 10 after 9 */
    jv *rs2 = jv_arr();
    jv_push(rs2, rec(10, "x"));
    jv_push(rs2, rec(9, "y"));
    char want[65];
    fd_sha256_hex("9:y\n10:x", 8, want);
    CHECK(fd_capture_content_digest(rs2, hex, &e) == 0, "capture_content_digest 9/10");
    CHECK_STR(hex, want, "capture_content_digest sorts numerically");
    jv_free(rs2);
    /* duplicate index */
    jv_push(rs, rec(1, "dd"));
    memset(&e, 0, sizeof e);
    CHECK(fd_capture_content_digest(rs, hex, &e) != 0, "duplicate index refused");
    CHECK_STR(e.code, "digest_mismatch", "duplicate index code");
    jv_free(rs);
    /* missing and empty digests */
    rs = jv_arr();
    jv_push(rs, rec(0, "aa"));
    jv_push(rs, rec(1, NULL));
    memset(&e, 0, sizeof e);
    CHECK(fd_capture_content_digest(rs, hex, &e) != 0 && e.code[0], "missing tensor_content_sha256 refused");
    jv_free(rs);
    rs = jv_arr();
    jv_push(rs, rec(0, ""));
    memset(&e, 0, sizeof e);
    CHECK(fd_capture_content_digest(rs, hex, &e) != 0 && e.code[0], "empty tensor_content_sha256 refused");
    jv_free(rs);
    /* no records: sha256 of the empty string */
    rs = jv_arr();
    CHECK(fd_capture_content_digest(rs, hex, &e) == 0, "capture_content_digest of no records");
    CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty capture_content_digest");
    jv_free(rs);
    return fails;
}

static jv *assignment(const char *cls, const char *treat, const char *fmt, jv *bits)
{
    jv *a = jv_obj();
    jv_set(a, "tensor_class", jv_str(cls));
    jv_set(a, "treatment", jv_str(treat));
    jv_set(a, "format", jv_str(fmt));
    jv_set(a, "bits_per_weight", bits);
    jv_set(a, "layer_range", jv_null());
    return a;
}

static char *scope_digest_of(jv *bits)
{
    jv *s = jv_obj(), *as = jv_arr();
    jv_push(as, assignment("moe.experts", "rtn", "int4", bits));
    jv_set(s, "assignments", as);
    jv_set(s, "head_policy", jv_str("native"));
    jv_set(s, "kv_cache_dtype", jv_str("bf16"));
    fd_buf b = {0};
    fd_err e = {0};
    int rc = fd_scope_digest(s, &b, &e);
    jv_free(s);
    if (rc) { fd_buf_free(&b); return NULL; }
    return fd_buf_cstr(&b);
}

static int scope(void)
{
    int fails = 0;
    jv *s = fd_native_scope();
    CHECK_STR(jv_get_str(s, "scope_digest"), NATIVE_ROOT_SCOPE, "native scope_digest (tests/vectors/README.md)");
    fd_buf b = {0};
    fd_err e = {0};
    CHECK(fd_scope_digest(s, &b, &e) == 0, "fd_scope_digest of the native scope");
    CHECK_STR(fd_buf_cstr(&b), NATIVE_ROOT_SCOPE, "fd_scope_digest recomputes the native value");
    fd_buf_free(&b);
    const jv *as = jv_get(s, "assignments");
    CHECK(as && as->t == JV_ARR && as->u.a.n == 9, "native scope has nine classes");
    CHECK_STR(jv_get_str(s, "policy"), "native", "native scope policy");
    jv_free(s);

    struct { jv *bits; const char *want; } cases[] = {
        {jv_float(4.0), "moe.experts=rtn:int4@4|head=native|kv=bf16"},
        {jv_float(4.5), "moe.experts=rtn:int4@4.5|head=native|kv=bf16"},
        {jv_int(8), "moe.experts=rtn:int4@8|head=native|kv=bf16"},
        {jv_float(6.0), "moe.experts=rtn:int4@6|head=native|kv=bf16"},
        {jv_float(0.1), "moe.experts=rtn:int4@0.1|head=native|kv=bf16"},
        {jv_float(1e-05), "moe.experts=rtn:int4@1e-05|head=native|kv=bf16"},
        {jv_float(-0.0), "moe.experts=rtn:int4@0|head=native|kv=bf16"},
        /* str(int(1e20)) == "100000000000000000000" */
        {jv_float(1e20), "moe.experts=rtn:int4@100000000000000000000|head=native|kv=bf16"},
        {jv_null(), "moe.experts=rtn:int4|head=native|kv=bf16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *got = scope_digest_of(cases[i].bits);
        CHECK_STR(got, cases[i].want, "scope digest bits formatting");
        free(got);
    }
    /* segments sort by code point; head/kv appended last */
    jv *sc = jv_obj(), *as2 = jv_arr();
    jv_push(as2, assignment("norm", "native", "bf16", jv_int(16)));
    jv_push(as2, assignment("attn.o", "rtn", "int8", jv_float(8.0)));
    jv_push(as2, assignment("Z", "x", "y", jv_null()));
    jv_set(sc, "assignments", as2);
    jv_set(sc, "head_policy", jv_str("quantized"));
    jv_set(sc, "kv_cache_dtype", jv_str("fp8"));
    b = (fd_buf){0};
    CHECK(fd_scope_digest(sc, &b, &e) == 0, "fd_scope_digest of a mixed scope");
    CHECK_STR(fd_buf_cstr(&b), "Z=x:y|attn.o=rtn:int8@8|norm=native:bf16@16|head=quantized|kv=fp8", "mixed scope digest");
    fd_buf_free(&b);
    jv_free(sc);
    /* no assignments list */
    sc = jv_obj();
    CHECK(fd_scope_digest(sc, &b, &e) != 0, "scope without assignments refused");
    fd_buf_free(&b);
    jv_free(sc);
    return fails;
}

static int npy(void)
{
    int fails = 0;
    char dir[] = "/tmp/fd-unit-npy.XXXXXX";
    if (!mkdtemp(dir)) { CHECK(0, "mkdtemp"); return fails; }
    char *path = fd_path_join(dir, "zeros.npy");
    enum { N = 51175 };
    double *z = calloc(N, sizeof *z);
    fd_err e = {0};
    CHECK(fd_npy_write_f64(path, z, N, &e) == 0, "fd_npy_write_f64");
    fd_buf f = {0};
    CHECK(fd_read_file(path, 1 << 24, &f, &e) == 0, "read back the .npy");
    CHECKF(f.n == 409528, "zeros.npy is %zu bytes, want 409528", f.n);
    char hex[65] = "";
    fd_sha256_hex(f.p, f.n, hex);
    CHECK_STR(hex, "3ffddc61af8350782afd24c7a69de1f37c260bf5489c4e0f6e3ad89b0ab9be17", "np.save of 51,175 zeros");
    char descr[16] = "";
    uint64_t shape[4] = {0};
    int ndim = -1;
    size_t off = 0;
    CHECK(fd_npy_parse((const unsigned char *)f.p, f.n, descr, shape, &ndim, &off, &e) == 0, "fd_npy_parse");
    CHECK_STR(descr, "<f8", "parsed descr");
    CHECK(ndim == 1 && shape[0] == N, "parsed shape (51175,)");
    CHECK(off == 128 && off + (size_t)N * 8 == f.n, "data offset 128");
    /* header text as numpy writes it (sorted-key dict repr, growth padding) */
    const char *dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (51175,), }";
    CHECK(f.n > 128 && memcmp(f.p + 10, dict, strlen(dict)) == 0, "numpy dict header text");
    int pad_ok = f.n > 128 && f.p[127] == '\n' && (unsigned char)f.p[8] == 118 && f.p[9] == 0;
    for (size_t i = 10 + strlen(dict); pad_ok && i < 127; i++) pad_ok = f.p[i] == ' ';
    CHECK(pad_ok, "header padded with spaces to 128 bytes, newline last");
    /* 2-D and 0-D headers; each 128 bytes for these shapes */
    struct { const char *descr; uint64_t shape[2]; int nd; const char *dict; } hs[] = {
        {"<i8", {3, 4}, 2, "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 4), }"},
        {"<f8", {0, 0}, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"},
        {"<f8", {1234567890123ull, 0}, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1234567890123,), }"},
    };
    for (size_t i = 0; i < sizeof hs / sizeof *hs; i++) {
        fd_buf h = {0};
        fd_npy_header(&h, hs[i].descr, hs[i].shape, hs[i].nd);
        int ok = h.n == 128 && memcmp(h.p, "\x93NUMPY\x01\x00\x76\x00", 10) == 0 &&
                 memcmp(h.p + 10, hs[i].dict, strlen(hs[i].dict)) == 0 && h.p[127] == '\n';
        for (size_t k = 10 + strlen(hs[i].dict); ok && k < 127; k++) ok = h.p[k] == ' ';
        CHECKF(ok, "npy header for %s", hs[i].dict);
        ndim = -1;
        CHECK(fd_npy_parse((const unsigned char *)h.p, h.n, descr, shape, &ndim, &off, &e) == 0 &&
                  ndim == hs[i].nd && off == 128 && (hs[i].nd < 1 || shape[0] == hs[i].shape[0]) &&
                  (hs[i].nd < 2 || shape[1] == hs[i].shape[1]),
              "npy header parses back");
        fd_buf_free(&h);
    }
    /* refusals */
    CHECK(fd_npy_parse((const unsigned char *)f.p, 9, descr, shape, &ndim, &off, &e) != 0, "npy: 9 bytes refused");
    CHECK(fd_npy_parse((const unsigned char *)f.p, 100, descr, shape, &ndim, &off, &e) != 0,
          "npy: header past the end refused");
    CHECK(fd_npy_parse((const unsigned char *)"\x93NUMPZ\x01\x00\x00\x00", 10, descr, shape, &ndim, &off, &e) != 0,
          "npy: bad magic refused");
    CHECK(fd_npy_parse((const unsigned char *)"\x93NUMPY\x03\x00\x00\x00", 10, descr, shape, &ndim, &off, &e) != 0,
          "npy: version 3 refused");
    const char five[] = "\x93NUMPY\x01\x00\x40\x00{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1), }";
    CHECK(fd_npy_parse((const unsigned char *)five, 10 + 64, descr, shape, &ndim, &off, &e) != 0,
          "npy: 5-D shape refused");
    const char fort[] = "\x93NUMPY\x01\x00\x40\x00{'descr': '<f8', 'fortran_order': True, 'shape': (1,), }         ";
    CHECK(fd_npy_parse((const unsigned char *)fort, 10 + 64, descr, shape, &ndim, &off, &e) != 0,
          "npy: Fortran order refused");
    fd_buf_free(&f);
    free(z);
    unlink(path);
    free(path);
    fd_rmtree(dir);
    return fails;
}

int test_digest(void)
{
    return token_ids() + suite_hash() + content_digest() + scope() + npy();
}
