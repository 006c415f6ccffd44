#include "engine/archtable.h"
#include "engine/model.h"
#include <stdio.h>
#include <string.h>

/* THE table of architectures: one line each (engine/model.h). */
const fd_arch *const FD_ARCHS[] = {
    &FD_ARCH_GLM_MOE_DSA,
    &FD_ARCH_GLM5_NEXT,
    &FD_ARCH_DEEPSEEK_V3,
    &FD_ARCH_DEEPSEEK_V32,
    &FD_ARCH_DEEPSEEK_V4,
    &FD_ARCH_KIMI_K25,
    &FD_ARCH_KIMI_LINEAR,
    &FD_ARCH_LLAMA,
    &FD_ARCH_QWEN3,
    &FD_ARCH_QWEN3_MOE,
    &FD_ARCH_QWEN3_5,
    &FD_ARCH_QWEN3_5_TEXT,
    &FD_ARCH_QWEN3_5_MOE,
    &FD_ARCH_QWEN3_5_MOE_TEXT,
    &FD_ARCH_MINIMAX_M2,
    &FD_ARCH_QWEN4_EXP,
    &FD_ARCH_QWEN4_EXP_TEXT,
};
const size_t FD_N_ARCHS = sizeof FD_ARCHS / sizeof *FD_ARCHS;

const fd_format_info FD_FORMATS[] = {
    {"bf16", "bf16 safetensors", "no quantization_config (and no hf_quant_config.json)", "root", "docs/CAPTURE.md"},
    {"fp8-block", "FP8 block (transformers FineGrainedFP8, e4m3, weight_scale_inv per block)",
     "quantization_config.quant_method \"fp8\" with weight_block_size", "quant", "docs/QUANT-FORMATS.md"},
    {"nvfp4", "NVFP4 (NVIDIA ModelOpt, e2m1 + e4m3 scales per 16, f32 per tensor)",
     "quantization_config.quant_method \"modelopt\" quant_algo \"NVFP4\", or hf_quant_config.json", "quant",
     "docs/QUANT-FORMATS.md"},
    {"ct-pack", "compressed-tensors pack-quantized int4/int8 (llm-compressor; channel, group, block; zero points)",
     "quantization_config.quant_method \"compressed-tensors\" format \"pack-quantized\"", "quant",
     "docs/QUANT-FORMATS.md"},
    {"gptq", "GPTQ int4/int8 (qweight/qzeros/scales/g_idx; v1 and v2 zero points, act-order)",
     "quantization_config.quant_method \"gptq\"", "quant", "docs/QUANT-FORMATS.md"},
    {"awq", "AWQ GEMM int4 (qweight/qzeros/scales, packing order 0 2 4 6 1 3 5 7)",
     "quantization_config.quant_method \"awq\" version \"gemm\"", "quant", "docs/QUANT-FORMATS.md"},
    {"mlx", "MLX affine 2/3/4/5/6/8-bit (mlx-lm; uint32 words, scales and biases per 32/64/128, embedding included)",
     "config.json quantization {group_size, bits}", "quant", "docs/QUANT-FORMATS.md"},
    {"gguf", "GGUF (llama.cpp's converter and llama-quantize; one file or a split set; 26 ggml types decoded as gguf-py)",
     "a file starting with the magic GGUF, general.architecture naming the architecture (capture --model FILE.gguf)",
     "root|quant", "docs/QUANT-FORMATS.md"},
};
const size_t FD_N_FORMATS = sizeof FD_FORMATS / sizeof *FD_FORMATS;

const fd_arch *fd_arch_of(const char *model_type)
{
    for (size_t i = 0; model_type && i < FD_N_ARCHS; i++)
        if (!strcmp(FD_ARCHS[i]->info.model_type, model_type)) return FD_ARCHS[i];
    return NULL;
}

const fd_arch_info *fd_arch_find(const char *model_type)
{
    const fd_arch *a = fd_arch_of(model_type);
    return a ? &a->info : NULL;
}

const fd_format_info *fd_format_find(const char *id)
{
    for (size_t i = 0; id && i < FD_N_FORMATS; i++)
        if (!strcmp(FD_FORMATS[i].id, id)) return &FD_FORMATS[i];
    return NULL;
}

void fd_arch_names(char *out, size_t cap)
{
    size_t n = 0;
    if (cap) out[0] = 0;
    for (size_t i = 0; i < FD_N_ARCHS && n < cap; i++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? ", " : "", FD_ARCHS[i]->info.model_type);
}

void fd_arch_preset_names(const fd_arch *a, const char *sep, char *out, size_t cap)
{
    size_t n = 0;
    if (cap) out[0] = 0;
    for (const fd_fixture_preset *p = a->presets; p && p->name && n < cap; p++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", p == a->presets ? "" : sep, p->name);
}

int fd_arch_has_format(const fd_arch_info *a, const char *format_id)
{
    size_t n = strlen(format_id);
    for (const char *p = a->formats; (p = strstr(p, format_id)); p += n)
        if ((p == a->formats || p[-1] == ' ') && (p[n] == 0 || p[n] == ',')) return 1;
    return 0;
}
