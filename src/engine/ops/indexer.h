/* The DSA indexer (ops/indexer.c): glm_moe_dsa's and deepseek_v32's. */
#ifndef FD_ENGINE_OPS_INDEXER_H
#define FD_ENGINE_OPS_INDEXER_H
#include <stddef.h>
#include <stdint.h>
#include "engine/config.h"
#include "engine/ops/ops.h"

/* sel[t*S + j] = 1 iff query t attends key j: the index_topk best keys by
 * the indexer PREFIX (PREFIX.wq_b, .wk, .k_norm, .weights_proj) of layer L
 * (for the dump) on h (the attention input norm) and cq (q_a_layernorm's
 * output); every causal key when t + 1 <= index_topk.  RoPE on the first
 * qk_rope_head_dim dims of q and k, rotate_half (deepseek_v32) or
 * interleaved (glm_moe_dsa).  weights_proj is a bf16 Linear: transformers
 * 5.25 lists it in _keep_in_fp32_modules, yet a bf16 load and save keeps
 * it bf16 (measured). */
int fd_op_dsa_indexer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const char *prefix, long long L,
                      const uint16_t *h, const uint16_t *cq, size_t S, const fd_rope *R, int rotate_half, unsigned char *sel,
                      fd_err *e);

#endif
