/* DeepseekV3Config (transformers 5.25 configuration_deepseek_v3.py): every
 * field that changes the math, with the dataclass defaults for absent ones;
 * refusals bad_config naming the field (ds3.h). */
#include "engine/arch/deepseek_v3/ds3.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

/* a number of the rope dict; absent or null -> def */
static int rnum(const jv *rp, const char *k, double def, double *out, fd_err *e)
{
    const jv *v = jv_get(rp, k);
    if (v && v->t == JV_NULL) { *out = def; return 0; }
    if (fd_cfg_num(rp, k, def, out, e)) { fd_err_prefix(e, "rope_parameters"); return -1; }
    return 0;
}

/* yarn_get_mscale: 0.1 * mscale * log(scale) + 1.0 for scale > 1 */
static double mscale_of(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * log(scale) + 1.0; }

/* rope_scaling (first, as convert_rope_params_to_dict) or rope_parameters;
 * default or yarn */
static int parse_rope(const jv *d, fd_glm_config *c, fd_ds3_ext *x, fd_err *e)
{
    const jv *rp = jv_get(d, "rope_scaling");
    const char *rpk = "rope_scaling";
    if (!rp || rp->t == JV_NULL || (rp->t == JV_OBJ && !rp->u.o.n)) { rp = jv_get(d, "rope_parameters"); rpk = "rope_parameters"; }
    if (rp && rp->t == JV_NULL) rp = NULL;
    if (rp && rp->t != JV_OBJ) return bad(e, rpk, "is not an object");
    if (fd_cfg_num(d, "rope_theta", 10000.0, &c->rope_theta, e)) return -1;
    snprintf(c->rope_type, sizeof c->rope_type, "default");
    if (!rp) goto done;
    const jv *t = jv_get(rp, "rope_type");
    if (!t) t = jv_get(rp, "type");
    if (t && (t->t != JV_STR || t->u.s.n >= sizeof c->rope_type)) return bad(e, rpk, "rope_type is not a string");
    if (t) snprintf(c->rope_type, sizeof c->rope_type, "%s", t->u.s.p);
    if (rnum(rp, "rope_theta", c->rope_theta, &c->rope_theta, e)) return -1;
    double prf;
    if (rnum(rp, "partial_rotary_factor", 1.0, &prf, e)) return -1;
    if (prf != 1.0) return bad(e, "rope_parameters.partial_rotary_factor", "values other than 1 are not implemented");
    if (!strcmp(c->rope_type, "default")) goto done;
    if (strcmp(c->rope_type, "yarn")) {
        char m[96];
        snprintf(m, sizeof m, "rope_type \"%.40s\" is not implemented (default, yarn)", c->rope_type);
        return bad(e, rpk, m);
    }
    x->yarn = 1;
    const jv *f = jv_get(rp, "factor");
    if (!f || f->t == JV_NULL) return bad(e, "rope_parameters.factor", "is required for yarn (transformers' yarn_apply_mscale reads it)");
    if (rnum(rp, "factor", 1.0, &x->factor, e)) return -1;
    if (!(x->factor > 0)) return bad(e, "rope_parameters.factor", "must be > 0");
    double ms, msa, af;
    if (rnum(rp, "mscale", 0.0, &ms, e) || rnum(rp, "mscale_all_dim", 0.0, &msa, e) || rnum(rp, "attention_factor", NAN, &af, e) ||
        rnum(rp, "beta_fast", 0.0, &x->beta_fast, e) || rnum(rp, "beta_slow", 0.0, &x->beta_slow, e))
        return -1;
    if (x->beta_fast == 0) x->beta_fast = 32; /* `or 32` */
    if (x->beta_slow == 0) x->beta_slow = 1;
    x->mscale = ms, x->mscale_all_dim = msa, x->attention_factor_given = !isnan(af);
    x->attention_factor = !isnan(af) ? af : ms != 0 && msa != 0 ? mscale_of(x->factor, ms) / mscale_of(x->factor, msa)
                                                                : mscale_of(x->factor, 1.0);
    /* original_max_position_embeddings: the top-level attribute wins, then the dict's, then max_position_embeddings */
    int64_t om;
    const jv *top = jv_get(d, "original_max_position_embeddings");
    if (fd_cfg_int(top ? d : rp, "original_max_position_embeddings", c->max_position_embeddings, 1, &om, e)) return -1;
    x->orig_max_pos = (double)om;
    if (fd_cfg_bool(rp, "truncate", 1, &x->truncate, e)) { fd_err_prefix(e, rpk); return -1; }
    if (msa != 0) {
        double m = mscale_of(x->factor, msa);
        x->scaling = x->scaling * m * m;
    }
done:
    if (!(c->rope_theta > 1)) return bad(e, "rope_theta", "must be > 1");
    return 0;
}

