/* NoPE MLA + kpool DSA indexer of glm5_next (Glm5NextTextAttention,
 * Glm5NextTextIndexer, eager attention).  Rounding points in
 * docs/MODEL-GLM5-NEXT.md §3.4. */
#include "engine/arch/glm5_next/next_internal.h"
#include "kernels/torch_ops.h"
#include "kernels/gemm.h"
#include "util/buf.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* sel[t*S + j] = 1 for the keys query t attends: the tokens of the selected
 * complete pools plus the current incomplete pool (the "tail"). */
static int indexer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const char *P, const uint16_t *x,
                   const uint16_t *qr, size_t S, unsigned char *sel, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, rq = (size_t)c->q_lora_rank, Hi = (size_t)c->index_n_heads,
           Di = (size_t)c->index_head_dim, kp = (size_t)NX(c)->kpool, np = S / kp,
           selk = (size_t)c->index_topk / kp < np ? (size_t)c->index_topk / kp : np;
    memset(sel, 0, S * S);
    for (size_t t = 0; t < S; t++) { /* the tail: tokens after the last complete pool */
        size_t tail = (t + 1) % kp;
        memset(sel + t * S + (t + 1 - tail), 1, tail);
    }
    fd_lin wq = {0}, wk = {0}, wp = {0}, cg = {0};
    int rc = -1;
    uint16_t *q = NULL, *k = NULL, *gs = NULL, *w16 = NULL, *pk = NULL;
    float *lw = NULL, *lb = NULL, *ape = NULL, *sc = NULL, *is = NULL;
    fd_keyscore *ks = NULL;
    if (fd_op_lin_named(m, S, &wq, W, e, Hi * Di, rq, "%s.indexer.wq_b", P) ||
        fd_op_lin_named(m, S, &wk, W, e, Di, H, "%s.indexer.wk", P) ||
        fd_op_lin_named(m, S, &wp, W, e, Hi, H, "%s.indexer.weights_proj", P))
        goto out;
    const fd_tensor *kw = fd_op_get(W, e, 1, Di, 0, 0, "%s.indexer.k_norm.weight", P);
    const fd_tensor *kb = kw ? fd_op_get(W, e, 1, Di, 0, 0, "%s.indexer.k_norm.bias", P) : NULL;
    const fd_tensor *ta = kb ? fd_op_get(W, e, 2, kp, Di, 0, "%s.indexer.index_kpool_compress_ape", P) : NULL;
    const fd_tensor *tg = ta ? fd_op_get(W, e, 2, Di, H, 0, "%s.indexer.index_kpool_compress_gate", P) : NULL;
    if (!tg) goto out;
    fd_lin_pack(m, &cg, tg, 0, Di, H, S);
    lw = fd_xmalloc(Di * 4);
    lb = fd_xmalloc(Di * 4);
    for (size_t j = 0; j < Di; j++) { lw[j] = F(fd_tensor_bf16_at(kw, j)); lb[j] = F(fd_tensor_bf16_at(kb, j)); }
    ape = fd_xmalloc(kp * Di * 4);
    for (size_t j = 0; j < kp * Di; j++) ape[j] = F(fd_tensor_bf16_at(ta, j));
    q = fd_xmalloc(S * Hi * Di * 2);
    k = fd_xmalloc(S * Di * 2);
    gs = fd_xmalloc(S * Di * 2);
    w16 = fd_xmalloc(S * Hi * 2);
    fd_lin_apply(m, &wq, qr, S, q);
    fd_lin_apply(m, &wk, x, S, k);
    fd_op_layernorm(k, S, Di, lw, lb, 1e-6f);
    fd_lin_apply(m, &cg, x, S, gs);
    fd_lin_apply(m, &wp, x, S, w16);
    if (!np) { rc = 0; goto out; }
    /* pooled keys: per pool and channel, softmax over the kp tokens of
     * (gate score + ape) in fp32 -> bf16 weights; bf16 products summed in fp32 */
    pk = fd_xmalloc(np * Di * 2);
    for (size_t p = 0; p < np; p++)
        for (size_t dd = 0; dd < Di; dd++) {
            float lg[256], mx = -INFINITY, sum = 0.0f, acc = 0.0f;
            for (size_t i = 0; i < kp; i++) {
                lg[i] = F(gs[(p * kp + i) * Di + dd]) + ape[i * Di + dd];
                if (lg[i] > mx) mx = lg[i];
            }
            /* _vec_softmax (dim 2 of [pools, kp, Di]): Sleef exp on the full
             * 16-lane column vectors, libm on the Di % 16 rest; e / sum */
            int vec = dd < Di - Di % 16;
            for (size_t i = 0; i < kp; i++) { lg[i] = vec ? fd_torch_expf(lg[i] - mx) : expf(lg[i] - mx); sum += lg[i]; }
            for (size_t i = 0; i < kp; i++) acc += F(BF(F(BF(lg[i] / sum)) * F(k[(p * kp + i) * Di + dd])));
            pk[p * Di + dd] = BF(acc);
        }
    /* scores[t][h][p] = relu(q.pk * Di^-0.5); index[t][p] = sum_h w[t][h] * Hi^-0.5 * scores */
    fd_packed_head pkh;
    fd_mm_alloc(&pkh, np, Di);
    /* q.pk: MKL sgemm on bf16 values (exact products), one chain in increasing
     * k: the canonical odd-then-even pair chain on pair-swapped operands */
    fd_op_swap_pairs16(pk, np * Di);
    fd_op_swap_pairs16(q, S * Hi * Di);
    for (size_t p = 0; p < np; p++) fd_mm_set_row(&pkh, p, pk + p * Di);
    size_t os = pkh.tiles * FD_TILE;
    enum { TB = 16 };
    uint32_t *qp = fd_xmalloc((TB * Hi * pkh.kp + 1) * 4);
    sc = fd_xmalloc((TB * Hi * os + 1) * 4);
    is = fd_xmalloc(np * 4);
    ks = fd_xmalloc(np * sizeof *ks);
    float ss = (float)pow((double)Di, -0.5), hs = (float)pow((double)Hi, -0.5);
    int naive = Hi * np < 400;
    for (size_t t0 = 0; t0 < S; t0 += TB) {
        size_t nb = S - t0 < TB ? S - t0 : TB;
        fd_mm_pack_rows(q + t0 * Hi * Di, nb * Hi, Di, Di, qp);
        fd_mm_run_seq(m, qp, nb * Hi, &pkh, sc, os);
        for (size_t i = 0; i < nb; i++) {
            size_t t = t0 + i, nvalid = (t + 1) / kp < np ? (t + 1) / kp : np;
            unsigned char *st = sel + t * S;
            if (nvalid <= selk) { /* every complete visible pool is selected */
                memset(st, 1, nvalid * kp);
                continue;
            }
            for (size_t p = 0; p < np; p++) {
                float acc = 0.0f;
                for (size_t h = 0; h < Hi; h++) {
                    float s = sc[(i * Hi + h) * os + p] * ss;
                    if (!(s > 0.0f)) s = 0.0f;
                    /* [1, Hi] @ [Hi, P] per token: ATen's naive bmm below 400
                     * multiply-adds (mul, add), MKL (an FMA chain) from there */
                    acc = naive ? acc + F(w16[t * Hi + h]) * hs * s : fmaf(F(w16[t * Hi + h]) * hs, s, acc);
                }
                ks[p].s = p < nvalid ? acc : -FLT_MAX;
                ks[p].j = p;
            }
            fd_op_topk_select(ks, np, selk);
            for (size_t r = 0; r < selk; r++)
                if (ks[r].j < nvalid) memset(st + ks[r].j * kp, 1, kp);
        }
    }
    fd_packed_head_free(&pkh);
    free(qp);
    rc = 0;
