/* Unit tests for src/format/safetensors.c: the writer's header is
 * byte-identical to json.dumps(h, separators=(",",":"), sort_keys=True)
 * (ensure_ascii default True), and every hostile header is a clean
 * bad_tensor_file refusal (run under ASan: never a crash or overread).
 * Expected header and digests computed with CPython json/struct/hashlib. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "format/safetensors.h"
#include "util/fsio.h"

#define EXPECTED_HEADER                                                                            \
    "{\"__metadata__\":{\"format\":\"pt\",\"note\":\"\\u00e9\\ud83d\\ude00\"},"                      \
    "\"w.weight\":{\"data_offsets\":[0,24],\"dtype\":\"F32\",\"shape\":[2,3]}}"

static int writer(const char *dir)
{
    int fails = 0;
    char *path = fd_path_join(dir, "w.safetensors");
    fd_err e = {0};
    fd_st_writer w;
    jv *meta = jv_obj();
    jv_set(meta, "format", jv_str("pt"));
    jv_set(meta, "note", jv_str("\xc3\xa9\xf0\x9f\x98\x80"));
    const uint64_t shape[2] = {2, 3};
    CHECK(fd_st_writer_begin(&w, path, "w.weight", "F32", shape, 2, meta, &e) == 0, "writer_begin");
    float v[6] = {0, 1, 2, 3, 4, 5};
    CHECK(fd_st_writer_put(&w, v, 8, &e) == 0, "writer_put part 1");
    CHECK(fd_st_writer_put(&w, (const char *)v + 8, 16, &e) == 0, "writer_put part 2");
    CHECK(fd_st_writer_put(&w, v, 1, &e) != 0, "writer_put past the shape refused");
    char content[65] = "", file[65] = "";
    CHECK(fd_st_writer_finish(&w, content, file, &e) == 0, "writer_finish");
    CHECK_STR(content, "e2c0a71510b5394df7773b63fb5f54372b84c3564e67811bde7d665be227976d", "tensor content sha256");
    CHECK_STR(file, "4d9cc50bf4efdbf8281b7f25ecd69f413757b186f4cfaf31b2eaaa3ed1200541", "file sha256");

    fd_buf raw = {0};
    CHECK(fd_read_file(path, 1 << 20, &raw, &e) == 0, "read the written file");
    size_t hl = strlen(EXPECTED_HEADER);
    CHECKF(raw.n == 8 + hl + 24, "file is %zu bytes, want %zu", raw.n, 8 + hl + 24);
    if (raw.n >= 8 + hl) {
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--) n = n << 8 | (unsigned char)raw.p[i];
        CHECKF(n == hl, "header length %llu, want %zu", (unsigned long long)n, hl);
        CHECKF(!memcmp(raw.p + 8, EXPECTED_HEADER, hl), "header bytes differ from Python's:\n  got  %.*s\n  want %s",
               (int)hl, raw.p + 8, EXPECTED_HEADER);
    }
    fd_buf_free(&raw);

    fd_st_file f;
    CHECKF(fd_st_open(path, &f, &e) == 0, "fd_st_open of the written file: %s", e.msg);
    if (f.header) {
        CHECK(f.header_len == hl && f.file_size == 8 + hl + 24, "open: sizes");
        CHECK(f.n == 1, "open: one tensor");
        const fd_st_tensor *t = fd_st_find(&f, "w.weight");
        CHECK(t && !strcmp(t->dtype, "F32") && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 &&
                  t->start == 0 && t->end == 24,
              "open: tensor entry");
        CHECK(fd_st_find(&f, "__metadata__") == NULL && fd_st_find(&f, "x") == NULL, "find of a non-tensor");
        CHECK(f.metadata && !strcmp(jv_get_str(f.metadata, "format"), "pt"), "open: __metadata__");
        fd_st_close(&f);
    }
    /* short write: finish refuses and leaves nothing behind */
    char *p2 = fd_path_join(dir, "short.safetensors");
    CHECK(fd_st_writer_begin(&w, p2, "x", "BF16", shape, 2, NULL, &e) == 0, "writer_begin 2");
    CHECK(fd_st_writer_put(&w, v, 4, &e) == 0, "writer_put 2");
    CHECK(fd_st_writer_finish(&w, content, file, &e) != 0, "finish after a short write refused");
    CHECK(!fd_is_file(p2), "a refused write leaves no file");
    free(p2);
    CHECK(fd_st_writer_begin(&w, path, "x", "F128", shape, 2, NULL, &e) != 0, "writer_begin with an unknown dtype");
    jv_free(meta);
    free(path);
    return fails;
}

