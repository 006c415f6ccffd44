/* qwen3_5_text and qwen3_5_moe_text as llama.cpp names them
 * (engine/gguf_model.h): general.architecture "qwen35" / "qwen35moe"
 * (convert_hf_to_gguf.py Qwen3_5TextModel / Qwen3_5MoeTextModel, through
 * Qwen3NextModel.modify_tensors).  The converter's rewrites:
 *   - the linear-attention value heads reordered (grouped -> tiled): a pure
 *     permutation, undone exactly (FD_GG_V_*, gguf_vheads.c);
 *   - conv1d squeezed to [channels, kernel]: a reshape, undone;
 *   - A_log stored as ssm_a = -exp(A_log) and the zero-centred norm weights
 *     (all but linear_attn.norm) as 1 + w, both computed in the tensor's own
 *     dtype (a bf16 -exp / sum rounds): no bit-exact inverse, so the file is
 *     read as it defines the model (fd_arch.gguf_stored): the forward takes
 *     A = ssm_a and the norm multiplier = the stored weight (q35_delta.c,
 *     fd_q35_norm), disclosed gguf_converter_rewrite_as_stored.
 * The config is the config.json document the metadata implies; the MRoPE
 * sections (rope.dimension_sections) are not read: text positions are one
 * grid, plain RoPE (docs/MODEL-QWEN35.md). */
#include "engine/arch/qwen3_5/q35.h"
#include "engine/gguf_model.h"
#include <stdio.h>
#include <string.h>

#define P "model.layers.%L."
#define A P "linear_attn."
#define COMMON                                                                                      \
    {"model.embed_tokens.weight", "token_embd.weight", FD_GG_ROWS, NULL},                           \
    {"model.norm.weight", "output_norm.weight", FD_GG_ROWS, NULL},                                  \
    {"lm_head.weight", "output.weight", FD_GG_ROWS, NULL},                                          \
    {P "input_layernorm.weight", "blk.%L.attn_norm.weight", FD_GG_ROWS, NULL},                     \
    {P "post_attention_layernorm.weight", "blk.%L.post_attention_norm.weight", FD_GG_ROWS, NULL},  \
    {A "in_proj_qkv.weight", "blk.%L.attn_qkv.weight", FD_GG_V_QKV, NULL},                         \
    {A "in_proj_z.weight", "blk.%L.attn_gate.weight", FD_GG_V_HD, NULL},                           \
    {A "in_proj_b.weight", "blk.%L.ssm_beta.weight", FD_GG_V_ONE, NULL},                           \
    {A "in_proj_a.weight", "blk.%L.ssm_alpha.weight", FD_GG_V_ONE, NULL},                          \
    {A "conv1d.weight", "blk.%L.ssm_conv1d.weight", FD_GG_V_QKV, NULL},                            \
    {A "dt_bias", "blk.%L.ssm_dt.bias", FD_GG_V_ONE, NULL},                                        \
    {A "A_log", "blk.%L.ssm_a", FD_GG_V_ONE, NULL},                                                \
    {A "norm.weight", "blk.%L.ssm_norm.weight", FD_GG_ROWS, NULL},                                 \
    {A "out_proj.weight", "blk.%L.ssm_out.weight", FD_GG_V_COLS, NULL},                            \
    {P "self_attn.q_proj.weight", "blk.%L.attn_q.weight", FD_GG_ROWS, NULL},                       \
    {P "self_attn.k_proj.weight", "blk.%L.attn_k.weight", FD_GG_ROWS, NULL},                       \
    {P "self_attn.v_proj.weight", "blk.%L.attn_v.weight", FD_GG_ROWS, NULL},                       \
    {P "self_attn.o_proj.weight", "blk.%L.attn_output.weight", FD_GG_ROWS, NULL},                  \
    {P "self_attn.q_norm.weight", "blk.%L.attn_q_norm.weight", FD_GG_ROWS, NULL},                  \
    {P "self_attn.k_norm.weight", "blk.%L.attn_k_norm.weight", FD_GG_ROWS, NULL}

