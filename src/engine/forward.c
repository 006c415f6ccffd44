/* glm_moe_dsa forward to the final RMSNorm output; see forward.h for every
 * rounding, tie and order choice. */
#include "engine/forward.h"
#include "engine/matmul.h"
#include "engine/mlp.h"
#include "kernels/rowops.h"
#include "engine/ops.h"
#include "engine/kblocks.h"
#include "engine/torch_ops.h"
#include "kernels/gemm.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32


/* ------------------------------------------------------------ debug dump */

/* FIDELITY_FORWARD_DUMP=DIR: write intermediate arrays of the forward as raw
 * little-endian files DIR/<stage>[.L<layer>].<bf16|f32|u8> (row-major, no
 * header; shapes follow from config.json and S).  A file that already exists
 * is kept (fopen "wx"), so with several windows DIR holds the FIRST forward
 * call of the process.  Debug aid for tests/parity/layerwise.py; off when
 * the variable is unset or empty. */
void fd_op_dump(long long L, const char *stage, const char *ext, const void *p, size_t bytes)
{
    const char *dir = getenv("FIDELITY_FORWARD_DUMP");
    if (!dir || !*dir) return;
    char path[1024];
    if (L >= 0) snprintf(path, sizeof path, "%s/%s.L%lld.%s", dir, stage, L, ext);
    else snprintf(path, sizeof path, "%s/%s.%s", dir, stage, ext);
    FILE *f = fopen(path, "wbx");
    if (!f) return;
    fwrite(p, 1, bytes, f);
    fclose(f);
}

/* ------------------------------------------------------------ weights */

const fd_tensor *fd_op_vget(const fd_weights *w, fd_err *e, int ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                            const char *fmt, va_list ap)
{
    char name[512];
    vsnprintf(name, sizeof name, fmt, ap);
    const fd_tensor *t = fd_weights_get(w, name);
    if (!t) { fd_fail(e, "checkpoint_mismatch", "", "tensor %s is missing", name); return NULL; }
    uint64_t want[3] = {d0, d1, d2};
    int ok = t->ndim == ndim && (t->qfmt || !strcmp(t->dtype, "BF16") || !strcmp(t->dtype, "F32"));
    for (int i = 0; ok && i < ndim; i++) ok = t->lshape[i] == want[i];
    if (!ok) { fd_fail(e, "checkpoint_mismatch", "", "tensor %s has the wrong shape or dtype", name); return NULL; }
    return t;
}

const fd_tensor *fd_op_get(const fd_weights *w, fd_err *e, int ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const fd_tensor *t = fd_op_vget(w, e, ndim, d0, d1, d2, fmt, ap);
    va_end(ap);
    return t;
}

/* Element i of a BF16/F32 tensor as bf16 (an F32 weight is cast to the
 * bf16 load dtype with round to nearest even, as from_pretrained does). */
static uint16_t t_bf16(const fd_tensor *t, uint64_t i)
{
    const unsigned char *p = t->data;
    if (!strcmp(t->dtype, "BF16")) { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    float f;
    memcpy(&f, p + 4 * i, 4);
    return BF(f);
}

static float t_f32(const fd_tensor *t, uint64_t i)
{
    const unsigned char *p = t->data;
    if (!strcmp(t->dtype, "F32")) { float f; memcpy(&f, p + 4 * i, 4); return f; }
    uint16_t v;
    memcpy(&v, p + 2 * i, 2);
    return F(v);
}

static uint16_t *vec_bf16(const fd_tensor *t, uint64_t off, uint64_t n)
{
    uint16_t *v = fd_xmalloc(n * 2 + 2);
    for (uint64_t i = 0; i < n; i++) v[i] = t_bf16(t, off + i);
    return v;
}

typedef fd_lin lin;

/* ------------------------------------------------------------ norms, rope */

typedef struct norm_job {
    const uint16_t *x, *w;
    size_t n;
    float eps;
    uint16_t *y;
} norm_job;

static void rmsnorm_rows(void *ctx, size_t lo, size_t hi)
{
    const norm_job *j = ctx;
    size_t n = j->n;
    float *t = fd_xmalloc(n * 4 + 4), *w = fd_xmalloc(n * 4 + 4);
    for (size_t k = 0; k < n; k++) w[k] = F(j->w[k]);
    for (size_t r = lo; r < hi; r++) {
        const uint16_t *xr = j->x + r * n;
        uint16_t *yr = j->y + r * n;
        fd_bf16_square(xr, n, t);
        float ss = fd_torch_sum(t, n); /* x.pow(2).mean(-1): torch's cascade order */
        float rs = 1.0f / sqrtf(ss / (float)n + j->eps);
        fd_bf16_scale_round(xr, rs, n, yr);                /* bf(x * rstd) */
        fd_bf16_weight_round(w, n, yr);                    /* bf(w * that) */
    }
    free(t);
    free(w);
}

/* RMSNorm (§3.1) of rows x rows of n, in place allowed (x may equal y);
 * rows spread over m's threads (m NULL: the caller's thread). */
static void rmsnorm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const uint16_t *w, float eps, uint16_t *y)
{
    norm_job j = {x, w, n, eps, y};
    fd_mm_range(m, rows, 16, rmsnorm_rows, &j);
}

