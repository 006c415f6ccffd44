/* glm5_next config parsing (next_config.h). */
#include "engine/arch/glm5_next/next_config.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

static int text_fields(const jv *t, fd_glm_config *c, fd_err *e)
{
#define I(field, def, lo) if (fd_cfg_int(t, #field, def, lo, &c->field, e)) return -1
    I(vocab_size, 154880, 1);
    I(hidden_size, 4096, 1);
    I(intermediate_size, 12288, 1);
    I(moe_intermediate_size, 2048, 1);
    I(num_hidden_layers, 45, 1);
    I(num_attention_heads, 64, 1);
    I(kv_lora_rank, 512, 1);
    I(q_lora_rank, 1536, 1);
    I(qk_nope_head_dim, 256, 1);
    I(qk_rope_head_dim, 0, 0);
    I(v_head_dim, 256, 1);
    I(index_n_heads, 32, 1);
    I(index_head_dim, 128, 1);
    I(index_topk, 2048, 1);
    I(n_shared_experts, 1, 1);
    I(num_experts_per_tok, 8, 1);
    I(n_group, 1, 1);
    I(topk_group, 1, 1);
    I(max_position_embeddings, 1048576, 1);
#undef I
    if (fd_cfg_int(t, "num_key_value_heads", c->num_attention_heads, 1, &c->num_key_value_heads, e)) return -1;
    const char *ek = jv_get(t, "n_routed_experts") ? "n_routed_experts"
                   : jv_get(t, "num_local_experts") ? "num_local_experts" : "n_routed_experts";
    if (fd_cfg_int(t, ek, 288, 1, &c->n_routed_experts, e)) return -1;
    if (fd_cfg_bool(t, "norm_topk_prob", 1, &c->norm_topk_prob, e)) return -1;
    if (fd_cfg_bool(t, "attention_bias", 0, &c->attention_bias, e)) return -1;
    if (fd_cfg_num(t, "routed_scaling_factor", 2.5, &c->routed_scaling_factor, e)) return -1;
    if (fd_cfg_num(t, "rms_norm_eps", 1e-5, &c->rms_norm_eps, e)) return -1;
    if (fd_cfg_num(t, "attention_dropout", 0.0, &c->attention_dropout, e)) return -1;
    if (fd_cfg_str(t, "hidden_act", "silu", c->hidden_act, sizeof c->hidden_act, e)) return -1;
    return 0;
}

static int next_fields(const jv *t, const fd_glm_config *c, fd_next_ext *x, fd_err *e)
{
    if (fd_cfg_int(t, "linear_head_dim", 128, 1, &x->lin_dim, e)) return -1;
    if (fd_cfg_int(t, "linear_num_heads", 64, 1, &x->lin_heads, e)) return -1;
    if (fd_cfg_int(t, "linear_conv_kernel_dim", 4, 1, &x->conv_k, e)) return -1;
    const jv *lb = jv_get(t, "linear_lower_bound");
    x->has_lower = !lb || lb->t != JV_NULL;
    if (x->has_lower && fd_cfg_num(t, "linear_lower_bound", -5.0, &x->lower, e)) return -1;
    const jv *la = jv_get(t, "linear_attn_config");
    if (la && la->t == JV_OBJ) {
        if (fd_cfg_int(la, "head_dim", x->lin_dim, 1, &x->lin_dim, e)) return -1;
        if (fd_cfg_int(la, "num_heads", x->lin_heads, 1, &x->lin_heads, e)) return -1;
        if (fd_cfg_int(la, "short_conv_kernel_size", x->conv_k, 1, &x->conv_k, e)) return -1;
        const jv *g = jv_get(la, "gate_lower_bound");
        if (g && g->t == JV_NULL) x->has_lower = 0;
        else if (g) {
            x->has_lower = 1;
            if (fd_cfg_num(la, "gate_lower_bound", x->lower, &x->lower, e)) return -1;
        }
        int safe;
        if (fd_cfg_bool(la, "safe_gate", 1, &safe, e)) return -1;
        if (safe && !x->has_lower) { x->has_lower = 1; x->lower = -5.0; }
    }
    if (fd_cfg_num(t, "swiglu_limit", 10.0, &x->swiglu_limit, e)) return -1;
    if (fd_cfg_int(t, "hc_mult", 4, 1, &x->hc_mult, e)) return -1;
    if (fd_cfg_num(t, "hc_eps", 1e-6, &x->hc_eps, e)) return -1;
    if (fd_cfg_int(t, "hc_sinkhorn_iters", 20, 1, &x->hc_iters, e)) return -1;
    if (fd_cfg_int(t, "index_kpool", 16, 1, &x->kpool, e)) return -1;
    if (fd_cfg_bool(t, "index_kpool_always_select_tail", 1, &x->kpool_tail, e)) return -1;
    if (x->hc_mult > 64) return bad(e, "hc_mult", "is implausibly large (> 64)");
    if (c->index_topk % x->kpool) return bad(e, "index_topk", "must be divisible by index_kpool");
    return 0;
}

