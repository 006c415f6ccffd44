/* Qwen4-Exp's hyper-connection residual and QSA block indexer (transformers
 * 5.25 Qwen4ExpTextGatedResidual, Qwen4ExpTextQSAIndexer; bf16, as torch's
 * CPU kernels round; docs/MODEL-MINIMAX-QWEN4.md §7).  glm5_next's mHC
 * (arch/glm5_next/next_hc.c: Sinkhorn-normalised mixing) and the DSA token
 * indexer (ops/indexer.c) are relatives with other arithmetic. */
#ifndef FD_ENGINE_OPS_HYPER_H
#define FD_ENGINE_OPS_HYPER_H
#include "engine/ops/ops.h"

/* One gated residual: PREFIX{hc_norm, input_mix_weight_down, _up,
 * block_inject_weight (inject only)}; n streams of H, rank r, for S rows. */
typedef struct fd_hcres {
    size_t n, H, r;
    int inject;
    uint16_t *nw;            /* hc_norm weight [n * H] */
    float *nm;               /* or, from a GGUF read as stored (W->gstored), its stored multiplier 1 + w [n * H] */
    fd_lin down, up, inj;
} fd_hcres;
int fd_hcres_load(const fd_mm *m, fd_hcres *g, const fd_weights *W, fd_err *e, size_t n, size_t H, size_t r, size_t S,
                  int inject, const char *prefix);
void fd_hcres_free(fd_hcres *g);
/* X [S][n * H] bf16 (the streams) -> mixed [S][H]:
 *   hn = grouped zero-centred RMSNorm of X (each stream over H, its part of
 *        the weight), mix = bf(sigmoid(up(bf(silu(bf(down(hn) / n))))))
 *   mixed = bf(sum over streams in order of fp32(bf(mix * hn)) / n)
 * and with inject, inj [S][n] = 2 bf(sigmoid(bf(block_inject(hn) / n))).
 * (From a GGUF read as stored the norm's multiplier is the stored one, nm.)
 * n a power of two (the divisions exact). */
void fd_hcres_apply(const fd_mm *m, const fd_hcres *g, const uint16_t *X, size_t S, float eps, uint16_t *mixed,
                    uint16_t *inj);
/* X[t][s][i] = bf(X + bf(y[t][i] * inj[t][s])): the sublayer's output written back into every stream. */
void fd_hcres_write(const fd_mm *m, uint16_t *X, const uint16_t *y, const uint16_t *inj, size_t S, size_t n, size_t H);

/* The QSA selection of one indexed layer: q [S][nh][d] (normed, rotated),
 * raw keys rk [S][d] (index_qk_proj's key part), kw the k_layernorm weight
 * [d] (or, kw NULL, km its stored multiplier 1 + w from a GGUF), R the rotary tables (rotate_half over 2 R->half dims).  Complete
 * blocks of cr tokens: keys averaged in fp32 (torch's outer sum, then / cr),
 * bf16, zero-centred RMSNorm, rotated at the block's first position; query t
 * scores its (t + 1) / cr blocks sum_h relu(q_h . k_b) / sqrt(d) (fp32) and
 * keeps the top budget / cr (torch.topk's set) plus its incomplete tail.
 * sel [S][S]: 1 where query t may attend (a subset of the causal mask). */
void fd_op_qsa_select(const fd_mm *m, const uint16_t *q, const uint16_t *rk, const uint16_t *kw, const float *km, const fd_rope *R,
                      size_t S, size_t nh, size_t d, size_t cr, size_t budget, float eps, unsigned char *sel);

#endif
