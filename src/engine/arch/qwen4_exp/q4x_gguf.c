/* qwen4_exp_text as llama.cpp names it (engine/gguf_model.h):
 * general.architecture "qwen4exp" (conversion/qwen4exp.py Qwen4ExpTextModel,
 * over qwen35moe's _LinearAttentionVReorderBase and Qwen3NextModel).  The
 * converter's rewrites, beyond qwen35moe's (arch/qwen3_5/q35_gguf.c: ssm_a,
 * the value-head reorder, conv1d squeezed, read as stored or undone):
 *   - index_qk_proj split along its rows into indexer.q_proj (the
 *     indexer_n_heads query heads) and indexer.k_proj (the key head): read
 *     back as one view of the two (FD_GG_CAT2), exactly;
 *   - the hyper-connection hc_norm weights (Qwen3NextModel's norm.weight
 *     rule) and the indexer q/k_layernorm weights stored as 1 + w: read as
 *     the stored multiplier (ops/hyper.c, fd_q35_norm, fd_op_qsa_select) as
 *     every other zero-centred norm of the file;
 *   - no output_norm / attn_norm / post_attention_norm: the gated residuals
 *     (blk.N.hc_attn_*, blk.N.hc_ffn_*, output_hc_*) replace them.
 * The config: qwen35moe's keys plus hyper_connection.count / .low_rank,
 * attention.indexer.head_count / .key_length / .top_k (indexer_budget) and
 * attention.compress_ratios (indexer_compress_ratio: the converter writes it
 * for layer_types entries spelled full_attention and 0 for every other, so a
 * checkpoint whose config spelled its QSA layers indexed_attention gives a
 * file without the block size: refused bad_gguf_config naming the key).
 * ple.layers (PLE) is refused by name. */
#include "engine/arch/qwen4_exp/q4x.h"
#include "engine/gguf_model.h"
#include <stdio.h>
#include <string.h>

