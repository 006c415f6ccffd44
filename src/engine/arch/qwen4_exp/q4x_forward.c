/* The qwen4_exp forward (q4x.h): begin (the embedding repeated over the
 * streams, the partial RoPE tables, the causal selection), one decoder layer
 * (gated residual, the gated delta net or QSA + gated attention, written back;
 * gated residual, the sparse MoE, written back), end (the final mixer).
 * Only the op library does arithmetic. */
#include "engine/arch/qwen4_exp/q4x.h"
#include "engine/ops/hyper.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct q4x_fwd {
    size_t S;
    uint16_t *X;        /* [S][hc * hidden] the streams */
    unsigned char *sel; /* S x S: the causal selection, narrowed per indexed layer */
    fd_mm mm;           /* the layers' product kernel and order, serial (fd_mm_serial): the final mixer's */
    int have_mm;
    fd_rope R;
} q4x_fwd;

void fd_q4x_free(void *st)
{
    q4x_fwd *f = st;
    if (!f) return;
    free(f->X); free(f->sel); fd_rope_free(&f->R);
    free(f);
}

void *fd_q4x_begin(const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    const fd_q4x_ext *x = Q4X(c);
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, rd = (size_t)x->q.rot, n = (size_t)x->hc;
    if (S < 1) { fd_fail(e, "bad_usage", "", "empty token sequence"); return NULL; }
    const fd_tensor *emb = fd_op_get(W, e, 2, V, H, 0, "%sembed_tokens.weight", x->q.prefix);
    if (!emb) return NULL;
    for (size_t t = 0; t < S; t++)
        if (ids[t] < 0 || (uint64_t)ids[t] >= V) {
            fd_fail(e, "bad_token", "", "token id %lld at position %zu is outside the vocab (%zu)", (long long)ids[t], t, V);
            return NULL;
        }
    q4x_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->X = fd_xmalloc(S * n * H * 2);
    for (size_t t = 0; t < S; t++)
        for (size_t s = 0; s < n; s++)
            for (size_t i = 0; i < H; i++) f->X[(t * n + s) * H + i] = fd_tensor_bf16_at(emb, (uint64_t)ids[t] * H + i);
    fd_op_dump(-1, "ids", "i64", ids, S * 8);
    fd_op_dump(-1, "embed", "bf16", f->X, S * n * H * 2);
    float *inv = fd_xmalloc(rd / 2 * sizeof *inv + 4);
    fd_rope_inv_default(inv, rd, c->rope_theta);
    fd_rope_init_freqs(&f->R, S, rd, inv, 1.0);
    free(inv);
    f->sel = fd_xcalloc(S * S + 1, 1);
    return f;
}

/* Qwen4ExpTextQSAIndexer of layer L on the mixed rows h: f->sel */
static int qsa(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, q4x_fwd *f, const uint16_t *h,
               fd_err *e)
{
    const fd_q4x_ext *x = Q4X(c);
    size_t S = f->S, H = (size_t)c->hidden_size, nh = (size_t)x->ix_heads, d = (size_t)x->ix_dim, N = (nh + 1) * d;
    const char *P = x->q.prefix;
    const fd_tensor *qn = fd_op_get(W, e, 1, d, 0, 0, "%slayers.%lld.self_attn.indexer.q_layernorm.weight", P, L);
    const fd_tensor *kn = qn ? fd_op_get(W, e, 1, d, 0, 0, "%slayers.%lld.self_attn.indexer.k_layernorm.weight", P, L) : NULL;
    fd_lin qk = {0};
    if (!kn || fd_op_lin_named(m, S, &qk, W, e, N, H, "%slayers.%lld.self_attn.indexer.index_qk_proj", P, L)) return -1;
    uint16_t *y = fd_xmalloc(S * N * 2), *q = fd_xmalloc(S * nh * d * 2), *k = fd_xmalloc(S * d * 2),
             *kw = W->gstored ? NULL : fd_op_vec_bf16(kn, 0, d);
    float *km = W->gstored ? fd_op_vec_f32(kn, d) : NULL; /* a GGUF's stored 1 + w */
    fd_lin_apply(m, &qk, h, S, y);
    for (size_t t = 0; t < S; t++) {
        memcpy(q + t * nh * d, y + t * N, nh * d * 2);
        memcpy(k + t * d, y + t * N + nh * d, d * 2);
    }
    fd_q35_norm(m, W, qn, q, S * nh, d, (float)c->rms_norm_eps, q);
    fd_op_rope_heads(m, q, nh, NULL, 0, d, &f->R, S);
    fd_op_dump(L, "qsa_q", "bf16", q, S * nh * d * 2);
    fd_op_qsa_select(m, q, k, kw, km, &f->R, S, nh, d, (size_t)x->ix_cr, (size_t)x->ix_budget, (float)c->rms_norm_eps, f->sel);
    fd_op_dump(L, "qsa_sel", "u8", f->sel, S * S);
    fd_lin_free(&qk);
    free(y); free(q); free(k); free(kw); free(km);
    return 0;
}

