/* minimax_m2 fixture presets' config.json (fixture_minimax.c): the config of
 * a random-init MiniMaxM2ForCausalLM as transformers 5.25's save_pretrained
 * writes it (sorted keys); its tensors are the architecture's one list
 * (engine/arch/minimax_m2/mm2_tensors.c). */
#ifndef FD_CAPTURE_FIXTURE_MINIMAX_H
#define FD_CAPTURE_FIXTURE_MINIMAX_H
#include "capture/fixture.h"
#include "format/json.h"

jv *fd_fixture_mm2_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad);
/* the name part of the preset's routed experts, what `demo` quantizes:
 * "block_sparse_moe.experts" (minimax_m2), else "mlp.experts" */
const char *fd_fixture_preset_experts(const fd_fixture_preset *p);

#endif
