/* minimax_m2 as llama.cpp names it: general.architecture "minimax-m2"
 * (conversion/minimax.py MiniMaxM2Model, a TextModel: no Q/K permutation,
 * the routed experts w1 / w2 / w3 stacked into ffn_gate_exps / ffn_down_exps
 * / ffn_up_exps, q_norm / k_norm over all heads as attn_q_norm /
 * attn_k_norm, e_score_correction_bias as exp_probs_b.bias; 1-D tensors F32).
 * The config is the config.json document the metadata implies: the
 * converter writes feed_forward_length and expert_feed_forward_length both
 * from intermediate_size (the expert width), rope.dimension_count from
 * rotary_dim, key_length / value_length from head_dim, and
 * expert_gating_func 2 from scoring_func sigmoid (llama.cpp renormalises
 * the top-k weights of minimax-m2 as transformers does). */
#include "engine/arch/minimax_m2/mm2.h"
#include "engine/gguf_model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P "model.layers.%L."
static const fd_gguf_name MAP[] = {
    {"model.embed_tokens.weight", "token_embd.weight", FD_GG_ROWS, NULL},
    {"model.norm.weight", "output_norm.weight", FD_GG_ROWS, NULL},
    {"lm_head.weight", "output.weight", FD_GG_ROWS, NULL},
    {P "input_layernorm.weight", "blk.%L.attn_norm.weight", FD_GG_ROWS, NULL},
    {P "post_attention_layernorm.weight", "blk.%L.ffn_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.q_proj.weight", "blk.%L.attn_q.weight", FD_GG_ROWS, NULL},
    {P "self_attn.k_proj.weight", "blk.%L.attn_k.weight", FD_GG_ROWS, NULL},
    {P "self_attn.v_proj.weight", "blk.%L.attn_v.weight", FD_GG_ROWS, NULL},
    {P "self_attn.o_proj.weight", "blk.%L.attn_output.weight", FD_GG_ROWS, NULL},
    {P "self_attn.q_norm.weight", "blk.%L.attn_q_norm.weight", FD_GG_ROWS, NULL},
    {P "self_attn.k_norm.weight", "blk.%L.attn_k_norm.weight", FD_GG_ROWS, NULL},
    {P "block_sparse_moe.gate.weight", "blk.%L.ffn_gate_inp.weight", FD_GG_ROWS, NULL},
    {P "block_sparse_moe.e_score_correction_bias", "blk.%L.exp_probs_b.bias", FD_GG_ROWS, NULL},
    {P "block_sparse_moe.experts.%E.w1.weight", "blk.%L.ffn_gate_exps.weight", FD_GG_ROWS, NULL},
    {P "block_sparse_moe.experts.%E.w2.weight", "blk.%L.ffn_down_exps.weight", FD_GG_ROWS, NULL},
    {P "block_sparse_moe.experts.%E.w3.weight", "blk.%L.ffn_up_exps.weight", FD_GG_ROWS, NULL},
    {NULL, NULL, 0, NULL},
};
#undef P

static jv *config(const fd_gguf_set *s, const char *arch, fd_err *e)
{
    jv *d = jv_obj();
    static const struct { const char *key, *field; } INTS[] = {
        {"block_count", "num_hidden_layers"},
        {"embedding_length", "hidden_size"},
        {"expert_feed_forward_length", "intermediate_size"},
        {"attention.head_count", "num_attention_heads"},
        {"attention.head_count_kv", "num_key_value_heads"},
        {"attention.key_length", "head_dim"},
        {"rope.dimension_count", "rotary_dim"},
        {"expert_count", "num_local_experts"},
        {"expert_used_count", "num_experts_per_tok"},
        {"context_length", "max_position_embeddings"},
    };
    int64_t v, w, vocab;
    int r;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    jv_get_i64(d, "head_dim", &w);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.value_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != w) return fd_gguf_cfg_contradicts(d, s, arch, "attention.value_length", v, w, "attention.key_length", e);
    jv_get_i64(d, "intermediate_size", &w);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "feed_forward_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != w)
        return fd_gguf_cfg_contradicts(d, s, arch, "feed_forward_length", v, w, "expert_feed_forward_length (every "
                                       "minimax-m2 layer is the MoE block)", e);
    /* sigmoid routing (2) is minimax_m2's; llama.cpp reads an absent key as softmax */
    if ((r = fd_gguf_cfg_int_opt(s, arch, "expert_gating_func", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r || v != 2)
        return fd_gguf_cfg_fail((fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s.expert_gating_func is %s: "
                                         "minimax_m2 routes by sigmoid (2)", s->f[0].path, arch, r ? "missing" : "not 2"), d));
    vocab = fd_gguf_rows(s, "token_embd.weight");
    if ((r = fd_gguf_cfg_int_opt(s, arch, "vocab_size", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && vocab && v != vocab) return fd_gguf_cfg_contradicts(d, s, arch, "vocab_size", v, vocab, "token_embd.weight's rows", e);
    jv_set(d, "vocab_size", jv_int(vocab ? vocab : r ? 0 : v));
    double f;
    if (fd_gguf_cfg_num(s, arch, "attention.layer_norm_rms_epsilon", &f, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "rms_norm_eps", jv_float(fd_gguf_f32_decimal(f)));
    if (fd_gguf_cfg_num(s, arch, "rope.freq_base", &f, e)) return fd_gguf_cfg_fail(d); /* the converter always writes it */
    jv_set(d, "rope_theta", jv_float(fd_gguf_f32_decimal(f)));
    if (fd_gguf_cfg_rope_none(s, arch, "minimax_m2 has the default RoPE only", e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "tie_word_embeddings", jv_bool(fd_gguf_set_find(s, "output.weight") == NULL));
    jv_set(d, "scoring_func", jv_str("sigmoid"));
    return d;
}

/* config()'s inverse: the keys MiniMaxM2Model (TextModel.set_gguf_parameters)
 * writes for a config with scoring_func sigmoid (w->arch is "minimax-m2"). */
static int write_kv(const fd_glm_config *c, fd_gguf_kvw *w, fd_err *e)
{
    (void)e;
    fd_gguf_kv_text_model(w, c, c->num_key_value_heads);
    fd_gguf_kv_u32(w, "expert_count", c->n_routed_experts);
    fd_gguf_kv_u32(w, "expert_used_count", c->num_experts_per_tok);
    fd_gguf_kv_u32(w, "expert_gating_func", 2);
    fd_gguf_kv_u32(w, "attention.key_length", c->head_dim);
    fd_gguf_kv_u32(w, "attention.value_length", c->head_dim);
    fd_gguf_kv_u32(w, "expert_feed_forward_length", c->moe_intermediate_size);
    fd_gguf_kv_u32(w, "rope.dimension_count", MM2(c)->rotary_dim);
    return 0;
}

static const char *const NAMES[] = {"minimax-m2", NULL};

const fd_gguf_arch FD_GGUF_MINIMAX_M2 = {NAMES, MAP, config, NULL, write_kv, NULL};
