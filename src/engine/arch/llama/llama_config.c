/* LlamaConfig / Qwen3Config (transformers 5.25) into the common config
 * (llama_internal.h): every field that changes the math, transformers'
 * defaults for absent fields, refusals by name. */
#include "engine/arch/llama/llama_internal.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

/* rope_scaling (legacy, wins when non-empty, as convert_rope_params_to_dict)
 * or rope_parameters; rope_theta from the dict, else top level, else 10000 */
static int rope(const jv *d, fd_glm_config *c, fd_llama_ext *x, fd_err *e)
{
    const char *k = "rope_scaling";
    const jv *rp = jv_get(d, k);
    if (!rp || rp->t == JV_NULL || (rp->t == JV_OBJ && !rp->u.o.n)) { k = "rope_parameters"; rp = jv_get(d, k); }
    if (rp && rp->t == JV_NULL) rp = NULL;
    if (rp && rp->t != JV_OBJ) return bad(e, k, "is not an object");
    for (size_t i = 0; rp && i < rp->u.o.n; i++)
        if (rp->u.o.m[i].v->t == JV_OBJ)
            return bad(e, k, "nested per-layer-type rope parameters are not supported");
    if (fd_cfg_num(d, "rope_theta", 10000.0, &c->rope_theta, e)) return -1;
    snprintf(c->rope_type, sizeof c->rope_type, "default");
    if (!rp) return c->rope_theta > 0 ? 0 : bad(e, "rope_theta", "must be > 0");
    const char *tk = jv_get(rp, "rope_type") ? "rope_type" : "type";
    char rt[32];
    if (fd_cfg_str(rp, tk, "default", rt, sizeof rt, e) || fd_cfg_num(rp, "rope_theta", c->rope_theta, &c->rope_theta, e)) {
        fd_err_prefix(e, k);
        return -1;
    }
    if (!(c->rope_theta > 0)) return bad(e, "rope_theta", "must be > 0");
    double prf;
    if (fd_cfg_num(rp, "partial_rotary_factor", 1.0, &prf, e) || fd_cfg_num(d, "partial_rotary_factor", prf, &prf, e))
        return -1;
    if (prf != 1.0) return bad(e, "partial_rotary_factor", "only 1.0 is supported");
    if (strcmp(rt, "default") && strcmp(rt, "llama3")) {
        char m[160];
        snprintf(m, sizeof m, "rope_type \"%s\" is not supported (default, llama3)", rt);
        return bad(e, k, m);
    }
    snprintf(c->rope_type, sizeof c->rope_type, "%s", rt);
    if (!strcmp(rt, "llama3")) {
        static const char *const need[3] = {"factor", "low_freq_factor", "high_freq_factor"};
        double *dst[3] = {&x->factor, &x->low_ff, &x->high_ff};
        for (int i = 0; i < 3; i++) {
            if (!jv_get(rp, need[i])) {
                char m[96];
                snprintf(m, sizeof m, "rope_type llama3 needs %s", need[i]);
                return bad(e, k, m);
            }
            if (fd_cfg_num(rp, need[i], 0, dst[i], e)) { fd_err_prefix(e, k); return -1; }
        }
        /* a top-level original_max_position_embeddings wins (standardize_rope_params) */
        if (fd_cfg_num(rp, "original_max_position_embeddings", (double)c->max_position_embeddings, &x->orig_max, e) ||
            fd_cfg_num(d, "original_max_position_embeddings", x->orig_max, &x->orig_max, e))
            return -1;
        if (!(x->factor > 0) || !(x->high_ff > x->low_ff) || !(x->low_ff > 0) || !(x->orig_max > 0))
            return bad(e, k, "llama3 needs factor > 0, 0 < low_freq_factor < high_freq_factor, original_max_position_embeddings > 0");
    }
    return 0;
}

enum { LLAMA, QWEN3, QWEN3_MOE };

