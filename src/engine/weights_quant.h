/* The quantized-weight half of the checkpoint check (weights.c): binds a
 * FP8-block or NVFP4 Linear weight to its scale tensors and checks it
 * against the checkpoint's quantization_config. */
#ifndef FD_ENGINE_WEIGHTS_QUANT_H
#define FD_ENGINE_WEIGHTS_QUANT_H
#include "engine/weights.h"

/* t: an expected 2-D weight present in w with logical shape want[0..1].
 * Returns 1 when t is a valid quantized weight (its qfmt, lshape, scales
 * filled), 0 when t is plain and the config agrees (t left as is), -1 when
 * it is a bad quantized tensor (the reason, naming the tensor, in *why). */
int fd_wq_bind(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why);
/* fd_wq_bind's FP8-block weight (F8_E4M3 t, its block scale) */
int fd_wq_bind_fp8(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why);
/* engine/weights_v4rel.c: the block scale of weight wname, X.weight_scale_inv or X.scale (DeepSeek V4's
 * release spelling, which transformers' FP8 quantizer renames to the former); NULL (*why) when neither
 * or both are present */
const fd_tensor *fd_wq_block_scale(const fd_weights *w, const char *wname, fd_buf *why);
/* fd_wq_bind under an fp8 config with expert_dtype "fp4" (DeepSeek V4's release) */
int fd_wq_bind_release(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why);
/* name is a scale companion (weight_scale_inv, weight_scale, weight_scale_2,
 * input_scale) of a bound quantized weight of the matching format. */
int fd_wq_is_companion(const fd_weights *w, const char *name);
/* ModelOpt MIXED_PRECISION: every module quantized_layers lists has its
 * MODULE.weight in the checkpoint (unsupported_quantization naming the first
 * that does not). */
int fd_wq_check_listed(const fd_weights *w, const char *dir, fd_err *e);
/* element i (row-major, logical [N, K]) of an MLX affine tensor, as bf16 (the
 * embedding lookup reads the quantized embedding through it) */
uint16_t fd_mlx_tensor_elem_bf16(const fd_tensor *t, uint64_t i);

#endif
