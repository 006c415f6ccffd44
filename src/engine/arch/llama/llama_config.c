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

static int common(const jv *d, fd_glm_config *c, fd_llama_ext *x, int qwen3, fd_err *e)
{
#define I(field, def, lo) if (fd_cfg_int(d, #field, def, lo, &c->field, e)) return -1
    I(vocab_size, qwen3 ? 151936 : 32000, 1);
    I(hidden_size, 4096, 1);
    I(intermediate_size, qwen3 ? 22016 : 11008, 1);
    I(num_hidden_layers, 32, 1);
    I(num_attention_heads, 32, 1);
    I(max_position_embeddings, qwen3 ? 32768 : 2048, 1);
#undef I
    const jv *kv = jv_get(d, "num_key_value_heads");
    if (kv && kv->t == JV_NULL) c->num_key_value_heads = c->num_attention_heads;
    else if (fd_cfg_int(d, "num_key_value_heads", c->num_attention_heads, 1, &c->num_key_value_heads, e)) return -1;
    const jv *hd = jv_get(d, "head_dim");
    int64_t hdef = qwen3 ? 128 : c->hidden_size / c->num_attention_heads;
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
    if (!qwen3 && (!hd || hd->t == JV_NULL) && c->hidden_size % c->num_attention_heads)
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

static int parse(const jv *d, fd_glm_config *c, int qwen3, fd_err *e)
{
    fd_llama_ext *x = fd_xcalloc(1, sizeof *x);
    c->ext = x;
    if (common(d, c, x, qwen3, e)) return -1;
    return qwen3 ? qwen3_layers(d, c, e) : 0;
}

int fd_llama_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, 0, e); }
int fd_qwen3_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, 1, e); }
void fd_llama_ext_free(void *ext) { free(ext); }