int fd_q4x_layer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    q4x_fwd *f = st;
    const fd_q4x_ext *x = Q4X(c);
    size_t S = f->S, H = (size_t)c->hidden_size, n = (size_t)x->hc;
    float eps = (float)c->rms_norm_eps;
    uint16_t *h = fd_xmalloc(S * H * 2), *y = fd_xmalloc(S * H * 2), *inj = fd_xmalloc(S * n * 2);
    fd_hcres g = {0};
    int rc = -1;
    char pre[320];
    snprintf(pre, sizeof pre, "%slayers.%lld.attn_hyper_connection.", x->q.prefix, L);
    if (fd_hcres_load(m, &g, W, e, n, H, (size_t)x->hc_rank, S, 1, pre)) goto out;
    fd_hcres_apply(m, &g, f->X, S, eps, h, inj);
    fd_hcres_free(&g);
    fd_op_dump(L, "attn_in", "bf16", h, S * H * 2);
    fd_op_dump(L, "attn_inj", "bf16", inj, S * n * 2);
    if (x->q.linear[L]) {
        if (fd_q35_gdn(m, W, c, L, h, S, y, e)) goto out;
    } else {
        if (qsa(m, W, c, L, f, h, e) || fd_q35_attention(m, W, c, L, &f->R, f->sel, S, h, y, e)) goto out;
    }
    fd_op_dump(L, "mixer", "bf16", y, S * H * 2);
    fd_hcres_write(m, f->X, y, inj, S, n, H);
    fd_op_dump(L, "attn_resid", "bf16", f->X, S * n * H * 2);
    snprintf(pre, sizeof pre, "%slayers.%lld.mlp_hyper_connection.", x->q.prefix, L);
    if (fd_hcres_load(m, &g, W, e, n, H, (size_t)x->hc_rank, S, 1, pre)) goto out;
    fd_hcres_apply(m, &g, f->X, S, eps, h, inj);
    fd_hcres_free(&g);
    fd_op_dump(L, "post_ln", "bf16", h, S * H * 2);
    fd_op_dump(L, "mlp_inj", "bf16", inj, S * n * 2);
    snprintf(pre, sizeof pre, "%slayers.%lld.mlp.", x->q.prefix, L);
    if (fd_q35_moe(m, W, c, L, pre, h, S, y, e)) goto out;
    fd_op_dump(L, "mlp", "bf16", y, S * H * 2);
    fd_hcres_write(m, f->X, y, inj, S, n, H);
    fd_op_dump(L, "layer_out", "bf16", f->X, S * n * H * 2);
    f->mm = fd_mm_serial(m); /* the end step has no fd_mm: the same order and kernel, no threads (same bits) */
    f->have_mm = 1;
    rc = 0;
out:
    free(h); free(y); free(inj);
    return rc;
}

int fd_q4x_end(const fd_weights *W, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    q4x_fwd *f = st;
    const fd_q4x_ext *x = Q4X(c);
    if (!f->have_mm) return fd_fail(e, "internal", "", "qwen4_exp: the forward ended before its layers ran");
    char pre[320];
    snprintf(pre, sizeof pre, "%shyper_connection_mixer.", x->q.prefix);
    fd_hcres g; /* the final mixer (Qwen4ExpTextGatedResidual without injection) */
    if (fd_hcres_load(&f->mm, &g, W, e, (size_t)x->hc, (size_t)c->hidden_size, (size_t)x->hc_rank, f->S, 0, pre))
        return -1;
    fd_hcres_apply(&f->mm, &g, f->X, f->S, (float)c->rms_norm_eps, out, NULL);
    fd_hcres_free(&g);
    fd_op_dump(-1, "final", "bf16", out, f->S * (size_t)c->hidden_size * 2);
    return 0;
}
