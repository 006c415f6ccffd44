/* glm5_next forward driver: residual streams, mHC, MLP / MoE (next_forward.h;
 * rounding points in docs/MODEL-GLM5-NEXT.md §3). */
#include "engine/arch/glm5_next/next_internal.h"
#include "engine/ops/moe.h"
#include "kernels/torch_ops.h"
#include "kernels/gemm.h"
#include "util/buf.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ MLP / MoE */

/* Glm5NextTextMoE with transformers' default grouped_mm experts and the
 * dense MLP: the one MoE op (engine/ops/moe.h) with glm5_next's clamped
 * SwiGLU (swiglu_limit), routed = bf(sum over the k slots, in its top-k
 * order, of fp32(y) * r). */
static fd_moe_opts moe_opts(const fd_glm_config *c)
{
    fd_moe_opts o = {1, (float)NX(c)->swiglu_limit, 1, 1, 1};
    return o;
}

static int moe(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *x, size_t S, uint16_t *y,
               fd_err *e)
{
    char P[160];
    snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.mlp", L);
    fd_moe_opts o = moe_opts(c);
    return fd_mlp_moe_opts(m, W, c, P, L, x, S, &o, y, e);
}

/* ------------------------------------------------------------ driver */

static int check_config(const fd_glm_config *c, fd_err *e)
{
    const fd_next_ext *x = NX(c);
    if (x->hc_mult > 64) return fd_fail(e, "bad_config", "", "glm5_next: hc_mult > 64 is not supported");
    if (c->n_group > 1024 || c->n_routed_experts > 1 << 20)
        return fd_fail(e, "bad_config", "", "glm5_next: n_group > 1024 is not supported");
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

/* the hc_mult streams: [S, hc_mult, H] */
uint16_t *fd_next_stream(const fd_glm_config *c, void *st, size_t *n)
{
    nx_fwd *f = st;
    *n = f->S * (size_t)NX(c)->hc_mult * (size_t)c->hidden_size;
    return f->X;
}

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
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, M = (size_t)NX(c)->hc_mult;
    uint16_t *x0 = fd_op_embed(W, FD_NEXT_PREFIX "embed_tokens.weight", V, H, ids, S, e);
    if (!x0) return NULL;
    nx_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->X = fd_xmalloc(S * M * H * 2);
    f->h = fd_xmalloc(S * H * 2);
    f->y = fd_xmalloc(S * H * 2);
    f->post = fd_xmalloc(S * M * 4);
    f->comb = fd_xmalloc(S * M * M * 4);
    f->sel = fd_xcalloc(S * S, 1);
    for (size_t t = 0; t < S; t++) /* the embedding row in each of the hc_mult streams */
        for (size_t i = 0; i < M; i++) memcpy(f->X + (t * M + i) * H, x0 + t * H, H * 2);
    free(x0);
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
            r = fd_mlp_dense_lim(m, W, H, (size_t)c->intermediate_size, P, f->h, S, 1, (float)NX(c)->swiglu_limit, f->y, e);
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
