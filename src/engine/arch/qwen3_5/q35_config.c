/* Qwen3_5TextConfig / Qwen3_5MoeTextConfig (transformers 5.25) into the
 * common config (q35.h): every field that changes the math, the dataclass
 * defaults for absent fields, refusals by name.  The composite model_types
 * (qwen3_5, qwen3_5_moe) read the text model from text_config; the vision
 * tower's config is not read (its tensors are skipped by name). */
#include "engine/arch/qwen3_5/q35.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

/* rope_parameters (or legacy rope_scaling): rope_type default only;
 * partial_rotary_factor there or top level (default 0.25); mrope_section and
 * mrope_interleaved change nothing for text positions (one grid) */
static int rope(const jv *d, fd_glm_config *c, fd_q35_ext *x, fd_err *e)
{
    const char *k = "rope_parameters";
    const jv *rp = jv_get(d, k);
    if (!rp || rp->t == JV_NULL) { k = "rope_scaling"; rp = jv_get(d, k); }
    if (rp && rp->t == JV_NULL) rp = NULL;
    if (rp && rp->t != JV_OBJ) return bad(e, k, "is not an object");
    double prf;
    if (fd_cfg_num(d, "rope_theta", 10000.0, &c->rope_theta, e) ||
        fd_cfg_num(d, "partial_rotary_factor", 0.25, &prf, e))
        return -1;
    snprintf(c->rope_type, sizeof c->rope_type, "default");
    if (rp) {
        for (size_t i = 0; i < rp->u.o.n; i++)
            if (rp->u.o.m[i].v->t == JV_OBJ) return bad(e, k, "nested per-layer-type rope parameters are not supported");
        const char *tk = jv_get(rp, "rope_type") ? "rope_type" : "type";
        char rt[32];
        if (fd_cfg_str(rp, tk, "default", rt, sizeof rt, e) || fd_cfg_num(rp, "rope_theta", c->rope_theta, &c->rope_theta, e) ||
            fd_cfg_num(rp, "partial_rotary_factor", prf, &prf, e)) {
            fd_err_prefix(e, k);
            return -1;
        }
        if (strcmp(rt, "default")) {
            char m[160];
            snprintf(m, sizeof m, "rope_type \"%s\" is not supported (default)", rt);
            return bad(e, k, m);
        }
    }
    if (!(c->rope_theta > 0)) return bad(e, "rope_theta", "must be > 0");
    if (!(prf > 0 && prf <= 1)) return bad(e, "partial_rotary_factor", "must be in (0, 1]");
    x->rot = (int64_t)((double)c->head_dim * prf); /* int(head_dim * partial_rotary_factor) */
    if (x->rot < 2 || x->rot % 2) return bad(e, "partial_rotary_factor", "head_dim * partial_rotary_factor must be an even number >= 2");
    return 0;
}

/* layer_types, else every full_attention_interval-th layer full (default 4) */
static int layers(const jv *d, fd_glm_config *c, fd_q35_ext *x, int indexed, fd_err *e)
{
    x->linear = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    const jv *lt = jv_get(d, "layer_types");
    if (lt && lt->t != JV_NULL) {
        if (lt->t != JV_ARR || (int64_t)lt->u.a.n != c->num_hidden_layers)
            return bad(e, "layer_types", "is not a list of num_hidden_layers entries");
        for (size_t i = 0; i < lt->u.a.n; i++) {
            const jv *v = lt->u.a.v[i];
            if (v->t != JV_STR || (strcmp(v->u.s.p, "linear_attention") && strcmp(v->u.s.p, "full_attention") &&
                                   (!indexed || strcmp(v->u.s.p, "indexed_attention"))))
                return bad(e, "layer_types", indexed ? "entries must be linear_attention, indexed_attention or full_attention"
                                                     : "entries must be linear_attention or full_attention");
            x->linear[i] = !strcmp(v->u.s.p, "linear_attention");
        }
        return 0;
    }
    int64_t iv;
    if (fd_cfg_int(d, "full_attention_interval", 4, 1, &iv, e)) return -1;
    for (int64_t i = 0; i < c->num_hidden_layers; i++) x->linear[i] = (i + 1) % iv != 0;
    return 0;
}

enum { DENSE, MOE };

