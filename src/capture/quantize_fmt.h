/* `fidelity quantize --format fp8-block|nvfp4|compressed-tensors|gptq|mlx`: writes a checkpoint in the
 * published layout of the format (engine/qformat.h for the arithmetic,
 * docs/QUANT-FORMATS.md for the files), so a capture can read the
 * checkpoint as a quantization author ships it.
 *
 * Selected: 2-D nn.Linear weights (engine/qconfig.h) of dtype BF16/F16/F32
 * whose name contains a --match substring; without --match, fp8-block takes
 * every Linear and nvfp4 the routed experts ("mlp.experts.").  Never
 * converted: lm_head (the capture's head must stay bf16), and for fp8-block
 * the indexer weights_proj (left unconverted in GLM-5's FP8 release).
 *
 * Written: config.json with quantization_config (fp8: quant_method "fp8",
 * fmt e4m3, weight_block_size, activation_scheme dynamic,
 * modules_to_not_convert; nvfp4: ModelOpt's export form, quant_method
 * "modelopt", quant_algo NVFP4, config_groups (weights 4-bit float group 16,
 * input_activations null: the toy is weight-only, no input_scale), ignore)
 * and for nvfp4 hf_quant_config.json; the unconverted Linears are listed
 * with layer numbers as "*", which both matching rules of qconfig.h read;
 * a selection that such a list cannot express is refused
 * (unexpressible_selection).  Every other file is copied; an index json is
 * rewritten with the scale tensors.
 *
 * compressed-tensors (W4A16 pack-quantized, group, symmetric), gptq (4-bit
 * sym, desc_act false, v1) and mlx (affine 4-bit): every Linear but lm_head
 * by default; the arithmetic and layouts are capture/quantize_pack.h's; the
 * written config is parsed back as capture parses it and must convert
 * exactly the selection (unexpressible_selection otherwise). */
#ifndef FD_QUANTIZE_FMT_H
#define FD_QUANTIZE_FMT_H
#include <stddef.h>
#include "engine/qconfig.h"
#include "format/json.h"

typedef struct fd_qf_opts {
    const char *src, *dst;
    fd_qkind kind;
    int bm, bn;                    /* fp8 block, default 128 x 128 */
    int group;                     /* compressed-tensors / gptq (default 128), mlx (64): inputs per scale */
    const char *const *patterns;
    size_t npatterns;
    int dry_run, force;
} fd_qf_opts;

/* *report: {format, patterns, scheme, tensors_quantized, tensors_untouched,
 * elements_quantized, quantization_config, quantized:[{tensor, shape,
 * elements}]}.  Refusals as fd_quantize's, plus already_quantized,
 * unsupported_shape, unexpressible_selection, non_finite. */
int fd_quantize_fmt(const fd_qf_opts *o, jv **report, fd_err *e);

#endif
