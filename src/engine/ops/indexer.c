/* The DSA indexer (DeepSeek V3.2's lightning indexer) of glm_moe_dsa and
 * deepseek_v32 (engine/ops/indexer.h); rounding points:
 * engine/arch/glm_moe_dsa/dsa_forward.h ("Indexer top-k"). */
#include "engine/ops/indexer.h"
#include "engine/ops/kblocks.h"
#include "engine/ops/reduce.h"
#include "kernels/gemm.h"
#include "kernels/rowops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

typedef fd_lin lin;
typedef fd_keyscore keyscore;
#define layernorm fd_op_layernorm_bf16
#define vec_bf16 fd_op_vec_bf16

/* sel[t*S + j] = 1 iff key j is attended by query t. */
static void select_all_causal(unsigned char *sel, size_t S)
{
    memset(sel, 0, S * S);
    for (size_t t = 0; t < S; t++) memset(sel + t * S, 1, t + 1);
}

enum { IDX_TB = 16 };

typedef struct iblock_job {
    const uint16_t *q;
    const float *wt;
    const fd_packed_head *kx;
    unsigned char *sel;
    size_t S, Hi, Di, topk, nblocks, ntasks;
    float hs, ds;
} iblock_job;

/* indexer scores and top-k selection of query rows topk + IDX_TB*bi .. (rows
 * t + 1 > topk are truly sparse), in the caller's buffers */
static void iblock(const iblock_job *J, size_t bi, const fd_mm *m, uint32_t *qp, float *dots, keyscore *ks, float *isum)
{
    const uint16_t *q = J->q;
    const float *wt = J->wt;
    unsigned char *sel = J->sel;
    size_t S = J->S, Hi = J->Hi, Di = J->Di, topk = J->topk, t0 = topk + bi * IDX_TB;
    float hs = J->hs, ds = J->ds;
    fd_packed_head kx = *J->kx;
    enum { TB = IDX_TB };
    size_t os = kx.tiles * FD_TILE;
    size_t nb = S - t0 < TB ? S - t0 : TB;
    fd_mm_pack_rows(q + t0 * Hi * Di, nb * Hi, Di, Di, qp);
    fd_packed_head kc = kx; /* causal: keys past the block's last query are never scored */
    kc.tiles = (t0 + nb + FD_TILE - 1) / FD_TILE;
    if (kc.tiles > kx.tiles) kc.tiles = kx.tiles;
    fd_mm_run_seq(m, qp, nb * Hi, &kc, dots, os);
    for (size_t t = t0; t < t0 + nb; t++) {
        const float *dt = dots + (t - t0) * Hi * os;
        /* I_j = sum over heads in head order (torch: an fp32 [1,H]x[H,S]
         * matmul, one FMA chain over the heads, measured for H = 4), one
         * key at a time: heads outer so each pass reads one contiguous row */
        for (size_t j = 0; j <= t; j++) isum[j] = 0.0f;
        for (size_t hh = 0; hh < Hi; hh++) {
            float wv = wt[t * Hi + hh] * hs;
            const float *row = dt + hh * os;
            fd_relu_fma_acc(isum, row, ds, wv, t + 1);
        }
        for (size_t j = 0; j <= t; j++) { ks[j].s = isum[j]; ks[j].j = j; }
        for (size_t j = t + 1; j < S; j++) { ks[j].s = -INFINITY; ks[j].j = j; } /* masked future keys */
        fd_op_topk_select(ks, S, topk);
        memset(sel + t * S, 0, S);
        for (size_t i = 0; i < topk; i++) sel[t * S + ks[i].j] = 1;
    }
}

/* task ti: blocks ti, ti + ntasks, ... (interleaved: later blocks score
 * more keys) with one set of buffers, so the scores (TB x Hi rows of S
 * floats: 512 KiB at 2,048 keys) are written to warm memory, not to a
 * fresh mapping per block (its page faults, and the cold stores of a
 * product of K = 32, ran the indexer's products at a third of their
 * stand-alone rate inside a capture).  Each block writes its own rows of
 * sel: the assignment moves no bit. */
static void iblock_task(void *ctx, size_t ti, const fd_mm *m)
{
    const iblock_job *J = ctx;
    enum { TB = IDX_TB };
    size_t os = J->kx->tiles * FD_TILE, kp = J->kx->kp;
    uint32_t *qp = fd_xmalloc((TB * J->Hi * kp + 1) * 4);
    float *dots = fd_xmalloc((TB * J->Hi * os + 1) * 4);
    keyscore *ks = fd_xmalloc(J->S * sizeof *ks);
    float *isum = fd_xmalloc(J->S * sizeof *isum);
    for (size_t bi = ti; bi < J->nblocks; bi += J->ntasks) iblock(J, bi, m, qp, dots, ks, isum);
    free(ks); free(isum); free(qp); free(dots);
}

