/* Helpers shared by the deepseek_v4 forward files (dsv4.h). */
#ifndef FD_ENGINE_DSV4_INTERNAL_H
#define FD_ENGINE_DSV4_INTERNAL_H
#include "engine/arch/deepseek_v4/dsv4.h"
#include "engine/ops/ops.h"
#include "util/bf16.h"

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

/* the rope tables of one window: main (sliding layers) and compress
 * (CSA / HCA layers, the compressors and the indexer), S positions of
 * rope_dim / 2 pairs, bf16 */
typedef struct v4_ropes {
    fd_rope main, comp;
} v4_ropes;

/* DeepseekV4RMSNorm (fp32 weight): y = bf(w * (fp32(x) * rsqrt(mean(x^2) + eps))), rows of n */
void v4_norm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const float *w, float eps, uint16_t *y);
/* the same with the weight tensor `name` [n] (F32 or BF16 on disk) */
int v4_norm_named(const fd_mm *m, const fd_weights *W, fd_err *e, const char *name, const uint16_t *x, size_t rows,
                  size_t n, float eps, uint16_t *y);
/* apply_rotary_pos_emb on the trailing 2 R->half dims of z (d values) at
 * position p; sign -1: the inverse rotation (-sin) */
void v4_rope(uint16_t *z, size_t d, const fd_rope *R, size_t p, float sign);
/* y [rows][N] = bf16 Linear NAME.weight [N, K] of x (no bias) */
int v4_linear(const fd_mm *m, const fd_weights *W, fd_err *e, size_t N, size_t K, const uint16_t *x, size_t rows,
              uint16_t *y, const char *name);

/* DeepseekV4Attention of layer L on x [S][H] (input_layernorm's output) -> y [S][H] */
int v4_attention(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const v4_ropes *R,
                 const uint16_t *x, size_t S, uint16_t *y, fd_err *e);

#endif
