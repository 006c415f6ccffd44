/* libFuzzer target for fd_gguf_parse (the GGUF header reader): the input is
 * a whole file.  Any input is a clean refusal (bad_gguf or
 * gguf_unknown_type, nothing left allocated), or a header whose claims hold:
 * every tensor's bytes lie inside the input after the aligned data offset,
 * aligned, without overlap, nbytes = rows x row bytes of its type; every
 * metadata string and array lies inside the input.  The first row of each
 * decodable tensor (up to 4096 elements) is dequantized, so the decoders
 * read only the bytes the header granted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/ggml_quants.h"
#include "format/gguf.h"

#define CHECK(c, what) do { if (!(c)) { fprintf(stderr, "fuzz_gguf: %s\n", what); abort(); } } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fd_gguf_file f;
    fd_err e = {0};
    if (fd_gguf_parse(data, size, &f, &e)) {
        CHECK(!strcmp(e.code, "bad_gguf") || !strcmp(e.code, "gguf_unknown_type"), "refusal with another code");
        CHECK(!f.kv && !f.t && !f.nkv && !f.nt, "a refusal left a result");
        return 0;
    }
    const uint8_t *end = data + size;
    for (size_t i = 0; i < f.nkv; i++) {
        const fd_gguf_kv *kv = &f.kv[i];
        CHECK(kv->key && kv->key[0], "empty key");
        CHECK(fd_gguf_get(&f, kv->key) == kv, "a key that does not find itself (duplicate)");
        if (kv->type == FD_GGUF_STRING) CHECK(kv->str >= data && kv->len <= (uint64_t)(end - kv->str), "string out of bounds");
        if (kv->type == FD_GGUF_ARRAY) {
            CHECK(kv->adata >= data && kv->abytes <= (uint64_t)(end - kv->adata), "array out of bounds");
            if (kv->atype == FD_GGUF_STRING && kv->alen) {
                const uint8_t *s;
                uint64_t len;
                CHECK(!fd_gguf_arr_str(kv, kv->alen - 1, &s, &len), "last string of an array unreachable");
                CHECK(s >= kv->adata && len <= (uint64_t)(kv->adata + kv->abytes - s), "array string out of bounds");
            }
        }
    }
    CHECK(f.alignment && !(f.alignment & (f.alignment - 1)), "alignment not a power of two");
    float *row = malloc(4096 * sizeof *row);
    for (size_t i = 0; i < f.nt; i++) {
        const fd_gguf_tensor *t = &f.t[i];
        const fd_ggml_type *gt = fd_ggml_type_of(t->type);
        uint64_t rb = 0;
        CHECK(gt && !fd_ggml_row_bytes(gt, t->ne[0], &rb), "accepted type or row length");
        CHECK(t->ne[0] == 0 || rb * (t->nelem / t->ne[0]) == t->nbytes, "nbytes is not rows x row bytes");
        CHECK(t->offset % f.alignment == 0 && f.data_off % f.alignment == 0, "misaligned data");
        CHECK(t->data == data + f.data_off + t->offset && t->nbytes <= (uint64_t)(end - t->data), "tensor out of bounds");
        for (size_t k = 0; k < f.nt; k++)
            if (k != i && f.t[k].nbytes && t->nbytes)
                CHECK(f.t[k].offset + f.t[k].nbytes <= t->offset || t->offset + t->nbytes <= f.t[k].offset,
                      "overlapping tensors");
        if (gt->decodes && t->ne[0] && t->ne[0] <= 4096 && t->nelem)
            CHECK(!fd_ggml_dequant_row_f32(t->type, t->data, t->ne[0], row, &e), "a decodable row refused");
    }
    free(row);
    fd_gguf_close(&f);
    return 0;
}
