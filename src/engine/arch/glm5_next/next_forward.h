/* The glm5_next (GLM-5.3-Flash) text forward, batch 1, no cache, no padding,
 * up to the final RMSNorm output (the lm_head input), as transformers 5.16.1
 * computes it for a bf16 model on CPU (docs/MODEL-GLM5-NEXT.md, rounding
 * point by rounding point).  Split by concern:
 *   next_forward.c  embedding, the hc_mult residual streams and the
 *                   manifold hyper-connections (Sinkhorn), MLP / MoE, final
 *                   stream mean and RMSNorm
 *   next_kda.c      KDA linear attention: glm5_next's forget gate over the shared
 *                   KDA ops (engine/ops/kda.h: short conv, the chunked delta rule
 *                   of chunk_kimi_delta_attention, gated norm)
 *   next_dsa.c      NoPE MLA with the kpool DSA indexer
 * Every bf16 x bf16 product goes through fd_mm_run / fd_dot_canonical (thread
 * count independent); the fp32 x fp32 products of torch's fp32 paths (mHC
 * mixing, KDA chunk algebra) are computed in one fixed order per output
 * (fp64 accumulation rounded once to fp32), so results never depend on the
 * thread count either.  Refusals: bad_config, checkpoint_mismatch, bad_token. */
#ifndef FD_ENGINE_NEXT_FORWARD_H
#define FD_ENGINE_NEXT_FORWARD_H
#include <stddef.h>
#include <stdint.h>
#include "engine/config.h"
#include "engine/ops/matmul.h"
#include "engine/weights.h"
#include "util/err.h"

/* The hooks of engine/model.h (the state: the hc_mult residual streams and
 * the DSA selection of the last full DSA layer). */
void *fd_next_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_next_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
int fd_next_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
void fd_next_free(void *st);
uint16_t *fd_next_stream(const fd_glm_config *c, void *st, size_t *n);

#endif