/* fd_st_parse_header on an exact-size heap copy; want_ok or a bad_tensor_file refusal. */
static int hdr_case(const char *h, uint64_t data_size, int want_ok, int line)
{
    int fails = 0;
    size_t n = strlen(h);
    char *copy = malloc(n ? n : 1);
    memcpy(copy, h, n);
    fd_st_file f;
    fd_err e = {0};
    int rc = fd_st_parse_header(copy, n, data_size, &f, &e);
    if (want_ok) CHECKF(rc == 0, "line %d: header refused: %s", line, e.msg);
    else CHECKF(rc != 0 && !strcmp(e.code, "bad_tensor_file"), "line %d: header %s (code '%s'), want bad_tensor_file",
                line, rc ? "refused" : "accepted", e.code);
    if (!rc) fd_st_close(&f);
    CHECKF(f.header == NULL && f.t == NULL, "line %d: the file struct is left empty", line);
    free(copy);
    return fails;
}
#define HDR_OK(h, size) (fails += hdr_case((h), (size), 1, __LINE__))
#define HDR_BAD(h, size) (fails += hdr_case((h), (size), 0, __LINE__))
#define T(name, dtype, shape, s, e) "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #s "," #e "]}"

static int headers(void)
{
    int fails = 0;
    HDR_OK("{" T("a", "F32", "[1]", 0, 4) "}", 4);
    HDR_OK("{}", 0);
    HDR_OK("{" T("a", "F32", "[1]", 0, 4) "}        ", 4);                 /* space padding */
    HDR_OK("{" T("a", "F32", "[1]", 4, 8) "," T("b", "BF16", "[2]", 0, 4) "}", 8); /* offset order != name order */
    HDR_OK("{" T("a", "F32", "[]", 0, 4) "}", 4);                          /* scalar */
    HDR_OK("{" T("a", "F32", "[0,5]", 0, 0) "}", 0);                       /* empty tensor */
    HDR_OK("{\"__metadata__\":{\"k\":\"v\"}," T("a", "U8", "[3]", 0, 3) "}", 3);
    HDR_OK("{\"__metadata__\":{}}", 0);
    /* a zero-size tensor sharing its offset with the next one; the
     * safetensors library sorts by (start, end) and accepts this (it is what
     * save_file writes for an empty F64 "z" beside an F32 "a"). */
    HDR_OK("{" T("a", "F32", "[1]", 0, 4) "," T("z", "F64", "[0]", 0, 0) "}", 4);
    HDR_OK("{" T("a", "F64", "[0]", 0, 0) "," T("z", "F32", "[1]", 0, 4) "}", 4);

    /* not a header */
    HDR_BAD("{", 0);
    HDR_BAD("", 0);
    HDR_BAD("[]", 0);
    HDR_BAD("\"x\"", 0);
    HDR_BAD("1", 0);
    HDR_BAD("null", 0);
    HDR_BAD("{\"a\":1}", 0);
    HDR_BAD("{\"a\":{}}", 0);
    HDR_BAD("{" T("a", "F32", "[1]", 0, 4) "} x", 4);
    /* dtype */
    HDR_BAD("{" T("a", "F128", "[1]", 0, 16) "}", 16);
    HDR_BAD("{" T("a", "f32", "[1]", 0, 4) "}", 4);
    HDR_BAD("{\"a\":{\"dtype\":1,\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    HDR_BAD("{\"a\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    /* dtype/shape lies */
    HDR_BAD("{" T("a", "F32", "[2]", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "BF16", "[2,3]", 0, 24) "}", 24);
    HDR_BAD("{" T("a", "F32", "[1]", 0, 3) "}", 3);
    /* shapes */
    HDR_BAD("{" T("a", "F32", "[-1]", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "F32", "[1.0]", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "F32", "[\"1\"]", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "F32", "[true]", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "F32", "1", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "F32", "null", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "F32", "[123456789012345678901234567890]", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "F32", "[4294967296,4294967296,4294967296]", 0, 4) "}", 4);
    HDR_BAD("{" T("a", "F64", "[9223372036854775807,9223372036854775807]", 0, 8) "}", 8);
    HDR_BAD("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4);
    /* offsets */
    HDR_BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4);
    HDR_BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4);
    HDR_BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4);
    HDR_BAD("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", 4);
    HDR_BAD("{" T("a", "F32", "[1]", -4, 0) "}", 4);
    HDR_BAD("{" T("a", "F32", "[1]", 4, 0) "}", 4);
    HDR_BAD("{" T("a", "F32", "[1]", 0.0, 4) "}", 4);
    HDR_BAD("{" T("a", "F32", "[1]", 0, 18446744073709551620) "}", 4);
    HDR_BAD("{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 2, 6) "}", 6);   /* overlap */
    HDR_BAD("{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 0, 4) "}", 4);   /* same range */
    HDR_BAD("{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 8, 12) "}", 12); /* gap */
    HDR_BAD("{" T("a", "F32", "[1]", 4, 8) "}", 8);                                  /* leading gap */
    HDR_BAD("{" T("a", "F32", "[1]", 0, 4) "}", 8);                                  /* trailing bytes */
    HDR_BAD("{" T("a", "F32", "[1]", 0, 4) "}", 2);                                  /* data too short */
    HDR_BAD("{}", 1);
    /* __metadata__ */
    HDR_BAD("{\"__metadata__\":{\"k\":1}}", 0);
    HDR_BAD("{\"__metadata__\":{\"k\":null}}", 0);
    HDR_BAD("{\"__metadata__\":{\"k\":{\"x\":\"y\"}}}", 0);
    HDR_BAD("{\"__metadata__\":\"x\"}", 0);
    HDR_BAD("{\"__metadata__\":[]}", 0);
    /* JSON-level refusals inside a header */
    HDR_BAD("{\"\\ud800\":{}}", 0);
    HDR_BAD("{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 4, 8), 8);
    return fails;
}

/* Writes raw bytes to dir/name and runs fd_st_open; want the given code. */
static int open_case(const char *dir, const char *name, const void *p, size_t n, const char *want, int line)
{
    int fails = 0;
    char *path = fd_path_join(dir, name);
    FILE *fp = fopen(path, "wb");
    if (fp) {
        fwrite(p, 1, n, fp);
        fclose(fp);
    }
    fd_st_file f;
    fd_err e = {0};
    int rc = fd_st_open(path, &f, &e);
    if (!want) CHECKF(rc == 0, "line %d: open of %s failed: %s", line, name, e.msg);
    else CHECKF(rc != 0 && !strcmp(e.code, want), "line %d: open of %s %s (code '%s'), want %s", line, name,
                rc ? "failed" : "passed", e.code, want);
    if (!rc) fd_st_close(&f);
    unlink(path);
    free(path);
    return fails;
}

/* An 8-byte little-endian length, then the header, then data_len zero bytes. */
static size_t build(unsigned char *out, uint64_t len_field, const char *hdr, size_t data_len)
{
    size_t hl = strlen(hdr);
    for (int i = 0; i < 8; i++) out[i] = (unsigned char)(len_field >> (8 * i));
    memcpy(out + 8, hdr, hl);
    memset(out + 8 + hl, 0, data_len);
    return 8 + hl + data_len;
}

static int files(const char *dir)
{
    int fails = 0;
    unsigned char buf[512];
    const char *h = "{" T("a", "F32", "[2]", 0, 8) "}";
    size_t hl = strlen(h), n;
    n = build(buf, hl, h, 8);
    fails += open_case(dir, "ok.safetensors", buf, n, NULL, __LINE__);
    fails += open_case(dir, "empty", "", 0, "bad_tensor_file", __LINE__);
    fails += open_case(dir, "three", "\x05\x00\x00", 3, "bad_tensor_file", __LINE__);
    fails += open_case(dir, "seven", buf, 7, "bad_tensor_file", __LINE__);
    n = build(buf, 0, "", 0);
    fails += open_case(dir, "zero-header", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, 1, "{", 0);
    fails += open_case(dir, "one-byte-header", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, 1000, h, 8);
    fails += open_case(dir, "len-past-eof", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, hl + 9, h, 8);
    fails += open_case(dir, "len-one-past-eof", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, (uint64_t)1 << 63, h, 8);
    fails += open_case(dir, "len-2^63", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, UINT64_MAX, h, 8);
    fails += open_case(dir, "len-2^64-1", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, (uint64_t)FD_ST_MAX_HEADER + 1, h, 8);
    fails += open_case(dir, "len-over-cap", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, hl, h, 4);
    fails += open_case(dir, "truncated-data", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, hl, h, 12);
    fails += open_case(dir, "extra-data", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, hl - 1, h, 0);
    fails += open_case(dir, "truncated-header", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, hl + 8, h, 8); /* the header "eats" the data: trailing NULs in the JSON */
    fails += open_case(dir, "len-covers-data", buf, n, "bad_tensor_file", __LINE__);
    n = build(buf, 2, "[]", 0);
    fails += open_case(dir, "array-header", buf, n, "bad_tensor_file", __LINE__);

    fd_st_file f;
    fd_err e = {0};
    CHECK(fd_st_open("/nonexistent/fd-unit.safetensors", &f, &e) != 0 && !strcmp(e.code, "missing_file"),
          "open of a missing file: missing_file");
    memset(&e, 0, sizeof e);
    CHECK(fd_st_open(dir, &f, &e) != 0 && !strcmp(e.code, "unreadable"), "open of a directory: unreadable");
    CHECK(fd_st_dtype_size("BF16") == 2 && fd_st_dtype_size("F64") == 8 && fd_st_dtype_size("BOOL") == 1 &&
              fd_st_dtype_size("bf16") == 0 && fd_st_dtype_size("") == 0,
          "dtype sizes");
    return fails;
}

int test_safetensors(void)
{
    char dir[] = "/tmp/fd-unit-st.XXXXXX";
    if (!mkdtemp(dir)) {
        printf("FAIL: %s:%d mkdtemp\n", __FILE__, __LINE__);
        return 1;
    }
    int fails = writer(dir) + headers() + files(dir);
    fd_rmtree(dir);
    return fails;
}
