/* The deepseek_v4 forward driver (dsv4.h; docs/MODEL-DEEPSEEK.md §11.1):
 * the hc_mult residual streams with the shared mHC op (engine/ops/mhc.h),
 * attention (dsv4_attn.c), the hash / top-k MoE with the clamped SwiGLU,
 * the weighted hc_head collapse and the final norm. */
#include "engine/arch/deepseek_v4/dsv4_internal.h"
#include "engine/ops/mhc.h"
#include "engine/ops/reduce.h"
#include "kernels/torch_ops.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct v4_fwd {
    size_t S;
    int64_t *ids;
    uint16_t *X, *h, *y;
    float *post, *comb;
    v4_ropes R;
} v4_fwd;

uint16_t *fd_v4_stream(const fd_glm_config *c, void *st, size_t *n)
{
    v4_fwd *f = st;
    *n = f->S * (size_t)V4X(c)->hc_mult * (size_t)c->hidden_size;
    return f->X;
}

void fd_v4_free(void *st)
{
    v4_fwd *f = st;
    if (!f) return;
    free(f->ids); free(f->X); free(f->h); free(f->y); free(f->post); free(f->comb);
    fd_rope_free(&f->R.main);
    fd_rope_free(&f->R.comp);
    free(f);
}

static void ropes(const fd_glm_config *c, size_t S, v4_ropes *R)
{
    const fd_v4_ext *v = V4X(c);
    size_t rd = (size_t)v->rope_dim;
    float *inv = fd_xmalloc(rd * 2 + 4);
    fd_rope_inv_default(inv, rd, v->main_theta);
    fd_rope_init_freqs(&R->main, S, rd, inv, 1.0);
    if (v->comp_yarn)
        fd_rope_yarn_inv_freq(inv, rd, v->comp_theta, v->y_factor, v->y_beta_fast, v->y_beta_slow, v->y_orig, v->y_truncate);
    else
        fd_rope_inv_default(inv, rd, v->comp_theta);
    fd_rope_init_freqs(&R->comp, S, rd, inv, v->comp_yarn ? v->y_attn_factor : 1.0);
    free(inv);
}

void *fd_v4_begin(const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, M = (size_t)V4X(c)->hc_mult;
    uint16_t *x0 = fd_op_embed(W, "model.embed_tokens.weight", V, H, ids, S, e);
    if (!x0) return NULL;
    v4_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->ids = fd_xmalloc(S * sizeof *ids);
    memcpy(f->ids, ids, S * sizeof *ids);
    f->X = fd_xmalloc(S * M * H * 2);
    f->h = fd_xmalloc(S * H * 2);
    f->y = fd_xmalloc(S * H * 2);
    f->post = fd_xmalloc(S * M * 4);
    f->comb = fd_xmalloc(S * M * M * 4);
    for (size_t t = 0; t < S; t++)
        for (size_t i = 0; i < M; i++) memcpy(f->X + (t * M + i) * H, x0 + t * H, H * 2);
    free(x0);
    ropes(c, S, &f->R);
    return f;
}

/* mHC site s (0 attn, 1 ffn) of layer L: the collapse into f->h, then its norm */
static int site_in(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, int s, v4_fwd *f, fd_err *e)
{
    static const char *const site[2] = {"attn", "ffn"};
    const fd_v4_ext *v = V4X(c);
    size_t H = (size_t)c->hidden_size, M = (size_t)v->hc_mult, S = f->S, mix = (2 + M) * M;
    const fd_tensor *fn = fd_op_get(W, e, 2, mix, M * H, 0, "model.layers.%lld.hc_%s_fn", L, site[s]);
    const fd_tensor *ba = fn ? fd_op_get(W, e, 1, mix, 0, 0, "model.layers.%lld.hc_%s_base", L, site[s]) : NULL;
    const fd_tensor *sc = ba ? fd_op_get(W, e, 1, 3, 0, 0, "model.layers.%lld.hc_%s_scale", L, site[s]) : NULL;
    if (!sc) return -1;
    /* the module is kept in fp32 (_keep_in_fp32_modules_strict): its values as stored */
    float *fw = fd_op_vec_f32(fn, mix * M * H), *bw = fd_op_vec_f32(ba, mix), *sw = fd_op_vec_f32(sc, 3);
    fd_mhc h = {M, H, v->hc_iters, (float)c->rms_norm_eps, (float)v->hc_eps, fw, bw, sw};
    fd_op_mhc_apply(m, &h, f->X, S, f->post, f->comb, f->h, NULL);
    free(fw); free(bw); free(sw);
    char nm[96];
    snprintf(nm, sizeof nm, "model.layers.%lld.%s_norm.weight", L, site[s]);
    if (v4_norm_named(m, W, e, nm, f->h, S, H, (float)c->rms_norm_eps, f->h)) return -1;
    fd_op_dump(L, s ? "post_ln" : "attn_in", "bf16", f->h, S * H * 2);
    return 0;
}