static int common(const jv *d, fd_glm_config *c, fd_llama_ext *x, int kind, fd_err *e)
{
    /* the dataclass defaults of LlamaConfig, Qwen3Config, Qwen3MoeConfig */
    static const int64_t defs[3][7] = {{32000, 4096, 11008, 32, 32, 2048, 0},
                                       {151936, 4096, 22016, 32, 32, 32768, 32},
                                       {151936, 2048, 6144, 24, 32, 32768, 4}};
    const int64_t *df = defs[kind];
    int qwen3 = kind != LLAMA;
#define I(field, i) if (fd_cfg_int(d, #field, df[i], 1, &c->field, e)) return -1
    I(vocab_size, 0);
    I(hidden_size, 1);
    I(intermediate_size, 2);
    I(num_hidden_layers, 3);
    I(num_attention_heads, 4);
    I(max_position_embeddings, 5);
#undef I
    const jv *kv = jv_get(d, "num_key_value_heads");
    if (kv && kv->t == JV_NULL) c->num_key_value_heads = c->num_attention_heads;
    else if (fd_cfg_int(d, "num_key_value_heads", df[6] ? df[6] : c->num_attention_heads, 1, &c->num_key_value_heads, e))
        return -1;
    const jv *hd = jv_get(d, "head_dim");
    /* Qwen3Config declares head_dim = 128; Llama and Qwen3-MoE derive it */
    int64_t hdef = kind == QWEN3 ? 128 : c->hidden_size / c->num_attention_heads;
    if (hd && hd->t == JV_NULL) c->head_dim = hdef;
    else if (fd_cfg_int(d, "head_dim", hdef, 2, &c->head_dim, e)) return -1;
    if (fd_cfg_num(d, "rms_norm_eps", 1e-6, &c->rms_norm_eps, e)) return -1;
    if (fd_cfg_num(d, "attention_dropout", 0.0, &c->attention_dropout, e)) return -1;
    if (fd_cfg_bool(d, "attention_bias", 0, &c->attention_bias, e)) return -1;
    if (fd_cfg_bool(d, "tie_word_embeddings", 0, &c->tie_word_embeddings, e)) return -1;
    if (fd_cfg_str(d, "hidden_act", "silu", c->hidden_act, sizeof c->hidden_act, e)) return -1;
    if (!qwen3 && fd_cfg_bool(d, "mlp_bias", 0, &x->mlp_bias, e)) return -1;
    x->qk_norm = qwen3;
    if (c->num_hidden_layers > 65536) return bad(e, "num_hidden_layers", "is implausibly large (> 65536)");
    if (c->num_attention_heads % c->num_key_value_heads)
        return bad(e, "num_key_value_heads", "must divide num_attention_heads");
    if (kind != QWEN3 && (!hd || hd->t == JV_NULL) && c->hidden_size % c->num_attention_heads)
        return bad(e, "num_attention_heads", "must divide hidden_size");
    if (c->head_dim % 2) return bad(e, "head_dim", "must be even (rotate_half RoPE)");
    if (c->head_dim > 4096) return bad(e, "head_dim", "is implausibly large (> 4096)");
    if (!(c->rms_norm_eps > 0)) return bad(e, "rms_norm_eps", "must be > 0");
    if (strcmp(c->hidden_act, "silu")) return bad(e, "hidden_act", "only silu is supported");
    if (rope(d, c, x, e)) return -1;
    /* the GLM-shaped fields of the common config stay at their meaning here */
    c->qk_head_dim = c->head_dim;
    c->qk_rope_head_dim = c->head_dim;
    c->v_head_dim = c->head_dim;
    c->mlp_sparse = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    c->indexer_full = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    return 0;
}

/* Qwen3: layer_types (else derived from use_sliding_window / max_window_layers);
 * a sliding_attention layer is refused by name */
