/* The tensor set of a glm5_next checkpoint (docs/MODEL-GLM5-NEXT.md §2), in
 * the on-disk spelling save_pretrained writes and the public fixture uses
 * (transformers' conversion mapping renames on load): hc_attn_fn/_base/_scale,
 * self_attn.f_a_proj / f_b_proj / dt_bias / A_log, q/k/v_conv1d, routed
 * experts per expert (or fused gate_up_proj / down_proj, chosen per layer as
 * for glm_moe_dsa), plus the vision tower's tensors under model.visual.
 * The loader's check and the fixture writer read this list. */
#ifndef FD_ENGINE_NEXT_WEIGHTS_H
#define FD_ENGINE_NEXT_WEIGHTS_H
#include <stdint.h>
#include "engine/weights.h"

#include "engine/model.h"

/* Calls f once per expected tensor; sets w->fused[l] for MoE layers (the
 * tensors hook of engine/model.h). */
void fd_next_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);

#define FD_NEXT_PREFIX "model.language_model."

#endif