/* LayerNorm (indexer k_norm), torch's CPU kernel (torch_ops.h). */
static void layernorm(uint16_t *x, size_t rows, size_t n, const uint16_t *w, const uint16_t *b, float eps)
{
    for (size_t r = 0; r < rows; r++) fd_torch_layernorm_bf16(x + r * n, n, w, b, eps, x + r * n);
}

typedef struct rope {
    uint16_t *c, *s; /* S x d/2 */
    size_t half;
} rope;

static void rope_init(rope *R, size_t S, size_t d, double theta)
{
    R->half = d / 2;
    R->c = fd_xmalloc(S * R->half * 2 + 2);
    R->s = fd_xmalloc(S * R->half * 2 + 2);
    for (size_t i = 0; i < R->half; i++) {
        float ex = (float)(2 * i) / (float)d;
        float inv = 1.0f / powf((float)theta, ex);
        for (size_t p = 0; p < S; p++) {
            float a = (float)p * inv;
            R->c[p * R->half + i] = BF(cosf(a));
            R->s[p * R->half + i] = BF(sinf(a));
        }
    }
}

/* Interleaved rotation of z[0..d) at position p, stored de-interleaved. */
static void rot(uint16_t *z, const rope *R, size_t p)
{
    size_t h = R->half;
    uint16_t tmp[1024];
    uint16_t *o = 2 * h <= 1024 ? tmp : fd_xmalloc(2 * h * 2);
    const uint16_t *c = R->c + p * h, *s = R->s + p * h;
    for (size_t i = 0; i < h; i++) {
        float ci = F(c[i]), si = F(s[i]), e0 = F(z[2 * i]), o1 = F(z[2 * i + 1]);
        o[i] = BF(F(BF(e0 * ci)) - F(BF(o1 * si)));
        o[h + i] = BF(F(BF(o1 * ci)) + F(BF(e0 * si)));
    }
    memcpy(z, o, 2 * h * 2);
    if (o != tmp) free(o);
}

/* RoPE of the query heads and the shared key, token rows on m's threads. */
typedef struct rope_job {
    uint16_t *q, *a;
    const rope *R;
    size_t nh, dq, dn, rkv, dr;
} rope_job;

static void rope_rows(void *ctx, size_t lo, size_t hi)
{
    const rope_job *j = ctx;
    for (size_t t = lo; t < hi; t++) {
        for (size_t hh = 0; hh < j->nh; hh++) rot(j->q + (t * j->nh + hh) * j->dq + j->dn, j->R, t);
        rot(j->a + t * (j->rkv + j->dr) + j->rkv, j->R, t);
    }
}

/* x = bf16(x + y) element-wise (the residual adds), on m's threads. */
typedef struct add_job {
    uint16_t *x;
    const uint16_t *y;
} add_job;

static void add_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    fd_bf16_add(j->x + lo, j->y + lo, hi - lo);
}

static void residual_add(const fd_mm *m, uint16_t *x, const uint16_t *y, size_t n)
{
    add_job j = {x, y};
    fd_mm_range(n >= 1u << 16 ? m : NULL, n, 1u << 15, add_range, &j);
}

/* ------------------------------------------------------------ selection */

typedef fd_keyscore keyscore; /* engine/ops.h */



/* sel[t*S + j] = 1 iff key j is attended by query t. */
static void select_all_causal(unsigned char *sel, size_t S)
{
    memset(sel, 0, S * S);
    for (size_t t = 0; t < S; t++) memset(sel + t * S, 1, t + 1);
}

enum { IDX_TB = 16 };

