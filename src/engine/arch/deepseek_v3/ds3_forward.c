/* The deepseek_v3 forward (ds3.h): glm_moe_dsa's layer without the indexer,
 * with an optional q LoRA, rotate_half or interleaved RoPE and yarn.  Every
 * product, norm, softmax and the MoE are the shared ops (engine/ops/). */
#include "engine/arch/deepseek_v3/ds3.h"
#include "engine/ops/moe.h"
#include "engine/ops/indexer.h"
#include "engine/ops/ops.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct ds3_fwd {
    size_t S;
    uint16_t *x;
    unsigned char *sel; /* every causal key */
    fd_rope R;
} ds3_fwd;

typedef struct rope_job {
    uint16_t *q, *a;
    const fd_rope *R;
    size_t nh, dq, dn, rkv, dr;
    int interleave;
} rope_job;

static void rope_rows(void *ctx, size_t lo, size_t hi)
{
    const rope_job *j = ctx;
    void (*rot)(uint16_t *, const fd_rope *, size_t) = j->interleave ? fd_rope_rot : fd_rope_rot_half;
    for (size_t t = lo; t < hi; t++) {
        for (size_t hh = 0; hh < j->nh; hh++) rot(j->q + (t * j->nh + hh) * j->dq + j->dn, j->R, t);
        rot(j->a + t * (j->rkv + j->dr) + j->rkv, j->R, t);
    }
}

/* q [S][nh][dn + dr] from h: q_b(q_a_layernorm(q_a(h))) or q_proj(h);
 * *cq_out (when given): q_a_layernorm's output, the indexer's input */
static int query(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *h, size_t S,
                 uint16_t *q, uint16_t **cq_out, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, rq = (size_t)c->q_lora_rank, nh = (size_t)c->num_attention_heads,
           dq = (size_t)c->qk_head_dim;
    char nm[160];
    fd_lin qa = {0}, qb = {0};
    if (!DS3(c)->q_lora) {
        snprintf(nm, sizeof nm, "%slayers.%lld.self_attn.q_proj", c->arch->prefix, L);
        if (fd_lin_load(m, &qa, W, e, nh * dq, H, S, 0, nm)) return -1;
        fd_lin_apply(m, &qa, h, S, q);
        fd_lin_free(&qa);
        return 0;
    }
    int rc = -1;
    uint16_t *cq = NULL, *qaw = NULL;
    snprintf(nm, sizeof nm, "%slayers.%lld.self_attn.q_a_proj", c->arch->prefix, L);
    if (fd_lin_load(m, &qa, W, e, rq, H, S, c->attention_bias, nm)) goto out;
    snprintf(nm, sizeof nm, "%slayers.%lld.self_attn.q_b_proj", c->arch->prefix, L);
    if (fd_lin_load(m, &qb, W, e, nh * dq, rq, S, 0, nm)) goto out;
    const fd_tensor *t = fd_op_get(W, e, 1, rq, 0, 0, "%slayers.%lld.self_attn.q_a_layernorm.weight", c->arch->prefix, L);
    if (!t) goto out;
    qaw = fd_op_vec_bf16(t, 0, rq);
    cq = fd_xmalloc(S * rq * 2);
    fd_lin_apply(m, &qa, h, S, cq);
    fd_op_dump(L, "q_a", "bf16", cq, S * rq * 2);
    fd_op_rmsnorm_mm(m, cq, S, rq, qaw, 1e-6f, cq);
    fd_op_dump(L, "q_a_norm", "bf16", cq, S * rq * 2);
    fd_lin_apply(m, &qb, cq, S, q);
    if (cq_out) { *cq_out = cq; cq = NULL; }
    rc = 0;
out:
    fd_lin_free(&qa); fd_lin_free(&qb);
    free(cq); free(qaw);
    return rc;
}

