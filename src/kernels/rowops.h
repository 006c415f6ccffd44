/* Element-wise row operations of the engine (the Linear epilogue, the
 * attention score scaling, the indexer's head sum), 16 lanes at a time where
 * AVX-512 is there (8 or 4 with NEON on aarch64: rowops_neon.c), each lane
 * the exact operation sequence of the portable loop.  bf16 rounding is util/bf16.h's fd_f32_to_bf16: round to nearest
 * even on the bit pattern, NaN kept quiet; subnormals are rounded like any
 * other value (no flush), as torch's c10 conversion. */
#ifndef FD_KERNELS_ROWOPS_H
#define FD_KERNELS_ROWOPS_H
#include <stddef.h>
#include <stdint.h>

/* out[i] = bf16(x[i] + bias[i]) (one fp32 add), or bf16(x[i]) when bias is NULL. */
void fd_round_bf16(const float *x, const float *bias, size_t n, uint16_t *out);
/* The portable loop, for tests. */
void fd_round_bf16_scalar(const float *x, const float *bias, size_t n, uint16_t *out);

/* x[i] = bf16(x[i] + y[i]) on bf16 values (the residual add). */
void fd_bf16_add(uint16_t *x, const uint16_t *y, size_t n);
void fd_bf16_add_scalar(uint16_t *x, const uint16_t *y, size_t n);

/* acc[i] += float(y[i]) * r: a rounded product, then a rounded add (no FMA). */
void fd_bf16_axpy(float *acc, const uint16_t *y, float r, size_t n);
void fd_bf16_axpy_scalar(float *acc, const uint16_t *y, float r, size_t n);

/* RMSNorm's element-wise steps: t[i] = x[i]^2; y[i] = bf16(x[i] * s);
 * y[i] = bf16(w[i] * y[i]) (x, y bf16; one fp32 multiply each). */
void fd_bf16_square(const uint16_t *x, size_t n, float *t);
void fd_bf16_scale_round(const uint16_t *x, float s, size_t n, uint16_t *y);
void fd_bf16_weight_round(const float *w, size_t n, uint16_t *y);

/* x[i] = bf16(bf16(x[i]) * s), kept as fp32 (a bf16 tensor times a scalar). */
void fd_bf16_rescale(float *x, size_t n, float s);
void fd_bf16_rescale_scalar(float *x, size_t n, float s);

/* acc[i] = fmaf(w, relu(d * row[i]), acc[i]) with relu(v) = v > 0 ? v : +0. */
void fd_relu_fma_acc(float *acc, const float *row, float d, float w, size_t n);
void fd_relu_fma_acc_scalar(float *acc, const float *row, float d, float w, size_t n);

/* The weight packing transpose: dst[k*16 + c] = 32-bit little-endian word
 * k of rows[c] (any alignment), for k < words and c < 16. */
void fd_transpose16_words(const unsigned char *const *rows, size_t words, uint32_t *dst);

#endif
