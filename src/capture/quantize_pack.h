/* The arithmetic of `fidelity quantize --format compressed-tensors|gptq|mlx`
 * (capture/quantize_fmt.c writes the files; docs/QUANT-FORMATS.md
 * "Writers"): round-to-nearest 4-bit encodings of an fp32 matrix x [N, K]
 * (row-major, every value finite) in the layouts the readers decode
 * (engine/qformat.h).  K % group == 0 is the caller's check; GPTQ also
 * needs N % 8 == 0 and K % 8 == 0.  No calibration: each group's scale
 * comes from its own values only, so the bytes depend on nothing else. */
#ifndef FD_QUANTIZE_PACK_H
#define FD_QUANTIZE_PACK_H
#include <stdint.h>

/* compressed-tensors pack-quantized int4, symmetric, strategy group:
 * s = bf16(absmax / 7.5) (calculate_qparams' max / (bit_range / 2); a zero
 * group gets bf16's eps 2^-7 as the package does), q = clamp(rint(bf16(x /
 * s)), -8, 7) (the division rounded to bf16 as torch does on bf16 tensors,
 * then round half to even); packed: I32 [N, K/8], element j of a row at
 * bits 4j of the row's words, stored as q + 8.  scale: BF16 [N, K/g]. */
void fd_qp_ct_int4(const float *x, uint64_t N, uint64_t K, uint64_t g, int32_t *packed, uint16_t *scale);

/* GPTQ 4-bit sym, desc_act false, checkpoint_format gptq (v1): per group of
 * g inputs and output n, GPTQ's Quantizer with sym: s = 2 * absmax / 15
 * (s = 2/15 for a zero group, as find_params sets xmin -1, xmax 1), stored
 * F16 (round to nearest even); z = 8; q = clamp(rint(x / s16) + 8, 0, 15).
 * qweight I32 [K/8, N] (input k at bits 4(k%8) of word (k/8, n)), qzeros
 * I32 [K/g, N/8] holding z - 1 = 7 in every field (v1), scales F16
 * [K/g, N], g_idx I32 [K] = k / g. */
void fd_qp_gptq_int4(const float *x, uint64_t N, uint64_t K, uint64_t g, int32_t *qweight, int32_t *qzeros,
                     uint16_t *scales, int32_t *g_idx);

/* MLX affine 4-bit (the layout mlx-lm writes): per group, min/max
 * (not mlx.core.quantize's edge rounding): s = bf16((max - min) / 15)
 * (1 when max == min), b = bf16(min), q = clamp(rint((x - b) / s), 0, 15);
 * weight U32 [N, K/8] (value j at bits 4j of the row's words), scales and
 * biases BF16 [N, K/g]. */
void fd_qp_mlx_int4(const float *x, uint64_t N, uint64_t K, uint64_t g, uint32_t *w, uint16_t *scales,
                    uint16_t *biases);

#endif
