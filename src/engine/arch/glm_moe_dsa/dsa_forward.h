/* The glm_moe_dsa forward pass (MODEL-GLM.md §3, transformers 5.16
 * semantics, bf16 load), batch 1, no cache, no padding, up to the final
 * RMSNorm output (the input of lm_head: the capture cut point).
 *
 * Every rounding point of §3/§4 is reproduced, and every operation follows
 * the order of the CPU kernel torch 2.11 (x86-64 wheel, AVX-512 host,
 * ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16 as the goldens) runs, so the output
 * is bit-identical to transformers 5.16.1 eager (tests/parity/):
 *   - Linear (bf16): the canonical dot (fd_dot_canonical: bf16 in, fp32 FMA
 *     chain over pairs, odd element then even) = oneDNN's AVX512_BF16 order
 *     for K <= 512; for 512 < K <= 2048 two K-blocks [0, kb), [kb, K),
 *     kb = 2^(ceil(log2 K) - 1), each a canonical chain, added (block 0 +
 *     block 1); K > 2048 is not identified (one chain).  Bias added to the
 *     fp32 sum, one bf16 rounding.  Q.K and P.V are such products (P.V over
 *     K = S keys, so the K-blocks apply from S > 512).
 *   - router (fp32 Linear on upcast weights, MKL sgemm): one FMA chain in
 *     increasing k (measured for E = 8, H <= 256; other shapes use other
 *     MKL kernels).  sigmoid: torch_ops.h (Sleef exp; the last S*E % 32
 *     logits take torch's scalar libm path).
 *   - Attention uses the EAGER semantics of §4's table:
 *       s = bf(Q.K); s = bf(s * lambda); + bf16 mask (a masked key gets
 *       probability exactly 0, so it is skipped); softmax in fp32 as
 *       torch's AVX-512 kernel (fd_torch_softmax_masked: Sleef exp, 16-lane
 *       sum over the full row of S, times 1/sum) -> bf16 probabilities;
 *       o = bf(P.V) with fp32 accumulation.
 *     (transformers' default is sdpa; its CPU kernel keeps scores fp32.)
 *   - RMSNorm sum of squares: torch 2.11's CPU reduction order (8-lane
 *     vectors, 4 accumulators; fd_torch_sum in ops/norm.c); LayerNorm
 *     (indexer k_norm): fd_torch_layernorm_bf16 (Welford moments of the
 *     AVX2 build, contracted affine).
 *   - SiLU: x / (1 + exp(-x)) with Sleef exp in blocks of 64 elements of
 *     each contiguous run (the whole [rows, I] gate output of a dense MLP;
 *     one row of grouped_mm's strided gate half for routed experts), torch's
 *     scalar libm path on the rest.
 *   - RoPE: cos/sin from libm cosf/sinf, rounded to bf16; the rotated vector
 *     is stored de-interleaved exactly as HF does.
 *   - Indexer top-k: the k' largest fp32 scores (future keys -inf); among
 *     EQUAL scores (frequent: ReLU makes many scores exactly 0) the set is
 *     the one torch's CPU topk returns, by replaying libstdc++'s
 *     nth_element / partial_sort (fd_op_topk_select in ops/topk.c).  When t+1 <= index_topk (in
 *     particular whenever S <= index_topk) every causal key is kept and the
 *     indexer is not evaluated (exact: its output is irrelevant).  Shared
 *     layers reuse the selection of the last full layer; a first layer that
 *     is not full is refused.
 *   - MoE: the experts and their SLOT ORDER are what torch.topk(sorted=False)
 *     returns (the same libstdc++ replay, torch_topk_ordered); group-limit
 *     ties go to the lower index; the norm_topk_prob sum and the combine
 *     routed = bf(sum_slots fp32(y_e * r_e)) (grouped_mm) run in slot order.
 *
 * Debug: FIDELITY_FORWARD_DUMP=DIR writes the intermediates of the first
 * forward call as raw arrays (see fd_op_dump in ops/tensor.c and
 * tests/parity/layerwise.py).
 *
 * Every matrix product runs through fd_mm_run (engine/ops/matmul.h): threads
 * split output columns only, so results are a pure function of the weights
 * and ids, whatever the thread count or kernel path. */
#ifndef FD_ENGINE_FORWARD_H
#define FD_ENGINE_FORWARD_H
#include <stddef.h>
#include <stdint.h>
#include "engine/config.h"
#include "engine/model.h"
#include "engine/ops/matmul.h"
#include "engine/weights.h"
#include "util/err.h"

typedef fd_glm_config fd_model_config;

/* The hooks of engine/model.h for glm_moe_dsa (the state of a window: the
 * residual stream, the DSA selection of the last full layer, the RoPE
 * tables).  begin needs model.embed_tokens.* mapped, layer L
 * model.layers.L.*, end model.norm.*.  Refusals: bad_config (unsupported
 * schedule/activation), checkpoint_mismatch (a tensor missing or
 * misshaped), bad_token (an id outside the vocab). */
void *fd_dsa_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_dsa_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
int fd_dsa_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
void fd_dsa_free(void *st);
uint16_t *fd_dsa_stream(const fd_glm_config *c, void *st, size_t *n);

#endif
