/* The llama / qwen3 part of `fidelity fixture` (fixture.h): the config.json
 * of a random-init LlamaForCausalLM / Qwen3ForCausalLM checkpoint as
 * transformers 5.25's save_pretrained writes it (sorted keys); its tensors
 * are the architecture's one list (engine/arch/llama/llama_tensors.c).
 * Initialisation as transformers' _init_weights: Linear and embedding
 * weights ~ normal(0, 0.02), RMSNorm weights 1, biases 0. */
#ifndef FD_CAPTURE_FIXTURE_LLAMA_H
#define FD_CAPTURE_FIXTURE_LLAMA_H
#include <stdint.h>
#include "capture/fixture.h"
#include "format/json.h"

/* what a llama-family preset adds to fd_fixture_preset's dims */
typedef struct fd_llama_preset {
    const char *model_type;    /* llama | qwen3 | qwen3_moe (experts, top_k, moe_inter and the
                                  mlp_types 'D' layers as mlp_only_layers come from fd_fixture_preset) */
    int64_t kv_heads, head_dim;
    int tie, attention_bias, mlp_bias;
    /* rope_type llama3 when factor > 0 */
    double factor, low_ff, high_ff;
    int64_t orig_max;
} fd_llama_preset;

/* the presets' config hooks (fixture.h fd_fixture_preset.config) */
jv *fd_fixture_llama_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad);
jv *fd_fixture_llama_small_config(const fd_fixture_preset *p, int bos, int eos, int pad);
jv *fd_fixture_qwen3_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad);
jv *fd_fixture_qwen3_moe_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad);
/* 1 for a dense llama / qwen3 preset (no routed experts: `fidelity demo` has nothing to quantize) */
int fd_fixture_preset_dense(const fd_fixture_preset *p);

#endif
