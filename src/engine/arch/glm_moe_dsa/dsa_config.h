/* GlmMoeDsaConfig (model_type "glm_moe_dsa", MODEL-GLM.md §1): every field
 * the forward needs, with the 5.16-era dataclass defaults for absent fields
 * and the derived schedules computed as transformers' __post_init__ does:
 *   - qk_head_dim = qk_nope_head_dim + qk_rope_head_dim (config value ignored)
 *   - head_dim = qk_rope_head_dim (config value ignored)
 *   - mlp_layer_types: explicit, else dense for i < first_k_dense_replace
 *   - indexer_types: explicit, else index_topk_pattern (F/S), else layer i is
 *     full iff max(i - index_skip_topk_offset + 1, 0) % index_topk_freq == 0
 *   - rope_parameters: explicit, else folded from top-level rope_theta /
 *     rope_scaling (rope_type "default", theta 10000 when nothing is given)
 * Refusals: bad_config (naming the field). */
#ifndef FD_ENGINE_DSA_CONFIG_H
#define FD_ENGINE_DSA_CONFIG_H
#include "engine/config.h"

/* model_type glm_moe_dsa's parser (its fd_arch's parse hook). */
int fd_glm_moe_dsa_parse(const jv *doc, fd_glm_config *c, fd_err *e);

#endif