/* ------------------------------------------------------------ MoE */

/* clamped SwiGLU of DeepseekV4MLP / _apply_gate: bf(bf(silu(min(g, lim))) * clamp(u, -lim, lim)); the
 * clamp leaves a contiguous bf16 tensor, so silu's vector path / scalar tail is decided by the element's
 * place base + i in the whole run of `total` (the shared expert's [S, I]; grouped_mm's [S * k, I] in
 * expert order: transformers gates every routed row in one call) */
static void swiglu(uint16_t *g, const uint16_t *u, size_t n, float lim, size_t base, size_t total)
{
    for (size_t i = 0; i < n; i++) {
        float gv = F(g[i]), uv = F(u[i]);
        if (gv > lim) gv = lim;
        if (uv > lim) uv = lim;
        if (uv < -lim) uv = -lim;
        float a = fd_op_torch_vec(base + i, total, 64) ? fd_torch_silu(gv) : fd_torch_silu_tail(gv);
        g[i] = BF(F(BF(a)) * uv);
    }
}

/* gate (w1), up (w3), down (w2) of PREFIX on rows of x -> y; the rows sit at base / I.. of a gated run of
 * total elements (swiglu) */
static int mlp(const fd_mm *m, const fd_weights *W, const char *P, size_t H, size_t I, float lim, const uint16_t *x,
               size_t rows, size_t base, size_t total, uint16_t *y, fd_err *e)
{
    char nm[256];
    uint16_t *g = fd_xmalloc(rows * I * 2 + 2), *u = fd_xmalloc(rows * I * 2 + 2);
    int rc = -1;
    snprintf(nm, sizeof nm, "%s.w1", P);
    if (v4_linear(m, W, e, I, H, x, rows, g, nm)) goto out;
    snprintf(nm, sizeof nm, "%s.w3", P);
    if (v4_linear(m, W, e, I, H, x, rows, u, nm)) goto out;
    swiglu(g, u, rows * I, lim, base, total);
    snprintf(nm, sizeof nm, "%s.w2", P);
    if (v4_linear(m, W, e, H, I, g, rows, y, nm)) goto out;
    rc = 0;
out:
    free(g); free(u);
    return rc;
}

