/* fp32 -> bf16 rounding of whole rows (the engine's Linear epilogue and
 * element-wise ops), bit-identical to util/bf16.h's fd_f32_to_bf16 on every
 * path: round to nearest even on the bit pattern, NaN kept quiet; subnormals
 * are rounded like any other value (no flush), as torch's c10 conversion. */
#ifndef FD_KERNELS_ROUND_H
#define FD_KERNELS_ROUND_H
#include <stddef.h>
#include <stdint.h>

/* out[i] = bf16(x[i] + bias[i]) (one fp32 add), or bf16(x[i]) when bias is NULL. */
void fd_round_bf16(const float *x, const float *bias, size_t n, uint16_t *out);
/* The portable loop, for tests. */
void fd_round_bf16_scalar(const float *x, const float *bias, size_t n, uint16_t *out);

#endif
