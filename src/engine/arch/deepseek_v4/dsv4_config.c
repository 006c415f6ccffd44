/* DeepseekV4Config (transformers 5.25 configuration_deepseek_v4.py;
 * docs/MODEL-DEEPSEEK.md §11.2): every field that changes the math, with the
 * legacy spellings __post_init__ folds in (compress_ratios,
 * compress_rate_csa / _hca, num_hash_layers, qk_rope_head_dim, flat yarn
 * keys of rope_parameters); what the forward does not implement is refused
 * by name (bad_config). */
#include "engine/arch/deepseek_v4/dsv4.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

static const char *const LTYPES[3] = {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"};

static int layer_types(const jv *d, const fd_glm_config *c, fd_v4_ext *x, fd_err *e)
{
    int64_t L = c->num_hidden_layers;
    const jv *lt = jv_get(d, "layer_types"), *cr = jv_get(d, "compress_ratios");
    if (lt && lt->t != JV_NULL) {
        if (lt->t != JV_ARR || (int64_t)lt->u.a.n < L) return bad(e, "layer_types", "is not a list of num_hidden_layers entries");
        for (int64_t i = 0; i < L; i++) {
            const jv *v = lt->u.a.v[i];
            int k = -1;
            for (int j = 0; v->t == JV_STR && j < 3; j++)
                if (!strcmp(v->u.s.p, LTYPES[j])) k = j;
            if (k < 0)
                return bad(e, "layer_types", "entries must be sliding_attention, compressed_sparse_attention or "
                                             "heavily_compressed_attention");
            x->type[i] = (unsigned char)k;
        }
    } else if (cr && cr->t != JV_NULL) {
        if (cr->t != JV_ARR || (int64_t)cr->u.a.n < L) return bad(e, "compress_ratios", "is not a list of num_hidden_layers entries");
        for (int64_t i = 0; i < L; i++) {
            const jv *v = cr->u.a.v[i];
            if (v->t != JV_INT || (v->u.i != 0 && v->u.i != 4 && v->u.i != 128))
                return bad(e, "compress_ratios", "entries must be 0, 4 or 128");
            x->type[i] = v->u.i == 0 ? V4_SLIDING : v->u.i == 4 ? V4_CSA : V4_HCA;
        }
    } else /* 2 x HCA, then transformers' interleave over range(L - 2): CSA where odd */
        for (int64_t i = 0; i < L; i++) x->type[i] = i < 2 ? V4_HCA : (i - 2) % 2 ? V4_CSA : V4_HCA;
    const jv *mt = jv_get(d, "mlp_layer_types");
    if (mt && mt->t != JV_NULL) {
        if (mt->t != JV_ARR || (int64_t)mt->u.a.n < L) return bad(e, "mlp_layer_types", "is not a list of num_hidden_layers entries");
        for (int64_t i = 0; i < L; i++) {
            const jv *v = mt->u.a.v[i];
            if (v->t == JV_STR && !strcmp(v->u.s.p, "hash_moe")) x->hash[i] = 1;
            else if (v->t == JV_STR && !strcmp(v->u.s.p, "moe")) x->hash[i] = 0;
            else return bad(e, "mlp_layer_types", "entries must be hash_moe or moe");
        }
    } else {
        int64_t nh;
        if (fd_cfg_int(d, "num_hash_layers", 3, 0, &nh, e)) return -1;
        for (int64_t i = 0; i < L; i++) x->hash[i] = i < nh;
    }
    return 0;
}

static int rates(const jv *d, fd_v4_ext *x, fd_err *e)
{
    x->rate_csa = 4;
    x->rate_hca = 128;
    const jv *r = jv_get(d, "compress_rates");
    if (r && r->t != JV_NULL) {
        if (r->t != JV_OBJ) return bad(e, "compress_rates", "is not an object");
        if (fd_cfg_int(r, "compressed_sparse_attention", 4, 1, &x->rate_csa, e) ||
            fd_cfg_int(r, "heavily_compressed_attention", 128, 1, &x->rate_hca, e)) {
            fd_err_prefix(e, "compress_rates");
            return -1;
        }
    }
    if (jv_get(d, "compress_rate_csa") && fd_cfg_int(d, "compress_rate_csa", 4, 1, &x->rate_csa, e)) return -1;
    if (jv_get(d, "compress_rate_hca") && fd_cfg_int(d, "compress_rate_hca", 128, 1, &x->rate_hca, e)) return -1;
    if (x->rate_csa > 512 || x->rate_hca > 1024)
        return bad(e, "compress_rates", "above 512 (CSA) / 1024 (HCA) tokens a window is not supported");
    return 0;
}

/* one rope_parameters entry (nested main / compress, or the flat dict) */
static int rope_entry(const jv *p, const char *what, int allow_yarn, double *theta, fd_v4_ext *x, fd_err *e)
{
    char type[32], f[64];
    if (fd_cfg_str(p, "rope_type", "default", type, sizeof type, e)) return -1;
    if (jv_get(p, "type") && !jv_get(p, "rope_type") && fd_cfg_str(p, "type", "default", type, sizeof type, e)) return -1;
    if (jv_get(p, "rope_theta") && fd_cfg_num(p, "rope_theta", *theta, theta, e)) return -1;
    snprintf(f, sizeof f, "rope_parameters.%s.rope_type", what);
    if (!strcmp(type, "default")) return 0;
    if (strcmp(type, "yarn") || !allow_yarn)
        return bad(e, f, allow_yarn ? "only default and yarn are supported" : "only default is supported (main rope)");
    x->comp_yarn = 1;
    if (!jv_get(p, "factor") || !jv_get(p, "original_max_position_embeddings"))
        return bad(e, f, "yarn needs factor and original_max_position_embeddings");
    if (fd_cfg_num(p, "factor", 1.0, &x->y_factor, e) || fd_cfg_num(p, "original_max_position_embeddings", 1.0, &x->y_orig, e) ||
        fd_cfg_num(p, "beta_fast", 32.0, &x->y_beta_fast, e) || fd_cfg_num(p, "beta_slow", 1.0, &x->y_beta_slow, e) ||
        fd_cfg_num(p, "attention_factor", 1.0, &x->y_attn_factor, e) || fd_cfg_bool(p, "truncate", 1, &x->y_truncate, e)) {
        fd_err_prefix(e, "rope_parameters");
        return -1;
    }
    if (jv_get(p, "mscale") || jv_get(p, "mscale_all_dim"))
        return bad(e, f, "yarn mscale / mscale_all_dim are not supported (attention_factor is forced to 1.0)");
    if (!(x->y_factor >= 1.0) || !(x->y_orig >= 1.0)) return bad(e, f, "yarn factor and original_max_position_embeddings must be >= 1");
    return 0;
}

static int rope(const jv *d, const fd_glm_config *c, fd_v4_ext *x, fd_err *e)
{
    if (fd_cfg_num(d, "rope_theta", 10000.0, &x->main_theta, e)) return -1;
    if (fd_cfg_num(d, "compress_rope_theta", 160000.0, &x->comp_theta, e)) return -1;
    double prf = 64.0 / 512.0;
    const jv *pf = jv_get(d, "partial_rotary_factor"), *qr = jv_get(d, "qk_rope_head_dim");
    if (pf && pf->t != JV_NULL) {
        if (fd_cfg_num(d, "partial_rotary_factor", prf, &prf, e)) return -1;
    } else if (qr && qr->t != JV_NULL) {
        int64_t r;
        if (fd_cfg_int(d, "qk_rope_head_dim", 64, 0, &r, e)) return -1;
        prf = (double)r / (double)c->head_dim;
    }
    const jv *rp = jv_get(d, "rope_parameters");
    x->y_attn_factor = 1.0;
    if (rp && rp->t != JV_NULL) {
        if (rp->t != JV_OBJ) return bad(e, "rope_parameters", "is not an object");
        const jv *mn = jv_get(rp, "main"), *cp = jv_get(rp, "compress");
        if (mn && cp && mn->t == JV_OBJ && cp->t == JV_OBJ) {
            /* nested: each entry's own theta and partial_rotary_factor (transformers reads them there) */
            if (rope_entry(mn, "main", 0, &x->main_theta, x, e) || rope_entry(cp, "compress", 1, &x->comp_theta, x, e)) return -1;
            double pm = prf, pc = prf;
            if (jv_get(mn, "partial_rotary_factor") && fd_cfg_num(mn, "partial_rotary_factor", prf, &pm, e)) return -1;
            if (jv_get(cp, "partial_rotary_factor") && fd_cfg_num(cp, "partial_rotary_factor", prf, &pc, e)) return -1;
            if (pm != pc) return bad(e, "rope_parameters", "main and compress partial_rotary_factor differ (not supported)");
            prf = pm;
        } else if (rope_entry(rp, "compress", 1, &x->comp_theta, x, e)) /* flat: yarn keys folded into compress */
            return -1;
    }
    if (!(x->main_theta > 0) || !(x->comp_theta > 0)) return bad(e, "rope_theta", "must be > 0");
    if (!(prf > 0 && prf <= 1)) return bad(e, "partial_rotary_factor", "must be in (0, 1]");
    x->rope_dim = (int64_t)((double)c->head_dim * prf);
    if (x->rope_dim < 2 || x->rope_dim % 2) return bad(e, "partial_rotary_factor", "int(head_dim * factor) must be even and >= 2");
    if (x->rope_dim > c->index_head_dim)
        return bad(e, "partial_rotary_factor", "the rope dims exceed index_head_dim (the indexer rotates its trailing dims)");
    return 0;
}

int fd_v4_config_parse(const jv *d, fd_glm_config *c, fd_err *e)
{
    fd_v4_ext *x = fd_xcalloc(1, sizeof *x);
    c->ext = x;
#define I(field, def, lo) if (fd_cfg_int(d, #field, def, lo, &c->field, e)) return -1
    I(vocab_size, 129280, 1);
    I(hidden_size, 4096, 1);
    I(moe_intermediate_size, 2048, 1);
    I(num_hidden_layers, 43, 1);
    I(num_attention_heads, 64, 1);
    I(num_key_value_heads, 1, 1);
    I(head_dim, 512, 1);
    I(q_lora_rank, 1024, 1);
    I(num_experts_per_tok, 6, 1);
    I(n_routed_experts, 256, 1);
    I(n_shared_experts, 1, 0);
    I(index_n_heads, 64, 1);
    I(index_head_dim, 128, 1);
    I(index_topk, 512, 1);
    I(max_position_embeddings, 1048576, 1);
#undef I
    if (fd_cfg_num(d, "rms_norm_eps", 1e-6, &c->rms_norm_eps, e)) return -1;
    if (fd_cfg_num(d, "routed_scaling_factor", 1.5, &c->routed_scaling_factor, e)) return -1;
    if (fd_cfg_num(d, "attention_dropout", 0.0, &c->attention_dropout, e)) return -1;
    if (fd_cfg_bool(d, "norm_topk_prob", 1, &c->norm_topk_prob, e)) return -1;
    if (fd_cfg_bool(d, "attention_bias", 0, &c->attention_bias, e)) return -1;
    if (fd_cfg_bool(d, "tie_word_embeddings", 0, &c->tie_word_embeddings, e)) return -1;
    if (fd_cfg_bool(d, "mlp_bias", 0, &x->mlp_bias, e)) return -1;
    if (fd_cfg_str(d, "hidden_act", "silu", c->hidden_act, sizeof c->hidden_act, e)) return -1;
    if (fd_cfg_int(d, "sliding_window", 128, 1, &x->window, e)) return -1;
    if (fd_cfg_int(d, "o_groups", 8, 1, &x->o_groups, e)) return -1;
    if (fd_cfg_int(d, "o_lora_rank", 1024, 1, &x->o_lora, e)) return -1;
    if (fd_cfg_int(d, "hc_mult", 4, 1, &x->hc_mult, e)) return -1;
    if (fd_cfg_int(d, "hc_sinkhorn_iters", 20, 1, &x->hc_iters, e)) return -1;
    if (fd_cfg_num(d, "hc_eps", 1e-6, &x->hc_eps, e)) return -1;
    if (fd_cfg_num(d, "swiglu_limit", 10.0, &x->swiglu_limit, e)) return -1;
    char sf[32];
    if (fd_cfg_str(d, "scoring_func", "sqrtsoftplus", sf, sizeof sf, e)) return -1;
    if (!strcmp(sf, "sqrtsoftplus")) x->scoring = V4_SQRTSOFTPLUS;
    else if (!strcmp(sf, "sigmoid")) x->scoring = V4_SIGMOID;
    else return bad(e, "scoring_func", "only sqrtsoftplus and sigmoid are supported");
    /* the release's fp4 routed experts (expert_dtype, top level or in quantization_config) are a weight
     * format: read by the common quantization_config path (engine/qconfig.c, engine/weights_v4rel.c) */
    /* bounds (every product below stays far from overflow) */
    if (c->num_hidden_layers > 65536) return bad(e, "num_hidden_layers", "is implausibly large (> 65536)");
    if (c->n_routed_experts > 65536) return bad(e, "n_routed_experts", "is implausibly large (> 65536)");
    if (c->hidden_size > 1 << 20 || c->head_dim > 1 << 16 || c->num_attention_heads > 4096 || c->q_lora_rank > 1 << 20 ||
        c->moe_intermediate_size > 1 << 20 || c->index_n_heads > 4096 || c->index_head_dim > 1 << 16 || c->vocab_size > 1 << 24)
        return bad(e, "hidden_size", "a dimension is implausibly large");
    if (x->hc_mult > 64) return bad(e, "hc_mult", "is implausibly large (> 64)");
    if (x->hc_iters > 1000) return bad(e, "hc_sinkhorn_iters", "is implausibly large (> 1000)");
    if (x->o_groups > 4096 || x->o_lora > 1 << 20) return bad(e, "o_groups", "is implausibly large");
    if (c->num_key_value_heads != 1) return bad(e, "num_key_value_heads", "must be 1 (deepseek_v4's shared-KV MQA: K = V, one head)");
    if (!c->norm_topk_prob) return bad(e, "norm_topk_prob", "false is not supported (transformers always renormalises)");
    if (strcmp(c->hidden_act, "silu")) return bad(e, "hidden_act", "only silu is supported");
    if (!(c->rms_norm_eps > 0)) return bad(e, "rms_norm_eps", "must be > 0");
    if ((c->num_attention_heads * c->head_dim) % x->o_groups)
        return bad(e, "o_groups", "must divide num_attention_heads * head_dim");
    if (c->num_experts_per_tok > c->n_routed_experts) return bad(e, "num_experts_per_tok", "exceeds n_routed_experts");
    if (!(x->hc_eps >= 0)) return bad(e, "hc_eps", "must be >= 0");
    if (!(x->swiglu_limit > 0)) return bad(e, "swiglu_limit", "must be > 0");
    x->type = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    x->hash = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    c->mlp_sparse = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    c->indexer_full = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    if (layer_types(d, c, x, e) || rates(d, x, e) || rope(d, c, x, e)) return -1;
    for (int64_t i = 0; i < c->num_hidden_layers; i++) {
        c->mlp_sparse[i] = 1; /* every layer is a MoE */
        c->indexer_full[i] = x->type[i] == V4_CSA;
    }
    c->qk_rope_head_dim = x->rope_dim;
    c->qk_nope_head_dim = c->head_dim - x->rope_dim;
    c->qk_head_dim = c->head_dim;
    c->v_head_dim = c->head_dim;
    c->intermediate_size = c->moe_intermediate_size;
    c->n_group = c->topk_group = 1;
    c->first_k_dense_replace = 0;
    c->rope_theta = x->main_theta;
    snprintf(c->rope_type, sizeof c->rope_type, "%s", x->comp_yarn ? "yarn" : "default");
    return 0;
}

void fd_v4_ext_free(void *p)
{
    fd_v4_ext *x = p;
    if (!x) return;
    free(x->type);
    free(x->hash);
    free(x);
}