out:
    fd_lin_free(&wq); fd_lin_free(&wk); fd_lin_free(&wp); fd_lin_free(&cg);
    free(q); free(k); free(gs); free(w16); free(pk); free(lw); free(lb); free(ape); free(sc); free(is); free(ks);
    return rc;
}

int nx_dsa(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *x, size_t S,
           unsigned char *sel, uint16_t *y, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, rq = (size_t)c->q_lora_rank, rkv = (size_t)c->kv_lora_rank,
           nh = (size_t)c->num_attention_heads, dn = (size_t)c->qk_nope_head_dim, dv = (size_t)c->v_head_dim;
    char P[160];
    snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.self_attn", L);
    fd_lin qa = {0}, qb = {0}, kva = {0}, kvb = {0}, op = {0};
    uint16_t *qaw = NULL, *kvaw = NULL, *qr = NULL, *q = NULL, *ck = NULL, *kv = NULL, *o = NULL;
    int rc = -1;
    char nm[200];
    snprintf(nm, sizeof nm, "%s.q_a_proj", P);
    if (fd_lin_load(m, &qa, W, e, rq, H, S, c->attention_bias, nm)) goto out;
    snprintf(nm, sizeof nm, "%s.kv_a_proj_with_mqa", P);
    if (fd_lin_load(m, &kva, W, e, rkv, H, S, c->attention_bias, nm)) goto out;
    snprintf(nm, sizeof nm, "%s.o_proj", P);
    if (fd_lin_load(m, &op, W, e, H, nh * dv, S, c->attention_bias, nm)) goto out;
    if (fd_op_lin_named(m, S, &qb, W, e, nh * dn, rq, "%s.q_b_proj", P) ||
        fd_op_lin_named(m, S, &kvb, W, e, nh * (dn + dv), rkv, "%s.kv_b_proj", P))
        goto out;
    const fd_tensor *t1 = fd_op_get(W, e, 1, rq, 0, 0, "%s.q_a_layernorm.weight", P);
    const fd_tensor *t2 = t1 ? fd_op_get(W, e, 1, rkv, 0, 0, "%s.kv_a_layernorm.weight", P) : NULL;
    if (!t2) goto out;
    qaw = fd_op_vec_bf16(t1, 0, rq);
    kvaw = fd_op_vec_bf16(t2, 0, rkv);
    float eps = (float)c->rms_norm_eps;
    qr = fd_xmalloc(S * rq * 2);
    fd_lin_apply(m, &qa, x, S, qr);
    fd_op_rmsnorm(qr, S, rq, qaw, eps, qr);
    q = fd_xmalloc(S * nh * dn * 2);
    fd_lin_apply(m, &qb, qr, S, q);
    ck = fd_xmalloc(S * rkv * 2);
    fd_lin_apply(m, &kva, x, S, ck);
    fd_op_rmsnorm(ck, S, rkv, kvaw, eps, ck);
    kv = fd_xmalloc(S * nh * (dn + dv) * 2);
    fd_lin_apply(m, &kvb, ck, S, kv);
    if (c->indexer_full[L] && indexer(m, W, c, P, x, qr, S, sel, e)) goto out;
    fd_op_dump(L, "sel", "u8", sel, S * S);
    /* eager attention per head, as ops/attention.c's fd_op_attention (no rope part: dr = 0):
     * s = bf(bf(q.k) * dn^-0.5); unselected keys get finfo(bf16).min, i.e.
     * probability exactly 0; torch's lastdim softmax over the S-long row;
     * P.V over oneDNN's K-blocks of the S keys */
    o = fd_xmalloc(S * nh * dv * 2);
    fd_op_attention(m, q, kv, NULL, sel, o, S, nh, dn, 0, dv, 0);
    fd_lin_apply(m, &op, o, S, y);
    rc = 0;
out:
    fd_lin_free(&qa); fd_lin_free(&qb); fd_lin_free(&kva); fd_lin_free(&kvb); fd_lin_free(&op);
    free(qaw); free(kvaw); free(qr); free(q); free(ck); free(kv); free(o);
    return rc;
}
