/* glm5_next forward driver: residual streams, mHC, MLP / MoE (next_forward.h;
 * rounding points in docs/MODEL-GLM5-NEXT.md §3). */
#include "engine/arch/glm5_next/next_internal.h"
#include "kernels/torch_ops.h"
#include "kernels/gemm.h"
#include "util/buf.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (!fd_op_lin_named(m, rows, &g, W, e, I, H, "%s.gate_proj", pfx) &&
        !fd_op_lin_named(m, rows, &u, W, e, I, H, "%s.up_proj", pfx) &&
        !fd_op_lin_named(m, rows, &d, W, e, H, I, "%s.down_proj", pfx)) {
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
    float lim = (float)NX(c)->swiglu_limit;
    char P[160];
    snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.mlp", L);
    const fd_tensor *gw = fd_op_get(W, e, 2, E, H, 0, "%s.gate.weight", P);
    const fd_tensor *gb = gw ? fd_op_get(W, e, 1, E, 0, 0, "%s.gate.e_score_correction_bias", P) : NULL;
    if (!gb) return -1;
    int rc = -1;
    fd_lin router, *eg = fd_xcalloc(E, sizeof *eg), *eu = fd_xcalloc(E, sizeof *eu), *ed = fd_xcalloc(E, sizeof *ed);
    fd_lin_pack_f32seq(&router, gw, 0, E, H);
    float *bias = fd_op_vec_f32(gb, E);
    uint16_t *sh = fd_xmalloc(S * H * 2 + 2);
    char nm[256];
    snprintf(nm, sizeof nm, "%s.experts.gate_up_proj", P);
    if (fd_weights_get(W, nm)) {
        const fd_tensor *gu = fd_op_get(W, e, 3, E, 2 * Im, H, "%s", nm);
        const fd_tensor *dp = gu ? fd_op_get(W, e, 3, E, H, Im, "%s.experts.down_proj", P) : NULL;
        if (!dp) goto out;
        for (size_t xx = 0; xx < E; xx++) {
            fd_lin_pack(m, &eg[xx], gu, xx * 2 * Im, Im, H, S);
            fd_lin_pack(m, &eu[xx], gu, xx * 2 * Im + Im, Im, H, S);
            fd_lin_pack(m, &ed[xx], dp, xx * H, H, Im, S);
        }
    } else
        for (size_t xx = 0; xx < E; xx++)
            if (fd_op_lin_named(m, S, &eg[xx], W, e, Im, H, "%s.experts.%zu.gate_proj", P, xx) ||
                fd_op_lin_named(m, S, &eu[xx], W, e, Im, H, "%s.experts.%zu.up_proj", P, xx) ||
                fd_op_lin_named(m, S, &ed[xx], W, e, H, Im, "%s.experts.%zu.down_proj", P, xx))
                goto out;
    snprintf(nm, sizeof nm, "%s.shared_experts", P);
    if (mlp3(m, W, H, Im * (size_t)c->n_shared_experts, nm, x, S, lim, sh, e)) goto out;
    float *lg = fd_lin_dots(m, &router, x, S), *g = fd_xmalloc(E * 4), gs[1024];
    size_t ro = router.p.tiles * FD_TILE, *slot_x = fd_xmalloc(S * k * sizeof *slot_x);
    float *slot_r = fd_xmalloc(S * k * 4);
    fd_keyscore *ks = fd_xmalloc(E * sizeof *ks);
    for (size_t t = 0; t < S; t++) {
        for (size_t xx = 0; xx < E; xx++) {
            g[xx] = fd_op_sigmoid_at(lg[t * ro + xx], t * E + xx, S * E);
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
    fd_op_dump(L, "experts", "i64", slot_x, S * k * sizeof *slot_x); /* the top-k experts, slot order */
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
    const fd_next_ext *x = NX(c);
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

/* The state of one window between layers: the hc_mult residual streams,
 * the DSA selection of the last full DSA layer, the per-layer buffers. */
typedef struct nx_fwd {
    size_t S;
    uint16_t *X, *h, *y;
    float *post, *comb;
    unsigned char *sel;
} nx_fwd;

void fd_next_free(void *st)
{
    nx_fwd *f = st;
    if (!f) return;
    free(f->X); free(f->h); free(f->y); free(f->post); free(f->comb); free(f->sel);
    free(f);
}

void *fd_next_begin(const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    if (check_config(c, e)) return NULL;
    if (S < 1) { fd_fail(e, "bad_usage", "", "empty token sequence"); return NULL; }
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, M = (size_t)NX(c)->hc_mult;
    const fd_tensor *emb = fd_op_get(W, e, 2, V, H, 0, FD_NEXT_PREFIX "embed_tokens.weight");
    if (!emb) return NULL;
    for (size_t t = 0; t < S; t++)
        if (ids[t] < 0 || (uint64_t)ids[t] >= V) {
            fd_fail(e, "bad_token", "", "token id %lld at position %zu is outside the vocab (%zu)", (long long)ids[t], t, V);
            return NULL;
        }
    nx_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->X = fd_xmalloc(S * M * H * 2);
    f->h = fd_xmalloc(S * H * 2);
    f->y = fd_xmalloc(S * H * 2);
    f->post = fd_xmalloc(S * M * 4);
    f->comb = fd_xmalloc(S * M * M * 4);
    f->sel = fd_xcalloc(S * S, 1);
    for (size_t t = 0; t < S; t++)
        for (size_t i = 0; i < M; i++)
            for (size_t d = 0; d < H; d++) f->X[(t * M + i) * H + d] = fd_tensor_bf16_at(emb, (uint64_t)ids[t] * H + d);
    fd_op_dump(-1, "ids", "i64", ids, S * 8);
    return f;
}

/* mHC collapse of site s (0 attn, 1 ffn) of layer L into f->h, then its norm */
static int site_in(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, int s, nx_fwd *f, fd_err *e)
{
    static const char *const site[2] = {"attn", "ffn"};
    size_t H = (size_t)c->hidden_size, M = (size_t)NX(c)->hc_mult, S = f->S;
    nx_hc hh;
    if (nx_hc_load(&hh, W, c, L, site[s], e)) return -1;
    size_t nmix = (2 + M) * M;
    float *mixd = getenv("FIDELITY_FORWARD_DUMP") ? fd_xmalloc(S * nmix * 4) : NULL;
    nx_hc_apply(m, &hh, c, f->X, S, f->post, f->comb, f->h, mixd);
    free(hh.fn);
    char dn[32];
    snprintf(dn, sizeof dn, "hcmix_%s", site[s]);
    if (mixd) fd_op_dump(L, dn, "f32", mixd, S * nmix * 4);
    free(mixd);
    snprintf(dn, sizeof dn, "hcpost_%s", site[s]);
    fd_op_dump(L, dn, "f32", f->post, S * M * 4);
    snprintf(dn, sizeof dn, "hccomb_%s", site[s]);
    fd_op_dump(L, dn, "f32", f->comb, S * M * M * 4);
    snprintf(dn, sizeof dn, "hccol_%s", site[s]);
    fd_op_dump(L, dn, "bf16", f->h, S * H * 2);
    const fd_tensor *nw = fd_op_get(W, e, 1, H, 0, 0, FD_NEXT_PREFIX "layers.%lld.%s.weight", L,
                                 s ? "post_attention_layernorm" : "input_layernorm");
    if (!nw) return -1;
    uint16_t *lw = fd_op_vec_bf16(nw, 0, H);
    fd_op_rmsnorm(f->h, S, H, lw, (float)c->rms_norm_eps, f->h);
    fd_op_dump(L, s ? "post_ln" : "attn_in", "bf16", f->h, S * H * 2);
    free(lw);
    return 0;
}

int fd_next_layer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    nx_fwd *f = st;
    size_t H = (size_t)c->hidden_size, M = (size_t)NX(c)->hc_mult, S = f->S;
    for (int s = 0; s < 2; s++) {
        if (site_in(m, W, c, L, s, f, e)) return -1;
        int r;
        if (!s) r = NX(c)->kda[L] ? nx_kda(m, W, c, L, f->h, S, f->y, e) : nx_dsa(m, W, c, L, f->h, S, f->sel, f->y, e);
        else if (c->mlp_sparse[L]) r = moe(m, W, c, L, f->h, S, f->y, e);
        else {
            char P[160];
            snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.mlp", L);
            r = mlp3(m, W, H, (size_t)c->intermediate_size, P, f->h, S, (float)NX(c)->swiglu_limit, f->y, e);
        }
        if (r) return -1;
        fd_op_dump(L, s ? "mlp" : "attn", "bf16", f->y, S * H * 2);
        nx_hc_combine(m, c, f->post, f->comb, f->y, f->X, S);
        if (!s) fd_op_dump(L, "attn_mid", "bf16", f->X, S * M * H * 2);
    }
    fd_op_dump(L, "layer_out", "bf16", f->X, S * M * H * 2);
    return 0;
}

int fd_next_end(const fd_weights *W, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    nx_fwd *f = st;
    size_t H = (size_t)c->hidden_size, M = (size_t)NX(c)->hc_mult, S = f->S;
    const fd_tensor *nrm = fd_op_get(W, e, 1, H, 0, 0, FD_NEXT_PREFIX "norm.weight");
    if (!nrm) return -1;
    for (size_t t = 0; t < S; t++) /* hc_head: mean over the streams (fp32 sum, / M, one bf16 rounding) */
        for (size_t d = 0; d < H; d++) {
            float acc = F(f->X[t * M * H + d]);
            for (size_t i = 1; i < M; i++) acc += F(f->X[(t * M + i) * H + d]);
            f->h[t * H + d] = BF(acc / (float)M);
        }
    uint16_t *lw = fd_op_vec_bf16(nrm, 0, H);
    fd_op_rmsnorm(f->h, S, H, lw, (float)c->rms_norm_eps, out);
    fd_op_dump(-1, "final", "bf16", out, S * H * 2);
    free(lw);
    return 0;
}
