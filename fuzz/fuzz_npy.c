/* libFuzzer target for fd_npy_parse (tokenwise arrays, masks and token files
 * in .npy form).  Any input is a clean refusal, or a header whose claims are
 * in bounds: data offset inside the input, 1..4 dimensions, a terminated
 * descr; and the header fd_npy_header writes for the parsed descr and shape
 * parses back to the same descr and shape. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char descr[16];
    uint64_t shape[4] = {0};
    int ndim = -1;
    size_t off = 0;
    fd_err e = {0};
    if (fd_npy_parse(data, size, descr, shape, &ndim, &off, &e)) {
        if (!e.code[0]) { fprintf(stderr, "fuzz_npy: refusal without a code\n"); abort(); }
        return 0;
    }
    if (off > size || ndim < 0 || ndim > 4 || !memchr(descr, 0, sizeof descr)) {
        fprintf(stderr, "fuzz_npy: accepted header out of bounds (off %zu of %zu, ndim %d)\n", off, size, ndim);
        abort();
    }
    if (strlen(descr) > 8) return 0; /* fd_npy_header writes the short descrs the tool uses */
    fd_buf b = {0};
    fd_npy_header(&b, descr, shape, ndim);
    char d2[16];
    uint64_t s2[4] = {0};
    int n2 = -1;
    size_t o2 = 0;
    if (fd_npy_parse((const unsigned char *)b.p, b.n, d2, s2, &n2, &o2, &e) || strcmp(d2, descr) || n2 != ndim ||
        memcmp(s2, shape, (size_t)ndim * sizeof *shape)) {
        fprintf(stderr, "fuzz_npy: our header for descr '%s' ndim %d does not parse back\n", descr, ndim);
        abort();
    }
    fd_buf_free(&b);
    return 0;
}