typedef struct iblock_job {
    const uint16_t *q, *wt;
    const fd_packed_head *kx;
    unsigned char *sel;
    size_t S, Hi, Di, topk;
    float hs, ds;
} iblock_job;

/* indexer scores and top-k selection of query rows topk + IDX_TB*bi .. (rows
 * t + 1 > topk are truly sparse) */
static void iblock_task(void *ctx, size_t bi, const fd_mm *m)
{
    const iblock_job *J = ctx;
    const uint16_t *q = J->q, *wt = J->wt;
    unsigned char *sel = J->sel;
    size_t S = J->S, Hi = J->Hi, Di = J->Di, topk = J->topk, t0 = topk + bi * IDX_TB;
    float hs = J->hs, ds = J->ds;
    fd_packed_head kx = *J->kx;
    enum { TB = IDX_TB };
    size_t os = kx.tiles * FD_TILE, kp = kx.kp;
    uint32_t *qp = fd_xmalloc((TB * Hi * kp + 1) * 4);
    float *dots = fd_xmalloc((TB * Hi * os + 1) * 4);
    keyscore *ks = fd_xmalloc(S * sizeof *ks);
    float *isum = fd_xmalloc(S * sizeof *isum);
    {
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
                float wv = F(wt[t * Hi + hh]) * hs;
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
    free(ks); free(isum); free(qp); free(dots);
}

static int indexer(const fd_mm *m, const fd_weights *W, const fd_model_config *c, long long L, const uint16_t *h, const uint16_t *cq,
                   size_t S, const rope *R, unsigned char *sel, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, rq = (size_t)c->q_lora_rank, Hi = (size_t)c->index_n_heads,
           Di = (size_t)c->index_head_dim, dr = (size_t)c->qk_rope_head_dim, topk = (size_t)c->index_topk;
    select_all_causal(sel, S);
    if (S <= topk) return 0; /* every row keeps all causal keys: exact dense causal */
    char nm[256];
    lin wq, wk, wp;
    snprintf(nm, sizeof nm, "model.layers.%lld.self_attn.indexer.wq_b", L);
    if (fd_lin_load(m, &wq, W, e, Hi * Di, rq, S, 0, nm)) return -1;
    snprintf(nm, sizeof nm, "model.layers.%lld.self_attn.indexer.wk", L);
    if (fd_lin_load(m, &wk, W, e, Di, H, S, 0, nm)) { fd_lin_free(&wq); return -1; }
    snprintf(nm, sizeof nm, "model.layers.%lld.self_attn.indexer.weights_proj", L);
    if (fd_lin_load(m, &wp, W, e, Hi, H, S, 0, nm)) { fd_lin_free(&wq); fd_lin_free(&wk); return -1; }
    const fd_tensor *kw = fd_op_get(W, e, 1, Di, 0, 0, "model.layers.%lld.self_attn.indexer.k_norm.weight", L);
    const fd_tensor *kb = kw ? fd_op_get(W, e, 1, Di, 0, 0, "model.layers.%lld.self_attn.indexer.k_norm.bias", L) : NULL;
    if (!kb) { fd_lin_free(&wq); fd_lin_free(&wk); fd_lin_free(&wp); return -1; }
    uint16_t *lw = vec_bf16(kw, 0, Di), *lb = vec_bf16(kb, 0, Di);
    uint16_t *q = fd_xmalloc(S * Hi * Di * 2), *k = fd_xmalloc(S * Di * 2), *wt = fd_xmalloc(S * Hi * 2);
    fd_lin_apply(m, &wq, cq, S, q);
    fd_lin_apply(m, &wk, h, S, k);
    fd_lin_apply(m, &wp, h, S, wt);
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
        for (size_t hh = 0; hh < Hi; hh++) fd_swap_pairs(q + (t * Hi + hh) * Di, Di);
        fd_swap_pairs(k + t * Di, Di);
    }
    fd_packed_head kx;
    fd_mm_alloc(&kx, S, Di);
    for (size_t j = 0; j < S; j++) fd_mm_set_row(&kx, j, k + j * Di);
    /* blocks of query rows in parallel (each scores and selects its own rows) */
    iblock_job ij = {q, wt, &kx, sel, S, Hi, Di, topk, (float)pow((double)Hi, -0.5), (float)pow((double)Di, -0.5)};
    fd_mm_each(m, (S - topk + IDX_TB - 1) / IDX_TB, iblock_task, &ij);
    fd_packed_head_free(&kx); free(q); free(k); free(wt); free(lw); free(lb);
    fd_lin_free(&wq); fd_lin_free(&wk); fd_lin_free(&wp);
    return 0;
}

