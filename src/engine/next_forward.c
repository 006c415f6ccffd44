/* glm5_next forward driver: residual streams, mHC, MLP / MoE (next_forward.h;
 * rounding points in docs/MODEL-GLM5-NEXT.md §3). */
#include "engine/next_internal.h"
#include "engine/torch_ops.h"
#include "kernels/gemm.h"
#include "util/buf.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

const fd_tensor *nx_get(const fd_weights *w, fd_err *e, int ndim, uint64_t d0, uint64_t d1, uint64_t d2, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const fd_tensor *t = fd_op_vget(w, e, ndim, d0, d1, d2, fmt, ap);
    va_end(ap);
    return t;
}

int nx_lin(fd_lin *L, const fd_weights *w, fd_err *e, size_t N, size_t K, const char *fmt, ...)
{
    char name[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return fd_lin_load(L, w, e, N, K, 0, name);
}

float *nx_vec_f32(const fd_tensor *t, size_t n)
{
    float *v = fd_xmalloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++) v[i] = fd_tensor_f32_at(t, i);
    return v;
}

uint16_t *nx_vec_bf16(const fd_tensor *t, size_t n)
{
    uint16_t *v = fd_xmalloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++) v[i] = fd_tensor_bf16_at(t, i);
    return v;
}

/* utils::CeilLog2 of ATen: 1 for x <= 2 */
static size_t ceil_log2(size_t x)
{
    if (x <= 2) return 1;
    size_t r = 0;
    for (size_t v = x - 1; v; v >>= 1) r++;
    return r;
}

float nx_multi_row_sum(const float *x, size_t stride, size_t size)
{
    enum { LV = 4 };
    size_t lp = ceil_log2(size) / LV > 4 ? ceil_log2(size) / LV : 4, step = (size_t)1 << lp, mask = step - 1;
    float acc[LV] = {0};
    size_t i = 0;
    while (i + step <= size) {
        for (size_t j = 0; j < step; j++, i++) acc[0] += x[i * stride];
        for (size_t j = 1; j < LV; j++) {
            acc[j] += acc[j - 1];
            acc[j - 1] = 0.0f;
            if (i & (mask << (j * lp))) break;
        }
    }
    for (; i < size; i++) acc[0] += x[i * stride];
    for (size_t j = 1; j < LV; j++) acc[0] += acc[j];
    return acc[0];
}

float nx_row_sum(const float *x, size_t stride, size_t size)
{
    size_t ilp = size / 4;
    float p[4];
    for (size_t k = 0; k < 4; k++) p[k] = nx_multi_row_sum(x + k * stride, 4 * stride, ilp);
    for (size_t i = ilp * 4; i < size; i++) p[0] += x[i * stride];
    return ((p[0] + p[1]) + p[2]) + p[3];
}

float nx_sum_aten(const float *x, size_t n)
{
    if (n < 8) return nx_row_sum(x, 1, n); /* scalar_inner_sum */
    size_t nv = n / 8;
    float f = 0.0f;
    for (size_t k = nv * 8; k < n; k++) f += x[k];
    for (size_t l = 0; l < 8; l++) f += nx_row_sum(x + l, 8, nv); /* lane l of vectorized_inner_sum */
    return f;
}

float nx_sum_outer(const float *x, size_t stride, size_t size, size_t col, size_t ncols)
{
    size_t full = ncols >= 8 ? ncols / 32 * 32 : ncols / 4 * 4;
    return col < full ? nx_multi_row_sum(x, stride, size) : nx_row_sum(x, stride, size);
}

int nx_torch_vec(size_t i, size_t n, size_t block)
{
    enum { GRAIN = 32768, THREADS = 2 };
    size_t b0 = 0, len = n;
    if (n >= GRAIN) {
        size_t nt = (n + GRAIN - 1) / GRAIN < THREADS ? (n + GRAIN - 1) / GRAIN : THREADS, chunk = (n + nt - 1) / nt;
        b0 = i / chunk * chunk;
        len = n - b0 < chunk ? n - b0 : chunk;
    }
    return i - b0 < len - len % block;
}