static int schedules(const jv *t, fd_glm_config *c, fd_next_ext *x, fd_err *e)
{
    int64_t L = c->num_hidden_layers;
    c->mlp_sparse = fd_xcalloc((size_t)L, 1);
    c->indexer_full = fd_xcalloc((size_t)L, 1);
    x->kda = fd_xcalloc((size_t)L, 1);
    const jv *mlt = jv_get(t, "mlp_layer_types");
    if (mlt && mlt->t != JV_NULL) {
        if (fd_cfg_types(mlt, "mlp_layer_types", L, "sparse", "dense", c->mlp_sparse, e)) return -1;
    } else
        for (int64_t i = 0; i < L; i++) c->mlp_sparse[i] = i >= 3;
    const jv *lt = jv_get(t, "layer_types");
    if (lt && lt->t != JV_NULL) {
        if (lt->t != JV_ARR || (int64_t)lt->u.a.n != L) return bad(e, "layer_types", "is not a list of num_hidden_layers entries");
        for (int64_t i = 0; i < L; i++) {
            const jv *v = lt->u.a.v[i];
            /* transformers' spellings (docs/MODEL-GLM5-NEXT.md §1): 5.16 writes
             * deepseek_sparse_attention, 5.18+ indexed_attention for a DSA
             * layer; full_attention is read as DSA by every version */
            if (v->t == JV_STR && !strcmp(v->u.s.p, "linear_attention")) x->kda[i] = 1;
            else if (v->t == JV_STR && fd_cfg_is_dsa_layer(v->u.s.p)) x->kda[i] = 0;
            else return bad(e, "layer_types", "entries must be linear_attention, indexed_attention, "
                                              "deepseek_sparse_attention or full_attention");
        }
    } else
        for (int64_t i = 0; i < L; i++) x->kda[i] = i % 4 != 3;
    const jv *it = jv_get(t, "indexer_types"), *pat = jv_get(t, "index_topk_pattern");
    if (it && it->t != JV_NULL) {
        if (fd_cfg_types(it, "indexer_types", L, "full", "shared", c->indexer_full, e)) return -1;
    } else if (pat && pat->t == JV_ARR) { /* a list is taken as indexer_types by transformers */
        if (fd_cfg_types(pat, "index_topk_pattern", L, "full", "shared", c->indexer_full, e)) return -1;
    } else if (pat && pat->t != JV_NULL) {
        if (pat->t != JV_STR || (int64_t)pat->u.s.n < L) return bad(e, "index_topk_pattern", "is not a string of L F/S");
        for (int64_t i = 0; i < L; i++) {
            char ch = pat->u.s.p[i];
            if (ch != 'F' && ch != 'S') return bad(e, "index_topk_pattern", "characters must be F or S");
            c->indexer_full[i] = ch == 'F';
        }
    } else {
        int64_t freq, off;
        if (fd_cfg_int(t, "index_topk_freq", 1, 1, &freq, e)) return -1;
        if (fd_cfg_int(t, "index_skip_topk_offset", 2, -((int64_t)1 << 40), &off, e)) return -1;
        for (int64_t i = 0; i < L; i++) {
            int64_t v = i - off + 1;
            c->indexer_full[i] = (v < 0 ? 0 : v) % freq == 0;
        }
    }
    return 0;
}

