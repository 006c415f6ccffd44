/* The MLP blocks of the DeepSeek-style MoE architectures (ops/moe.c):
 * glm_moe_dsa, deepseek_v3, deepseek_v32 and glm5_next (its differences as
 * fd_moe_opts) call the same code, so the same bits.  Rounding points:
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

/* What an architecture's MoE does differently from the torch default
 * (all zero: glm_moe_dsa, deepseek_v3). */
typedef struct fd_moe_opts {
    int swiglu_clamped;   /* 1: bf(bf(silu(min(gate, lim))) * clamp(up, -lim, lim)) element by element, experts
                           * and shared experts (glm5_next); 0: torch's silu split */
    float swiglu_limit;   /* lim */
    int topk_heap_order;  /* 1: the slots in fd_op_topk_select's order (glm5_next); 0: torch.topk(sorted=False)'s */
    int router_one_chain; /* 1: the fp32 router as one FMA chain at every shape (glm5_next); 0: MKL's blocks where measured */
    int pack_all_rows;    /* 1: the experts' K-blocks planned for all S rows (glm5_next); 0: for the rows routed to it */
} fd_moe_opts;
int fd_mlp_moe_opts(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const char *prefix, long long L,
                    const uint16_t *h2, size_t S, const fd_moe_opts *o, uint16_t *y, fd_err *e);
/* fd_mlp_dense, with fd_moe_opts' clamped SwiGLU when clamped. */
int fd_mlp_dense_lim(const fd_mm *m, const fd_weights *W, size_t H, size_t I, const char *prefix, const uint16_t *x,
                     size_t rows, int clamped, float lim, uint16_t *y, fd_err *e);

#endif
