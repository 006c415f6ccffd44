/* libFuzzer target for the kimi-k3 artifact metadata parser (fd_k3_parse):
 * input = suite-manifest.json, a NUL byte, the tensor directory's
 * manifest.json (first byte odd: the live-logit form).  An accepted pair
 * must index contexts 0..n-1 each with a safe relative token_file and file,
 * 64-hex digests, and parse the same way twice. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "adapt/k3.h"
#include "format/sha.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    int logit = data[0] & 1;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    const char *nul = memchr(p, 0, n);
    if (!nul) return 0;
    fd_err e = {0};
    jv *suite = jv_parse(p, (size_t)(nul - p), &e);
    jv *tensors = suite ? jv_parse(nul + 1, n - (size_t)(nul - p) - 1, &e) : NULL;
    fd_k3 k, k2;
    if (suite && tensors && !fd_k3_parse(suite, tensors, logit, &k, &e)) {
        if (!k.n || !fd_is_hex64(k.suite_hash) || k.context_length < 2 || k.declared < (int64_t)k.n) abort();
        for (size_t i = 0; i < k.n; i++) {
            const fd_k3_ctx *c = &k.ctx[i];
            if (c->index != (int64_t)i || !fd_k3_relpath_ok(c->token_file) || !fd_k3_relpath_ok(c->file) ||
                !fd_is_hex64(c->token_sha) || (c->file_sha && !fd_is_hex64(c->file_sha))) {
                fprintf(stderr, "fuzz_k3: an accepted context %zu breaks an invariant\n", i);
                abort();
            }
        }
        if (fd_k3_parse(suite, tensors, logit, &k2, &e) || k2.n != k.n) abort();
        for (size_t i = 0; i < k.n; i++)
            if (strcmp(k.ctx[i].token_sha, k2.ctx[i].token_sha) || strcmp(k.ctx[i].file, k2.ctx[i].file)) abort();
        fd_k3_free(&k2);
        fd_k3_free(&k);
    }
    jv_free(suite);
    jv_free(tensors);
    return 0;
}
