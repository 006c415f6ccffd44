/* A checkpoint's `quantization_config`: which published weight format its
 * quantized Linears use and which modules it leaves unconverted
 * (docs/QUANT-FORMATS.md).
 *
 *   quant_method "fp8" (transformers FineGrainedFP8Config): fmt "e4m3" (or
 *     absent), weight_block_size [bm, bn] required (per-tensor FP8 is not
 *     read), modules_to_not_convert; "lm_head" is always unconverted.  An
 *     entry excludes a weight when it is a substring of the weight's name with
 *     every digit run replaced by "*" (transformers' _replace_with_fp8_linear)
 *     or of the name itself.
 *   quant_method "modelopt", quant_algo "NVFP4" (config.json as ModelOpt's
 *     export writes it: config_groups.*.weights.group_size, ignore), or no
 *     quantization_config but hf_quant_config.json {quantization: {quant_algo,
 *     group_size, exclude_modules}}: group size 16 only.  A pattern excludes a
 *     module (the weight name less ".weight") when fnmatch() matches it or it
 *     names the module or one of its parents.
 *   quant_algo "MIXED_PRECISION" (either form): quantized_layers {module:
 *     {quant_algo "NVFP4" (group_size 16 or absent) | "FP8"}} names every
 *     converted module; anything else there is refused by name.
 *   MLX affine (mlx-lm): config.json's `quantization` {group_size 32 / 64 /
 *     128, bits 2 / 3 / 4 / 5 / 6 / 8, mode "affine" or absent}; per-module
 *     overrides are refused.  Which weights are quantized is read from the
 *     tensors, as mlx-lm's loader does (a Linear or the embedding with
 *     X.scales beside it); ct[0] holds bits and group.
 * Any other quant_method / quant_algo: unsupported_quantization, naming it. */
#ifndef FD_ENGINE_QCONFIG_H
#define FD_ENGINE_QCONFIG_H
#include "format/json.h"
#include "util/err.h"
#include "util/strv.h"

/* FD_Q_GGUF: a GGUF model's ggml-quantized tensors (engine/gguf_model.h) */
typedef enum { FD_Q_NONE = 0, FD_Q_FP8_BLOCK = 1, FD_Q_NVFP4 = 2, FD_Q_GGUF = 3, FD_Q_CT_PACK = 4, FD_Q_GPTQ = 5, FD_Q_AWQ = 6, FD_Q_MLX = 7,
               FD_Q_MO_FP8 = 8, FD_Q_FP4_E8 = 9 } fd_qkind;
/* FD_Q_FP4_E8: a tensor's format only: a DeepSeek V4 release routed expert
 * (expert_dtype "fp4": I8/U8 [N, K/2] e2m1 codes, low nibble first, and an
 * F8_E8M0 [N, K/32] scale; engine/weights_v4rel.c) */
/* FD_Q_MO_FP8: a tensor's format only (never a config's kind): a ModelOpt
 * per-tensor FP8 layer of a MIXED_PRECISION checkpoint (F8_E4M3 weight, F32
 * scalar weight_scale; decoded as FP8QTensor.dequantize(dtype=bf16)). */
enum { FD_MO_NVFP4 = 1, FD_MO_FP8 = 2 }; /* fd_qconfig.mo_algo */

/* compressed-tensors pack-quantized weight scheme (one config group):
 * integer weights of `bits` (4 or 8) packed densely into int32 (element
 * j at bit j*bits of its row), scales per output channel, per group of
 * `group` inputs, or per bh x bw block; zero points when asymmetric. */
enum { FD_CT_CHANNEL = 0, FD_CT_GROUP = 1, FD_CT_BLOCK = 2, FD_CT_TENSOR = 3 };
/* compressed-tensors storage: pack-quantized (X.weight_packed I32), or the
 * unpacked formats of NaiveQuantizationCompressor (X.weight itself: I8 for
 * int-quantized / naive-quantized int, F8_E4M3 for float-quantized /
 * naive-quantized float) */
enum { FD_CT_PACKED = 0, FD_CT_DENSE_INT = 1, FD_CT_DENSE_FP8 = 2, FD_CT_NVFP4 = 3, FD_CT_MXFP4 = 4 };
/* FD_CT_NVFP4 / FD_CT_MXFP4: nvfp4-pack-quantized / mxfp4-pack-quantized
 * (X.weight_packed U8 [N, K/2], e2m1 codes, low nibble first; NVFP4: e4m3
 * scales per 16 and an F32 weight_global_scale; MXFP4: E8M0 scales per 32) */
typedef struct fd_ct_scheme {
    int bits, sym, strategy, group, bh, bw;
    int v1;  /* GPTQ: checkpoint_format gptq (v1: stored zero points are z - 1) */
    int dense; /* FD_CT_PACKED / FD_CT_DENSE_INT / FD_CT_DENSE_FP8 */
    int acts;  /* compressed-tensors: input_activations declared (W8A8; not applied) */
} fd_ct_scheme;

