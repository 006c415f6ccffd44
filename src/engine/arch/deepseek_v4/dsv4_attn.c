/* DeepseekV4Attention (transformers 5.25, eager; docs/MODEL-DEEPSEEK.md
 * §11.1): q LoRA with the unweighted head norm, the shared K = V row, the
 * trailing interleaved RoPE, the HCA / CSA compressors, the lightning
 * indexer's top-k, the sink softmax, the inverse rotation of the output and
 * the grouped output projection.  Every bf16 product is a canonical dot
 * (thread-count independent); the fp32 reductions run in one fixed order per
 * output. */
#include "engine/arch/deepseek_v4/dsv4_internal.h"
#include "engine/ops/kblocks.h"
#include "engine/ops/reduce.h"
#include "kernels/gemm.h"
#include "kernels/rowops.h"
#include "kernels/torch_ops.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

typedef struct norm_job {
    const uint16_t *x;
    const float *w;
    size_t n;
    float eps;
    uint16_t *y;
} norm_job;

static void norm_rows(void *ctx, size_t lo, size_t hi)
{
    const norm_job *j = ctx;
    size_t n = j->n;
    float *t = fd_xmalloc(n * 4 + 4);
    for (size_t r = lo; r < hi; r++) {
        const uint16_t *xr = j->x + r * n;
        for (size_t k = 0; k < n; k++) t[k] = F(xr[k]) * F(xr[k]);
        float rs = 1.0f / sqrtf(fd_torch_sum(t, n) / (float)n + j->eps);
        for (size_t k = 0; k < n; k++) j->y[r * n + k] = BF(j->w[k] * (F(xr[k]) * rs));
    }
    free(t);
}

void v4_norm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const float *w, float eps, uint16_t *y)
{
    norm_job j = {x, w, n, eps, y};
    fd_mm_range(m, rows, 16, norm_rows, &j);
}

int v4_norm_named(const fd_mm *m, const fd_weights *W, fd_err *e, const char *name, const uint16_t *x, size_t rows,
                  size_t n, float eps, uint16_t *y)
{
    const fd_tensor *t = fd_op_get(W, e, 1, n, 0, 0, "%s", name);
    if (!t) return -1;
    float *w = fd_op_vec_f32(t, n);
    v4_norm(m, x, rows, n, w, eps, y);
    free(w);
    return 0;
}

void v4_rope(uint16_t *z, size_t d, const fd_rope *R, size_t p, float sign)
{
    size_t h = R->half;
    uint16_t *r = z + d - 2 * h;
    for (size_t i = 0; i < h; i++) {
        float c = F(R->c[p * h + i]), s = sign * F(R->s[p * h + i]);
        float x0 = F(r[2 * i]), x1 = F(r[2 * i + 1]);
        float a = x0 * c, b = -x1 * s, a1 = x1 * c, b1 = x0 * s;
        r[2 * i] = BF(a + b);
        r[2 * i + 1] = BF(a1 + b1);
    }
}

int v4_linear(const fd_mm *m, const fd_weights *W, fd_err *e, size_t N, size_t K, const uint16_t *x, size_t rows,
              uint16_t *y, const char *name)
{
    fd_lin L;
    if (fd_op_lin_named(m, rows, &L, W, e, N, K, "%s", name)) return -1;
    fd_lin_apply(m, &L, x, rows, y);
    fd_lin_free(&L);
    return 0;
}

/* ------------------------------------------------------------ compressors */

/* One compressor (HCA: c 1; CSA and the indexer's: c 2, the Ca / Cb
 * overlap) of d-wide entries over windows of mr tokens on x [S][H]: out
 * [S / mr][d] bf16, normed and rotated at position w * mr (compress tables). */