/* a string field that transformers does not read but that names a routing
 * other than the one it computes: absent or `want`, else refused */
static int only(const jv *d, const char *k, const char *want, fd_err *e)
{
    const jv *v = jv_get(d, k);
    if (!v || v->t == JV_NULL) return 0;
    if (v->t != JV_STR || strcmp(v->u.s.p, want)) {
        char m[160];
        snprintf(m, sizeof m, "only \"%s\" is implemented (transformers' DeepseekV3TopkRouter computes it whatever the value)", want);
        return bad(e, k, m);
    }
    return 0;
}

/* DeepseekV32Config's indexer and layer schedules */
static int parse_dsa(const jv *d, fd_glm_config *c, fd_err *e)
{
    if (fd_cfg_int(d, "index_topk", 2048, 1, &c->index_topk, e) || fd_cfg_int(d, "index_head_dim", 128, 1, &c->index_head_dim, e) ||
        fd_cfg_int(d, "index_n_heads", 64, 1, &c->index_n_heads, e))
        return -1;
    if (c->index_head_dim < c->qk_rope_head_dim) return bad(e, "index_head_dim", "must be >= qk_rope_head_dim");
    int64_t L = c->num_hidden_layers;
    const jv *mlt = jv_get(d, "mlp_layer_types");
    if (mlt && mlt->t != JV_NULL && fd_cfg_types(mlt, "mlp_layer_types", L, "sparse", "dense", c->mlp_sparse, e)) return -1;
    const jv *lt = jv_get(d, "layer_types");
    if (lt && lt->t != JV_NULL) {
        if (lt->t != JV_ARR || (int64_t)lt->u.a.n != L) return bad(e, "layer_types", "is not a list of num_hidden_layers entries");
        for (size_t i = 0; i < lt->u.a.n; i++)
            if (lt->u.a.v[i]->t != JV_STR || !fd_cfg_is_dsa_layer(lt->u.a.v[i]->u.s.p))
                return bad(e, "layer_types", "entries must be indexed_attention (deepseek_v32 has DSA layers only)");
    }
    return 0;
}