typedef struct fd_qconfig {
    fd_qkind kind;
    int bm, bn;                  /* fp8 weight_block_size */
    int ue8m0;                   /* fp8 scale_fmt "ue8m0": power-of-two block scales (F32 or F8_E8M0) */
    int expert_fp4;              /* fp8: expert_dtype "fp4" (in quantization_config or at config.json's top level):
                                  * routed experts packed fp4 (FD_Q_FP4_E8), the release of DeepSeek V4 */
    int group;                   /* nvfp4 group size (16) */
    fd_strv exclude;             /* as written (fp8: plus "lm_head") */
    char source[32];             /* "config.json" / "hf_quant_config.json" / "" */
    char activation_scheme[32];  /* fp8: as written, "" when absent */
    /* compressed-tensors: the groups, and every target with its group (a
     * target written by two groups belongs to the later one, as
     * apply_quantization_config's target_to_scheme); exclude = ignore */
    fd_ct_scheme *ct;
    size_t nct;
    fd_strv ct_targets;
    int *ct_target_group;
    /* GPTQ / AWQ: one scheme in ct[0] (group = K when group_size is -1);
     * GPTQ: lm_head converted when `lm_head` is true; include = the flattened
     * modules_in_block_to_quantize (names inside a decoder layer; empty: all).
     * AWQ: exclude = modules_to_not_convert (substring rule) */
    int lm_head;
    fd_strv include;
    /* ModelOpt quant_algo MIXED_PRECISION (kind FD_Q_NVFP4): quantized_layers'
     * module names, sorted, and each one's FD_MO_* algorithm; a module not
     * listed stays unconverted */
    fd_strv mo_layers;
    int *mo_algo;
} fd_qconfig;

/* DIR/config.json's quantization_config, else DIR/hf_quant_config.json;
 * kind FD_Q_NONE when neither says anything. */
int fd_qconfig_load(const char *dir, fd_qconfig *q, fd_err *e);
/* qc: a quantization_config object; where names it in errors. */
int fd_qconfig_parse(const jv *qc, const char *where, fd_qconfig *q, fd_err *e);
/* mq: config.json's `quantization` object (MLX affine, mlx-lm) */
int fd_qconfig_parse_mlx(const jv *mq, const char *where, fd_qconfig *q, fd_err *e);
void fd_qconfig_free(fd_qconfig *q);
/* fp8: expert_dtype v (NULL / JSON null: absent) -> q->expert_fp4; "fp8" or "fp4", else
 * unsupported_quantization (engine/weights_v4rel.c) */
int fd_qconfig_expert_dtype(const jv *v, const char *where, fd_qconfig *q, fd_err *e);

/* A glm_moe_dsa nn.Linear weight (attention and indexer projections, dense /
 * shared / routed expert MLPs, lm_head): the tensors a format may convert. */
int fd_q_is_linear_weight(const char *name);
/* compressed-tensors: the scheme (index into q->ct) of a weight's module, -1
 * when no target matches it or `ignore` does (compressed_tensors.utils.match:
 * targets tried exact names first, then "re:" regexes (re.match, anchored at
 * the start only), each kind in string order, then the class names "Linear" /
 * "Module", which every Linear is). */
int fd_q_ct_scheme(const fd_qconfig *q, const char *weight_name);
/* ModelOpt MIXED_PRECISION: the FD_MO_* algorithm of a weight's module, 0
 * when quantized_layers does not list it. */
int fd_q_mo_algo(const fd_qconfig *q, const char *weight_name);
/* The config leaves this weight's module unconverted. */
int fd_q_excluded(const fd_qconfig *q, const char *weight_name);
/* Registry numeric_format of the kind: "fp8_e4m3", "nvfp4" (compressed-tensors:
 * fd_q_int_format). */
const char *fd_q_format(fd_qkind k);
int fd_q_bits(fd_qkind k);
/* "int8", "int4" (registry numeric_format names). */
const char *fd_q_int_format(int bits);
/* fp8 scale_fmt ue8m0: F32 scales must be powers of two, F8_E8M0 scales are
 * 2^(e - 127) (e = 255: NaN, refused).  See docs/QUANT-FORMATS.md. */
/* The declared bits of a whole config: the kind's, or for compressed-tensors
 * the groups' when they agree, else the largest. */
int fd_qconfig_bits(const fd_qconfig *q);
/* weights.codec text: "fp8-e4m3-block128x128", "nvfp4-modelopt-g16",
 * "ct-pack-w4-group128-sym" / "ct-pack-w8-channel-asym" / "ct-pack-mixed";
 * unpacked compressed-tensors "ct-int-w8-channel-sym" / "ct-fp8-w8-tensor-sym",
 * "ct-mixed" when groups differ and one is unpacked. */
void fd_q_codec(const fd_qconfig *q, char *out, size_t cap);

#endif