static int compress(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const char *P, size_t c2, size_t d,
                    size_t mr, const fd_rope *R, const uint16_t *x, size_t S, uint16_t *out, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, cd = c2 * d, nw = S / mr, slots = c2 * mr;
    char nm[256];
    const fd_tensor *ape = fd_op_get(W, e, 2, mr, cd, 0, "%sape", P);
    if (!ape) return -1;
    uint16_t *kv = fd_xmalloc(S * cd * 2 + 2), *gt = fd_xmalloc(S * cd * 2 + 2), *sum = fd_xmalloc(nw * d * 2 + 2);
    int rc = -1;
    snprintf(nm, sizeof nm, "%swkv", P);
    if (v4_linear(m, W, e, cd, H, x, S, kv, nm)) goto out;
    snprintf(nm, sizeof nm, "%swgate", P);
    if (v4_linear(m, W, e, cd, H, x, S, gt, nm)) goto out;
    float *pb = fd_op_vec_f32(ape, mr * cd), g[1024], w[1024];
    uint16_t kvs[1024];
    if (slots > 1024) { free(pb); rc = fd_fail(e, "bad_config", "", "deepseek_v4: compress rate above 512 is not supported"); goto out; }
    for (size_t wi = 0; wi < nw; wi++)
        for (size_t k = 0; k < d; k++) {
            /* the slots of entry wi, feature k: CSA [Ca of window wi-1 | Cb of window wi], HCA window wi */
            for (size_t s = 0; s < slots; s++) {
                size_t r = s % mr;
                if (c2 == 2 && s < mr) {
                    if (!wi) { g[s] = -INFINITY; kvs[s] = 0; continue; }
                    size_t t = (wi - 1) * mr + r;
                    g[s] = F(gt[t * cd + k]) + pb[r * cd + k];
                    kvs[s] = kv[t * cd + k];
                } else {
                    size_t t = wi * mr + r, off = c2 == 2 ? d : 0;
                    g[s] = F(gt[t * cd + off + k]) + pb[r * cd + off + k];
                    kvs[s] = kv[t * cd + off + k];
                }
            }
            /* softmax over the slots (dim 2, fp32), to bf16 */
            float mx = -INFINITY, den = 0.0f;
            for (size_t s = 0; s < slots; s++) mx = g[s] > mx ? g[s] : mx;
            for (size_t s = 0; s < slots; s++) { w[s] = fd_torch_expf(g[s] - mx); den += w[s]; }
            float acc = 0.0f;
            for (size_t s = 0; s < slots; s++) acc += F(BF(F(kvs[s]) * F(BF(w[s] / den))));
            sum[wi * d + k] = BF(acc);
        }
    free(pb);
    snprintf(nm, sizeof nm, "%snorm.weight", P);
    if (v4_norm_named(m, W, e, nm, sum, nw, d, (float)c->rms_norm_eps, out)) goto out;
    for (size_t wi = 0; wi < nw; wi++) v4_rope(out + wi * d, d, R, wi * mr, 1.0f);
    rc = 0;
out:
    free(kv); free(gt); free(sum);
    return rc;
}