static const fd_gguf_name MAP_DENSE[] = {
    COMMON,
    {P "mlp.gate_proj.weight", "blk.%L.ffn_gate.weight", FD_GG_ROWS, NULL},
    {P "mlp.up_proj.weight", "blk.%L.ffn_up.weight", FD_GG_ROWS, NULL},
    {P "mlp.down_proj.weight", "blk.%L.ffn_down.weight", FD_GG_ROWS, NULL},
    {NULL, NULL, 0, NULL},
};
static const fd_gguf_name MAP_MOE[] = {
    COMMON,
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
#undef COMMON
#undef A
#undef P

jv *fd_q35_gguf_config(const fd_gguf_set *s, const char *arch, int moe, fd_err *e)
{
    jv *d = jv_obj();
    static const struct { const char *key, *field; } INTS[] = {
        {"embedding_length", "hidden_size"},
        {"attention.head_count", "num_attention_heads"},
        {"attention.head_count_kv", "num_key_value_heads"},
        {"attention.key_length", "head_dim"},
        {"context_length", "max_position_embeddings"},
        {"ssm.conv_kernel", "linear_conv_kernel_dim"},
        {"ssm.state_size", "linear_key_head_dim"},
        {"ssm.group_count", "linear_num_key_heads"},
        {"ssm.time_step_rank", "linear_num_value_heads"},
    };
    int64_t v, L, nv, inner, hd, r, nextn = 0;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        if (v < 1) return fd_gguf_cfg_contradicts(d, s, arch, INTS[i].key, v, 1, "a non-empty model", e);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    if (!moe) {
        if (fd_gguf_cfg_int(s, arch, "feed_forward_length", &v, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, "intermediate_size", jv_int(v));
    }
    /* block_count counts the MTP (nextn) blocks after the trunk */
    if (fd_gguf_cfg_int(s, arch, "block_count", &L, e)) return fd_gguf_cfg_fail(d);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "nextn_predict_layers", &nextn, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) nextn = 0;
    if (nextn >= L) return fd_gguf_cfg_contradicts(d, s, arch, "nextn_predict_layers", nextn, L - 1, "block_count", e);
    L -= nextn;
    jv_set(d, "num_hidden_layers", jv_int(L));
    jv_get_i64(d, "head_dim", &hd);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.value_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != hd) return fd_gguf_cfg_contradicts(d, s, arch, "attention.value_length", v, hd, "attention.key_length", e);
    jv_get_i64(d, "linear_num_value_heads", &nv);
    if (fd_gguf_cfg_int(s, arch, "ssm.inner_size", &inner, e)) return fd_gguf_cfg_fail(d);
    if (inner % nv || inner < nv)
        return fd_gguf_cfg_contradicts(d, s, arch, "ssm.inner_size", inner, (inner / nv + 1) * nv,
                                       "a multiple of ssm.time_step_rank (the value heads)", e);
    jv_set(d, "linear_value_head_dim", jv_int(inner / nv));
    int64_t vocab = fd_gguf_rows(s, "token_embd.weight");
    jv_set(d, "vocab_size", jv_int(vocab));
    double f;
    if (fd_gguf_cfg_num(s, arch, "attention.layer_norm_rms_epsilon", &f, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "rms_norm_eps", jv_float(fd_gguf_f32_decimal(f)));
    double theta = 10000.0;
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.freq_base", &f, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r) theta = fd_gguf_f32_decimal(f);
    if (fd_gguf_cfg_rope_none(s, arch, "the engine reads default RoPE only", e)) return fd_gguf_cfg_fail(d);
    int64_t rot;
    if (fd_gguf_cfg_int(s, arch, "rope.dimension_count", &rot, e)) return fd_gguf_cfg_fail(d);
    double prf = (double)rot / (double)hd;
    if (rot < 2 || rot > hd || (int64_t)((double)hd * prf) != rot)
        return fd_gguf_cfg_contradicts(d, s, arch, "rope.dimension_count", rot, hd / 4,
                                       "head_dim x a partial_rotary_factor in (0, 1]", e);
    jv *rp = jv_obj();
    jv_set(rp, "rope_type", jv_str("default"));
    jv_set(rp, "rope_theta", jv_float(theta));
    jv_set(rp, "partial_rotary_factor", jv_float(prf));
    jv_set(d, "rope_parameters", rp);
    /* layer types: attention.recurrent_layers (bool per block), else full_attention_interval */
    int64_t fai = 4;
    if ((r = fd_gguf_cfg_int_opt(s, arch, "full_attention_interval", &fai, e)) < 0) return fd_gguf_cfg_fail(d);
    if (fai < 1) return fd_gguf_cfg_contradicts(d, s, arch, "full_attention_interval", fai, 4, "a positive interval", e);
    jv_set(d, "full_attention_interval", jv_int(fai));
    char k[160];
    snprintf(k, sizeof k, "%s.attention.recurrent_layers", arch);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    if (kv && (kv->type != FD_GGUF_ARRAY || kv->atype != FD_GGUF_BOOL || kv->alen < (uint64_t)L))
        return fd_gguf_cfg_fail((fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is not an array of at least "
                                         "block_count bools", s->f[0].path, k), d));
    jv *lt = jv_arr();
    for (int64_t i = 0; i < L; i++) {
        int lin = kv ? kv->adata[i] != 0 : (i + 1) % fai != 0;
        jv_push(lt, jv_str(lin ? "linear_attention" : "full_attention"));
    }
    jv_set(d, "layer_types", lt);
    jv_set(d, "tie_word_embeddings", jv_bool(fd_gguf_set_find(s, "output.weight") == NULL));
    jv_set(d, "attention_bias", jv_bool(0));
    jv_set(d, "hidden_act", jv_str("silu"));
    if (moe) {
        static const struct { const char *key, *field; } MOE[] = {
            {"expert_count", "num_experts"},
            {"expert_used_count", "num_experts_per_tok"},
            {"expert_feed_forward_length", "moe_intermediate_size"},
            {"expert_shared_feed_forward_length", "shared_expert_intermediate_size"},
        };
        for (size_t i = 0; i < sizeof MOE / sizeof *MOE; i++) {
            if (fd_gguf_cfg_int(s, arch, MOE[i].key, &v, e)) return fd_gguf_cfg_fail(d);
            jv_set(d, MOE[i].field, jv_int(v));
        }
    }
    return d;
}

