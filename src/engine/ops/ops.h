/* The op library every architecture calls (engine/arch/<model_type>/), so
 * all follow the same rounding contract (engine/arch/glm_moe_dsa/forward.h):
 * Linear = canonical fp32 dot + bias, one bf16 rounding (ops/linear.c);
 * RMSNorm with torch's reduction order, LayerNorm, silu, the residual add
 * (ops/norm.c); RoPE (ops/rope.c); eager attention (ops/attention.c);
 * torch.topk's selection among ties (ops/topk.c); tensor access and the
 * debug dump (ops/tensor.c).  No op calls into an architecture. */
#ifndef FD_ENGINE_OPS_H
#define FD_ENGINE_OPS_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "engine/ops/matmul.h"
#include "engine/weights.h"
#include "util/err.h"

/* summation orders: linear.c.  LIN_F32_SEQ is asked for; a weight stored
 * as F32 then runs as LIN_F32_W (its fp32 values, never rounded). */
enum lin_mode { LIN_BF16, LIN_F32_SEQ, LIN_F32_W };

typedef struct fd_lin {
    fd_packed_head p;      /* K-block 0 (all of K when there is one block) */
    fd_packed_head *more;  /* K-blocks 1 .. nb-1 */
    size_t *kst;           /* nb + 1 block starts (engine/ops/kblocks.h) */
    size_t nb, half;       /* half > 0: blocks [half, nb) are summed apart and added last */
    float *bias;           /* N or NULL */
    float **fw;            /* LIN_F32_W: per K-block, p.tiles x block K x 16 fp32 words (kernels/gemm_f32.h) */
    size_t N, K;
    enum lin_mode mode;
} fd_lin;

typedef struct fd_keyscore { float s; size_t j; } fd_keyscore;

/* Eager MLA attention of S queries, nh heads, as transformers computes it
 * (ops/attention.c attn_head): per head, scores q.k over [k_nope | k_rope] (q rows
 * of dn + dr, kv rows of nh x (dn + dv), the shared rope key at a + rkv of
 * rows rkv + dr; dr may be 0 and a NULL), bf(bf(s) * (dn+dr)^-0.5), the
 * selection sel[t*S + j] (causal), torch's softmax over the S-long row, P.V
 * in oneDNN's K-blocks; o [S][nh][dv] bf16.  Heads run on m's threads. */
void fd_op_attention(const fd_mm *m, const uint16_t *q, const uint16_t *kv, const uint16_t *a, const unsigned char *sel,
                     uint16_t *o, size_t S, size_t nh, size_t dn, size_t dr, size_t dv, size_t rkv);
/* The same with the score scale given (fp32; transformers' `scaling`, e.g.
 * yarn's mscale folded in). */
void fd_op_attention_scaled(const fd_mm *m, const uint16_t *q, const uint16_t *kv, const uint16_t *a,
                            const unsigned char *sel, uint16_t *o, size_t S, size_t nh, size_t dn, size_t dr, size_t dv,
                            size_t rkv, float scale);

/* Eager grouped-query attention (transformers' eager_attention_forward with
 * repeat_kv): q [S][nh][d], k and v [S][nkv][d] bf16 (query head hh reads KV
 * head hh / (nh / nkv)), scores bf(bf(q.k) * d^-0.5), the selection sel (causal,
 * S x S), torch's softmax, P.V as fd_op_attention; o [S][nh][d]. */
void fd_op_attention_gqa(const fd_mm *m, const uint16_t *q, const uint16_t *k, const uint16_t *v, const unsigned char *sel,
                         uint16_t *o, size_t S, size_t nh, size_t nkv, size_t d);
/* LlamaMLP: y = down(bf(bf(silu(gate(x))) * up(x))) for rows of x, the
 * Linears PREFIX{gate,up,down}_proj (with their biases when bias); ops/mlp.c. */
int fd_op_mlp_swiglu(const fd_mm *m, const fd_weights *W, size_t H, size_t I, int bias, const char *prefix,
                     const uint16_t *x, size_t rows, uint16_t *y, fd_err *e);
/* The same on packed Linears; per_row: silu's contiguous run is one row (an
 * expert's strided gate half, grouped_mm) instead of the whole output. */