static int moe(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, v4_fwd *f, fd_err *e)
{
    const fd_v4_ext *v = V4X(c);
    size_t H = (size_t)c->hidden_size, E = (size_t)c->n_routed_experts, Im = (size_t)c->moe_intermediate_size,
           k = (size_t)c->num_experts_per_tok, S = f->S, V = (size_t)c->vocab_size;
    float lim = (float)v->swiglu_limit;
    char P[96], nm[160];
    snprintf(P, sizeof P, "model.layers.%lld.ffn", L);
    uint16_t *lg = fd_xmalloc(S * E * 2), *sh = fd_xmalloc(S * H * 2), *xs = fd_xmalloc(S * k * H * 2 + 2);
    uint16_t *ys = fd_xmalloc(S * k * H * 2 + 2), *yk = fd_xcalloc(S * k * H + 1, 2), *wk = fd_xmalloc(S * k * 2 + 2);
    size_t *ek = fd_xmalloc((S * k + 1) * sizeof *ek), *rows = fd_xmalloc((S * k + 1) * sizeof *rows);
    fd_keyscore *ks = fd_xmalloc((E + 1) * sizeof *ks);
    float *bias = NULL;
    uint16_t *sc = NULL; /* the bf16 scores of a token */
    unsigned char *tab = NULL; /* tid2eid, read whole (the loader checked its shape, dtype and bounds) */
    int rc = -1;
    snprintf(nm, sizeof nm, "%s.gate", P);
    if (v4_linear(m, W, e, E, H, f->h, S, lg, nm)) goto out;
    snprintf(nm, sizeof nm, "%s.shared_experts", P);
    if (mlp(m, W, nm, H, Im, lim, f->h, S, 0, S * Im, sh, e)) goto out;
    size_t tes = 8;
    if (v->hash[L]) {
        snprintf(nm, sizeof nm, "%s.gate.tid2eid", P);
        const fd_tensor *tt = fd_weights_get(W, nm);
        tes = tt && !strcmp(tt->dtype, "I32") ? 4 : 8;
        if (!tt || tt->ndim != 2 || tt->shape[0] != V || tt->shape[1] != k || tt->nbytes != V * k * tes) {
            rc = fd_fail(e, "checkpoint_mismatch", "", "%s: missing, or not an I64/I32 [%zu, %zu] table", nm, V, k);
            goto out;
        }
        tab = fd_xmalloc(V * k * tes + 8);
        if (tt->data) memcpy(tab, tt->data, V * k * tes);
        else if (fd_weights_read(W, tt, tab, V * k * tes, e)) goto out;
    } else {
        const fd_tensor *tb = fd_op_get(W, e, 1, E, 0, 0, "%s.gate.bias", P);
        if (!tb) goto out;
        bias = fd_op_vec_f32(tb, E);
    }

    sc = fd_xmalloc(E * 2 + 2);
    for (size_t t = 0; t < S; t++) {
        for (size_t x = 0; x < E; x++) {
            float l = F(lg[t * E + x]);
            int vec = fd_op_torch_vec(t * E + x, S * E, 64); /* the scoring function over the [S, E] bf16 logits */
            if (v->scoring == V4_SQRTSOFTPLUS) sc[x] = BF(sqrtf(F(BF(vec ? fd_torch_softplus(l) : fd_torch_softplus_tail(l)))));
            else sc[x] = BF(vec ? fd_torch_sigmoid(l) : fd_torch_sigmoid_tail(l));
        }
        if (v->hash[L]) {
            for (size_t i = 0; i < k; i++) {
                int64_t id = f->ids[t], ex = 0; /* ids are < vocab (fd_op_embed refused the others) */
                if (tes == 8) memcpy(&ex, tab + ((size_t)id * k + i) * 8, 8);
                else { int32_t e32; memcpy(&e32, tab + ((size_t)id * k + i) * 4, 4); ex = e32; }
                if (ex < 0 || (size_t)ex >= E) {
                    rc = fd_fail(e, "checkpoint_mismatch", "", "%s.gate.tid2eid: entry [%lld][%zu] is not an expert index", P,
                                 (long long)id, i);
                    goto out;
                }
                ek[t * k + i] = (size_t)ex;
            }
        } else {
            for (size_t x = 0; x < E; x++) { ks[x].s = F(sc[x]) + bias[x]; ks[x].j = x; }
            fd_op_topk_ordered(ks, E, k);
            for (size_t i = 0; i < k; i++) ek[t * k + i] = ks[i].j;
        }
        float sum = 0.0f;
        for (size_t i = 0; i < k; i++) sum += F(sc[ek[t * k + i]]);
        float den = F(BF(F(BF(sum)) + 1e-20f));
        for (size_t i = 0; i < k; i++)
            wk[t * k + i] = BF(F(BF(F(sc[ek[t * k + i]]) / den)) * (float)c->routed_scaling_factor);
    }
    fd_op_dump(L, "experts", "i64", ek, S * k * sizeof *ek);
    fd_op_dump(L, "expert_w", "bf16", wk, S * k * 2);
    /* each expert over its tokens, in expert order (each row is independent) */
    for (size_t x = 0, done = 0; x < E; x++) {
        size_t n = 0;
        for (size_t i = 0; i < S * k; i++)
            if (ek[i] == x) { rows[n] = i; memcpy(xs + n * H, f->h + (i / k) * H, H * 2); n++; }
        if (!n) continue;
        snprintf(nm, sizeof nm, "%s.experts.%zu", P, x);
        if (mlp(m, W, nm, H, Im, lim, xs, n, done * Im, S * k * Im, ys, e)) goto out;
        done += n;
        for (size_t r = 0; r < n; r++) memcpy(yk + rows[r] * H, ys + r * H, H * 2);
    }
    for (size_t t = 0; t < S; t++)
        for (size_t d = 0; d < H; d++) {
            float acc = 0.0f; /* bf(y * w) per slot, summed in slot order in fp32, one rounding */
            for (size_t i = 0; i < k; i++) acc += F(BF(F(yk[(t * k + i) * H + d]) * F(wk[t * k + i])));
            xs[t * H + d] = BF(acc);
            f->y[t * H + d] = BF(F(BF(acc)) + F(sh[t * H + d]));
        }
    fd_op_dump(L, "routed", "bf16", xs, S * H * 2);
    fd_op_dump(L, "shared", "bf16", sh, S * H * 2);
    rc = 0;
out:
    free(lg); free(sh); free(xs); free(ys); free(yk); free(wk); free(ek); free(rows); free(ks); free(bias); free(sc); free(tab);
    return rc;
}

