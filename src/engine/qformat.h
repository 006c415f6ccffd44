/* The two published weight formats the engine reads and `fidelity quantize`
 * writes (docs/QUANT-FORMATS.md has the sources followed):
 *
 * FP8 block (transformers FineGrainedFP8, DeepSeek-V3 / GLM-5 "fp8"):
 *   weight          F8_E4M3 [N, K]
 *   weight_scale_inv F32    [ceil(N/bm), ceil(K/bn)]   (one per bm x bn tile)
 *   dequant: w = fp32(e4m3) * scale_inv  (one fp32 multiply), -> bf16 RNE
 *   quant (transformers Fp8Quantize): per tile amax = max|x|;
 *          s = amax > 0 ? 448 / amax : 1  (fp32);  q = e4m3(clamp(x*s, +-448));
 *          scale_inv = 1 / s  (fp32)
 *
 * NVFP4 (NVIDIA ModelOpt NVFP4QTensor):
 *   weight          U8      [N, K/2]   E2M1 codes, low nibble = even element
 *   weight_scale    F8_E4M3 [N, K/16]  per 16 consecutive inputs of a row
 *   weight_scale_2  F32     [] or [1]  per tensor
 *   input_scale     F32     [] or [1]  (activation scale: recorded, never applied)
 *   dequant: w = e2m1(code) * fp32(fp32(weight_scale) * weight_scale_2), -> bf16 RNE
 *            (ModelOpt's order: the block scale product first, then the value)
 *   quant:  s2 = amax(|x|) / 2688;  bs = block amax / (6 * s2), 0 -> 1, -> e4m3;
 *           code = cast_fp4(x / (fp32(bs) * s2))  (round to nearest, ties to
 *           the even code, saturating at 6; sign bit set for x < 0) */
#ifndef FD_ENGINE_QFORMAT_H
#define FD_ENGINE_QFORMAT_H
#include <stddef.h>
#include <stdint.h>

#define FD_FP8_MAX 448.0f
#define FD_NVFP4_GROUP 16

float fd_e4m3_to_f32(uint8_t b);
/* Round to nearest even; |x| beyond the e4m3 range becomes NaN (0x7f), as
 * torch's float8_e4m3fn cast does; callers clamp first. */
uint8_t fd_f32_to_e4m3(float x);
float fd_e2m1_to_f32(uint8_t code); /* code & 15; code 8 (-0) reads as +0, ModelOpt's table */
uint8_t fd_f32_to_e2m1(float x);

/* Dequantized bf16 values of columns [0, K) of row `row`. */
/* Scale tensors are read with memcpy: mapped data need not be aligned. */
void fd_fp8_block_row_bf16(const uint8_t *w, const uint8_t *scale_inv, uint64_t K, uint64_t kb, int bm, int bn,
                           uint64_t row, uint16_t *out);
/* the same with F8_E8M0 block scales (ue8m0: 2^(e - 127), e = 0 the fp32
 * subnormal 2^-127, e = 255 NaN), one byte each */
void fd_fp8_block_row_bf16_e8m0(const uint8_t *w, const uint8_t *scale_e8m0, uint64_t K, uint64_t kb, int bm, int bn,
                                uint64_t row, uint16_t *out);
float fd_e8m0_to_f32(uint8_t e);
void fd_nvfp4_row_bf16(const uint8_t *w, const uint8_t *scale, float scale2, uint64_t K, uint64_t row,
                       uint16_t *out);
/* ModelOpt per-tensor FP8 (FP8QTensor.dequantize(dtype=bf16)): e4m3 in bf16
 * times the scale in bf16, rounded to nearest even; s_bf16 = the F32
 * weight_scale already rounded to bf16 (both products are exact in fp32). */
void fd_mo_fp8_row_bf16(const uint8_t *w, float s_bf16, uint64_t K, uint64_t row, uint16_t *out);

/* compressed-tensors pack-quantized (compressed_tensors 0.20.1
 * PackedQuantizationCompressor.decompress, docs/QUANT-FORMATS.md):
 *   weight_packed     I32 [N, ceil(K*b/32)]  element j of a row at bit j*b
 *                     (little-endian words), stored as q + 2^(b-1)
 *   weight_scale      BF16/F16/F32 [N,1] channel, [N,K/g] group,
 *                     [ceil(N/bh),ceil(K/bw)] block
 *   weight_zero_point I32 [ceil(N*b/32), G] (asymmetric; packed along the
 *                     output dim: output i at bit i*b of its column)
 *   dequant, in the scale's dtype: w = (q - z) * s; then bf16 RNE (an F16
 *   product is rounded to fp16 first, as torch computes it).
 * sdtype: 0 BF16, 1 F16, 2 F32.  pw: packed words per row; scols / zcols:
 * columns of the scale / zero-point tensors. */