static int text(const jv *d, fd_glm_config *c, fd_q35_ext *x, int kind, int indexed, fd_err *e)
{
    /* the dataclass defaults of Qwen3_5TextConfig and Qwen3_5MoeTextConfig */
    static const int64_t defs[2][6] = {{248320, 4096, 12288, 32, 16, 4}, {248320, 2048, 0, 40, 16, 2}};
    const int64_t *df = defs[kind];
#define I(field, i) if (fd_cfg_int(d, #field, df[i], 1, &c->field, e)) return -1
    I(vocab_size, 0);
    I(hidden_size, 1);
    if (kind == DENSE) I(intermediate_size, 2);
    I(num_hidden_layers, 3);
    I(num_attention_heads, 4);
    I(num_key_value_heads, 5);
#undef I
    if (fd_cfg_int(d, "max_position_embeddings", 32768, 1, &c->max_position_embeddings, e) ||
        fd_cfg_int(d, "head_dim", 256, 2, &c->head_dim, e) || fd_cfg_num(d, "rms_norm_eps", 1e-6, &c->rms_norm_eps, e) ||
        fd_cfg_num(d, "attention_dropout", 0.0, &c->attention_dropout, e) ||
        fd_cfg_bool(d, "attention_bias", 0, &c->attention_bias, e) ||
        fd_cfg_str(d, "hidden_act", "silu", c->hidden_act, sizeof c->hidden_act, e) ||
        fd_cfg_int(d, "linear_conv_kernel_dim", 4, 1, &x->conv_k, e) ||
        fd_cfg_int(d, "linear_key_head_dim", 128, 1, &x->dk, e) ||
        fd_cfg_int(d, "linear_value_head_dim", 128, 1, &x->dv, e) ||
        fd_cfg_int(d, "linear_num_key_heads", 16, 1, &x->nk, e) ||
        fd_cfg_int(d, "linear_num_value_heads", 32, 1, &x->nv, e))
        return -1;
    if (c->num_hidden_layers > 65536) return bad(e, "num_hidden_layers", "is implausibly large (> 65536)");
    if (c->num_attention_heads % c->num_key_value_heads)
        return bad(e, "num_key_value_heads", "must divide num_attention_heads");
    if (c->head_dim > 4096) return bad(e, "head_dim", "is implausibly large (> 4096)");
    if (x->dk > 1024) return bad(e, "linear_key_head_dim", "is implausibly large (> 1024)");
    if (x->dv > 1024) return bad(e, "linear_value_head_dim", "is implausibly large (> 1024)");
    if (x->conv_k > 64) return bad(e, "linear_conv_kernel_dim", "is implausibly large (> 64)");
    if (x->nv % x->nk) return bad(e, "linear_num_value_heads", "must be a multiple of linear_num_key_heads");
    if (x->nv > 65536 || x->nk > 65536) return bad(e, "linear_num_value_heads", "is implausibly large (> 65536)");
    if (!(c->rms_norm_eps > 0)) return bad(e, "rms_norm_eps", "must be > 0");
    if (strcmp(c->hidden_act, "silu")) return bad(e, "hidden_act", "only silu is supported");
    if (rope(d, c, x, e)) return -1;
    c->qk_head_dim = c->head_dim;
    c->qk_rope_head_dim = x->rot;
    c->v_head_dim = c->head_dim;
    c->mlp_sparse = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    c->indexer_full = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    if (layers(d, c, x, indexed, e)) return -1;
    if (kind == MOE) {
        if (fd_cfg_int(d, "num_experts", 256, 1, &c->n_routed_experts, e) ||
            fd_cfg_int(d, "num_experts_per_tok", 8, 1, &c->num_experts_per_tok, e) ||
            fd_cfg_int(d, "moe_intermediate_size", 512, 1, &c->moe_intermediate_size, e) ||
            fd_cfg_int(d, "shared_expert_intermediate_size", 512, 1, &x->shared_inter, e))
            return -1;
        if (c->n_routed_experts > 65536) return bad(e, "num_experts", "is implausibly large (> 65536)");
        if (c->num_experts_per_tok > c->n_routed_experts) return bad(e, "num_experts_per_tok", "exceeds num_experts");
        c->norm_topk_prob = 1; /* Qwen3_5MoeTopKRouter always renormalises */
        c->n_shared_experts = 1;
        c->intermediate_size = x->shared_inter;
        x->moe = 1;
        memset(c->mlp_sparse, 1, (size_t)c->num_hidden_layers);
    }
    return 0;
}

static int parse(const jv *d, fd_glm_config *c, int kind, int composite, fd_err *e)
{
    fd_q35_ext *x = fd_xcalloc(1, sizeof *x);
    c->ext = x;
    x->composite = composite;
    x->prefix = composite ? "model.language_model." : "model.";
    const jv *t = d;
    if (composite) {
        t = jv_get(d, "text_config");
        if (!t || t->t != JV_OBJ) return bad(e, "text_config", "is missing or not an object");
    }
    if (text(t, c, x, kind, 0, e)) {
        if (composite && !strcmp(e->code, "bad_config")) fd_err_prefix(e, "text_config");
        return -1;
    }
    /* the composite's own tie_word_embeddings decides for its lm_head */
    int tie;
    if (fd_cfg_bool(t, "tie_word_embeddings", 0, &tie, e)) return -1;
    if (composite && fd_cfg_bool(d, "tie_word_embeddings", tie, &tie, e)) return -1;
    c->tie_word_embeddings = tie;
    return 0;
}

int fd_q35_text_config(const jv *d, fd_glm_config *c, fd_q35_ext *x, int moe, int indexed, fd_err *e)
{
    return text(d, c, x, moe ? MOE : DENSE, indexed, e);
}

int fd_q35_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, DENSE, 1, e); }
int fd_q35_text_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, DENSE, 0, e); }
int fd_q35_moe_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, MOE, 1, e); }
int fd_q35_moe_text_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, MOE, 0, e); }

void fd_q35_ext_free(void *ext)
{
    fd_q35_ext *x = ext;
    if (!x) return;
    free(x->linear);
    free(x);
}
