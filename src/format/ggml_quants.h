/* ggml tensor types (GGUF): sizes, names and row-wise dequantization to
 * float32, each element bit-identical to the reference decoder (the `gguf`
 * Python package's gguf.quants.dequantize), then to bf16 by round to
 * nearest even with NaN kept quiet (util/bf16.h).  Scalar C, no allocation:
 * a caller decodes one row of a mapped tensor at a time
 * (docs/QUANT-FORMATS.md, "GGUF"). */
#ifndef FD_GGML_QUANTS_H
#define FD_GGML_QUANTS_H
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

enum {
    FD_GGML_F32 = 0, FD_GGML_F16 = 1, FD_GGML_Q4_0 = 2, FD_GGML_Q4_1 = 3, FD_GGML_Q5_0 = 6, FD_GGML_Q5_1 = 7,
    FD_GGML_Q8_0 = 8, FD_GGML_Q8_1 = 9, FD_GGML_Q2_K = 10, FD_GGML_Q3_K = 11, FD_GGML_Q4_K = 12,
    FD_GGML_Q5_K = 13, FD_GGML_Q6_K = 14, FD_GGML_Q8_K = 15, FD_GGML_IQ2_XXS = 16, FD_GGML_IQ2_XS = 17,
    FD_GGML_IQ3_XXS = 18, FD_GGML_IQ1_S = 19, FD_GGML_IQ4_NL = 20, FD_GGML_IQ3_S = 21, FD_GGML_IQ2_S = 22,
    FD_GGML_IQ4_XS = 23, FD_GGML_I8 = 24, FD_GGML_I16 = 25, FD_GGML_I32 = 26, FD_GGML_I64 = 27,
    FD_GGML_F64 = 28, FD_GGML_IQ1_M = 29, FD_GGML_BF16 = 30, FD_GGML_TQ1_0 = 34, FD_GGML_TQ2_0 = 35,
    FD_GGML_MXFP4 = 39, FD_GGML_NVFP4 = 40, FD_GGML_Q1_0 = 41,
};

typedef struct fd_ggml_type {
    uint32_t id;
    const char *name;   /* ggml's name, e.g. "Q4_K" */
    uint32_t blck;      /* elements per block */
    uint32_t tsize;     /* bytes per block */
    int decodes;        /* 1: fd_ggml_dequant_row handles it */
    int quantized;      /* 0 for F32/F16/BF16/F64 and the integer types */
} fd_ggml_type;

/* NULL for an id ggml does not define (or retired: 4, 5, 31-33, 36-38). */
const fd_ggml_type *fd_ggml_type_of(uint32_t id);
const fd_ggml_type *fd_ggml_type_named(const char *name); /* case-insensitive */
/* Bytes of a row of n elements; -1 when n is not a whole number of blocks. */
int fd_ggml_row_bytes(const fd_ggml_type *t, uint64_t n, uint64_t *bytes);

/* One row of n elements (a whole number of blocks) of type id at src
 * (row_bytes long, any alignment) into dst.  Refusals: gguf_unknown_type,
 * gguf_unsupported_type (a type with no reference decoder: Q8_1, Q8_K,
 * Q1_0, the integer types, F64), bad_gguf (n not a multiple of the block). */
int fd_ggml_dequant_row_f32(uint32_t id, const void *src, uint64_t n, float *dst, fd_err *e);
int fd_ggml_dequant_row_bf16(uint32_t id, const void *src, uint64_t n, uint16_t *dst, fd_err *e);

#endif
