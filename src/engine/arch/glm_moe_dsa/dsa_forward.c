/* glm_moe_dsa forward to the final RMSNorm output; see forward.h for every
 * rounding, tie and order choice. */
#include "engine/arch/glm_moe_dsa/dsa_forward.h"
#include "engine/ops/matmul.h"
#include "engine/ops/moe.h"
#include "engine/ops/indexer.h"
#include "kernels/rowops.h"
#include "engine/ops/ops.h"
#include "engine/ops/kblocks.h"
#include "kernels/torch_ops.h"
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


typedef fd_lin lin;

/* the shared ops under this file's short names (engine/ops/ops.h) */
#define rmsnorm fd_op_rmsnorm_mm
#define layernorm fd_op_layernorm_bf16
#define vec_bf16 fd_op_vec_bf16
#define residual_add fd_op_residual_add
#define rot fd_rope_rot
#define rope_init fd_rope_init
typedef fd_rope rope;

/* ------------------------------------------------------------ norms, rope */

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

/* ------------------------------------------------------------ selection */

typedef fd_keyscore keyscore; /* engine/ops/ops.h */



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
        char ip[96];
        snprintf(ip, sizeof ip, "model.layers.%lld.self_attn.indexer", L);
        if (fd_op_dsa_indexer(m, W, c, ip, L, h, cq, S, R, 0, sel, e)) goto out;
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

uint16_t *fd_dsa_stream(const fd_glm_config *c, void *st, size_t *n)
{
    dsa_fwd *f = st;
    *n = f->S * (size_t)c->hidden_size;
    return f->x;
}

void fd_dsa_free(void *st)
{
    dsa_fwd *f = st;
    if (!f) return;
    free(f->x); free(f->sel); fd_rope_free(&f->R);
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
    uint16_t *x0 = fd_op_embed(W, "model.embed_tokens.weight", V, H, ids, S, e);
    if (!x0) return NULL;
    dsa_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->x = x0;
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
    if (c->mlp_sparse[L] ? fd_mlp_moe(m, W, c, nm, L, h2, S, y, e) : fd_mlp_dense(m, W, H, (size_t)c->intermediate_size, nm, h2, S, y, e))
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

