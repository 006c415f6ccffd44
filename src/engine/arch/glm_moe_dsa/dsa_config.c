/* glm_moe_dsa config parsing (dsa_config.h): config.json into the common
 * fd_glm_config, with the field readers of engine/config.c. */
#include "engine/arch/glm_moe_dsa/dsa_config.h"
#include "util/buf.h"
#include <stdio.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

int fd_glm_moe_dsa_parse(const jv *d, fd_glm_config *c, fd_err *e)
{
#define I(field, def, lo) if (fd_cfg_int(d, #field, def, lo, &c->field, e)) return -1
    I(vocab_size, 154880, 1);
    I(hidden_size, 6144, 1);
    I(intermediate_size, 12288, 1);
    I(moe_intermediate_size, 2048, 1);
    I(num_hidden_layers, 78, 1);
    I(num_attention_heads, 64, 1);
    I(kv_lora_rank, 512, 1);
    I(q_lora_rank, 2048, 1);
    I(qk_nope_head_dim, 192, 1);
    I(qk_rope_head_dim, 64, 2);
    I(v_head_dim, 256, 1);
    I(index_n_heads, 32, 1);
    I(index_head_dim, 128, 1);
    I(index_topk, 2048, 1);
    I(n_shared_experts, 1, 1);
    I(num_experts_per_tok, 8, 1);
    I(n_group, 1, 1);
    I(topk_group, 1, 1);
    I(first_k_dense_replace, 3, 0);
    I(max_position_embeddings, 202752, 1);
#undef I
    if (fd_cfg_int(d, "num_key_value_heads", c->num_attention_heads, 1, &c->num_key_value_heads, e)) return -1;
    /* n_routed_experts, alias num_local_experts, BC kwarg num_experts */
    const char *ek = jv_get(d, "n_routed_experts") ? "n_routed_experts"
                   : jv_get(d, "num_local_experts") ? "num_local_experts"
                   : jv_get(d, "num_experts") ? "num_experts" : "n_routed_experts";
    if (fd_cfg_int(d, ek, 256, 1, &c->n_routed_experts, e)) return -1;
    if (fd_cfg_bool(d, "norm_topk_prob", 1, &c->norm_topk_prob, e)) return -1;
    if (fd_cfg_bool(d, "attention_bias", 0, &c->attention_bias, e)) return -1;
    if (fd_cfg_bool(d, "tie_word_embeddings", 0, &c->tie_word_embeddings, e)) return -1;
    if (fd_cfg_num(d, "routed_scaling_factor", 2.5, &c->routed_scaling_factor, e)) return -1;
    if (fd_cfg_num(d, "rms_norm_eps", 1e-5, &c->rms_norm_eps, e)) return -1;
    if (fd_cfg_num(d, "attention_dropout", 0.0, &c->attention_dropout, e)) return -1;
    if (fd_cfg_str(d, "hidden_act", "silu", c->hidden_act, sizeof c->hidden_act, e)) return -1;

    /* consistency */
    if (c->n_routed_experts > 65536) return bad(e, ek, "is implausibly large (> 65536)");
    if (c->num_key_value_heads != c->num_attention_heads) return bad(e, "num_key_value_heads", "must equal num_attention_heads");
    if (c->qk_rope_head_dim % 2) return bad(e, "qk_rope_head_dim", "must be even (interleaved RoPE pairs)");
    if (c->index_head_dim < c->qk_rope_head_dim) return bad(e, "index_head_dim", "must be >= qk_rope_head_dim");
    if (c->n_routed_experts % c->n_group) return bad(e, "n_group", "must divide n_routed_experts");
    if (c->topk_group > c->n_group) return bad(e, "topk_group", "must be <= n_group");
    if (c->num_experts_per_tok > c->topk_group * (c->n_routed_experts / c->n_group))
        return bad(e, "num_experts_per_tok", "exceeds the experts reachable in topk_group groups");
    if (!(c->rms_norm_eps > 0)) return bad(e, "rms_norm_eps", "must be > 0");
    if (strcmp(c->hidden_act, "silu")) return bad(e, "hidden_act", "only silu is supported");

    c->qk_head_dim = c->qk_nope_head_dim + c->qk_rope_head_dim;
    c->head_dim = c->qk_rope_head_dim;

    /* rope_parameters, folding old-style rope_theta / rope_scaling */
    const jv *rp = jv_get(d, "rope_parameters");
    const char *rpk = "rope_parameters";
    if (!rp || rp->t == JV_NULL) { rp = jv_get(d, "rope_scaling"); rpk = "rope_scaling"; }
    if (rp && rp->t == JV_NULL) rp = NULL;
    if (rp && rp->t != JV_OBJ) return bad(e, rpk, "is not an object");
    snprintf(c->rope_type, sizeof c->rope_type, "default");
    if (rp) {
        const jv *t = jv_get(rp, "rope_type");
        if (!t) t = jv_get(rp, "type");
        if (t && (t->t != JV_STR || t->u.s.n >= sizeof c->rope_type)) return bad(e, rpk, "rope_type is not a string");
        if (t) snprintf(c->rope_type, sizeof c->rope_type, "%s", t->u.s.p);
    }
    if (fd_cfg_num(d, "rope_theta", 10000.0, &c->rope_theta, e)) return -1;
    if (rp && fd_cfg_num(rp, "rope_theta", c->rope_theta, &c->rope_theta, e)) { fd_err_prefix(e, rpk); return -1; }
    if (!(c->rope_theta > 0)) return bad(e, "rope_theta", "must be > 0");

    int64_t L = c->num_hidden_layers;
    if (L > 65536) return bad(e, "num_hidden_layers", "is implausibly large (> 65536)");
    c->mlp_sparse = fd_xcalloc((size_t)L, 1);
    c->indexer_full = fd_xcalloc((size_t)L, 1);
    const jv *mlt = jv_get(d, "mlp_layer_types");
    if (mlt && mlt->t != JV_NULL) {
        if (fd_cfg_types(mlt, "mlp_layer_types", L, "sparse", "dense", c->mlp_sparse, e)) return -1;
    } else
        for (int64_t i = 0; i < L; i++) c->mlp_sparse[i] = i >= c->first_k_dense_replace;

    /* layer_types: every layer is a DSA layer; transformers 5.12-5.16 write
     * deepseek_sparse_attention, 5.18+ indexed_attention, older none */
    const jv *lt = jv_get(d, "layer_types");
    if (lt && lt->t != JV_NULL) {
        if (lt->t != JV_ARR || (int64_t)lt->u.a.n != L) return bad(e, "layer_types", "is not a list of num_hidden_layers entries");
        for (size_t i = 0; i < lt->u.a.n; i++)
            if (lt->u.a.v[i]->t != JV_STR || !fd_cfg_is_dsa_layer(lt->u.a.v[i]->u.s.p))
                return bad(e, "layer_types", "entries must be indexed_attention, deepseek_sparse_attention or full_attention "
                                             "(glm_moe_dsa has DSA layers only)");
    }
    const jv *it = jv_get(d, "indexer_types");
    const jv *pat = jv_get(d, "index_topk_pattern");
    if (it && it->t != JV_NULL) {
        if (fd_cfg_types(it, "indexer_types", L, "full", "shared", c->indexer_full, e)) return -1;
    } else if (pat && pat->t == JV_ARR) { /* a list is taken as indexer_types by transformers */
        if (fd_cfg_types(pat, "index_topk_pattern", L, "full", "shared", c->indexer_full, e)) return -1;
    } else if (pat && pat->t != JV_NULL) {
        if (pat->t != JV_STR) return bad(e, "index_topk_pattern", "is not a string");
        if ((int64_t)pat->u.s.n < L) return bad(e, "index_topk_pattern", "is shorter than num_hidden_layers");
        for (int64_t i = 0; i < L; i++) {
            char ch = pat->u.s.p[i];
            if (ch == 'F' || ch == 'f') c->indexer_full[i] = 1;
            else if (ch == 'S' || ch == 's') c->indexer_full[i] = 0;
            else return bad(e, "index_topk_pattern", "characters must be F or S");
        }
    } else {
        int64_t freq, off;
        if (fd_cfg_int(d, "index_topk_freq", 1, 1, &freq, e)) return -1;
        if (fd_cfg_int(d, "index_skip_topk_offset", 2, -((int64_t)1 << 40), &off, e)) return -1;
        for (int64_t i = 0; i < L; i++) {
            int64_t x = i - off + 1;
            if (x < 0) x = 0;
            c->indexer_full[i] = x % freq == 0;
        }
    }
    if (!c->indexer_full[0]) return bad(e, "indexer_types", "layer 0 is \"shared\" but has no earlier full layer to share from");
    return 0;
}
