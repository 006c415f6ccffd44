/* libFuzzer target for src/tokenizer/: the first input byte picks a mode.
 * Mode 0: the rest is a tokenizer.json (seeds: the tiny test tokenizer and
 * variants) that must load or be refused, and if it loads, encode and
 * decode a fixed text without crashing.  Mode 1: the rest is text for the
 * tiny tokenizer built in (fixed JSON below): encode must refuse exactly
 * the invalid UTF-8, and for valid UTF-8 without added tokens or NFC-able
 * chars decode(encode(x)) must be x (abort() otherwise). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "format/json.h"
#include "tokenizer/tokenizer.h"
#include "util/fsio.h"

static const char TINY[] =
    "{\"added_tokens\":[{\"id\":258,\"content\":\"<s>\",\"special\":true},"
    "{\"id\":259,\"content\":\"<m>\",\"special\":true,\"lstrip\":true,\"rstrip\":true}],"
    "\"normalizer\":null,"
    "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":"
    "\"(?i:'s|'t)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"},"
    "\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]},"
    "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\"},"
    "\"model\":{\"type\":\"BPE\",\"vocab\":{},\"merges\":[]}}";

static fd_tokenizer *load_from(const uint8_t *p, size_t n)
{
    char path[] = "/tmp/fuzz-tok-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) abort();
    if (n && write(fd, p, n) != (ssize_t)n) abort();
    close(fd);
    fd_err e = {0};
    fd_tokenizer *t = fd_tok_load(path, &e);
    unlink(path);
    return t;
}

/* the tiny tokenizer: all 256 byte chars (ids 0..255), "a b", "ab c" merges; the
 * added tokens take 258 and 259, the ids HF gives them (the next free ones) */
static fd_tokenizer *tiny(void)
{
    fd_err e = {0};
    jv *doc = jv_parse(TINY, sizeof TINY - 1, &e);
    if (!doc) { fprintf(stderr, "fuzz_tokenizer: base JSON: %s\n", e.msg); abort(); }
    jv *model = jv_get(doc, "model"), *vocab = jv_get(model, "vocab"), *merges = jv_get(model, "merges");
    int64_t id = 0;
    for (unsigned b = 0; b < 256; b++) {
        unsigned cp = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE) ? b : 0;
        if (!cp) { unsigned k = 0; for (unsigned x = 0; x < b; x++) k += !((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE); cp = 256 + k; }
        char u[3] = {0};
        if (cp < 0x80) u[0] = (char)cp; else { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); }
        jv_set(vocab, u, jv_int(id++));
    }
    jv_set(vocab, "ab", jv_int(id++));
    jv_set(vocab, "abc", jv_int(id++));
    jv_push(merges, jv_str("a b"));
    jv_push(merges, jv_str("ab c"));
    fd_buf b = {0};
    if (jv_dump(doc, &JV_CANON, &b, &e)) abort();
    jv_free(doc);
    fd_tokenizer *t = load_from((const uint8_t *)b.p, b.n);
    fd_buf_free(&b);
    if (!t) abort();
    return t;
}

static int valid_utf8(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        int k = p[i] < 0x80 ? 1 : fd_utf8_len(p + i, p + n);
        if (!k) return 0;
        i += (size_t)k;
    }
    return 1;
}

static void text_mode(const uint8_t *p, size_t n)
{
    static fd_tokenizer *t;
    if (!t) t = tiny();
    int32_t *ids;
    size_t nid;
    fd_err e = {0};
    int rc = fd_tok_encode(t, (const char *)p, n, 1, &ids, &nid, &e);
    int valid = valid_utf8(p, n);
    if (rc != (valid ? 0 : -1)) { fprintf(stderr, "encode rc %d for valid=%d: %s\n", rc, valid, e.msg); abort(); }
    if (rc) return;
    char *text;
    size_t len;
    if (fd_tok_decode(t, ids, nid, 1, &text, &len, &e)) abort();
    /* added tokens strip spaces (<m>) or vanish (<s>, skipped): only then is the round trip not an identity */
    if (!memmem(p, n, "<s>", 3) && !memmem(p, n, "<m>", 3) && (len != n || memcmp(text, p, n))) {
        fprintf(stderr, "round trip differs: %zu bytes in, %zu out\n  in:  %.*s\n  out: %.*s\n  ids:", n, len, (int)n, (const char *)p, (int)len, text);
        for (size_t i = 0; i < nid; i++) fprintf(stderr, " %d", ids[i]);
        fputc('\n', stderr);
        abort();
    }
    free(text);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    if (data[0] & 1) { text_mode(data + 1, size - 1); return 0; }
    fd_tokenizer *t = load_from(data + 1, size - 1);
    if (!t) return 0;
    static const char probe[] = "Hello world 12345 <s> 中文 😀  \n\t x's";
    int32_t *ids;
    size_t n;
    fd_err e = {0};
    if (!fd_tok_encode(t, probe, sizeof probe - 1, 1, &ids, &n, &e)) {
        char *text;
        size_t len;
        if (!fd_tok_decode(t, ids, n, 0, &text, &len, &e)) free(text);
        free(ids);
    }
    (void)fd_tok_vocab_size(t);
    fd_tok_free(t);
    return 0;
}
