/* Eager attention over a selection, as transformers computes it (engine/ops/ops.h). */
#include "engine/ops/ops.h"
#include "engine/ops/kblocks.h"
#include "kernels/torch_ops.h"
#include "kernels/gemm.h"
#include "kernels/rowops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

/* ------------------------------------------------------------ attention */

/* Where head hh's key and value rows live: key row j = [k1 + j*s1 + g*h1,
 * dn values | k2 + j*s2, dr values], value row j = v + j*sv + g*hv (dv
 * values), g = hh / grp (grouped-query heads share their KV head). */
typedef struct head_job {
    const uint16_t *q, *k1, *k2, *v;
    const unsigned char *sel;
    uint16_t *o;
    size_t S, nh, dn, dr, dv, s1, s2, sv, h1, hv, grp;
    float lam;
} head_job;

/* one attention head: o[:, hh, :] = softmax(bf(bf(Q_h K_h^T) * lam)) V_h */
static void attn_head(void *ctx, size_t hh, const fd_mm *m)
{
    const head_job *J = ctx;
    const uint16_t *q = J->q;
    const unsigned char *sel = J->sel;
    uint16_t *o = J->o;
    size_t S = J->S, nh = J->nh, dn = J->dn, dr = J->dr, dv = J->dv, dq = dn + dr, g = hh / J->grp;
    const uint16_t *k1 = J->k1 + g * J->h1, *vv = J->v + g * J->hv;
    float lam = J->lam;
    enum { TB = 32 };
    uint16_t *row = fd_xmalloc((dq > S ? dq : S) * 2 + 2);
    /* P.V contracts over the S keys: oneDNN's K-blocks apply (measured for
     * bmm as for Linear in the pair order: two blocks to 2,048 keys,
     * 1024-blocks past it) */
    fd_kplan kpl;
    fd_kplan_bf16(m->order == FD_ORDER_TILE, S, dv, S, &kpl);
    size_t nvb = kpl.nb;
    fd_packed_head kh, *vb = fd_xcalloc(nvb, sizeof *vb);
    fd_mm_alloc(&kh, S, dq);
    for (size_t b = 0; b < nvb; b++) fd_mm_alloc(&vb[b], dv, kpl.st[b + 1] - kpl.st[b]);
    size_t os = kh.tiles * FD_TILE, ov = vb[0].tiles * FD_TILE;
    uint32_t *qp = fd_xmalloc((TB * kh.kp + 1) * 4), *pp = fd_xmalloc((TB * vb[0].kp + 1) * 4);
    float *sc = fd_xmalloc((TB * os + 1) * sizeof *sc);
    float *ob = fd_xmalloc((TB * ov + 1) * 4), *ob2 = fd_xmalloc((TB * ov + 1) * 4);
    uint16_t *P = fd_xmalloc(TB * S * 2 + 2);
    {
        for (size_t j = 0; j < S; j++) {
            memcpy(row, k1 + j * J->s1, dn * 2);
            if (dr) memcpy(row + dn, J->k2 + j * J->s2, dr * 2);
            fd_mm_set_row(&kh, j, row);
        }
        for (size_t d = 0; d < dv; d++) {
            for (size_t j = 0; j < S; j++) row[j] = vv[j * J->sv + d];
            for (size_t b = 0; b < nvb; b++) fd_mm_set_row(&vb[b], d, row + kpl.st[b]);
        }
        for (size_t t0 = 0; t0 < S; t0 += TB) {
            size_t nb = S - t0 < TB ? S - t0 : TB;
            fd_mm_pack_rows(q + (t0 * nh + hh) * dq, nb, dq, nh * dq, qp);
            fd_packed_head kc = kh; /* causal: no query of the block sees a later key */
            kc.tiles = (t0 + nb + FD_TILE - 1) / FD_TILE;
            if (kc.tiles > kh.tiles) kc.tiles = kh.tiles;
            fd_mm_run(m, qp, nb, &kc, sc, os);
            for (size_t i = 0; i < nb; i++) {
                const unsigned char *st = sel + (t0 + i) * S;
                size_t nk = t0 + i + 1; /* selections are causal */
                float *si = sc + i * os;
                fd_bf16_rescale(si, nk, lam); /* unselected keys too: the softmax zeroes them */
                fd_torch_softmax_masked(si, st, nk, S); /* the row is S long in torch */
                uint16_t *pi = P + i * S;
                fd_round_bf16(si, NULL, nk, pi);
                memset(pi + nk, 0, (S - nk) * 2);
            }
            fd_mm_pack_rows(P, nb, kpl.st[1], S, pp);
            fd_mm_run(m, pp, nb, &vb[0], ob, ov);
            for (size_t b = 1; b < nvb && t0 + nb > kpl.st[b]; b++) { /* later blocks are all +0: they add nothing */
                fd_mm_pack_rows(P + kpl.st[b], nb, kpl.st[b + 1] - kpl.st[b], S, pp);
                fd_mm_run(m, pp, nb, &vb[b], ob2, ov);
                for (size_t i = 0; i < nb * ov; i++) ob[i] += ob2[i];
            }
            for (size_t i = 0; i < nb; i++)
                for (size_t d = 0; d < dv; d++) o[((t0 + i) * nh + hh) * dv + d] = BF(ob[i * ov + d]);
        }
    }
    free(row); free(qp); free(pp); free(ob); free(ob2); free(sc); free(P);
    fd_packed_head_free(&kh);
    for (size_t b = 0; b < nvb; b++) fd_packed_head_free(&vb[b]);
    free(vb);
}