static int parse(const jv *d, fd_glm_config *c, fd_ds3_ext *x, fd_err *e)
{
#define I(field, def, lo) if (fd_cfg_int(d, #field, def, lo, &c->field, e)) return -1
    I(vocab_size, 129280, 1);
    I(hidden_size, 7168, 1);
    I(intermediate_size, 18432, 1);
    I(moe_intermediate_size, 2048, 1);
    I(num_hidden_layers, 61, 1);
    I(num_attention_heads, 128, 1);
    I(kv_lora_rank, 512, 1);
    I(qk_nope_head_dim, 128, 1);
    I(qk_rope_head_dim, 64, 2);
    I(v_head_dim, 128, 1);
    I(n_shared_experts, 1, 1);
    I(num_experts_per_tok, 8, 1);
    I(n_group, 8, 1);
    I(topk_group, 4, 1);
    I(first_k_dense_replace, 3, 0);
    I(max_position_embeddings, x->dsa ? 163840 : 4096, 1);
#undef I
    const jv *ql = jv_get(d, "q_lora_rank");
    if (ql && ql->t == JV_NULL && x->dsa)
        return bad(e, "q_lora_rank", "null is not implemented for deepseek_v32 (DeepseekV32Attention has no q_proj)");
    if (ql && ql->t == JV_NULL) c->q_lora_rank = 0; /* one q_proj */
    else if (fd_cfg_int(d, "q_lora_rank", 1536, 1, &c->q_lora_rank, e)) return -1;
    x->q_lora = c->q_lora_rank > 0;
    const jv *kvh = jv_get(d, "num_key_value_heads");
    if (kvh && kvh->t == JV_NULL) c->num_key_value_heads = c->num_attention_heads;
    else if (fd_cfg_int(d, "num_key_value_heads", c->num_attention_heads, 1, &c->num_key_value_heads, e)) return -1;
    const char *ek = jv_get(d, "n_routed_experts") ? "n_routed_experts" : jv_get(d, "num_local_experts") ? "num_local_experts"
                                                                                                        : "n_routed_experts";
    if (fd_cfg_int(d, ek, 256, 1, &c->n_routed_experts, e)) return -1;
    if (fd_cfg_bool(d, "norm_topk_prob", 1, &c->norm_topk_prob, e)) return -1;
    if (fd_cfg_bool(d, "attention_bias", 0, &c->attention_bias, e)) return -1;
    if (fd_cfg_bool(d, "tie_word_embeddings", 0, &c->tie_word_embeddings, e)) return -1;
    if (x->dsa) x->rope_interleave = 1; /* DeepseekV32Attention: always interleaved (the field is not read) */
    else if (fd_cfg_bool(d, "rope_interleave", 1, &x->rope_interleave, e)) return -1;
    if (fd_cfg_num(d, "routed_scaling_factor", 2.5, &c->routed_scaling_factor, e)) return -1;
    if (fd_cfg_num(d, "rms_norm_eps", 1e-6, &c->rms_norm_eps, e)) return -1;
    if (fd_cfg_str(d, "hidden_act", "silu", c->hidden_act, sizeof c->hidden_act, e)) return -1;
    /* read by DeepSeek's own code, not by transformers: refused unless they
     * name what transformers computes anyway */
    if (only(d, "topk_method", "noaux_tc", e) || only(d, "scoring_func", "sigmoid", e)) return -1;
    int64_t freq;
    if (fd_cfg_int(d, "moe_layer_freq", 1, 1, &freq, e)) return -1;
    if (freq != 1)
        return bad(e, "moe_layer_freq", "only 1 is implemented (transformers ignores it: every layer from first_k_dense_replace is MoE)");

    if (c->n_routed_experts > 65536) return bad(e, ek, "is implausibly large (> 65536)");
    if (c->num_key_value_heads != c->num_attention_heads) return bad(e, "num_key_value_heads", "must equal num_attention_heads (MLA)");
    if (c->qk_rope_head_dim % 2 || c->qk_rope_head_dim > 1024) return bad(e, "qk_rope_head_dim", "must be even and <= 1024");
    if (c->n_routed_experts % c->n_group) return bad(e, "n_group", "must divide n_routed_experts");
    if (c->topk_group > c->n_group) return bad(e, "topk_group", "must be <= n_group");
    if (c->num_experts_per_tok > c->topk_group * (c->n_routed_experts / c->n_group))
        return bad(e, "num_experts_per_tok", "exceeds the experts reachable in topk_group groups");
    if (!(c->rms_norm_eps > 0)) return bad(e, "rms_norm_eps", "must be > 0");
    if (strcmp(c->hidden_act, "silu")) return bad(e, "hidden_act", "only silu is implemented");
    c->qk_head_dim = c->qk_nope_head_dim + c->qk_rope_head_dim;
    c->head_dim = c->qk_rope_head_dim;
    x->scaling = pow((double)c->qk_head_dim, -0.5);
    if (parse_rope(d, c, x, e)) return -1;

    int64_t L = c->num_hidden_layers;
    if (L > 65536) return bad(e, "num_hidden_layers", "is implausibly large (> 65536)");
    c->mlp_sparse = fd_xcalloc((size_t)L, 1);
    c->indexer_full = fd_xcalloc((size_t)L, 1);
    for (int64_t i = 0; i < L; i++) {
        c->mlp_sparse[i] = i >= c->first_k_dense_replace; /* DeepseekV3DecoderLayer */
        c->indexer_full[i] = 1;                            /* deepseek_v3: every causal key; v32: an indexer each layer */
    }
    return x->dsa ? parse_dsa(d, c, e) : 0;
}

int fd_ds32_parse(const jv *d, fd_glm_config *c, fd_err *e)
{
    fd_ds3_ext *x = fd_xcalloc(1, sizeof *x);
    x->dsa = 1;
    c->ext = x;
    return parse(d, c, x, e);
}

int fd_ds3_parse(const jv *d, fd_glm_config *c, fd_err *e)
{
    fd_ds3_ext *x = fd_xcalloc(1, sizeof *x);
    c->ext = x;
    return parse(d, c, x, e);
}