static int vision_fields(const jv *v, fd_next_ext *x, fd_err *e)
{
    static const jv empty = {.t = JV_OBJ};
    if (!v || v->t == JV_NULL) v = &empty;
    if (v->t != JV_OBJ) return bad(e, "vision_config", "is not an object");
    if (fd_cfg_int(v, "depth", 24, 0, &x->v_depth, e) || fd_cfg_int(v, "hidden_size", 1024, 1, &x->v_hidden, e) ||
        fd_cfg_int(v, "num_heads", 16, 1, &x->v_heads, e) || fd_cfg_int(v, "in_channels", 3, 1, &x->v_in_ch, e) ||
        fd_cfg_int(v, "patch_size", 14, 1, &x->v_patch, e) || fd_cfg_int(v, "temporal_patch_size", 2, 1, &x->v_temporal, e) ||
        fd_cfg_int(v, "spatial_merge_size", 2, 1, &x->v_merge, e) || fd_cfg_int(v, "out_hidden_size", 1536, 1, &x->v_out, e) ||
        fd_cfg_int(v, "intermediate_size", 4096, 1, &x->v_inter, e) ||
        fd_cfg_int(v, "projection_intermediate_size", 10240, 1, &x->v_proj_inter, e) ||
        fd_cfg_bool(v, "attention_bias", 1, &x->v_bias, e)) {
        fd_err_prefix(e, "vision_config");
        return -1;
    }
    if (x->v_hidden % x->v_heads) return bad(e, "vision_config.num_heads", "must divide hidden_size");
    return 0;
}

int fd_next_config_parse(const jv *d, fd_glm_config *c, fd_err *e)
{
    const jv *t = jv_get(d, "text_config");
    if (!t || t->t == JV_NULL) t = d; /* flat text-only config */
    if (t->t != JV_OBJ) return bad(e, "text_config", "is not an object");
    fd_next_ext *x = fd_xcalloc(1, sizeof *x);
    c->ext = x;
    if (text_fields(t, c, e) || next_fields(t, c, x, e)) return -1;
    int tie_top = 0, tie_text = 0;
    if (fd_cfg_bool(d, "tie_word_embeddings", 0, &tie_top, e)) return -1;
    if (fd_cfg_bool(t, "tie_word_embeddings", 0, &tie_text, e)) return -1;
    c->tie_word_embeddings = tie_top;
    if (c->num_hidden_layers > 65536) return bad(e, "num_hidden_layers", "is implausibly large (> 65536)");
    if (c->n_routed_experts > 65536) return bad(e, "n_routed_experts", "is implausibly large (> 65536)");
    if (c->num_key_value_heads != c->num_attention_heads)
        return bad(e, "num_key_value_heads", "must equal num_attention_heads");
    if (c->qk_rope_head_dim) return bad(e, "qk_rope_head_dim", "must be 0 (glm5_next DSA layers are NoPE)");
    if (c->n_routed_experts % c->n_group || c->topk_group > c->n_group)
        return bad(e, "n_group", "must divide n_routed_experts and be >= topk_group");
    if (c->num_experts_per_tok > c->topk_group * (c->n_routed_experts / c->n_group))
        return bad(e, "num_experts_per_tok", "exceeds the experts reachable in topk_group groups");
    if (!(c->rms_norm_eps > 0)) return bad(e, "rms_norm_eps", "must be > 0");
    if (strcmp(c->hidden_act, "silu")) return bad(e, "hidden_act", "only silu is supported");
    c->qk_head_dim = c->qk_nope_head_dim;
    c->head_dim = 0;
    c->first_k_dense_replace = 0;
    snprintf(c->rope_type, sizeof c->rope_type, "none");
    if (schedules(t, c, x, e)) return -1;
    x->text_only = t == d && !jv_get(d, "vision_config");
    return vision_fields(jv_get(d, "vision_config"), x, e);
}

void fd_next_ext_free(void *p)
{
    fd_next_ext *x = p;
    if (!x) return;
    free(x->kda);
    free(x);
}
