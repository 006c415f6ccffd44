/* libFuzzer target for the llama.cpp .kld reader (fd_kld_check_buffer) and
 * writer (fd_kld_encode_row).  An accepted file must decode to finite
 * log-probs and must be refused once truncated by one byte; any finite
 * input row encodes to codes whose decoded values sit within one step of
 * the exact log-softmax above the floor. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "adapt/kld.h"

static void check_reader(const uint8_t *data, size_t size)
{
    fd_kld_info k;
    fd_err e = {0};
    int window;
    if (fd_kld_check_buffer(data, size, 0, &k, &window, &e)) return;
    if (window != 16 && window != 24) abort();
    uint16_t *row = malloc((size_t)k.nv * 2);
    float *lp = malloc((size_t)k.n_vocab * 4);
    for (int64_t r = 0; r < k.n_chunk * k.rows; r++) {
        memcpy(row, data + k.body + (uint64_t)r * (uint64_t)k.nv * 2, (size_t)k.nv * 2);
        fd_kld_decode_row(&k, row, lp);
        for (int64_t i = 0; i < k.n_vocab; i++)
            if (!isfinite(lp[i])) { fprintf(stderr, "fuzz_kld: accepted row decodes to a non-finite value\n"); abort(); }
    }
    free(row);
    free(lp);
    fd_kld_info k2;
    /* (a "_logits_v2" file read consistently as v1 is refused as the fork's once short) */
    int v2 = size >= 10 && !memcmp(data, "_logits_v2", 10);
    if (!fd_kld_header(data, size, size - 1, 0, &k2, &e) ||
        (strcmp(e.code, "kld_truncated") && !(v2 && !strcmp(e.code, "kld_v2_unsupported")))) {
        fprintf(stderr, "fuzz_kld: a file one byte short was not refused as kld_truncated\n");
        abort();
    }
}

static void check_writer(const uint8_t *data, size_t size)
{
    int64_t n = (int64_t)(size / 4);
    if (n < 1 || n > 4096) return;
    float *x = malloc((size_t)n * 4);
    memcpy(x, data, (size_t)n * 4);
    uint16_t *row = calloc((size_t)(2 * ((n + 1) / 2) + 4), 2);
    fd_err e = {0};
    int finite = 1;
    for (int64_t i = 0; i < n; i++) finite &= isfinite(x[i]) && fabsf(x[i]) < 1e30f;
    if (!fd_kld_encode_row(n, x, data[0] & 1 ? 24 : 16, row, &e) && finite) {
        fd_kld_info k = {.n_vocab = n, .nv = 2 * ((n + 1) / 2) + 4};
        float *lp = malloc((size_t)n * 4), scale, minlp;
        memcpy(&scale, row, 4);
        memcpy(&minlp, row + 2, 4);
        fd_kld_decode_row(&k, row, lp);
        double m = x[0], s = 0;
        for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
        for (int64_t i = 0; i < n; i++) s += exp((double)x[i] - m);
        for (int64_t i = 0; i < n && isfinite(scale) && scale > 0 && scale * 65535.0 < 25; i++) {
            double want = (double)x[i] - m - log(s);
            if (want > (double)minlp + 2 * scale && fabs((double)lp[i] - want) > 0.51 * scale + 1e-5 * (1 + fabs(m)))
                { fprintf(stderr, "fuzz_kld: decoded %g, exact %g, step %g\n", (double)lp[i], want, (double)scale); abort(); }
        }
        if (n & 1 && row[4 + n]) abort();
        free(lp);
    }
    free(x);
    free(row);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_reader(data, size);
    check_writer(data, size);
    return 0;
}