/* ------------------------------------------------------------ hooks */

int fd_v4_layer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    v4_fwd *f = st;
    size_t H = (size_t)c->hidden_size, M = (size_t)V4X(c)->hc_mult, S = f->S;
    for (int s = 0; s < 2; s++) {
        if (site_in(m, W, c, L, s, f, e)) return -1;
        if (s ? moe(m, W, c, L, f, e) : v4_attention(m, W, c, L, &f->R, f->h, S, f->y, e)) return -1;
        fd_op_dump(L, s ? "mlp" : "attn", "bf16", f->y, S * H * 2);
        fd_op_mhc_combine(m, M, H, f->post, f->comb, f->y, f->X, S);
        if (!s) fd_op_dump(L, "attn_mid", "bf16", f->X, S * M * H * 2);
    }
    fd_op_dump(L, "layer_out", "bf16", f->X, S * M * H * 2);
    return 0;
}

/* The n values of an F32 / BF16 tensor as fp32, read whether mapped or not:
 * the end step's hc_head.* and norm (small) are read from the file, since
 * the layer-outer schedule maps only the norm's prefix for it.  NULL with e
 * set when absent or not n values. */
static float *vec_read(const fd_weights *W, const char *name, size_t n, fd_err *e)
{
    const fd_tensor *t = fd_weights_get(W, name);
    int f32 = t && !strcmp(t->dtype, "F32"), bf = t && !strcmp(t->dtype, "BF16");
    if (!t || !(f32 || bf) || t->numel != n) {
        fd_fail(e, "checkpoint_mismatch", "", "tensor %s is missing or not %zu F32/BF16 values", name, n);
        return NULL;
    }
    unsigned char *raw = fd_xmalloc(n * 4 + 4);
    if (t->data) memcpy(raw, t->data, n * (f32 ? 4 : 2));
    else if (fd_weights_read(W, t, raw, n * (f32 ? 4 : 2), e)) { free(raw); return NULL; }
    float *v = fd_xmalloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++) {
        if (f32) memcpy(&v[i], raw + 4 * i, 4);
        else { uint16_t u; memcpy(&u, raw + 2 * i, 2); v[i] = F(u); }
    }
    free(raw);
    return v;
}

int fd_v4_end(const fd_weights *W, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    v4_fwd *f = st;
    const fd_v4_ext *v = V4X(c);
    size_t H = (size_t)c->hidden_size, M = (size_t)v->hc_mult, S = f->S;
    float *fw = vec_read(W, "model.hc_head.hc_fn", M * M * H, e);
    float *bw = fw ? vec_read(W, "model.hc_head.hc_base", M, e) : NULL;
    float *sw = bw ? vec_read(W, "model.hc_head.hc_scale", 1, e) : NULL;
    float *nw = sw ? vec_read(W, "model.norm.weight", H, e) : NULL;
    int rc = -1;
    if (nw) {
        fd_op_mhc_head(NULL, M, H, fw, bw, sw[0], (float)c->rms_norm_eps, (float)v->hc_eps, f->X, S, f->h);
        fd_op_dump(-1, "hc_head", "bf16", f->h, S * H * 2);
        v4_norm(NULL, f->h, S, H, nw, (float)c->rms_norm_eps, out);
        fd_op_dump(-1, "final", "bf16", out, S * H * 2);
        rc = 0;
    }
    free(fw); free(bw); free(sw); free(nw);
    return rc;
}