static jv *config_dense(const fd_gguf_set *s, const char *arch, fd_err *e) { return fd_q35_gguf_config(s, arch, 0, e); }
static jv *config_moe(const fd_gguf_set *s, const char *arch, fd_err *e) { return fd_q35_gguf_config(s, arch, 1, e); }

void fd_q35_gguf_vheads(const fd_glm_config *c, uint64_t p[4])
{
    const fd_q35_ext *q = QX(c);
    p[0] = (uint64_t)q->nk;
    p[1] = q->nk ? (uint64_t)(q->nv / q->nk) : 0;
    p[2] = (uint64_t)q->dv;
    p[3] = (uint64_t)(2 * q->nk * q->dk);
}

#define STORED                                                                                                         \
    "llama.cpp's converter stores ssm_a = -exp(A_log) and the zero-centred RMSNorm weights as 1 + w, each computed in " \
    "the checkpoint tensor's own dtype (no bit-exact inverse): the forward takes A = ssm_a and the norm multiplier = "  \
    "the stored weight where transformers computes -exp(A_log) and 1 + w; the value-head reorder and the conv1d "      \
    "reshape are undone exactly"

static const char *const NAMES_DENSE[] = {"qwen35", NULL}, *const NAMES_MOE[] = {"qwen35moe", NULL};
const fd_gguf_arch FD_GGUF_QWEN35 = {NAMES_DENSE, MAP_DENSE, config_dense, NULL, NULL, NULL};
const fd_gguf_arch FD_GGUF_QWEN35MOE = {NAMES_MOE, MAP_MOE, config_moe, NULL, NULL, NULL};
const fd_gguf_stored FD_GGUF_Q35_STORED = {fd_q35_gguf_vheads, STORED};