#define P "model.layers.%L."
#define A P "linear_attn."
#define H P "attn_hyper_connection."
#define M P "mlp_hyper_connection."
static const fd_gguf_name MAP[] = {
    {"model.embed_tokens.weight", "token_embd.weight", FD_GG_ROWS, NULL},
    {"lm_head.weight", "output.weight", FD_GG_ROWS, NULL},
    {"model.hyper_connection_mixer.hc_norm.weight", "output_hc_norm.weight", FD_GG_ROWS, NULL},
    {"model.hyper_connection_mixer.input_mix_weight_down.weight", "output_hc_down.weight", FD_GG_ROWS, NULL},
    {"model.hyper_connection_mixer.input_mix_weight_up.weight", "output_hc_up.weight", FD_GG_ROWS, NULL},
    {H "hc_norm.weight", "blk.%L.hc_attn_norm.weight", FD_GG_ROWS, NULL},
    {H "input_mix_weight_down.weight", "blk.%L.hc_attn_down.weight", FD_GG_ROWS, NULL},
    {H "input_mix_weight_up.weight", "blk.%L.hc_attn_up.weight", FD_GG_ROWS, NULL},
    {H "block_inject_weight.weight", "blk.%L.hc_attn_inject.weight", FD_GG_ROWS, NULL},
    {M "hc_norm.weight", "blk.%L.hc_ffn_norm.weight", FD_GG_ROWS, NULL},
    {M "input_mix_weight_down.weight", "blk.%L.hc_ffn_down.weight", FD_GG_ROWS, NULL},
    {M "input_mix_weight_up.weight", "blk.%L.hc_ffn_up.weight", FD_GG_ROWS, NULL},
    {M "block_inject_weight.weight", "blk.%L.hc_ffn_inject.weight", FD_GG_ROWS, NULL},
    {A "in_proj_qkv.weight", "blk.%L.attn_qkv.weight", FD_GG_V_QKV, NULL},
    {A "in_proj_z.weight", "blk.%L.attn_gate.weight", FD_GG_V_HD, NULL},
    {A "in_proj_b.weight", "blk.%L.ssm_beta.weight", FD_GG_V_ONE, NULL},
    {A "in_proj_a.weight", "blk.%L.ssm_alpha.weight", FD_GG_V_ONE, NULL},
    {A "conv1d.weight", "blk.%L.ssm_conv1d.weight", FD_GG_V_QKV, NULL},
    {A "dt_bias", "blk.%L.ssm_dt.bias", FD_GG_V_ONE, NULL},
    {A "A_log", "blk.%L.ssm_a", FD_GG_V_ONE, NULL},
    {A "norm.weight", "blk.%L.ssm_norm.weight", FD_GG_ROWS, NULL},
    {A "out_proj.weight", "blk.%L.ssm_out.weight", FD_GG_V_COLS, NULL},
    {P "self_attn.q_proj.weight", "blk.%L.attn_q.weight", FD_GG_ROWS, NULL},
    {P "self_attn.k_proj.weight", "blk.%L.attn_k.weight", FD_GG_ROWS, NULL},
    {P "self_attn.v_proj.weight", "blk.%L.attn_v.weight", FD_GG_ROWS, NULL},
    {P "self_attn.o_proj.weight", "blk.%L.attn_output.weight", FD_GG_ROWS, NULL},
    {P "self_attn.q_norm.weight", "blk.%L.attn_q_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.k_norm.weight", "blk.%L.attn_k_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.indexer.index_qk_proj.weight", "blk.%L.indexer.q_proj.weight", FD_GG_CAT2,
     "blk.%L.indexer.k_proj.weight"},
    {P "self_attn.indexer.q_layernorm.weight", "blk.%L.indexer.q_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.indexer.k_layernorm.weight", "blk.%L.indexer.k_norm.weight", FD_GG_ROWS, NULL},
    {P "mlp.gate.weight", "blk.%L.ffn_gate_inp.weight", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.gate_proj.weight", "blk.%L.ffn_gate_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.up_proj.weight", "blk.%L.ffn_up_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.down_proj.weight", "blk.%L.ffn_down_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_expert.gate_proj.weight", "blk.%L.ffn_gate_shexp.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_expert.up_proj.weight", "blk.%L.ffn_up_shexp.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_expert.down_proj.weight", "blk.%L.ffn_down_shexp.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_expert_gate.weight", "blk.%L.ffn_gate_inp_shexp.weight", FD_GG_ROWS, NULL},
    {NULL, NULL, 0, NULL},
};
#undef M
#undef H
#undef A
#undef P

static jv *refuse(jv *d, const fd_gguf_set *s, const char *arch, const char *key, const char *why, fd_err *e)
{
    fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s.%s %s", s->f[0].path, arch, key, why);
    return fd_gguf_cfg_fail(d);
}

static jv *config(const fd_gguf_set *s, const char *arch, fd_err *e)
{
    jv *d = fd_q35_gguf_config(s, arch, 1, e);
    if (!d) return NULL;
    static const struct { const char *key, *field; } INTS[] = {
        {"hyper_connection.count", "hc_count"},
        {"hyper_connection.low_rank", "hc_lowrank"},
        {"attention.indexer.head_count", "indexer_n_heads"},
        {"attention.indexer.key_length", "indexer_head_dim"},
        {"attention.indexer.top_k", "indexer_budget"},
    };
    int64_t v;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    jv_set(d, "indexer_kv_heads", jv_int(1)); /* the one key head (indexer.k_proj) */
    char k[160];
    snprintf(k, sizeof k, "%s.ple.layers", arch);
    if (fd_gguf_get(&s->f[0], k))
        return refuse(d, s, arch, "ple.layers", "is present: per-layer n-gram embeddings (PLE) are not supported yet", e);
    jv_set(d, "ple_layer_ids", jv_arr());
    /* the QSA block size: attention.compress_ratios, one per block, the same on every attention layer */
    snprintf(k, sizeof k, "%s.attention.compress_ratios", arch);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    const jv *lt = jv_get(d, "layer_types");
    size_t L = lt->u.a.n;
    int sz = kv && kv->type == FD_GGUF_ARRAY ? fd_gguf_vtype_size(kv->atype) : 0;
    if (!kv || kv->type != FD_GGUF_ARRAY ||
        (kv->atype != FD_GGUF_I32 && kv->atype != FD_GGUF_U32 && kv->atype != FD_GGUF_I64 && kv->atype != FD_GGUF_U64) ||
        kv->alen < L)
        return refuse(d, s, arch, "attention.compress_ratios", "is missing or not an integer per block", e);
    int64_t cr = 0;
    for (size_t i = 0; i < L; i++) {
        int64_t r = 0;
        if (sz == 4) {
            uint32_t u;
            memcpy(&u, kv->adata + i * 4, 4);
            r = kv->atype == FD_GGUF_I32 ? (int64_t)(int32_t)u : (int64_t)u;
        } else {
            uint64_t u;
            memcpy(&u, kv->adata + i * 8, 8);
            r = (int64_t)u;
        }
        int attn = !strcmp(lt->u.a.v[i]->u.s.p, "full_attention");
        char why[200];
        if (attn && r < 1) {
            snprintf(why, sizeof why, "is %lld for attention layer %zu: the QSA block size is unknown (the converter "
                     "writes 0 for a layer_types entry spelled indexed_attention)", (long long)r, i);
            return refuse(d, s, arch, "attention.compress_ratios", why, e);
        }
        if ((attn && cr && r != cr) || (!attn && r != 0)) {
            snprintf(why, sizeof why, "is %lld for layer %zu: one indexer_compress_ratio on the attention layers, 0 on "
                     "the linear-attention ones", (long long)r, i);
            return refuse(d, s, arch, "attention.compress_ratios", why, e);
        }
        if (attn) cr = r;
    }
    if (cr) jv_set(d, "indexer_compress_ratio", jv_int(cr));
    return d;
}

#define STORED                                                                                                          \
    "llama.cpp's converter stores ssm_a = -exp(A_log) and the zero-centred RMSNorm weights (the hyper-connection "      \
    "hc_norm and the indexer q/k_layernorm included) as 1 + w, each computed in the checkpoint tensor's own dtype (no " \
    "bit-exact inverse): the forward takes A = ssm_a and the norm multiplier = the stored weight where transformers "   \
    "computes -exp(A_log) and 1 + w; the value-head reorder, the conv1d reshape and the index_qk_proj split are "       \
    "undone exactly"

static const char *const NAMES[] = {"qwen4exp", NULL};
const fd_gguf_arch FD_GGUF_QWEN4EXP = {NAMES, MAP, config, NULL, NULL, NULL};
const fd_gguf_stored FD_GGUF_Q4X_STORED = {fd_q35_gguf_vheads, STORED};