float nx_sigmoid_at(float x, size_t i, size_t n)
{
    return nx_torch_vec(i, n, 32) ? fd_torch_sigmoid(x) : fd_torch_sigmoid_tail(x);
}

float nx_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

float nx_dot32(const float *a, size_t as, const float *b, size_t bs, size_t n)
{
    double s = 0.0;
    for (size_t k = 0; k < n; k++) s += (double)a[k * as] * (double)b[k * bs];
    return (float)s;
}

void nx_swap_pairs(uint16_t *v, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2) { uint16_t t = v[i]; v[i] = v[i + 1]; v[i + 1] = t; }
}

float nx_chain32(const float *a, size_t as, const float *b, size_t bs, size_t n)
{
    float s = 0.0f;
    for (size_t k = 0; k < n; k++) s = fmaf(a[k * as], b[k * bs], s);
    return s;
}

void nx_dump(long long L, const char *stage, const char *ext, const void *p, size_t bytes)
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

/* ------------------------------------------------------------ mHC */

/* MKL's sgemm order for the mHC mix (M = tokens, N = (2+m)m = 24, K = mH,
 * fp32, torch 2.11 wheel, 2 threads), found by probing (a 2^24 at position p
 * of a row of ones loses exactly the ones chained after it in its block) and
 * checked on random data: K is cut into blocks, each one FMA chain from 0.
 *   M >= 353: blocks of 384, the last two sharing 384 + K mod 384 (the first
 *     rounded up): K 1024 -> 384, 320, 320; 999 -> 384, 308, 307; 16384 ->
 *     42 x 384, 320, 320; the block sums added in order.
 *   M < 353: K split in two halves (the two threads), each cut into
 *     ceil(half / 256) equal blocks added in order, then half 0 + half 1:
 *     K 1024 -> (256 + 256) + (256 + 256); 1000 -> 4 x 250; 600 -> 300 + 300. */
typedef struct kplan {
    size_t st[1026], nb, half; /* block b = [st[b], st[b+1]); half: first block of the second sum (0: one sum) */
} kplan;

static void kplan_cut(kplan *p, size_t k0, size_t len)
{
    size_t nb = (len + 255) / 256;
    if (nb < 1) nb = 1;
    if (nb > 512) nb = 512;
    for (size_t b = 0; b < nb; b++) p->st[p->nb++] = k0 + (b * len + nb - 1) / nb;
}

static void mkl_kplan(size_t M, size_t K, kplan *p)
{
    p->nb = p->half = 0;
    if (M >= 353) {
        size_t full = K / 384, r = K % 384;
        if (r && full) full--;
        if (full > 1021) full = 1021;
        for (size_t b = 0; b < full; b++) p->st[p->nb++] = b * 384;
        size_t rest = K - full * 384;
        p->st[p->nb++] = full * 384;
        if (rest > 384) p->st[p->nb++] = full * 384 + (rest + 1) / 2;
    } else {
        size_t h = (K + 1) / 2;
        kplan_cut(p, 0, h);
        p->half = p->nb;
        if (K > h) kplan_cut(p, h, K - h);
        else p->half = 0;
    }
    p->st[p->nb] = K;
}

static float mkl_dot(const float *a, const float *b, const kplan *p)
{
    float c[2] = {0.0f, 0.0f};
    for (size_t i = 0; i < p->nb; i++) {
        float acc = 0.0f;
        for (size_t k = p->st[i]; k < p->st[i + 1]; k++) acc = fmaf(a[k], b[k], acc);
        size_t hf = p->half && i >= p->half;
        c[hf] = i == (hf ? p->half : 0) ? acc : c[hf] + acc;
    }
    return p->half ? c[0] + c[1] : c[0];
}

typedef struct hc {
    float *fn;        /* (2+m)m x mH, fp32 (bf16 values) */
    float base[64 * 66], scale[3];
} hc;