void fd_op_swiglu(const fd_mm *m, const fd_lin *g, const fd_lin *u, const fd_lin *d, const uint16_t *x, size_t rows,
                  int per_row, uint16_t *y);
/* Its middle step: a = bf(bf(silu(a)) * b) over [rows, I] (the gate and up
 * outputs), silu's run as above. */
void fd_op_glu(const fd_mm *m, uint16_t *a, const uint16_t *b, size_t rows, size_t I, int per_row);
/* Qwen3-MoE's sparse block (transformers 5.25 Qwen3MoeSparseMoeBlock with
 * grouped_mm experts) on S rows of h2, layer prefix P ("model.layers.L.mlp."):
 * bf16 router P"gate" [E, H], fp32 softmax of the bf16 logits, torch.topk(k,
 * sorted) (fd_op_topk_sorted), optional renormalisation by their fp32 sum,
 * weights cast to bf16; each expert (per-expert P"experts.X.{gate,up,down}_proj"
 * or fused P"experts.{gate_up,down}_proj") over its tokens, y_e bf16; the
 * combine bf(sum over slots in slot order of fp32(bf(y_e * w_e))); ops/moe_softmax.c. */
int fd_op_moe_softmax(const fd_mm *m, const fd_weights *W, const char *P, size_t H, size_t E, size_t Im, size_t k,
                      int norm_topk_prob, const uint16_t *h2, size_t S, uint16_t *y, fd_err *e);
/* MiniMax-M2's sparse block (transformers 5.25 MiniMaxM2SparseMoeBlock,
 * grouped_mm experts) on S rows of h2, prefix P ("model.layers.L.block_sparse_moe."):
 * bf16 router P"gate" [E, H]; sigmoid of the bf16 logits in fp32 (torch's
 * vector / tail split over the [S, E] tensor); choice scores + the
 * P"e_score_correction_bias" as a bf16 load holds it (an F32 bias rounded to
 * bf16); torch.topk(k, sorted=False) (fd_op_topk_ordered: its slot order);
 * the chosen sigmoids divided by their fp32 sum (fd_op_sum_aten), kept fp32;
 * experts P"experts.X.<part[0..2]>.weight" (gate, up, down) or fused, each
 * over its tokens, y_e bf16; the combine bf(sum over slots in slot order of
 * fp32(y_e) * w_e).  dump_logits (S x E bf16) / dump_experts (S x k slot
 * order) when not NULL.  ops/moe_softmax.c. */
int fd_op_moe_sigmoid(const fd_mm *m, const fd_weights *W, const char *P, const char *const part[3], size_t H, size_t E,
                      size_t Im, size_t k, const uint16_t *h2, size_t S, uint16_t *y, uint16_t *dump_logits,
                      size_t *dump_experts, fd_err *e);

/* Zero-centred RMSNorm (Qwen3.5): bf(fp32(x) * rsqrt(mean(x^2) + eps) * (1 + fp32(w))),
 * rows on m's threads (x may equal y); ops/norm.c. */
void fd_op_rmsnorm_zc_mm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const uint16_t *w, float eps, uint16_t *y);
/* The zero-centred norm with its multiplier m [n] fp32 given (a GGUF's stored
 * 1 + w, engine/gguf_model.h): m = 1 + fp32(w) gives fd_op_rmsnorm_zc_mm's bits. */
void fd_op_rmsnorm_mul_mm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const float *mul, float eps, uint16_t *y);
/* The depthwise causal conv1d of the linear-attention layers (F.conv1d with
 * padding K-1, the first S outputs): x [S][C] bf16 (channels last), w [C][K]
 * fp32 (bf16 weights widened exactly), acc [S][C] fp32 = one FMA chain over
 * the taps in increasing order (oneDNN's order, measured); ops/delta.c. */
void fd_op_causal_conv1d(const uint16_t *x, size_t S, size_t C, const float *w, size_t K, float *acc);
/* transformers' torch_chunk_gated_delta_rule (chunk 64, use_qk_l2norm_in_kernel)
 * for one value head: q, k [S][dk], v [S][dv], g (log decay) and beta [S],
 * all fp32; out [S][dv] fp32; ops/delta.c. */
void fd_op_gated_delta_chunk(const float *q, const float *k, const float *v, const float *g, const float *beta, size_t S,
                             size_t dk, size_t dv, float *out);