/* x += o_proj(MLA(input_layernorm(x))) */
static int attention(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, ds3_fwd *f, const uint16_t *ln_w,
                     fd_err *e)
{
    size_t H = (size_t)c->hidden_size, rkv = (size_t)c->kv_lora_rank, nh = (size_t)c->num_attention_heads,
           dn = (size_t)c->qk_nope_head_dim, dr = (size_t)c->qk_rope_head_dim, dv = (size_t)c->v_head_dim, dq = dn + dr,
           S = f->S;
    int rc = -1;
    char nm[160];
    fd_lin kva = {0}, kvb = {0}, op = {0};
    uint16_t *h = NULL, *q = NULL, *a = NULL, *ct = NULL, *kv = NULL, *o = NULL, *ao = NULL, *kvaw = NULL, *cq = NULL;
#define LL(var, n, k, b, suffix)                                               \
    snprintf(nm, sizeof nm, "%slayers.%lld.self_attn." suffix, c->arch->prefix, L); \
    if (fd_lin_load(m, &var, W, e, n, k, S, b, nm)) goto out;
    LL(kva, rkv + dr, H, c->attention_bias, "kv_a_proj_with_mqa")
    LL(kvb, nh * (dn + dv), rkv, 0, "kv_b_proj")
    LL(op, H, nh * dv, c->attention_bias, "o_proj")
#undef LL
    const fd_tensor *t2 = fd_op_get(W, e, 1, rkv, 0, 0, "%slayers.%lld.self_attn.kv_a_layernorm.weight", c->arch->prefix, L);
    if (!t2) goto out;
    kvaw = fd_op_vec_bf16(t2, 0, rkv);
    h = fd_xmalloc(S * H * 2);
    fd_op_rmsnorm_mm(m, f->x, S, H, ln_w, (float)c->rms_norm_eps, h);
    fd_op_dump(L, "attn_in", "bf16", h, S * H * 2);
    q = fd_xmalloc(S * nh * dq * 2);
    if (query(m, W, c, L, h, S, q, DS3(c)->dsa ? &cq : NULL, e)) goto out;
    fd_op_dump(L, "q_b", "bf16", q, S * nh * dq * 2);
    a = fd_xmalloc(S * (rkv + dr) * 2);
    fd_lin_apply(m, &kva, h, S, a);
    fd_op_dump(L, "kv_a", "bf16", a, S * (rkv + dr) * 2);
    ct = fd_xmalloc(S * rkv * 2);
    for (size_t t = 0; t < S; t++) memcpy(ct + t * rkv, a + t * (rkv + dr), rkv * 2);
    fd_op_rmsnorm_mm(m, ct, S, rkv, kvaw, 1e-6f, ct);
    fd_op_dump(L, "kv_a_norm", "bf16", ct, S * rkv * 2);
    kv = fd_xmalloc(S * nh * (dn + dv) * 2);
    fd_lin_apply(m, &kvb, ct, S, kv);
    fd_op_dump(L, "kv_b", "bf16", kv, S * nh * (dn + dv) * 2);
    rope_job rj = {q, a, &f->R, nh, dq, dn, rkv, dr, DS3(c)->rope_interleave};
    if (!DS3(c)->nope) fd_mm_range(m, S, 32, rope_rows, &rj); /* kimi_linear: no RoPE */
    fd_op_dump(L, "q_rope", "bf16", q, S * nh * dq * 2);
    fd_op_dump(L, "kv_a_rope", "bf16", a, S * (rkv + dr) * 2);
    if (DS3(c)->dsa) { /* deepseek_v32: the indexer's top-k keys of this layer, rotate_half RoPE */
        snprintf(nm, sizeof nm, "%slayers.%lld.self_attn.indexer", c->arch->prefix, L);
        if (fd_op_dsa_indexer(m, W, c, nm, L, h, cq, S, &f->R, 1, f->sel, e)) goto out;
        fd_op_dump(L, "sel", "u8", f->sel, S * S);
    }
    o = fd_xmalloc(S * nh * dv * 2);
    fd_op_attention_scaled(m, q, kv, a, f->sel, o, S, nh, dn, dr, dv, rkv, (float)DS3(c)->scaling);
    fd_op_dump(L, "attn_core", "bf16", o, S * nh * dv * 2);
    ao = fd_xmalloc(S * H * 2);
    fd_lin_apply(m, &op, o, S, ao);
    fd_op_dump(L, "o_proj", "bf16", ao, S * H * 2);
    fd_op_residual_add(m, f->x, ao, S * H);
    fd_op_dump(L, "attn_resid", "bf16", f->x, S * H * 2);
    rc = 0;
out:
    fd_lin_free(&kva); fd_lin_free(&kvb); fd_lin_free(&op);
    free(h); free(q); free(a); free(ct); free(kv); free(o); free(ao); free(kvaw); free(cq);
    return rc;
}

uint16_t *fd_ds3_stream(const fd_glm_config *c, void *st, size_t *n)
{
    ds3_fwd *f = st;
    *n = f->S * (size_t)c->hidden_size;
    return f->x;
}