/* DeepseekV4Indexer: sel [S][T] = 1 on the entries query t keeps */
static int indexer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const char *P, const fd_rope *R,
                   const uint16_t *x, const uint16_t *qres, size_t S, size_t T, unsigned char *sel, fd_err *e)
{
    const fd_v4_ext *v = V4X(c);
    size_t H = (size_t)c->hidden_size, ih = (size_t)c->index_n_heads, id = (size_t)c->index_head_dim,
           qr = (size_t)c->q_lora_rank, mr = (size_t)v->rate_csa;
    char nm[256];
    uint16_t *kc = fd_xmalloc(T * id * 2 + 2), *q = fd_xmalloc(S * ih * id * 2 + 2), *wp = fd_xmalloc(S * ih * 2 + 2);
    float *kf = fd_xmalloc(T * id * 4 + 4), *prod = fd_xmalloc(ih * T * 4 + 4), *qf = fd_xmalloc(id * 4);
    fd_keyscore *ks = fd_xmalloc((T + 1) * sizeof *ks);
    float *dsc = fd_xcalloc(S * T + 1, 4);
    int rc = -1;
    snprintf(nm, sizeof nm, "%sindexer.compressor.", P);
    if (compress(m, W, c, nm, 2, id, mr, R, x, S, kc, e)) goto out;
    snprintf(nm, sizeof nm, "%sindexer.wq_b", P);
    if (v4_linear(m, W, e, ih * id, qr, qres, S, q, nm)) goto out;
    snprintf(nm, sizeof nm, "%sindexer.weights_proj", P);
    if (v4_linear(m, W, e, ih, H, x, S, wp, nm)) goto out;
    for (size_t i = 0; i < T * id; i++) kf[i] = F(kc[i]);
    float ss = (float)pow((double)id, -0.5), ws = (float)pow((double)ih, -0.5);
    size_t k = (size_t)c->index_topk < T ? (size_t)c->index_topk : T;
    memset(sel, 0, S * T);
    for (size_t t = 0; t < S && T; t++) {
        size_t thr = (t + 1) / mr;
        for (size_t h = 0; h < ih; h++) {
            uint16_t *qh = q + (t * ih + h) * id;
            v4_rope(qh, id, R, t, 1.0f);
            for (size_t i = 0; i < id; i++) qf[i] = F(qh[i]);
            float wt = F(wp[t * ih + h]) * ws;
            for (size_t w = 0; w < T; w++) {
                float s = fd_op_chain32(qf, 1, kf + w * id, 1, id);
                s = (s > 0.0f ? s : 0.0f) * ss;
                prod[h * T + w] = s * wt;
            }
        }
        for (size_t w = 0; w < T; w++) {
            dsc[t * T + w] = fd_op_sum_outer(prod + w, T, ih, w, T);
            ks[w].s = w >= thr ? -INFINITY : dsc[t * T + w];
            ks[w].j = w;
        }
        fd_op_topk_select(ks, T, k);
        for (size_t i = 0; i < k; i++)
            if (ks[i].j < thr) sel[t * T + ks[i].j] = 1;
    }
    fd_op_dump(L, "v4_index_sel", "u8", sel, S * T);
    fd_op_dump(L, "v4_index_score", "f32", dsc, S * T * 4);
    fd_op_dump(L, "v4_index_k", "bf16", kc, T * id * 2);
    rc = 0;
out:
    free(kc); free(q); free(wp); free(kf); free(prod); free(qf); free(ks); free(dsc);
    return rc;
}

/* ------------------------------------------------------------ core */

typedef struct core_job {
    const uint16_t *q, *kv, *comp;
    const unsigned char *sel;  /* [S][T] compressed entries kept */
    const float *sinks;
    uint16_t *o;
    size_t S, T, nh, d, window;
    float scale;
} core_job;