/* The tensor named by fmt/ap with ndim dims of logical shape (d0, d1, d2):
 * BF16, F32 or quantized; checkpoint_mismatch when absent or mis-shaped. */
const fd_tensor *fd_op_vget(const fd_weights *w, fd_err *e, int ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                            const char *fmt, va_list ap);
/* The same with a printf-style name. */
const fd_tensor *fd_op_get(const fd_weights *w, fd_err *e, int ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                           const char *fmt, ...) __attribute__((format(printf, 7, 8)));
/* The embedding lookup of every architecture's begin hook: the S x H bf16
 * rows of the [V, H] table `name` (BF16 or F32, cast as from_pretrained
 * does) for ids; bad_usage for an empty sequence, checkpoint_mismatch for a
 * missing or mis-shaped table, bad_token naming the id and its position for
 * an id outside [0, V).  Dumps "ids" and "embed" (fd_op_dump).  The caller
 * frees; NULL with e set. */
uint16_t *fd_op_embed(const fd_weights *w, const char *name, size_t V, size_t H, const int64_t *ids, size_t S,
                      fd_err *e);
/* FIDELITY_FORWARD_DUMP=DIR: an intermediate array of the FIRST forward of
 * the process as DIR/<stage>[.L<layer>].<ext> (raw little-endian, no
 * header); a no-op when the variable is unset or empty (tests/parity/). */
void fd_op_dump(long long L, const char *stage, const char *ext, const void *p, size_t bytes);
/* Rows row0..row0+N-1 (K logical columns) of a weight tensor, for a
 * product over M rows (M picks the tile order's K-blocks, kblocks.h), in
 * m's order, packed on m's threads (the caller's when m has no pool). */
void fd_lin_pack(const fd_mm *m, fd_lin *L, const fd_tensor *t, uint64_t row0, size_t N, size_t K, size_t M);
/* The same in LIN_F32_SEQ order (an fp32 Linear on upcast weights: MKL sgemm). */
void fd_lin_pack_f32seq(fd_lin *L, const fd_tensor *t, uint64_t row0, size_t N, size_t K);
/* NAME.weight [N, K] (and NAME.bias [N]); checkpoint_mismatch when absent or mis-shaped. */
int fd_lin_load(const fd_mm *m, fd_lin *L, const fd_weights *w, fd_err *e, size_t N, size_t K, size_t M, int with_bias,
                const char *name);
void fd_lin_free(fd_lin *L);
/* fp32 dots, out[r * L->p.tiles*16 + n]; the caller frees. */
float *fd_lin_dots(const fd_mm *m, const fd_lin *L, const uint16_t *x, size_t rows);
/* y = bf16(dot + bias), rows x N. */
void fd_lin_apply(const fd_mm *m, const fd_lin *L, const uint16_t *x, size_t rows, uint16_t *y);
/* Packing with explicit K-blocks (plan NULL: one chain), rows packed on m's
 * threads (NULL: the caller's); linear.c. */
struct fd_kplan;
void fd_lin_pack_plan(const fd_mm *m, fd_lin *L, const fd_tensor *t, uint64_t row0, size_t N, size_t K, enum lin_mode mode,
                      const struct fd_kplan *plan);