void fd_op_attention(const fd_mm *m, const uint16_t *q, const uint16_t *kv, const uint16_t *a, const unsigned char *sel,
                     uint16_t *o, size_t S, size_t nh, size_t dn, size_t dr, size_t dv, size_t rkv)
{
    fd_op_attention_scaled(m, q, kv, a, sel, o, S, nh, dn, dr, dv, rkv, (float)pow((double)(dn + dr), -0.5));
}

void fd_op_attention_scaled(const fd_mm *m, const uint16_t *q, const uint16_t *kv, const uint16_t *a,
                            const unsigned char *sel, uint16_t *o, size_t S, size_t nh, size_t dn, size_t dr, size_t dv,
                            size_t rkv, float scale)
{
    size_t s1 = nh * (dn + dv);
    head_job hj = {q, kv, dr ? a + rkv : NULL, kv + dn, sel, o, S, nh, dn, dr, dv, s1, rkv + dr, s1, dn + dv, dn + dv, 1, scale};
    fd_mm_each(m, nh, attn_head, &hj);
}

void fd_op_attention_gqa(const fd_mm *m, const uint16_t *q, const uint16_t *k, const uint16_t *v, const unsigned char *sel,
                         uint16_t *o, size_t S, size_t nh, size_t nkv, size_t d)
{
    size_t s = nkv * d;
    head_job hj = {q, k, NULL, v, sel, o, S, nh, d, 0, d, s, 0, s, d, d, nh / nkv, (float)pow((double)d, -0.5)};
    fd_mm_each(m, nh, attn_head, &hj);
}


void fd_op_gqa_tail(const fd_mm *m, uint16_t *q, uint16_t *k, const uint16_t *v, const fd_rope *R,
                    const unsigned char *sel, const fd_lin *op, size_t S, size_t nh, size_t nkv, size_t d, size_t H,
                    uint16_t *x, uint16_t *h, long long L)
{
    fd_op_rope_heads(m, q, nh, k, nkv, d, R, S);
    fd_op_dump(L, "q_rope", "bf16", q, S * nh * d * 2);
    fd_op_dump(L, "k_rope", "bf16", k, S * nkv * d * 2);
    uint16_t *o = fd_xmalloc(S * nh * d * 2);
    fd_op_attention_gqa(m, q, k, v, sel, o, S, nh, nkv, d);
    fd_op_dump(L, "attn_core", "bf16", o, S * nh * d * 2);
    fd_lin_apply(m, op, o, S, h);
    fd_op_dump(L, "o_proj", "bf16", h, S * H * 2);
    fd_op_residual_add(m, x, h, S * H);
    fd_op_dump(L, "attn_resid", "bf16", x, S * H * 2);
    free(o);
}