static int hc_load(hc *h, const fd_weights *W, const fd_glm_config *c, long long L, const char *site, fd_err *e)
{
    size_t m = (size_t)c->nx->hc_mult, H = (size_t)c->hidden_size, mix = (2 + m) * m;
    const fd_tensor *fn = nx_get(W, e, 2, mix, m * H, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_fn", L, site);
    const fd_tensor *ba = fn ? nx_get(W, e, 1, mix, 0, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_base", L, site) : NULL;
    const fd_tensor *sc = ba ? nx_get(W, e, 1, 3, 0, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_scale", L, site) : NULL;
    if (!sc) return -1;
    /* bf16 parameters: F32 on disk is cast to the bf16 load dtype first */
    h->fn = fd_xmalloc(mix * m * H * 4);
    for (size_t i = 0; i < mix * m * H; i++) h->fn[i] = F(fd_tensor_bf16_at(fn, i));
    for (size_t i = 0; i < mix; i++) h->base[i] = F(fd_tensor_bf16_at(ba, i));
    for (size_t i = 0; i < 3; i++) h->scale[i] = F(fd_tensor_bf16_at(sc, i));
    return 0;
}

/* Glm5NextTextHyperConnection.forward for every token: post [S][m],
 * comb [S][m][m] (fp32), collapsed [S][H] (bf16). */
static void hc_apply(const hc *h, const fd_glm_config *c, const uint16_t *X, size_t S, float *post, float *comb,
                     uint16_t *collapsed, float *mixdump)
{
    size_t m = (size_t)c->nx->hc_mult, H = (size_t)c->hidden_size, mH = m * H, mix = (2 + m) * m;
    float eps = (float)c->rms_norm_eps, heps = (float)c->nx->hc_eps;
    float *flat = fd_xmalloc(mH * 4), *sq = fd_xmalloc(mH * 4), mx[64 * 66], pre[64];
    kplan kp;
    mkl_kplan(S, mH, &kp);
    for (size_t s = 0; s < S; s++) {
        const uint16_t *xs = X + s * mH;
        for (size_t i = 0; i < mH; i++) { flat[i] = F(xs[i]); sq[i] = flat[i] * flat[i]; }
        float r = 1.0f / sqrtf(nx_sum_aten(sq, mH) / (float)mH + eps);
        for (size_t i = 0; i < mH; i++) flat[i] = flat[i] * r;
        for (size_t j = 0; j < mix; j++) mx[j] = mkl_dot(flat, h->fn + j * mH, &kp);
        if (mixdump) memcpy(mixdump + s * mix, mx, mix * 4);
        for (size_t i = 0; i < m; i++) {
            pre[i] = nx_sigmoid_at(mx[i] * h->scale[0] + h->base[i], s * m + i, S * m) + heps;
            post[s * m + i] = 2.0f * nx_sigmoid_at(mx[m + i] * h->scale[1] + h->base[m + i], s * m + i, S * m);
        }
        float *cb = comb + s * m * m;
        for (size_t i = 0; i < m; i++) { /* softmax over the last axis (torch's lastdim kernel), + eps */
            float *row = cb + i * m;
            for (size_t j = 0; j < m; j++) row[j] = mx[2 * m + i * m + j] * h->scale[2] + h->base[2 * m + i * m + j];
            fd_torch_softmax_masked(row, NULL, m, m);
            for (size_t j = 0; j < m; j++) row[j] += heps;
        }
        for (int64_t it = 0; it < c->nx->hc_iters; it++) {
            if (it) /* rows (dim -1), from the second iteration on */
                for (size_t i = 0; i < m; i++) {
                    float sum = 0.0f;
                    for (size_t j = 0; j < m; j++) sum += cb[i * m + j];
                    for (size_t j = 0; j < m; j++) cb[i * m + j] = cb[i * m + j] / (sum + heps);
                }
            for (size_t j = 0; j < m; j++) { /* columns (dim -2) */
                float sum = 0.0f;
                for (size_t i = 0; i < m; i++) sum += cb[i * m + j];
                for (size_t i = 0; i < m; i++) cb[i * m + j] = cb[i * m + j] / (sum + heps);
            }
        }
        for (size_t d = 0; d < H; d++) {
            float acc = pre[0] * F(xs[d]);
            for (size_t i = 1; i < m; i++) acc += pre[i] * F(xs[i * H + d]);
            collapsed[s * H + d] = BF(acc);
        }
    }
    free(flat);
    free(sq);
}

/* X <- bf(bf(post) * out) + bf(comb^T @ X) per token (bf16 matmul, canonical dot). */
static void hc_combine(const fd_glm_config *c, const float *post, const float *comb, const uint16_t *out, uint16_t *X,
                       size_t S)
{
    size_t m = (size_t)c->nx->hc_mult, H = (size_t)c->hidden_size, kp = (m + 1) / 2;
    uint32_t a[33], b[33];
    uint16_t *nx = fd_xmalloc(m * H * 2), cbt[64];
    for (size_t s = 0; s < S; s++) {
        uint16_t *xs = X + s * m * H;
        for (size_t i = 0; i < m; i++) {
            for (size_t j = 0; j < m; j++) cbt[j] = BF(comb[s * m * m + j * m + i]); /* (comb^T)[i][j] */
            memset(a, 0, sizeof a);
            fd_pack_hidden(cbt, m, a);
            uint16_t pb = BF(post[s * m + i]);
            for (size_t d = 0; d < H; d++) {
                for (size_t k = 0; k < kp; k++) {
                    uint32_t lo = xs[(2 * k) * H + d], hi = 2 * k + 1 < m ? xs[(2 * k + 1) * H + d] : 0;
                    b[k] = lo | hi << 16;
                }
                float mm = F(BF(fd_dot_canonical(a, b, kp, 1)));
                float t1 = F(BF(F(pb) * F(out[s * H + d])));
                nx[i * H + d] = BF(t1 + mm);
            }
        }
        memcpy(xs, nx, m * H * 2);
    }
    free(nx);
}

/* ------------------------------------------------------------ MLP / MoE */

/* down(bf(bf(silu(min(gate, lim))) * clamp(up, -lim, lim))) for rows of x. */
static void swiglu_clamped(const fd_mm *m, const fd_lin *g, const fd_lin *u, const fd_lin *d, const uint16_t *x, size_t rows,
                           float lim, uint16_t *y)
{
    size_t I = g->N;
    uint16_t *a = fd_xmalloc(rows * I * 2 + 2), *b = fd_xmalloc(rows * I * 2 + 2);
    fd_lin_apply(m, g, x, rows, a);
    fd_lin_apply(m, u, x, rows, b);
    for (size_t i = 0; i < rows * I; i++) {
        float gv = F(a[i]), uv = F(b[i]);
        if (gv > lim) gv = lim;
        if (uv > lim) uv = lim;
        if (uv < -lim) uv = -lim;
        a[i] = BF(F(BF(fd_op_silu(gv))) * uv);
    }
    fd_lin_apply(m, d, a, rows, y);
    free(a);
    free(b);
}

static int mlp3(const fd_mm *m, const fd_weights *W, size_t H, size_t I, const char *pfx, const uint16_t *x, size_t rows,
                float lim, uint16_t *y, fd_err *e)
{
    fd_lin g = {0}, u = {0}, d = {0};
    int rc = -1;
    if (!nx_lin(&g, W, e, I, H, "%s.gate_proj", pfx) && !nx_lin(&u, W, e, I, H, "%s.up_proj", pfx) &&
        !nx_lin(&d, W, e, H, I, "%s.down_proj", pfx)) {
        swiglu_clamped(m, &g, &u, &d, x, rows, lim, y);
        rc = 0;
    }
    fd_lin_free(&g); fd_lin_free(&u); fd_lin_free(&d);
    return rc;
}

/* Glm5NextTextMoE with transformers' default grouped_mm experts: routed =
 * bf(sum over the k slots, in torch.topk's output order, of fp32(y) * r). */
static int moe(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *x, size_t S, uint16_t *y,
               fd_err *e)
{
    size_t H = (size_t)c->hidden_size, E = (size_t)c->n_routed_experts, Im = (size_t)c->moe_intermediate_size,
           k = (size_t)c->num_experts_per_tok, G = (size_t)c->n_group, TG = (size_t)c->topk_group, per = E / G;
    float lim = (float)c->nx->swiglu_limit;
    char P[160];
    snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.mlp", L);
    const fd_tensor *gw = nx_get(W, e, 2, E, H, 0, "%s.gate.weight", P);
    const fd_tensor *gb = gw ? nx_get(W, e, 1, E, 0, 0, "%s.gate.e_score_correction_bias", P) : NULL;
    if (!gb) return -1;
    int rc = -1;
    fd_lin router, *eg = fd_xcalloc(E, sizeof *eg), *eu = fd_xcalloc(E, sizeof *eu), *ed = fd_xcalloc(E, sizeof *ed);
    fd_lin_pack_f32seq(&router, gw, 0, E, H);
    float *bias = nx_vec_f32(gb, E);
    uint16_t *sh = fd_xmalloc(S * H * 2 + 2);
    char nm[256];
    snprintf(nm, sizeof nm, "%s.experts.gate_up_proj", P);
    if (fd_weights_get(W, nm)) {
        const fd_tensor *gu = nx_get(W, e, 3, E, 2 * Im, H, "%s", nm);
        const fd_tensor *dp = gu ? nx_get(W, e, 3, E, H, Im, "%s.experts.down_proj", P) : NULL;
        if (!dp) goto out;
        for (size_t xx = 0; xx < E; xx++) {
            fd_lin_pack(&eg[xx], gu, xx * 2 * Im, Im, H);
            fd_lin_pack(&eu[xx], gu, xx * 2 * Im + Im, Im, H);
            fd_lin_pack(&ed[xx], dp, xx * H, H, Im);
        }
    } else
        for (size_t xx = 0; xx < E; xx++)
            if (nx_lin(&eg[xx], W, e, Im, H, "%s.experts.%zu.gate_proj", P, xx) ||
                nx_lin(&eu[xx], W, e, Im, H, "%s.experts.%zu.up_proj", P, xx) ||
                nx_lin(&ed[xx], W, e, H, Im, "%s.experts.%zu.down_proj", P, xx))
                goto out;
    snprintf(nm, sizeof nm, "%s.shared_experts", P);
    if (mlp3(m, W, H, Im * (size_t)c->n_shared_experts, nm, x, S, lim, sh, e)) goto out;
    float *lg = fd_lin_dots(m, &router, x, S), *g = fd_xmalloc(E * 4), gs[1024];
    size_t ro = router.p.tiles * FD_TILE, *slot_x = fd_xmalloc(S * k * sizeof *slot_x);
    float *slot_r = fd_xmalloc(S * k * 4);
    fd_keyscore *ks = fd_xmalloc(E * sizeof *ks);
    for (size_t t = 0; t < S; t++) {
        for (size_t xx = 0; xx < E; xx++) {
            g[xx] = nx_sigmoid_at(lg[t * ro + xx], t * E + xx, S * E);
            ks[xx].s = g[xx] + bias[xx];
            ks[xx].j = xx;
        }
        if (G > 1) { /* group limit: top-2 sum per group, keep topk_group groups (ties: lower index) */
            unsigned char keep[1024] = {0};
            for (size_t gi = 0; gi < G; gi++) {
                float b1 = -INFINITY, b2 = -INFINITY;
                for (size_t xx = gi * per; xx < (gi + 1) * per; xx++) {
                    if (ks[xx].s > b1) { b2 = b1; b1 = ks[xx].s; }
                    else if (ks[xx].s > b2) b2 = ks[xx].s;
                }
                gs[gi] = per >= 2 ? b1 + b2 : b1;
            }
            for (size_t r = 0; r < TG; r++) {
                size_t best = G;
                for (size_t gi = 0; gi < G; gi++)
                    if (!keep[gi] && (best == G || gs[gi] > gs[best])) best = gi;
                keep[best] = 1;
            }
            for (size_t xx = 0; xx < E; xx++)
                if (!keep[xx / per]) ks[xx].s = -INFINITY;
        }
        fd_op_topk_select(ks, E, k);
        float den = 0.0f;
        for (size_t sl = 0; sl < k; sl++) den += g[ks[sl].j];
        for (size_t sl = 0; sl < k; sl++) {
            float r = g[ks[sl].j];
            if (c->norm_topk_prob) r = r / (den + 1e-20f);
            slot_x[t * k + sl] = ks[sl].j;
            slot_r[t * k + sl] = r * (float)c->routed_scaling_factor;
        }
    }
    free(lg); free(g); free(ks);
    uint16_t *ys = fd_xmalloc(S * k * H * 2 + 2), *xb = fd_xmalloc(S * H * 2 + 2), *yb = fd_xmalloc(S * H * 2 + 2);
    size_t *who = fd_xmalloc((S * k + 1) * sizeof *who);
    for (size_t xx = 0; xx < E; xx++) {
        size_t n = 0;
        for (size_t i = 0; i < S * k; i++)
            if (slot_x[i] == xx) { memcpy(xb + n * H, x + (i / k) * H, H * 2); who[n++] = i; }
        if (!n) continue;
        swiglu_clamped(m, &eg[xx], &eu[xx], &ed[xx], xb, n, lim, yb);
        for (size_t r = 0; r < n; r++) memcpy(ys + who[r] * H, yb + r * H, H * 2);
    }
    for (size_t t = 0; t < S; t++)
        for (size_t d = 0; d < H; d++) {
            float acc = 0.0f;
            for (size_t sl = 0; sl < k; sl++) acc += F(ys[(t * k + sl) * H + d]) * slot_r[t * k + sl];
            y[t * H + d] = BF(F(BF(acc)) + F(sh[t * H + d]));
        }
    free(ys); free(xb); free(yb); free(who); free(slot_x); free(slot_r);
    rc = 0;
out:
    for (size_t xx = 0; xx < E; xx++) { fd_lin_free(&eg[xx]); fd_lin_free(&eu[xx]); fd_lin_free(&ed[xx]); }
    free(eg); free(eu); free(ed); free(bias); free(sh);
    fd_lin_free(&router);
    return rc;
}

/* ------------------------------------------------------------ driver */

static int check_config(const fd_glm_config *c, fd_err *e)
{
    const fd_next_ext *x = c->nx;
    if (x->hc_mult > 64) return fd_fail(e, "bad_config", "", "glm5_next: hc_mult > 64 is not supported");
    if (c->n_group > 1024 || c->n_routed_experts > 1 << 20)
        return fd_fail(e, "bad_config", "", "glm5_next: n_group > 1024 is not supported");
    if (!x->has_lower) return fd_fail(e, "bad_config", "", "glm5_next: KDA forget gate without linear_lower_bound (softplus path) not implemented");
    if (!x->kpool_tail)
        return fd_fail(e, "bad_config", "", "glm5_next: index_kpool_always_select_tail false not implemented");
    for (int64_t l = 0; l < c->num_hidden_layers; l++)
        if (!x->kda[l] && !c->indexer_full[l] && (l == 0 || x->kda[l - 1]))
            return fd_fail(e, "bad_config", "", "glm5_next: shared DSA layer %lld does not follow a DSA layer (transformers raises)",
                           (long long)l);
    return 0;
}

int fd_next_forward_hidden(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S,
                           uint16_t *out, fd_err *e)
{
    if (check_config(c, e)) return -1;
    if (S < 1) return fd_fail(e, "bad_usage", "", "empty token sequence");
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, M = (size_t)c->nx->hc_mult;
    const fd_tensor *emb = nx_get(W, e, 2, V, H, 0, FD_NEXT_PREFIX "embed_tokens.weight");
    const fd_tensor *nrm = emb ? nx_get(W, e, 1, H, 0, 0, FD_NEXT_PREFIX "norm.weight") : NULL;
    if (!nrm) return -1;
    for (size_t t = 0; t < S; t++)
        if (ids[t] < 0 || (uint64_t)ids[t] >= V)
            return fd_fail(e, "bad_token", "", "token id %lld at position %zu is outside the vocab (%zu)", (long long)ids[t], t, V);
    uint16_t *X = fd_xmalloc(S * M * H * 2), *h = fd_xmalloc(S * H * 2), *y = fd_xmalloc(S * H * 2), *lw = NULL;
    float *post = fd_xmalloc(S * M * 4), *comb = fd_xmalloc(S * M * M * 4);
    unsigned char *sel = fd_xcalloc(S * S, 1);
    for (size_t t = 0; t < S; t++)
        for (size_t i = 0; i < M; i++)
            for (size_t d = 0; d < H; d++) X[(t * M + i) * H + d] = fd_tensor_bf16_at(emb, (uint64_t)ids[t] * H + d);
    int rc = -1;
    nx_dump(-1, "ids", "i64", ids, S * 8);
    for (long long L = 0; L < c->num_hidden_layers; L++) {
        static const char *const site[2] = {"attn", "ffn"};
        for (int s = 0; s < 2; s++) {
            hc hh;
            if (hc_load(&hh, W, c, L, site[s], e)) goto out;
            size_t nmix = (2 + M) * M;
            float *mixd = getenv("FIDELITY_FORWARD_DUMP") ? fd_xmalloc(S * nmix * 4) : NULL;
            hc_apply(&hh, c, X, S, post, comb, h, mixd);
            free(hh.fn);
            char dn[32];
            snprintf(dn, sizeof dn, "hcmix_%s", site[s]);
            if (mixd) nx_dump(L, dn, "f32", mixd, S * nmix * 4);
            free(mixd);
            snprintf(dn, sizeof dn, "hcpost_%s", site[s]);
            nx_dump(L, dn, "f32", post, S * M * 4);
            snprintf(dn, sizeof dn, "hccomb_%s", site[s]);
            nx_dump(L, dn, "f32", comb, S * M * M * 4);
            snprintf(dn, sizeof dn, "hccol_%s", site[s]);
            nx_dump(L, dn, "bf16", h, S * H * 2);
            const fd_tensor *nw = nx_get(W, e, 1, H, 0, 0, FD_NEXT_PREFIX "layers.%lld.%s.weight", L,
                                         s ? "post_attention_layernorm" : "input_layernorm");
            if (!nw) goto out;
            lw = nx_vec_bf16(nw, H);
            fd_op_rmsnorm(h, S, H, lw, (float)c->rms_norm_eps, h);
            nx_dump(L, s ? "post_ln" : "attn_in", "bf16", h, S * H * 2);
            free(lw);
            lw = NULL;
            int r;
            if (!s) r = c->nx->kda[L] ? nx_kda(m, W, c, L, h, S, y, e) : nx_dsa(m, W, c, L, h, S, sel, y, e);
            else if (c->mlp_sparse[L]) r = moe(m, W, c, L, h, S, y, e);
            else {
                char P[160];
                snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.mlp", L);
                r = mlp3(m, W, H, (size_t)c->intermediate_size, P, h, S, (float)c->nx->swiglu_limit, y, e);
            }
            if (r) goto out;
            nx_dump(L, s ? "mlp" : "attn", "bf16", y, S * H * 2);
            hc_combine(c, post, comb, y, X, S);
            if (!s) nx_dump(L, "attn_mid", "bf16", X, S * M * H * 2);
        }
        nx_dump(L, "layer_out", "bf16", X, S * M * H * 2);
    }
    for (size_t t = 0; t < S; t++) /* hc_head: mean over the streams (fp32 sum, / M, one bf16 rounding) */
        for (size_t d = 0; d < H; d++) {
            float acc = F(X[t * M * H + d]);
            for (size_t i = 1; i < M; i++) acc += F(X[(t * M + i) * H + d]);
            h[t * H + d] = BF(acc / (float)M);
        }
    lw = nx_vec_bf16(nrm, H);
    fd_op_rmsnorm(h, S, H, lw, (float)c->rms_norm_eps, out);
    nx_dump(-1, "final", "bf16", out, S * H * 2);
    rc = 0;
out:
    free(X); free(h); free(y); free(lw); free(post); free(comb); free(sel);
    return rc;
}