/* MKL's blocks for a router's [S, K] x [K, E] fp32 product where measured, else NULL (one chain). */
const struct fd_kplan *fd_router_plan(size_t S, size_t E, size_t K, struct fd_kplan *p);
/* RMSNorm of rows x n (x may equal y), rows on m's threads (NULL: the caller's). */
void fd_op_rmsnorm_mm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const uint16_t *w, float eps, uint16_t *y);
/* LayerNorm in place, torch's CPU kernel (torch_ops.h), bf16 weight and bias. */
void fd_op_layernorm_bf16(uint16_t *x, size_t rows, size_t n, const uint16_t *w, const uint16_t *b, float eps);
/* x = bf16(x + y) element-wise (the residual adds), on m's threads from 65,536 elements. */
void fd_op_residual_add(const fd_mm *m, uint16_t *x, const uint16_t *y, size_t n);
/* The first n elements of a BF16/F32 tensor as fp32 (caller frees). */
float *fd_op_vec_f32(const fd_tensor *t, size_t n);
/* A Linear [N, K] named by the format (".weight" appended), no bias, for M rows. */
int fd_op_lin_named(const fd_mm *m, size_t M, fd_lin *L, const fd_weights *w, fd_err *e, size_t N, size_t K, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
/* n elements from off of a BF16/F32 tensor as bf16 (caller frees). */
uint16_t *fd_op_vec_bf16(const fd_tensor *t, uint64_t off, uint64_t n);
/* RoPE tables (default rope_type): cos/sin of S positions x d/2 rounded to bf16. */
typedef struct fd_rope {
    uint16_t *c, *s; /* S x d/2 */
    size_t half;
} fd_rope;
void fd_rope_init(fd_rope *R, size_t S, size_t d, double theta);
/* Interleaved rotation of z[0..d) at position p, stored de-interleaved (as HF). */
void fd_rope_rot(uint16_t *z, const fd_rope *R, size_t p);
void fd_rope_free(fd_rope *R);
/* Tables from given inverse frequencies (d/2 of them), cos/sin times
 * attention_scaling in fp32 before the bf16 rounding (yarn). */
void fd_rope_init_freqs(fd_rope *R, size_t S, size_t d, const float *inv_freq, double attention_scaling);
/* yarn's d/2 inverse frequencies (transformers' _compute_yarn_parameters). */
void fd_rope_yarn_inv_freq(float *inv, size_t d, double base, double factor, double beta_fast, double beta_slow,
                           double orig_max_pos, int truncate);
/* inv_freq of the default rope_type (d/2 values) and llama3's rescaling of
 * it in place (transformers' _compute_llama3_parameters, fp32 op by op). */
void fd_rope_inv_default(float *inv, size_t d, double theta);
void fd_rope_inv_llama3(float *inv, size_t d, double factor, double low_freq_factor, double high_freq_factor,
                        double original_max_position_embeddings);
/* rotate_half rotation of z[0..d) (the non-interleaved layout). */
void fd_rope_rot_half(uint16_t *z, const fd_rope *R, size_t p);
/* rotate_half on every head of rows 0..S of q [S][nq][d] and k [S][nk][d]
 * (k may be NULL with nk 0): each head's first 2 * R->half elements are
 * rotated at the row's position, the rest pass (partial rotary); rows run
 * as tasks of m (each row's result is independent of the split). */
void fd_op_rope_heads(const fd_mm *m, uint16_t *q, size_t nq, uint16_t *k, size_t nk, size_t d, const fd_rope *R, size_t S);
/* The tail of a GQA self-attention block (llama, qwen3, minimax_m2): q and k
 * rotated in place (fd_op_rope_heads, R's width per head), causal eager GQA
 * over sel, o_proj into h ([S][H]), the residual x += h; dumps q_rope,
 * k_rope, attn_core, o_proj, attn_resid of layer L. */
void fd_op_gqa_tail(const fd_mm *m, uint16_t *q, uint16_t *k, const uint16_t *v, const fd_rope *R,
                    const unsigned char *sel, const fd_lin *op, size_t S, size_t nh, size_t nkv, size_t d, size_t H,
                    uint16_t *x, uint16_t *h, long long L);
void fd_op_rmsnorm(const uint16_t *x, size_t rows, size_t n, const uint16_t *w, float eps, uint16_t *y);
void fd_op_layernorm(uint16_t *x, size_t rows, size_t n, const float *w, const float *b, float eps);
float fd_op_silu(float a);
/* After the call ks[0..k) is the set (and order) torch's CPU topk returns. */
void fd_op_topk_select(fd_keyscore *ks, size_t n, size_t k);
/* torch.topk(sorted=False) with its output order (1 <= k <= n); topk.c. */
void fd_op_topk_ordered(fd_keyscore *ks, size_t n, size_t k);
/* torch.topk(sorted=True) (1 <= k <= n): the partial_sort path is sorted as
 * selected; the nth_element path then std::sorts the first k - 1 (an
 * insertion sort, exact for k <= 17). */
void fd_op_topk_sorted(fd_keyscore *ks, size_t n, size_t k);
/* Element i of a BF16/F32 tensor as bf16 (RNE) / as fp32. */
uint16_t fd_tensor_bf16_at(const fd_tensor *t, uint64_t i);
float fd_tensor_f32_at(const fd_tensor *t, uint64_t i);

#endif
