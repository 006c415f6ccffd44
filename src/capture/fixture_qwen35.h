/* The qwen3_5 part of `fidelity fixture` (fixture.h): the config.json of a
 * random-init Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM checkpoint
 * (model_type qwen3_5_text / qwen3_5_moe_text) as transformers 5.25's
 * save_pretrained writes it (sorted keys); its tensors are the
 * architecture's one list (engine/arch/qwen3_5/q35_tensors.c).
 * Initialisation: Linear, embedding, conv1d and A_log ~ normal(0, 0.02),
 * the zero-centred RMSNorm weights 0, the gated norm's weight and dt_bias 1. */
#ifndef FD_CAPTURE_FIXTURE_QWEN35_H
#define FD_CAPTURE_FIXTURE_QWEN35_H
#include "capture/fixture.h"
#include "format/json.h"

jv *fd_fixture_qwen35_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad);
jv *fd_fixture_qwen35_small_config(const fd_fixture_preset *p, int bos, int eos, int pad);
jv *fd_fixture_qwen35_moe_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad);

#endif
