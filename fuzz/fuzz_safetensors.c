/* libFuzzer target for fd_st_parse_header: the first 8 input bytes give the
 * data region size (u64 LE), the rest is the header.  Any input must be a
 * clean refusal or a header whose tensors tile the data region exactly. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 8) return 0;
    uint64_t data_size = 0;
    for (int i = 7; i >= 0; i--) data_size = data_size << 8 | data[i];
    fd_st_file f;
    fd_err e = {0};
    if (fd_st_parse_header((const char *)data + 8, size - 8, data_size, &f, &e)) {
        if (strcmp(e.code, "bad_tensor_file") || f.header || f.t) {
            fprintf(stderr, "fuzz_safetensors: refusal with code '%s' or a non-empty result\n", e.code);
            abort();
        }
        return 0;
    }
    uint64_t at = 0;
    for (size_t i = 0; i < f.n; i++) {
        const fd_st_tensor *t = &f.t[i];
        int esz = fd_st_dtype_size(t->dtype);
        unsigned __int128 elems = 1;
        for (int k = 0; k < t->ndim; k++) elems *= t->shape[k];
        if (!esz || t->start != at || t->end < t->start || elems * (unsigned)esz != t->end - t->start ||
            fd_st_find(&f, t->name) == NULL) {
            fprintf(stderr, "fuzz_safetensors: accepted header violates its own invariants (tensor %zu)\n", i);
            abort();
        }
        at = t->end;
    }
    if (at != data_size) {
        fprintf(stderr, "fuzz_safetensors: accepted tensors cover %llu of %llu bytes\n", (unsigned long long)at,
                (unsigned long long)data_size);
        abort();
    }
    fd_st_close(&f);
    return 0;
}
