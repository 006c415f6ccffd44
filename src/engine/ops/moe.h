/* The MLP blocks of the DeepSeek-style MoE architectures (ops/moe.c):
 * glm_moe_dsa and deepseek_v3 (and the architectures shaped like it) call
 * the same code, so the same bits.  Rounding points:
 * engine/arch/glm_moe_dsa/dsa_forward.h. */
#ifndef FD_ENGINE_OPS_MOE_H
#define FD_ENGINE_OPS_MOE_H
#include <stddef.h>
#include <stdint.h>
#include "engine/config.h"
#include "engine/ops/ops.h"

/* y = down(bf(bf(silu(gate(x))) * up(x))) for `rows` rows of x, the
 * Linears PREFIX.{gate,up,down}_proj of [I, H] / [H, I]. */
int fd_mlp_dense(const fd_mm *m, const fd_weights *W, size_t H, size_t I, const char *prefix, const uint16_t *x, size_t rows,
                 uint16_t *y, fd_err *e);
/* The MoE block PREFIX (e.g. "model.layers.3.mlp": PREFIX.gate.weight,
 * PREFIX.gate.e_score_correction_bias, PREFIX.experts.*,
 * PREFIX.shared_experts.*) of layer L (for the debug dump) on S rows of h2
 * (the post-attention norm output): c's hidden_size, n_routed_experts,
 * moe_intermediate_size, num_experts_per_tok, n_group, topk_group,
 * n_shared_experts, norm_topk_prob, routed_scaling_factor. */
int fd_mlp_moe(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const char *prefix, long long L,
               const uint16_t *h2, size_t S, uint16_t *y, fd_err *e);

#endif