/* ------------------------------------------------------------ attention */

typedef struct head_job {
    const uint16_t *q, *kv, *a;
    const unsigned char *sel;
    uint16_t *o;
    size_t S, nh, dn, dr, dv, rkv;
    float lam;
} head_job;

/* one attention head: o[:, hh, :] = softmax(bf(bf(Q_h K_h^T) * lam)) V_h */
static void attn_head(void *ctx, size_t hh, const fd_mm *m)
{
    const head_job *J = ctx;
    const uint16_t *q = J->q, *kv = J->kv, *a = J->a;
    const unsigned char *sel = J->sel;
    uint16_t *o = J->o;
    size_t S = J->S, nh = J->nh, dn = J->dn, dr = J->dr, dv = J->dv, rkv = J->rkv, dq = dn + dr;
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
            memcpy(row, kv + (j * nh + hh) * (dn + dv), dn * 2);
            if (dr) memcpy(row + dn, a + j * (rkv + dr) + rkv, dr * 2);
            fd_mm_set_row(&kh, j, row);
        }
        for (size_t d = 0; d < dv; d++) {
            for (size_t j = 0; j < S; j++) row[j] = kv[(j * nh + hh) * (dn + dv) + dn + d];
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
    head_job hj = {q, kv, a, sel, o, S, nh, dn, dr, dv, rkv, (float)pow((double)(dn + dr), -0.5)};
    fd_mm_each(m, nh, attn_head, &hj);
}