/* one head: o[:, hh, :] = softmax([bf(bf(q k^T) * scale) | sink]) without the sink column, bf16, P . V */
static void core_head(void *ctx, size_t hh, const fd_mm *m)
{
    const core_job *J = ctx;
    size_t S = J->S, T = J->T, nk = S + T, d = J->d, nh = J->nh;
    fd_packed_head kh;
    fd_mm_alloc(&kh, nk, d);
    for (size_t j = 0; j < S; j++) fd_mm_set_row(&kh, j, J->kv + j * d);
    for (size_t w = 0; w < T; w++) fd_mm_set_row(&kh, S + w, J->comp + w * d);
    fd_kplan kpl;
    fd_kplan_bf16(m->order == FD_ORDER_TILE, S, d, nk, &kpl);
    size_t nvb = kpl.nb;
    fd_packed_head *vb = fd_xcalloc(nvb, sizeof *vb);
    uint16_t *col = fd_xmalloc(nk * 2 + 2);
    for (size_t b = 0; b < nvb; b++) fd_mm_alloc(&vb[b], d, kpl.st[b + 1] - kpl.st[b]);
    for (size_t k = 0; k < d; k++) {
        for (size_t j = 0; j < nk; j++) col[j] = j < S ? J->kv[j * d + k] : J->comp[(j - S) * d + k];
        for (size_t b = 0; b < nvb; b++) fd_mm_set_row(&vb[b], k, col + kpl.st[b]);
    }
    size_t os = kh.tiles * FD_TILE, ov = vb[0].tiles * FD_TILE;
    uint32_t *qp = fd_xmalloc((kh.kp + 1) * 4), *pp = fd_xmalloc((vb[0].kp + 1) * 4 + (nk + 2) * 2);
    float *sc = fd_xmalloc((os + 2) * 4), *ob = fd_xmalloc((ov + 1) * 4), *ob2 = fd_xmalloc((ov + 1) * 4);
    unsigned char *keep = fd_xmalloc(nk + 2);
    uint16_t *P = fd_xmalloc(nk * 2 + 2);
    float sink = J->sinks[hh];
    for (size_t t = 0; t < S; t++) {
        fd_mm_pack_rows(J->q + (t * nh + hh) * d, 1, d, nh * d, qp);
        fd_mm_run(m, qp, 1, &kh, sc, os);
        fd_bf16_rescale(sc, nk, J->scale); /* bf(bf(q.k) * scale) */
        float mx = sink;
        for (size_t j = 0; j < nk; j++) {
            keep[j] = j < S ? (j <= t && j + J->window > t) : J->sel[t * T + (j - S)];
            if (keep[j] && sc[j] > mx) mx = sc[j];
        }
        sc[nk] = sink;
        keep[nk] = 1;
        for (size_t j = 0; j <= nk; j++) sc[j] = keep[j] ? sc[j] - mx : 0.0f; /* combined - max (fp32) */
        fd_torch_softmax_masked(sc, keep, nk + 1, nk + 1);
        fd_round_bf16(sc, NULL, nk, P); /* the sink column dropped */
        fd_mm_pack_rows(P, 1, kpl.st[1], nk, pp);
        fd_mm_run(m, pp, 1, &vb[0], ob, ov);
        for (size_t b = 1; b < nvb; b++) {
            fd_mm_pack_rows(P + kpl.st[b], 1, kpl.st[b + 1] - kpl.st[b], nk, pp);
            fd_mm_run(m, pp, 1, &vb[b], ob2, ov);
            for (size_t i = 0; i < ov; i++) ob[i] += ob2[i];
        }
        for (size_t k = 0; k < d; k++) J->o[(t * nh + hh) * d + k] = BF(ob[k]);
    }
    free(col); free(qp); free(pp); free(sc); free(ob); free(ob2); free(keep); free(P);
    fd_packed_head_free(&kh);
    for (size_t b = 0; b < nvb; b++) fd_packed_head_free(&vb[b]);
    free(vb);
}

/* ------------------------------------------------------------ the block */

typedef struct qnorm_job {
    uint16_t *q;
    size_t d;
    float eps;
    const fd_rope *R;
    size_t nh;
} qnorm_job;

/* q_b_norm (unweighted: q * bf(rsqrt(mean(q^2) + eps))) and the rotation of every head of rows lo..hi */
static void qnorm_rows(void *ctx, size_t lo, size_t hi)
{
    const qnorm_job *j = ctx;
    size_t d = j->d;
    float *t = fd_xmalloc(d * 4 + 4);
    for (size_t r = lo; r < hi; r++)
        for (size_t h = 0; h < j->nh; h++) {
            uint16_t *z = j->q + (r * j->nh + h) * d;
            for (size_t k = 0; k < d; k++) t[k] = F(z[k]) * F(z[k]);
            float rs = F(BF(1.0f / sqrtf(fd_torch_sum(t, d) / (float)d + j->eps)));
            for (size_t k = 0; k < d; k++) z[k] = BF(F(z[k]) * rs);
            v4_rope(z, d, j->R, r, 1.0f);
        }
    free(t);
}

