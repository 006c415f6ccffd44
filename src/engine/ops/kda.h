/* KDA (Kimi Delta Attention) linear attention, the pieces glm5_next
 * (Glm5NextTextLinearAttention) and kimi_linear (KimiLinearDeltaAttention)
 * share: the causal depthwise conv + silu of the q/k/v mix, the chunked
 * delta rule of transformers' torch fallback chunk_kimi_delta_attention
 * (l2norm of q and k in the kernel), and the gated RMSNorm of each head's
 * output (Glm5NextTextRMSNormGated).  Rounding points:
 * docs/MODEL-GLM5-NEXT.md §3.3; what differs between the two architectures
 * (the forget gate, the conv's dtype) stays in their folders as a choice of
 * these ops' arguments. */
#ifndef FD_ENGINE_OPS_KDA_H
#define FD_ENGINE_OPS_KDA_H
#include <stddef.h>
#include <stdint.h>
#include "engine/ops/matmul.h"
#include "kernels/mkl_vml.h"

/* qkv [S][C] fp32 = bf16(silu(conv)) of mix [S][C] bf16 with the causal
 * depthwise kernel w [C][K] (fp32 values), one FMA chain over the taps in
 * order; conv_bf16: the conv output is rounded to bf16 before the silu (a
 * bf16 Conv1d: the bf16 silu kernel, blocks of 64 along each channel), else
 * silu runs on the fp32 output (an fp32 Conv1d, blocks of 32). */
void fd_op_kda_conv_silu(const uint16_t *mix, const float *w, size_t S, size_t C, size_t K, int conv_bf16, float *qkv);
/* kimi_linear's forget gate (KimiLinearForgetGate): the log decay
 * g [S][nh*d] = -exp(A_log[h]) * softplus(fg + dt_bias), softplus(x) = x
 * above 20, else log(1 + exp(x)); fp32 (fg [S][nh*d] bf16 = f_b(f_a(x))).
 * torch.exp is MKL's vsExp of the family v, torch.log MKL's vsLn
 * (kernels/mkl_vml.h: fd_vml_expf, fd_mkl_logf, the EX kernel whatever v). */
void fd_op_kda_gate_softplus(enum fd_vml v, const uint16_t *fg, const float *dt_bias, const float *A_log, size_t S,
                             size_t nh, size_t d, float *g);
/* the same with the decay rate exp(A_log) [nh] given (glm5_next: from a
 * GGUF, the stored ssm_a = -exp(A_log) negated) */
void fd_op_kda_gate_softplus_decay(enum fd_vml v, const uint16_t *fg, const float *dt_bias, const float *decay, size_t S,
                                   size_t nh, size_t d, float *g);
/* beta [n] fp32 = sigmoid(b [n] bf16) as the bf16 sigmoid kernel computes
 * it (vector blocks of 64), rounded to bf16 */
void fd_op_kda_beta(const uint16_t *b, size_t n, float *beta);
/* core [S][nh*d] fp32: per head, l2norm(q), l2norm(k), the chunked delta
 * rule (chunk 64) with the log decay g [S][nh*d] and beta [S][nh]; qkv as
 * fd_op_kda_conv_silu writes it ([S][3][nh*d]); torch.exp / torch.sqrt as
 * the MKL kernel family vml computes them.  Heads run as tasks of m. */
void fd_op_kda_chunk(const fd_mm *m, enum fd_vml vml, const float *qkv, const float *g, const float *beta, size_t S,
                     size_t d, size_t nh, float *core);
/* o [S][nh*d] bf16 = bf16(w * rmsnorm(bf16(core)) * sigmoid(gate)) per head
 * (fp32, the weight not downcast) */
void fd_op_kda_gated_norm(const float *core, const uint16_t *gate, const uint16_t *w, size_t S, size_t nh, size_t d,
                          float eps, uint16_t *o);

#endif