static int attention(const fd_mm *m, const fd_weights *W, const fd_model_config *c, long long L, uint16_t *x, size_t S,
                     const uint16_t *ln_w, const rope *R, unsigned char *sel, int *have_sel, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, rq = (size_t)c->q_lora_rank, rkv = (size_t)c->kv_lora_rank,
           nh = (size_t)c->num_attention_heads, dn = (size_t)c->qk_nope_head_dim, dr = (size_t)c->qk_rope_head_dim,
           dv = (size_t)c->v_head_dim, dq = dn + dr;
    int rc = -1;
    char nm[256];
    lin qa = {0}, qb = {0}, kva = {0}, kvb = {0}, op = {0};
    uint16_t *h = NULL, *cq = NULL, *q = NULL, *a = NULL, *ct = NULL, *kv = NULL, *o = NULL, *ao = NULL, *qaw = NULL,
             *kvaw = NULL;
    int bias = c->attention_bias;
#define LL(var, n, k, b, suffix)                                               \
    snprintf(nm, sizeof nm, "model.layers.%lld.self_attn." suffix, L);         \
    if (fd_lin_load(m, &var, W, e, n, k, S, b, nm)) goto out;
    LL(qa, rq, H, bias, "q_a_proj")
    LL(qb, nh * dq, rq, 0, "q_b_proj")
    LL(kva, rkv + dr, H, bias, "kv_a_proj_with_mqa")
    LL(kvb, nh * (dn + dv), rkv, 0, "kv_b_proj")
    LL(op, H, nh * dv, bias, "o_proj")
#undef LL
    const fd_tensor *t1 = fd_op_get(W, e, 1, rq, 0, 0, "model.layers.%lld.self_attn.q_a_layernorm.weight", L);
    if (!t1) goto out;
    qaw = vec_bf16(t1, 0, rq);
    const fd_tensor *t2 = fd_op_get(W, e, 1, rkv, 0, 0, "model.layers.%lld.self_attn.kv_a_layernorm.weight", L);
    if (!t2) goto out;
    kvaw = vec_bf16(t2, 0, rkv);

    h = fd_xmalloc(S * H * 2);
    rmsnorm(m, x, S, H, ln_w, (float)c->rms_norm_eps, h);
    cq = fd_xmalloc(S * rq * 2);
    fd_op_dump(L, "attn_in", "bf16", h, S * H * 2);
    fd_lin_apply(m, &qa, h, S, cq);
    fd_op_dump(L, "q_a", "bf16", cq, S * rq * 2);
    rmsnorm(m, cq, S, rq, qaw, 1e-6f, cq);
    fd_op_dump(L, "q_a_norm", "bf16", cq, S * rq * 2);
    q = fd_xmalloc(S * nh * dq * 2);
    fd_lin_apply(m, &qb, cq, S, q);
    a = fd_xmalloc(S * (rkv + dr) * 2);
    fd_op_dump(L, "q_b", "bf16", q, S * nh * dq * 2);
    fd_lin_apply(m, &kva, h, S, a);
    fd_op_dump(L, "kv_a", "bf16", a, S * (rkv + dr) * 2);
    ct = fd_xmalloc(S * rkv * 2);
    for (size_t t = 0; t < S; t++) memcpy(ct + t * rkv, a + t * (rkv + dr), rkv * 2);
    rmsnorm(m, ct, S, rkv, kvaw, 1e-6f, ct);
    kv = fd_xmalloc(S * nh * (dn + dv) * 2);
    fd_op_dump(L, "kv_a_norm", "bf16", ct, S * rkv * 2);
    fd_lin_apply(m, &kvb, ct, S, kv);
    fd_op_dump(L, "kv_b", "bf16", kv, S * nh * (dn + dv) * 2);
    rope_job rj = {q, a, R, nh, dq, dn, rkv, dr};
    fd_mm_range(m, S, 32, rope_rows, &rj);
    /* selection */
    if (c->indexer_full[L]) {
        if (indexer(m, W, c, L, h, cq, S, R, sel, e)) goto out;
        *have_sel = 1;
    } else if (!*have_sel) {
        fd_fail(e, "bad_config", "", "layer %lld is a shared indexer layer with no preceding full layer", L);
        goto out;
    }
    fd_op_dump(L, "q_rope", "bf16", q, S * nh * dq * 2);
    fd_op_dump(L, "kv_a_rope", "bf16", a, S * (rkv + dr) * 2);
    fd_op_dump(L, "sel", "u8", sel, S * S);
    /* per head: scores = Q_h K_h^T and o_h = P V_h as products over blocks
     * of query rows (attn_head); heads in parallel when there are enough of
     * them for the threads, else one at a time with parallel products */
    o = fd_xmalloc(S * nh * dv * 2);
    fd_op_attention(m, q, kv, a, sel, o, S, nh, dn, dr, dv, rkv);
    ao = fd_xmalloc(S * H * 2);
    fd_op_dump(L, "attn_core", "bf16", o, S * nh * dv * 2);
    fd_lin_apply(m, &op, o, S, ao);
    fd_op_dump(L, "o_proj", "bf16", ao, S * H * 2);
    residual_add(m, x, ao, S * H);
    fd_op_dump(L, "attn_resid", "bf16", x, S * H * 2);
    rc = 0;
out:
    fd_lin_free(&qa); fd_lin_free(&qb); fd_lin_free(&kva); fd_lin_free(&kvb); fd_lin_free(&op);
    free(h); free(cq); free(q); free(a); free(ct); free(kv); free(o); free(ao); free(qaw); free(kvaw);
    return rc;
}

/* ------------------------------------------------------------ driver */

/* The state of one window between layers (the layer-outer schedule keeps
 * one per window): the residual stream, the DSA selection of the last full
 * layer, the RoPE tables. */
typedef struct dsa_fwd {
    size_t S;
    uint16_t *x;
    unsigned char *sel;
    int have_sel;
    rope R;
} dsa_fwd;

void fd_dsa_free(void *st)
{
    dsa_fwd *f = st;
    if (!f) return;
    free(f->x); free(f->sel); free(f->R.c); free(f->R.s);
    free(f);
}