static int qwen3_layers(const jv *d, const fd_glm_config *c, fd_err *e)
{
    int sw;
    int64_t mwl;
    if (fd_cfg_bool(d, "use_sliding_window", 0, &sw, e) || fd_cfg_int(d, "max_window_layers", 28, 0, &mwl, e)) return -1;
    const jv *sv = jv_get(d, "sliding_window");
    int has_window = sw && !(sv && sv->t == JV_NULL);
    const jv *lt = jv_get(d, "layer_types");
    if (lt && lt->t != JV_NULL) {
        if (lt->t != JV_ARR || (int64_t)lt->u.a.n != c->num_hidden_layers)
            return bad(e, "layer_types", "is not a list of num_hidden_layers entries");
        for (size_t i = 0; i < lt->u.a.n; i++) {
            const jv *v = lt->u.a.v[i];
            if (v->t != JV_STR || (strcmp(v->u.s.p, "full_attention") && strcmp(v->u.s.p, "sliding_attention")))
                return bad(e, "layer_types", "entries must be full_attention or sliding_attention");
            if (!strcmp(v->u.s.p, "sliding_attention"))
                return bad(e, "layer_types", "sliding_attention layers are not supported (full_attention only)");
        }
    } else if (has_window && mwl < c->num_hidden_layers)
        return bad(e, "use_sliding_window", "sliding_attention layers (layers >= max_window_layers) are not supported");
    return 0;
}

/* Qwen3MoeConfig's MoE fields; layer l is sparse iff l is not in
 * mlp_only_layers and num_experts > 0 and (l + 1) % decoder_sparse_step == 0 */
static int moe_fields(const jv *d, fd_glm_config *c, fd_llama_ext *x, fd_err *e)
{
    const char *ek = jv_get(d, "num_experts") ? "num_experts" : "num_local_experts";
    int64_t step;
    if (fd_cfg_int(d, ek, 128, 0, &c->n_routed_experts, e) || fd_cfg_int(d, "num_experts_per_tok", 8, 1, &c->num_experts_per_tok, e) ||
        fd_cfg_int(d, "moe_intermediate_size", 768, 1, &c->moe_intermediate_size, e) ||
        fd_cfg_int(d, "decoder_sparse_step", 1, 1, &step, e) || fd_cfg_bool(d, "norm_topk_prob", 0, &c->norm_topk_prob, e))
        return -1;
    if (c->n_routed_experts > 65536) return bad(e, ek, "is implausibly large (> 65536)");
    if (c->n_routed_experts && c->num_experts_per_tok > c->n_routed_experts)
        return bad(e, "num_experts_per_tok", "exceeds the number of experts");
    x->moe = 1;
    for (int64_t l = 0; l < c->num_hidden_layers; l++)
        c->mlp_sparse[l] = c->n_routed_experts > 0 && (l + 1) % step == 0;
    const jv *only = jv_get(d, "mlp_only_layers");
    if (only && only->t != JV_NULL) {
        if (only->t != JV_ARR) return bad(e, "mlp_only_layers", "is not a list");
        for (size_t i = 0; i < only->u.a.n; i++) {
            const jv *v = only->u.a.v[i];
            if (v->t != JV_INT) return bad(e, "mlp_only_layers", "entries must be layer indices");
            if (v->u.i >= 0 && v->u.i < c->num_hidden_layers) c->mlp_sparse[v->u.i] = 0;
        }
    }
    return 0;
}

static int parse(const jv *d, fd_glm_config *c, int kind, fd_err *e)
{
    fd_llama_ext *x = fd_xcalloc(1, sizeof *x);
    c->ext = x;
    if (common(d, c, x, kind, e)) return -1;
    if (kind == LLAMA) return 0;
    if (qwen3_layers(d, c, e)) return -1;
    return kind == QWEN3_MOE ? moe_fields(d, c, x, e) : 0;
}

int fd_llama_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, LLAMA, e); }
int fd_qwen3_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, QWEN3, e); }
int fd_qwen3_moe_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, QWEN3_MOE, e); }
void fd_llama_ext_free(void *ext) { free(ext); }