int fd_op_dsa_indexer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const char *P, long long L, const uint16_t *h,
                      const uint16_t *cq, size_t S, const fd_rope *R, int rotate_half, unsigned char *sel, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, rq = (size_t)c->q_lora_rank, Hi = (size_t)c->index_n_heads,
           Di = (size_t)c->index_head_dim, dr = (size_t)c->qk_rope_head_dim, topk = (size_t)c->index_topk;
    void (*rot)(uint16_t *, const fd_rope *, size_t) = rotate_half ? fd_rope_rot_half : fd_rope_rot;
    select_all_causal(sel, S);
    if (S <= topk) return 0; /* every row keeps all causal keys: exact dense causal */
    char nm[256];
    lin wq, wk, wp;
    snprintf(nm, sizeof nm, "%s.wq_b", P);
    if (fd_lin_load(m, &wq, W, e, Hi * Di, rq, S, 0, nm)) return -1;
    snprintf(nm, sizeof nm, "%s.wk", P);
    if (fd_lin_load(m, &wk, W, e, Di, H, S, 0, nm)) { fd_lin_free(&wq); return -1; }
    snprintf(nm, sizeof nm, "%s.weights_proj", P);
    if (fd_lin_load(m, &wp, W, e, Hi, H, S, 0, nm)) { fd_lin_free(&wq); fd_lin_free(&wk); return -1; }
    const fd_tensor *kw = fd_op_get(W, e, 1, Di, 0, 0, "%s.k_norm.weight", P);
    const fd_tensor *kb = kw ? fd_op_get(W, e, 1, Di, 0, 0, "%s.k_norm.bias", P) : NULL;
    if (!kb) { fd_lin_free(&wq); fd_lin_free(&wk); fd_lin_free(&wp); return -1; }
    uint16_t *lw = vec_bf16(kw, 0, Di), *lb = vec_bf16(kb, 0, Di);
    uint16_t *q = fd_xmalloc(S * Hi * Di * 2), *k = fd_xmalloc(S * Di * 2), *wt = fd_xmalloc(S * Hi * 2);
    float *wf = fd_xmalloc(S * Hi * 4 + 4);
    fd_lin_apply(m, &wq, cq, S, q);
    fd_lin_apply(m, &wk, h, S, k);
    fd_lin_apply(m, &wp, h, S, wt);
    for (size_t i = 0; i < S * Hi; i++) wf[i] = F(wt[i]);
    fd_op_dump(L, "idx_q", "bf16", q, S * Hi * Di * 2);
    fd_op_dump(L, "idx_k", "bf16", k, S * Di * 2);
    fd_op_dump(L, "idx_w", "bf16", wt, S * Hi * 2);
    layernorm(k, S, Di, lw, lb, 1e-6f);
    fd_op_dump(L, "idx_k_norm", "bf16", k, S * Di * 2);
    for (size_t t = 0; t < S; t++) {
        for (size_t hh = 0; hh < Hi; hh++) rot(q + (t * Hi + hh) * Di, R, t); /* rope FIRST dr dims */
        rot(k + t * Di, R, t);
    }
    (void)dr;
    /* scores of a block of query rows against every key, as one product:
     * rows (t, head) of q times the packed keys.  torch computes them as an
     * fp32 matmul of the upcast bf16 values (MKL: one FMA chain in
     * increasing k, exact products): the canonical kernel gives that order
     * on pair-swapped operands (LIN_F32_SEQ) */
    for (size_t t = 0; t < S; t++) {
        for (size_t hh = 0; hh < Hi; hh++) fd_op_swap_pairs16(q + (t * Hi + hh) * Di, Di);
        fd_op_swap_pairs16(k + t * Di, Di);
    }
    fd_packed_head kx;
    fd_mm_alloc(&kx, S, Di);
    for (size_t j = 0; j < S; j++) fd_mm_set_row(&kx, j, k + j * Di);
    /* blocks of query rows in parallel (each scores and selects its own rows) */
    size_t nblocks = (S - topk + IDX_TB - 1) / IDX_TB, ntasks = 4 * (size_t)(m->threads > 0 ? m->threads : 1);
    if (ntasks > nblocks) ntasks = nblocks;
    iblock_job ij = {q, wf, &kx, sel, S, Hi, Di, topk, nblocks, ntasks, (float)pow((double)Hi, -0.5), (float)pow((double)Di, -0.5)};
    fd_mm_each(m, ntasks, iblock_task, &ij);
    fd_packed_head_free(&kx); free(q); free(k); free(wt); free(wf); free(lw); free(lb);
    fd_lin_free(&wq); fd_lin_free(&wk); fd_lin_free(&wp);
    return 0;
}

