/* Helpers shared by the glm5_next forward files (next_forward.h). */
#ifndef FD_ENGINE_NEXT_INTERNAL_H
#define FD_ENGINE_NEXT_INTERNAL_H
#include "engine/arch/glm5_next/next_config.h"
#include "engine/arch/glm5_next/next_forward.h"
#include "engine/arch/glm5_next/next_tensors.h"
#include "engine/ops/ops.h"
#include "engine/ops/reduce.h"
#include "util/bf16.h"

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

/* One mHC site (attn or ffn) of layer L: fn [(2+m)m, mH] (bf16 values),
 * base [(2+m)m], scale [3]. */
typedef struct nx_hc {
    float *fn;
    float base[64 * 66], scale[3];
} nx_hc;
int nx_hc_load(nx_hc *h, const fd_weights *W, const fd_glm_config *c, long long L, const char *site, fd_err *e);
/* For every token of X [S][m][H]: post [S][m], comb [S][m][m] (fp32),
 * collapsed [S][H] (bf16); mixdump (or NULL): the raw mix logits [S][(2+m)m]. */
void nx_hc_apply(const fd_mm *mm, const nx_hc *h, const fd_glm_config *c, const uint16_t *X, size_t S, float *post,
                 float *comb, uint16_t *collapsed, float *mixdump);
/* X <- bf(bf(post) * out) + bf(comb^T @ X) per token. */
void nx_hc_combine(const fd_mm *mm, const fd_glm_config *c, const float *post, const float *comb, const uint16_t *out,
                   uint16_t *X, size_t S);

/* Layer sublayers: x rows of H (bf16, after input_layernorm) -> y rows of H. */
int nx_kda(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, const uint16_t *x, size_t S,
           uint16_t *y, fd_err *e);
/* sel: S x S bytes, in/out: a full layer writes it, a shared layer reads it. */
int nx_dsa(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, const uint16_t *x, size_t S,
           unsigned char *sel, uint16_t *y, fd_err *e);

#endif