void *fd_dsa_begin(const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size;
    if (strcmp(c->hidden_act, "silu")) {
        fd_fail(e, "bad_config", "", "hidden_act %s is not supported (silu only)", c->hidden_act);
        return NULL;
    }
    if (strcmp(c->rope_type, "default")) {
        fd_fail(e, "bad_config", "", "rope_type %s is not supported (default only)", c->rope_type);
        return NULL;
    }
    if (c->qk_rope_head_dim % 2 || c->n_group < 1 || c->n_routed_experts % c->n_group || c->topk_group < 1 ||
        c->index_topk < 1) {
        fd_fail(e, "bad_config", "", "unsupported rope/expert-group/index_topk dimensions");
        return NULL;
    }
    if (S < 1) { fd_fail(e, "bad_usage", "", "empty token sequence"); return NULL; }
    const fd_tensor *emb = fd_op_get(W, e, 2, V, H, 0, "model.embed_tokens.weight");
    if (!emb) return NULL;
    for (size_t t = 0; t < S; t++)
        if (ids[t] < 0 || (uint64_t)ids[t] >= V) {
            fd_fail(e, "bad_token", "", "token id %lld at position %zu is outside the vocab (%zu)", (long long)ids[t], t, V);
            return NULL;
        }
    dsa_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->x = fd_xmalloc(S * H * 2);
    for (size_t t = 0; t < S; t++)
        for (size_t i = 0; i < H; i++) f->x[t * H + i] = t_bf16(emb, (uint64_t)ids[t] * H + i);
    fd_op_dump(-1, "ids", "i64", ids, S * 8);
    fd_op_dump(-1, "embed", "bf16", f->x, S * H * 2);
    rope_init(&f->R, S, (size_t)c->qk_rope_head_dim, c->rope_theta);
    f->sel = fd_xmalloc(S * S);
    return f;
}

int fd_dsa_layer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    dsa_fwd *f = st;
    size_t H = (size_t)c->hidden_size, S = f->S;
    const fd_tensor *a = fd_op_get(W, e, 1, H, 0, 0, "model.layers.%lld.input_layernorm.weight", L);
    const fd_tensor *b = a ? fd_op_get(W, e, 1, H, 0, 0, "model.layers.%lld.post_attention_layernorm.weight", L) : NULL;
    if (!b) return -1;
    uint16_t *lw = vec_bf16(a, 0, H), *pw = vec_bf16(b, 0, H);
    uint16_t *h2 = fd_xmalloc(S * H * 2), *y = fd_xmalloc(S * H * 2), *x = f->x;
    int rc = -1;
    if (attention(m, W, c, L, x, S, lw, &f->R, f->sel, &f->have_sel, e)) goto out;
    rmsnorm(m, x, S, H, pw, (float)c->rms_norm_eps, h2);
    fd_op_dump(L, "post_ln", "bf16", h2, S * H * 2);
    char nm[128];
    snprintf(nm, sizeof nm, "model.layers.%lld.mlp", L);
    if (c->mlp_sparse[L] ? fd_mlp_moe(m, W, c, L, h2, S, y, e) : fd_mlp_dense(m, W, H, (size_t)c->intermediate_size, nm, h2, S, y, e))
        goto out;
    fd_op_dump(L, "mlp", "bf16", y, S * H * 2);
    residual_add(m, x, y, S * H);
    fd_op_dump(L, "layer_out", "bf16", x, S * H * 2);
    rc = 0;
out:
    free(lw); free(pw); free(h2); free(y);
    return rc;
}

int fd_dsa_end(const fd_weights *W, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    dsa_fwd *f = st;
    size_t H = (size_t)c->hidden_size, S = f->S;
    const fd_tensor *nrm = fd_op_get(W, e, 1, H, 0, 0, "model.norm.weight");
    if (!nrm) return -1;
    uint16_t *lw = vec_bf16(nrm, 0, H);
    rmsnorm(NULL, f->x, S, H, lw, (float)c->rms_norm_eps, out);
    fd_op_dump(-1, "final", "bf16", out, S * H * 2);
    free(lw);
    return 0;
}

/* ------------------------------------------------------------ engine/ops.h */

void fd_op_rmsnorm(const uint16_t *x, size_t rows, size_t n, const uint16_t *w, float eps, uint16_t *y)
{
    rmsnorm(NULL, x, rows, n, w, eps, y);
}
void fd_op_layernorm(uint16_t *x, size_t rows, size_t n, const float *w, const float *b, float eps)
{
    /* the weights arrive widened from bf16, so narrowing them back is exact */
    uint16_t *wb = fd_xmalloc(n * 2 + 2), *bb = fd_xmalloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++) { wb[i] = BF(w[i]); bb[i] = BF(b[i]); }
    layernorm(x, rows, n, wb, bb, eps);
    free(wb);
    free(bb);
}
/* torch's vector-path silu (engine/torch_ops.h); per element, so a row's
 * scalar tail is not told apart here (glm5_next's shapes have none) */
float fd_op_silu(float a) { return fd_torch_silu(a); }
uint16_t fd_tensor_bf16_at(const fd_tensor *t, uint64_t i) { return t_bf16(t, i); }
float fd_tensor_f32_at(const fd_tensor *t, uint64_t i) { return t_f32(t, i); }
