/* MiniMaxM2Config (transformers 5.25) into the common config (mm2.h): every
 * field that changes the math, the dataclass defaults for absent fields,
 * refusals by name. */
#include "engine/arch/minimax_m2/mm2.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

/* rope_scaling (legacy, wins when non-empty) or rope_parameters; rope_theta
 * from the dict, else top level, else MiniMaxM2Config.default_theta (5e6);
 * partial_rotary_factor from the dict, else top level, else the legacy
 * rotary_dim / head_dim of released checkpoints, else 1
 * (MiniMaxM2Config.convert_rope_params_to_dict) */
static int rope(const jv *d, fd_glm_config *c, fd_mm2_ext *x, fd_err *e)
{
    const char *k = "rope_scaling";
    const jv *rp = jv_get(d, k);
    if (!rp || rp->t == JV_NULL || (rp->t == JV_OBJ && !rp->u.o.n)) { k = "rope_parameters"; rp = jv_get(d, k); }
    if (rp && rp->t == JV_NULL) rp = NULL;
    if (rp && rp->t != JV_OBJ) return bad(e, k, "is not an object");
    for (size_t i = 0; rp && i < rp->u.o.n; i++)
        if (rp->u.o.m[i].v->t == JV_OBJ) return bad(e, k, "nested per-layer-type rope parameters are not supported");
    if (fd_cfg_num(d, "rope_theta", 5000000.0, &c->rope_theta, e)) return -1;
    char rt[32] = "default";
    if (rp) {
        const char *tk = jv_get(rp, "rope_type") ? "rope_type" : "type";
        if (fd_cfg_str(rp, tk, "default", rt, sizeof rt, e) || fd_cfg_num(rp, "rope_theta", c->rope_theta, &c->rope_theta, e)) {
            fd_err_prefix(e, k);
            return -1;
        }
    }
    if (!(c->rope_theta > 0)) return bad(e, "rope_theta", "must be > 0");
    if (strcmp(rt, "default")) {
        char m[160];
        snprintf(m, sizeof m, "rope_type \"%s\" is not supported (default)", rt);
        return bad(e, k, m);
    }
    snprintf(c->rope_type, sizeof c->rope_type, "default");
    double prf = 1.0;
    const char *pk = "partial_rotary_factor";
    const jv *rd = jv_get(d, "rotary_dim");
    if (rd && rd->t != JV_NULL) {
        int64_t r;
        if (fd_cfg_int(d, "rotary_dim", 0, 0, &r, e)) return -1;
        prf = (double)r / (double)c->head_dim;
        pk = "rotary_dim";
    }
    if (jv_get(d, "partial_rotary_factor")) pk = "partial_rotary_factor";
    if (rp && jv_get(rp, "partial_rotary_factor")) pk = "partial_rotary_factor";
    if (fd_cfg_num(d, "partial_rotary_factor", prf, &prf, e) || (rp && fd_cfg_num(rp, "partial_rotary_factor", prf, &prf, e)))
        return -1;
    double dim = (double)c->head_dim * prf; /* int(head_dim * partial_rotary_factor) */
    if (!(dim >= 2.0) || dim > (double)c->head_dim) return bad(e, pk, "gives a rotary dim outside [2, head_dim]");
    x->rotary_dim = (int64_t)dim;
    if (x->rotary_dim % 2) return bad(e, pk, "gives an odd rotary dim (rotate_half needs an even one)");
    return 0;
}

int fd_mm2_parse(const jv *d, fd_glm_config *c, fd_err *e)
{
    fd_mm2_ext *x = fd_xcalloc(1, sizeof *x);
    c->ext = x;
    /* MiniMaxM2Config's dataclass defaults (MiniMax-M2's own sizes) */
#define I(field, def) if (fd_cfg_int(d, #field, def, 1, &c->field, e)) return -1
    I(vocab_size, 200064);
    I(hidden_size, 3072);
    I(intermediate_size, 1536);
    I(num_hidden_layers, 62);
    I(num_attention_heads, 48);
    I(num_key_value_heads, 8);
    I(head_dim, 128);
    I(max_position_embeddings, 196608);
    I(num_experts_per_tok, 8);
#undef I
    /* attribute_map: num_experts is num_local_experts */
    const char *ek = jv_get(d, "num_local_experts") ? "num_local_experts" : jv_get(d, "num_experts") ? "num_experts"
                                                                                                      : "num_local_experts";
    if (fd_cfg_int(d, ek, 256, 1, &c->n_routed_experts, e)) return -1;
    if (fd_cfg_num(d, "rms_norm_eps", 1e-6, &c->rms_norm_eps, e)) return -1;
    if (fd_cfg_num(d, "attention_dropout", 0.0, &c->attention_dropout, e)) return -1;
    if (fd_cfg_bool(d, "tie_word_embeddings", 0, &c->tie_word_embeddings, e)) return -1;
    if (fd_cfg_str(d, "hidden_act", "silu", c->hidden_act, sizeof c->hidden_act, e)) return -1;
    if (c->num_hidden_layers > 65536) return bad(e, "num_hidden_layers", "is implausibly large (> 65536)");
    if (c->n_routed_experts > 65536) return bad(e, ek, "is implausibly large (> 65536)");
    if (c->num_experts_per_tok > c->n_routed_experts) return bad(e, "num_experts_per_tok", "exceeds the number of experts");
    if (c->num_attention_heads % c->num_key_value_heads)
        return bad(e, "num_key_value_heads", "must divide num_attention_heads");
    if (c->head_dim > 4096) return bad(e, "head_dim", "is implausibly large (> 4096)");
    if (!(c->rms_norm_eps > 0)) return bad(e, "rms_norm_eps", "must be > 0");
    if (strcmp(c->hidden_act, "silu")) return bad(e, "hidden_act", "only silu is supported");
    if (rope(d, c, x, e)) return -1;
    /* every layer is the MoE block; its expert width is intermediate_size */
    c->moe_intermediate_size = c->intermediate_size;
    c->norm_topk_prob = 1;
    c->n_group = c->topk_group = 1;
    c->routed_scaling_factor = 1.0;
    c->qk_head_dim = c->qk_rope_head_dim = c->v_head_dim = c->head_dim;
    c->mlp_sparse = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    memset(c->mlp_sparse, 1, (size_t)c->num_hidden_layers);
    c->indexer_full = fd_xcalloc((size_t)c->num_hidden_layers, 1);
    return 0;
}

void fd_mm2_ext_free(void *ext) { free(ext); }
