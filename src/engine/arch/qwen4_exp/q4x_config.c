/* Qwen4ExpTextConfig (transformers 5.25) into the common config (q4x.h):
 * qwen3_5_moe's text fields (arch/qwen3_5/q35_config.c) with Qwen4-Exp's
 * defaults, the hyper-connection and QSA fields, refusals by name.  The
 * composite model_type qwen4_exp reads text_config (the vision tower's
 * config is not read; its tensors are skipped by name). */
#include "engine/arch/qwen4_exp/q4x.h"
#include "util/buf.h"
#include <stdio.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

static int present(const jv *d, const char *k)
{
    const jv *v = jv_get(d, k);
    return v && v->t != JV_NULL;
}

static int text(const jv *d, fd_glm_config *c, fd_q4x_ext *x, fd_err *e)
{
    if (fd_q35_text_config(d, c, &x->q, 1, 1, e)) return -1;
    /* Qwen4ExpTextConfig's own defaults: 512 experts, top-10 */
    if (fd_cfg_int(d, "num_experts", 512, 1, &c->n_routed_experts, e) ||
        fd_cfg_int(d, "num_experts_per_tok", 10, 1, &c->num_experts_per_tok, e))
        return -1;
    if (c->n_routed_experts > 65536) return bad(e, "num_experts", "is implausibly large (> 65536)");
    if (c->num_experts_per_tok > c->n_routed_experts) return bad(e, "num_experts_per_tok", "exceeds num_experts");
    int norm;
    char gate[32];
    if (fd_cfg_bool(d, "norm_topk_prob", 1, &norm, e)) return -1;
    if (!norm) return bad(e, "norm_topk_prob", "false is not supported (the routed weights are renormalised)");
    if (present(d, "output_gate_type")) {
        if (fd_cfg_str(d, "output_gate_type", "silu", gate, sizeof gate, e)) return -1;
        if (strcmp(gate, "silu")) return bad(e, "output_gate_type", "only silu is supported (the gated norm's activation)");
    }
    const jv *ple = jv_get(d, "ple_layer_ids");
    if (ple && ple->t != JV_NULL && !(ple->t == JV_ARR && ple->u.a.n == 0))
        return bad(e, "ple_layer_ids",
                   "per-layer n-gram embeddings (PLE) are not supported yet: only checkpoints without PLE layers");
    if (fd_cfg_int(d, "hc_count", 4, 1, &x->hc, e) || fd_cfg_int(d, "hc_lowrank", 320, 1, &x->hc_rank, e)) return -1;
    if (x->hc < 2 || x->hc > 64 || (x->hc & (x->hc - 1)))
        return bad(e, "hc_count", "must be a power of two in [2, 64] (the streams' divisions by hc_count exact)");
    if (x->hc_rank > 65536) return bad(e, "hc_lowrank", "is implausibly large (> 65536)");
    if (c->hidden_size > (int64_t)1 << 20) return bad(e, "hidden_size", "is implausibly large (> 2^20)");
    int any_attn = 0;
    for (int64_t i = 0; i < c->num_hidden_layers; i++) any_attn |= !x->q.linear[i];
    static const char *const qsa[5] = {"indexer_n_heads", "indexer_kv_heads", "indexer_head_dim", "indexer_budget",
                                       "indexer_compress_ratio"};
    int n = 0;
    for (int i = 0; i < 5; i++) n += present(d, qsa[i]);
    if (!n && !any_attn) return 0;
    for (int i = 0; i < 5; i++)
        if (!present(d, qsa[i])) {
            char m[200];
            snprintf(m, sizeof m, "is required (QSA runs on every indexed_attention layer; %s)",
                     n ? "the QSA fields come together" : "this config has attention layers");
            return bad(e, qsa[i], m);
        }
    int64_t kvh;
    if (fd_cfg_int(d, "indexer_n_heads", 0, 1, &x->ix_heads, e) || fd_cfg_int(d, "indexer_kv_heads", 0, 1, &kvh, e) ||
        fd_cfg_int(d, "indexer_head_dim", 0, 1, &x->ix_dim, e) || fd_cfg_int(d, "indexer_budget", 0, 1, &x->ix_budget, e) ||
        fd_cfg_int(d, "indexer_compress_ratio", 0, 1, &x->ix_cr, e))
        return -1;
    if (kvh != 1) return bad(e, "indexer_kv_heads", "must be 1 (Qwen4-Exp QSA has one key head)");
    if (x->ix_heads > 4096) return bad(e, "indexer_n_heads", "is implausibly large (> 4096)");
    if (x->ix_dim > 4096) return bad(e, "indexer_head_dim", "is implausibly large (> 4096)");
    if (x->ix_cr > 1 << 20 || x->ix_budget > (int64_t)1 << 40) return bad(e, "indexer_budget", "is implausibly large");
    if (x->ix_budget % x->ix_cr) return bad(e, "indexer_budget", "must be a multiple of indexer_compress_ratio");
    if (x->q.rot > x->ix_dim)
        return bad(e, "indexer_head_dim", "must hold the attention's rotary dims (head_dim * partial_rotary_factor)");
    return 0;
}

static int parse(const jv *d, fd_glm_config *c, int composite, fd_err *e)
{
    fd_q4x_ext *x = fd_xcalloc(1, sizeof *x);
    c->ext = x;
    x->q.composite = composite;
    x->q.prefix = composite ? "model.language_model." : "model.";
    const jv *t = d;
    if (composite) {
        t = jv_get(d, "text_config");
        if (!t || t->t != JV_OBJ) return bad(e, "text_config", "is missing or not an object");
    }
    if (text(t, c, x, e)) {
        if (composite && !strcmp(e->code, "bad_config")) fd_err_prefix(e, "text_config");
        return -1;
    }
    int tie;
    if (fd_cfg_bool(t, "tie_word_embeddings", 0, &tie, e)) return -1;
    if (composite && fd_cfg_bool(d, "tie_word_embeddings", tie, &tie, e)) return -1;
    c->tie_word_embeddings = tie;
    return 0;
}

int fd_q4x_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, 1, e); }
int fd_q4x_text_parse(const jv *d, fd_glm_config *c, fd_err *e) { return parse(d, c, 0, e); }