typedef struct fd_ct_row {
    const uint8_t *packed, *scale, *zero;
    uint64_t pw, scols, zcols;
    int sdtype, bits, strategy, group, bh, bw;
    /* dense (int-/float-/naive-quantized): 1 = packed is I8 [N, K], zero I8
     * indexed like the scale; 2 = packed is F8_E4M3 [N, K] (no zero point).
     * strategy FD_CT_TENSOR: one scale. */
    int dense;
} fd_ct_row;
void fd_ct_row_bf16(const fd_ct_row *c, uint64_t K, uint64_t row, uint16_t *out);
/* compressed-tensors nvfp4-pack-quantized / mxfp4-pack-quantized
 * (NVFP4PackedCompressor / MXFP4PackedCompressor.decompress): packed U8
 * [N, K/2], low nibble = even element, e2m1 with code 8 = -0.0;
 *   nvfp4: w = bf16(fp32(e2m1 * fp32(e4m3(scale) / global_scale))), scale per 16
 *   mxfp4: w = bf16(e2m1 * 2^(e - 127)) (e = 255: infinity), scale per 32 */
void fd_ct_nvfp4_row_bf16(const uint8_t *packed, const uint8_t *scale_e4m3, float global_scale, uint64_t K,
                          uint64_t row, uint16_t *out);
void fd_ct_mxfp4_row_bf16(const uint8_t *packed, const uint8_t *scale_e8m0, uint64_t K, uint64_t row, uint16_t *out);
/* GPTQ (GPTQModel PackableQuantLinear.dequantize_weight, v2 internally;
 * a v1 checkpoint's qzeros words get 0x11111111 / 0x01010101 added, int32
 * wrapping, as convert_gptq_v1_to_v2_format does) and AWQ GEMM (AutoAWQ
 * dequantize_gemm: unpack_awq + reverse_awq_order):
 *   GPTQ qweight I32 [K*b/32, N] (input k of output n at bit k*b of column n's
 *        little-endian word run: b = 2, 4, 8 stay inside a word, b = 3 packs
 *        32 inputs into 3 words, fields 10 and 21 straddling),
 *        qzeros I32 [G, N*b/32] (output n at bit n*b of row g's word run),
 *        scales [G, N], g_idx I32 [K] (the group of each input); v1 zero
 *        points: 2-bit words + 0x55555555, 4-bit + 0x11111111, 8-bit +
 *        0x01010101 (int32 wrap), 3-bit each field (z + 1) & 7
 *        (GPTQModel _correct_gptq_v1_qzeros)
 *   AWQ  qweight I32 [K, N/8] (output n of input k: word (k, n/8), nibble
 *        [0,4,1,5,2,6,3,7][n%8]), qzeros I32 [G, N/8] alike, scales [G, N],
 *        group of input k = k / group
 *   w[n, k] = (q - z) * s in the scale's dtype, then bf16 (as fd_ct_row). */
typedef struct fd_gq_row {
    const uint8_t *qweight, *qzeros, *scale, *gidx;
    uint64_t N;
    int sdtype, bits, group, v1, awq;
} fd_gq_row;
void fd_gq_row_bf16(const fd_gq_row *c, uint64_t K, uint64_t n, uint16_t *out);
/* MLX affine (mlx.core.dequantize, mlx 0.32; the format mlx-lm writes):
 *   weight U32 [N, K*b/32]: element j of a row at bits [j*b, j*b+b) of the
 *          row's little-endian word run (b = 3, 5, 6 straddle words)
 *   scales, biases [N, K/group] in the model dtype T (sdtype 0 BF16, 1 F16, 2 F32)
 *   w = T(T(scale * q) + bias), each operation an fp32 operation rounded to
 *   T (the product is exact for b <= 8), then bf16. */
typedef struct fd_mlx_row {
    const uint8_t *w, *scales, *biases;
    int sdtype, bits, group;
} fd_mlx_row;
void fd_mlx_row_bf16(const fd_mlx_row *m, uint64_t K, uint64_t row, uint16_t *out);
uint16_t fd_mlx_elem_bf16(const fd_mlx_row *m, uint64_t K, uint64_t row, uint64_t col);
uint16_t fd_f32_to_f16(float f); /* round to nearest even (overflow to inf, NaN quiet) */
float fd_f16_to_f32(uint16_t h);

/* Quantizers over fp32 rows-major [N, K] values. */
void fd_fp8_block_quantize(const float *x, uint64_t N, uint64_t K, int bm, int bn, uint8_t *q, float *scale_inv);
/* Tensor amax -> weight_scale_2. */
float fd_nvfp4_scale2(const float *x, uint64_t n);
void fd_nvfp4_quantize(const float *x, uint64_t N, uint64_t K, float scale2, uint8_t *packed, uint8_t *scale);

#endif
