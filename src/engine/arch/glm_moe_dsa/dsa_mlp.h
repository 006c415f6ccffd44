/* MLP blocks of the glm_moe_dsa forward (dsa_mlp.c). */
#ifndef FD_ENGINE_MLP_H
#define FD_ENGINE_MLP_H
#include <stddef.h>
#include <stdint.h>
#include "engine/arch/glm_moe_dsa/dsa_forward.h"
#include "engine/ops/ops.h"

/* y = down(bf(bf(silu(gate(x))) * up(x))) for `rows` rows of x, the
 * Linears PREFIX.{gate,up,down}_proj of [I, H] / [H, I]. */
int fd_mlp_dense(const fd_mm *m, const fd_weights *W, size_t H, size_t I, const char *prefix, const uint16_t *x, size_t rows,
                 uint16_t *y, fd_err *e);
/* The MoE block of layer L on S rows of h2 (post-attention norm output). */
int fd_mlp_moe(const fd_mm *m, const fd_weights *W, const fd_model_config *c, long long L, const uint16_t *h2, size_t S,
               uint16_t *y, fd_err *e);

#endif