int v4_attention(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const v4_ropes *R,
                 const uint16_t *x, size_t S, uint16_t *y, fd_err *e)
{
    const fd_v4_ext *v = V4X(c);
    size_t H = (size_t)c->hidden_size, nh = (size_t)c->num_attention_heads, d = (size_t)c->head_dim,
           qr = (size_t)c->q_lora_rank, og = (size_t)v->o_groups, ol = (size_t)v->o_lora, D = nh * d / og;
    int type = v->type[L];
    const fd_rope *Rl = type == V4_SLIDING ? &R->main : &R->comp;
    size_t mr = type == V4_CSA ? (size_t)v->rate_csa : type == V4_HCA ? (size_t)v->rate_hca : 1;
    size_t T = type == V4_SLIDING ? 0 : S / mr;
    float eps = (float)c->rms_norm_eps;
    char P[96], nm[256];
    snprintf(P, sizeof P, "model.layers.%lld.attn.", L);
    uint16_t *qa = fd_xmalloc(S * qr * 2), *q = fd_xmalloc(S * nh * d * 2), *kv = fd_xmalloc(S * d * 2);
    uint16_t *comp = fd_xmalloc(T * d * 2 + 2), *o = fd_xmalloc(S * nh * d * 2), *g = fd_xmalloc(S * D * 2);
    uint16_t *oa = fd_xmalloc(S * og * ol * 2), *ga = fd_xmalloc(S * ol * 2);
    unsigned char *sel = fd_xcalloc(S * T + 1, 1);
    float *sinks = NULL;
    int rc = -1;
#define LIN(N, K, X, Y, WHAT) (snprintf(nm, sizeof nm, "%s" WHAT, P), v4_linear(m, W, e, N, K, X, S, Y, nm))
#define NORM(X, N, Y, WHAT) (snprintf(nm, sizeof nm, "%s" WHAT ".weight", P), v4_norm_named(m, W, e, nm, X, S, N, eps, Y))
    if (LIN(qr, H, x, qa, "wq_a") || NORM(qa, qr, qa, "q_norm") || LIN(nh * d, qr, qa, q, "wq_b")) goto out;
    qnorm_job qj = {q, d, eps, Rl, nh};
    fd_mm_range(m, S, 16, qnorm_rows, &qj);
    if (LIN(d, H, x, kv, "wkv") || NORM(kv, d, kv, "norm")) goto out;
    for (size_t t = 0; t < S; t++) v4_rope(kv + t * d, d, Rl, t, 1.0f);
    fd_op_dump(L, "v4_q", "bf16", q, S * nh * d * 2);
    fd_op_dump(L, "v4_kv", "bf16", kv, S * d * 2);
    if (type != V4_SLIDING) {
        snprintf(nm, sizeof nm, "%scompressor.", P);
        if (compress(m, W, c, nm, type == V4_CSA ? 2 : 1, d, mr, &R->comp, x, S, comp, e)) goto out;
        fd_op_dump(L, "v4_comp", "bf16", comp, T * d * 2);
        if (type == V4_CSA) {
            if (indexer(m, W, c, L, P, &R->comp, x, qa, S, T, sel, e)) goto out;
        } else
            for (size_t t = 0; t < S; t++)
                for (size_t w = 0; w < T; w++) sel[t * T + w] = w < (t + 1) / mr;
    }
    const fd_tensor *sk = fd_op_get(W, e, 1, nh, 0, 0, "%sattn_sink", P);
    if (!sk) goto out;
    sinks = fd_op_vec_f32(sk, nh);
    core_job cj = {q, kv, comp, sel, sinks, o, S, T, nh, d, (size_t)v->window, (float)pow((double)d, -0.5)};
    fd_mm_each(m, nh, core_head, &cj);
    for (size_t t = 0; t < S; t++)
        for (size_t h = 0; h < nh; h++) v4_rope(o + (t * nh + h) * d, d, Rl, t, -1.0f);
    fd_op_dump(L, "v4_core", "bf16", o, S * nh * d * 2);
    /* grouped output: group gi's D columns through rows gi*ol.. of wo_a, then wo_b */
    const fd_tensor *wa = fd_op_get(W, e, 2, og * ol, D, 0, "%swo_a.weight", P);
    if (!wa) goto out;
    for (size_t gi = 0; gi < og; gi++) {
        for (size_t t = 0; t < S; t++) memcpy(g + t * D, o + t * nh * d + gi * D, D * 2);
        fd_lin la;
        fd_lin_pack(m, &la, wa, gi * ol, ol, D, S);
        fd_lin_apply(m, &la, g, S, ga);
        fd_lin_free(&la);
        for (size_t t = 0; t < S; t++) memcpy(oa + t * og * ol + gi * ol, ga + t * ol, ol * 2);
    }
    if (LIN(H, og * ol, oa, y, "wo_b")) goto out;
#undef LIN
#undef NORM
    rc = 0;
out:
    free(qa); free(q); free(kv); free(comp); free(o); free(g); free(oa); free(ga); free(sel); free(sinks);
    return rc;
}