void fd_ds3_free(void *st)
{
    ds3_fwd *f = st;
    if (!f) return;
    free(f->x); free(f->sel); fd_rope_free(&f->R);
    free(f);
}

void *fd_ds3_begin(const fd_weights *W, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, V = (size_t)c->vocab_size, dr = (size_t)c->qk_rope_head_dim;
    const fd_ds3_ext *x = DS3(c);
    char en[160];
    snprintf(en, sizeof en, "%sembed_tokens.weight", c->arch->prefix);
    uint16_t *x0 = fd_op_embed(W, en, V, H, ids, S, e);
    if (!x0) return NULL;
    ds3_fwd *f = fd_xcalloc(1, sizeof *f);
    f->S = S;
    f->x = x0;
    if (x->yarn) {
        float *inv = fd_xmalloc(dr / 2 * 4 + 4);
        fd_rope_yarn_inv_freq(inv, dr, c->rope_theta, x->factor, x->beta_fast, x->beta_slow, x->orig_max_pos, x->truncate);
        fd_rope_init_freqs(&f->R, S, dr, inv, x->attention_factor);
        free(inv);
    } else
        fd_rope_init(&f->R, S, dr, c->rope_theta);
    f->sel = fd_xmalloc(S * S);
    memset(f->sel, 0, S * S);
    for (size_t t = 0; t < S; t++) memset(f->sel + t * S, 1, t + 1);
    return f;
}

int fd_ds3_layer(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    ds3_fwd *f = st;
    size_t H = (size_t)c->hidden_size, S = f->S;
    const fd_tensor *a = fd_op_get(W, e, 1, H, 0, 0, "%slayers.%lld.input_layernorm.weight", c->arch->prefix, L);
    const fd_tensor *b = a ? fd_op_get(W, e, 1, H, 0, 0, "%slayers.%lld.post_attention_layernorm.weight", c->arch->prefix, L) : NULL;
    if (!b) return -1;
    uint16_t *lw = fd_op_vec_bf16(a, 0, H), *pw = fd_op_vec_bf16(b, 0, H);
    uint16_t *h2 = fd_xmalloc(S * H * 2), *y = fd_xmalloc(S * H * 2);
    int rc = -1;
    if (DS3(c)->kda && DS3(c)->kda[L]) { /* kimi_linear's KDA layers: x += mixer(input_layernorm(x)) */
        fd_op_rmsnorm_mm(m, f->x, S, H, lw, (float)c->rms_norm_eps, h2);
        fd_op_dump(L, "attn_in", "bf16", h2, S * H * 2);
        if (DS3(c)->mixer(m, W, c, L, h2, S, y, e)) goto out;
        fd_op_dump(L, "o_proj", "bf16", y, S * H * 2);
        fd_op_residual_add(m, f->x, y, S * H);
        fd_op_dump(L, "attn_resid", "bf16", f->x, S * H * 2);
    } else if (attention(m, W, c, L, f, lw, e))
        goto out;
    fd_op_rmsnorm_mm(m, f->x, S, H, pw, (float)c->rms_norm_eps, h2);
    fd_op_dump(L, "post_ln", "bf16", h2, S * H * 2);
    char nm[128];
    snprintf(nm, sizeof nm, "%slayers.%lld.mlp", c->arch->prefix, L);
    if (c->mlp_sparse[L] ? fd_mlp_moe(m, W, c, nm, L, h2, S, y, e)
                         : fd_mlp_dense(m, W, H, (size_t)c->intermediate_size, nm, h2, S, y, e))
        goto out;
    fd_op_dump(L, "mlp", "bf16", y, S * H * 2);
    fd_op_residual_add(m, f->x, y, S * H);
    fd_op_dump(L, "layer_out", "bf16", f->x, S * H * 2);
    rc = 0;
out:
    free(lw); free(pw); free(h2); free(y);
    return rc;
}

int fd_ds3_end(const fd_weights *W, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    ds3_fwd *f = st;
    size_t H = (size_t)c->hidden_size, S = f->S;
    const fd_tensor *nrm = fd_op_get(W, e, 1, H, 0, 0, "%snorm.weight", c->arch->prefix);
    if (!nrm) return -1;
    uint16_t *lw = fd_op_vec_bf16(nrm, 0, H);
    fd_op_rmsnorm_mm(NULL, f->x, S, H, lw, (float)c->rms_norm_eps, out);
    fd_op_dump(-1, "final", "bf16", out, S * H * 2);
    free(lw);
    return 0;
}
