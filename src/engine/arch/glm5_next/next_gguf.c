/* glm5_next as llama.cpp names it (engine/gguf_model.h): general.architecture
 * "glm5-next" (convert_hf_to_gguf.py Glm5NextModel, conversion/glm.py of the
 * llama-cpp-python 0.3.36 sdist; docs/QUANT-FORMATS.md "GGUF: rewrites read
 * as stored").  The converter's rewrites:
 *   - the routed experts stacked [E, rows, cols] (ffn_*_exps): views;
 *   - kv_b_proj split into attn_k_b (transposed) and attn_v_b: rebuilt
 *     exactly (FD_GG_KV_B);
 *   - the KDA conv1d reshaped [C, 1, K] -> [1, C, 1, K]: the same elements in
 *     the same order (FD_GG_RESHAPE, read in place);
 *   - dt_bias renamed ssm_dt.bias, the mHC and k-pool parameters renamed
 *     with a ".weight" suffix, and the small parameters (hc_*, ssm_a,
 *     ssm_dt, exp_probs_b, the k-pool compressor) forced to F32: widening a
 *     bf16 value to F32 is exact;
 *   - A_log stored as ssm_a = -exp(float32(A_log)) (the first num_attention_
 *     heads values): no bit-exact inverse, so the forward reads the file as it
 *     defines the model (fd_arch.gguf_stored): exp(A_log) = -ssm_a
 *     (next_kda.c), disclosed gguf_converter_rewrite_as_stored.
 * The config is the flat, text-only config.json document the metadata
 * implies (no vision tower: the converter writes none). */
#include "engine/arch/glm5_next/next_config.h"
#include "engine/arch/glm5_next/next_tensors.h"
#include "engine/gguf_model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P "model.language_model.layers.%L."
#define A P "self_attn."
static const fd_gguf_name MAP[] = {
    {"model.language_model.embed_tokens.weight", "token_embd.weight", FD_GG_ROWS, NULL},
    {"model.language_model.norm.weight", "output_norm.weight", FD_GG_ROWS, NULL},
    {"lm_head.weight", "output.weight", FD_GG_ROWS, NULL},
    {P "hc_attn_fn", "blk.%L.hc_attn_fn.weight", FD_GG_ROWS, NULL},
    {P "hc_attn_base", "blk.%L.hc_attn_base.weight", FD_GG_ROWS, NULL},
    {P "hc_attn_scale", "blk.%L.hc_attn_scale.weight", FD_GG_ROWS, NULL},
    {P "hc_ffn_fn", "blk.%L.hc_ffn_fn.weight", FD_GG_ROWS, NULL},
    {P "hc_ffn_base", "blk.%L.hc_ffn_base.weight", FD_GG_ROWS, NULL},
    {P "hc_ffn_scale", "blk.%L.hc_ffn_scale.weight", FD_GG_ROWS, NULL},
    {P "input_layernorm.weight", "blk.%L.attn_norm.weight", FD_GG_ROWS, NULL},
    {P "post_attention_layernorm.weight", "blk.%L.ffn_norm.weight", FD_GG_ROWS, NULL},
    /* KDA */
    {A "q_proj.weight", "blk.%L.attn_q.weight", FD_GG_ROWS, NULL},
    {A "k_proj.weight", "blk.%L.attn_k.weight", FD_GG_ROWS, NULL},
    {A "v_proj.weight", "blk.%L.attn_v.weight", FD_GG_ROWS, NULL},
    {A "q_conv1d.weight", "blk.%L.ssm_conv1d_q.weight", FD_GG_RESHAPE, NULL},
    {A "k_conv1d.weight", "blk.%L.ssm_conv1d_k.weight", FD_GG_RESHAPE, NULL},
    {A "v_conv1d.weight", "blk.%L.ssm_conv1d_v.weight", FD_GG_RESHAPE, NULL},
    {A "f_a_proj.weight", "blk.%L.ssm_f_a.weight", FD_GG_ROWS, NULL},
    {A "f_b_proj.weight", "blk.%L.ssm_f_b.weight", FD_GG_ROWS, NULL},
    {A "dt_bias", "blk.%L.ssm_dt.bias", FD_GG_ROWS, NULL},
    {A "A_log", "blk.%L.ssm_a", FD_GG_ROWS, NULL},
    {A "b_proj.weight", "blk.%L.ssm_beta.weight", FD_GG_ROWS, NULL},
    {A "g_a_proj.weight", "blk.%L.ssm_g_a.weight", FD_GG_ROWS, NULL},
    {A "g_b_proj.weight", "blk.%L.ssm_g_b.weight", FD_GG_ROWS, NULL},
    {A "o_norm.weight", "blk.%L.ssm_norm.weight", FD_GG_ROWS, NULL},
    {A "o_proj.weight", "blk.%L.attn_output.weight", FD_GG_ROWS, NULL}, /* KDA and DSA layers alike */
    /* DSA (NoPE MLA + the k-pool indexer) */
    {A "q_a_proj.weight", "blk.%L.attn_q_a.weight", FD_GG_ROWS, NULL},
    {A "q_a_layernorm.weight", "blk.%L.attn_q_a_norm.weight", FD_GG_ROWS, NULL},
    {A "q_b_proj.weight", "blk.%L.attn_q_b.weight", FD_GG_ROWS, NULL},
    {A "kv_a_proj_with_mqa.weight", "blk.%L.attn_kv_a_mqa.weight", FD_GG_ROWS, NULL},
    {A "kv_a_layernorm.weight", "blk.%L.attn_kv_a_norm.weight", FD_GG_ROWS, NULL},
    {A "kv_b_proj.weight", "blk.%L.attn_k_b.weight", FD_GG_KV_B, "blk.%L.attn_v_b.weight"},
    {A "indexer.wq_b.weight", "blk.%L.indexer.attn_q_b.weight", FD_GG_ROWS, NULL},
    {A "indexer.wk.weight", "blk.%L.indexer.attn_k.weight", FD_GG_ROWS, NULL},
    {A "indexer.k_norm.weight", "blk.%L.indexer.k_norm.weight", FD_GG_ROWS, NULL},
    {A "indexer.k_norm.bias", "blk.%L.indexer.k_norm.bias", FD_GG_ROWS, NULL},
    {A "indexer.weights_proj.weight", "blk.%L.indexer.proj.weight", FD_GG_ROWS, NULL},
    {A "indexer.index_kpool_compress_ape", "blk.%L.indexer_compressor_ape.weight", FD_GG_ROWS, NULL},
    {A "indexer.index_kpool_compress_gate", "blk.%L.indexer_compressor_gate.weight", FD_GG_ROWS, NULL},
    /* MLP: dense, or the router, stacked experts and the shared expert */
    {P "mlp.gate_proj.weight", "blk.%L.ffn_gate.weight", FD_GG_ROWS, NULL},
    {P "mlp.up_proj.weight", "blk.%L.ffn_up.weight", FD_GG_ROWS, NULL},
    {P "mlp.down_proj.weight", "blk.%L.ffn_down.weight", FD_GG_ROWS, NULL},
    {P "mlp.gate.weight", "blk.%L.ffn_gate_inp.weight", FD_GG_ROWS, NULL},
    {P "mlp.gate.e_score_correction_bias", "blk.%L.exp_probs_b.bias", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.gate_proj.weight", "blk.%L.ffn_gate_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.up_proj.weight", "blk.%L.ffn_up_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.experts.%E.down_proj.weight", "blk.%L.ffn_down_exps.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_experts.gate_proj.weight", "blk.%L.ffn_gate_shexp.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_experts.up_proj.weight", "blk.%L.ffn_up_shexp.weight", FD_GG_ROWS, NULL},
    {P "mlp.shared_experts.down_proj.weight", "blk.%L.ffn_down_shexp.weight", FD_GG_ROWS, NULL},
    {NULL, NULL, 0, NULL},
};
#undef A
#undef P

/* a BOOL metadata key (1 when absent and opt) */
static int flag(const fd_gguf_set *s, const char *arch, const char *key, int *out, fd_err *e)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    if (!kv) return fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is missing", s->f[0].path, k);
    if (kv->type != FD_GGUF_BOOL)
        return fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is %s, not a bool", s->f[0].path, k,
                       fd_gguf_vtype_name(kv->type));
    *out = kv->v.u != 0;
    return 0;
}

static jv *layer_list(const unsigned char *v, int64_t L, const char *yes, const char *no)
{
    jv *a = jv_arr();
    for (int64_t i = 0; i < L; i++) jv_push(a, jv_str(v[i] ? yes : no));
    return a;
}

static jv *config(const fd_gguf_set *s, const char *arch, fd_err *e)
{
    jv *d = jv_obj();
    static const struct { const char *key, *field; } INTS[] = {
        {"embedding_length", "hidden_size"},
        {"feed_forward_length", "intermediate_size"},
        {"context_length", "max_position_embeddings"},
        {"attention.head_count", "num_attention_heads"},
        {"attention.q_lora_rank", "q_lora_rank"},
        {"attention.kv_lora_rank", "kv_lora_rank"},
        {"attention.key_length_mla", "qk_nope_head_dim"},
        {"attention.value_length_mla", "v_head_dim"},
        {"attention.indexer.head_count", "index_n_heads"},
        {"attention.indexer.key_length", "index_head_dim"},
        {"attention.indexer.top_k", "index_topk"},
        {"attention.indexer.kpool", "index_kpool"},
        {"ssm.conv_kernel", "linear_conv_kernel_dim"},
        {"kda.head_dim", "linear_head_dim"},
        {"hyper_connection.count", "hc_mult"},
        {"hyper_connection.sinkhorn_iterations", "hc_sinkhorn_iters"},
        {"expert_count", "n_routed_experts"},
        {"expert_used_count", "num_experts_per_tok"},
        {"expert_feed_forward_length", "moe_intermediate_size"},
        {"expert_shared_count", "n_shared_experts"},
    };
    int64_t v, L, nextn = 0, nh, r;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        if (v < 1) return fd_gguf_cfg_contradicts(d, s, arch, INTS[i].key, v, 1, "a non-empty model", e);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    /* expert groups: written when the config has n_group; absent, the config's default (1) */
    static const struct { const char *key, *field; } GROUPS[] = {
        {"expert_group_count", "n_group"},
        {"expert_group_used_count", "topk_group"},
    };
    for (size_t i = 0; i < sizeof GROUPS / sizeof *GROUPS; i++) {
        if ((r = fd_gguf_cfg_int_opt(s, arch, GROUPS[i].key, &v, e)) < 0) return fd_gguf_cfg_fail(d);
        if (!r && v < 1) return fd_gguf_cfg_contradicts(d, s, arch, GROUPS[i].key, v, 1, "a non-empty model", e);
        if (!r) jv_set(d, GROUPS[i].field, jv_int(v));
    }
    jv_get_i64(d, "num_attention_heads", &nh);
    jv_set(d, "num_key_value_heads", jv_int(nh));
    jv_set(d, "linear_num_heads", jv_int(nh)); /* the converter asserts linear_attn_config.num_heads == heads */
    jv_set(d, "qk_rope_head_dim", jv_int(0));
    /* block_count counts the MTP (nextn) blocks after the trunk */
    if (fd_gguf_cfg_int(s, arch, "block_count", &L, e)) return fd_gguf_cfg_fail(d);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "nextn_predict_layers", &nextn, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) nextn = 0;
    if (nextn >= L) return fd_gguf_cfg_contradicts(d, s, arch, "nextn_predict_layers", nextn, L - 1, "block_count", e);
    L -= nextn;
    jv_set(d, "num_hidden_layers", jv_int(L));
    /* NoPE MLA: no rotary dims; the absorbed key / value length is kv_lora_rank */
    int64_t rkv, dn;
    jv_get_i64(d, "kv_lora_rank", &rkv);
    jv_get_i64(d, "qk_nope_head_dim", &dn);
    if (fd_gguf_cfg_int(s, arch, "rope.dimension_count", &v, e)) return fd_gguf_cfg_fail(d);
    if (v) return fd_gguf_cfg_contradicts(d, s, arch, "rope.dimension_count", v, 0, "glm5_next's NoPE attention", e);
    if (fd_gguf_cfg_int(s, arch, "attention.key_length", &v, e)) return fd_gguf_cfg_fail(d);
    if (v != rkv) return fd_gguf_cfg_contradicts(d, s, arch, "attention.key_length", v, rkv, "attention.kv_lora_rank", e);
    if (fd_gguf_cfg_int(s, arch, "attention.value_length", &v, e)) return fd_gguf_cfg_fail(d);
    if (v != rkv) return fd_gguf_cfg_contradicts(d, s, arch, "attention.value_length", v, rkv, "attention.kv_lora_rank", e);
    int64_t vocab = fd_gguf_rows(s, "token_embd.weight");
    if ((r = fd_gguf_cfg_int_opt(s, arch, "vocab_size", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != vocab) return fd_gguf_cfg_contradicts(d, s, arch, "vocab_size", v, vocab, "token_embd.weight", e);
    jv_set(d, "vocab_size", jv_int(vocab));
    /* layer kinds: head_count_kv per block, 0 on a KDA (linear_attention) layer */
    const fd_gguf_kv *kv = fd_gguf_cfg_array(s, arch, "attention.head_count_kv", L, 0, e);
    if (!kv) return fd_gguf_cfg_fail(d);
    unsigned char *kinds = fd_xcalloc((size_t)L + 1, 1);
    for (int64_t i = 0; i < L; i++) kinds[i] = fd_gguf_cfg_elem(kv, (uint64_t)i) == 0;
    jv_set(d, "layer_types", layer_list(kinds, L, "linear_attention", "deepseek_sparse_attention"));
    /* indexer types: one bool a block (true: full), else every layer full */
    char k[160];
    snprintf(k, sizeof k, "%s.attention.indexer.types", arch);
    if (fd_gguf_get(&s->f[0], k)) {
        if (!(kv = fd_gguf_cfg_array(s, arch, "attention.indexer.types", L, 0, e))) { free(kinds); return fd_gguf_cfg_fail(d); }
        for (int64_t i = 0; i < L; i++) kinds[i] = fd_gguf_cfg_elem(kv, (uint64_t)i) != 0;
    } else memset(kinds, 1, (size_t)L);
    jv_set(d, "indexer_types", layer_list(kinds, L, "full", "shared"));
    int64_t dense;
    if (fd_gguf_cfg_int(s, arch, "leading_dense_block_count", &dense, e)) { free(kinds); return fd_gguf_cfg_fail(d); }
    if (dense > L) {
        free(kinds);
        return fd_gguf_cfg_contradicts(d, s, arch, "leading_dense_block_count", dense, L, "block_count", e);
    }
    for (int64_t i = 0; i < L; i++) kinds[i] = i >= dense;
    jv_set(d, "mlp_layer_types", layer_list(kinds, L, "sparse", "dense"));
    free(kinds);
    /* floats: float32 metadata, read back as the config.json decimal */
    static const struct { const char *key, *field; } NUMS[] = {
        {"attention.layer_norm_rms_epsilon", "rms_norm_eps"},
        {"hyper_connection.epsilon", "hc_eps"},
        {"expert_weights_scale", "routed_scaling_factor"},
    };
    double f;
    for (size_t i = 0; i < sizeof NUMS / sizeof *NUMS; i++) {
        if (fd_gguf_cfg_num(s, arch, NUMS[i].key, &f, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, NUMS[i].field, jv_float(fd_gguf_f32_decimal(f)));
    }
    /* the KDA gate's lower bound: absent = no safe gate (gate_lower_bound null) */
    if ((r = fd_gguf_cfg_num_opt(s, arch, "kda.gate_lower_bound", &f, e)) < 0) return fd_gguf_cfg_fail(d);
    jv_set(d, "linear_lower_bound", r ? jv_null() : jv_float(fd_gguf_f32_decimal(f)));
    /* swiglu_limit: one value a block, the same for the experts and the shared expert */
    const fd_gguf_kv *ce = fd_gguf_cfg_array(s, arch, "swiglu_clamp_exp", L, 1, e), *cs = ce ? fd_gguf_cfg_array(s, arch, "swiglu_clamp_shexp", L, 1, e) : NULL;
    if (!cs) return fd_gguf_cfg_fail(d);
    double lim = fd_gguf_cfg_elem(ce, 0);
    for (int64_t i = 0; i < L; i++)
        if (fd_gguf_cfg_elem(ce, (uint64_t)i) != lim || fd_gguf_cfg_elem(cs, (uint64_t)i) != lim) {
            fd_fail(e, "bad_gguf_config", "", "%s: metadata keys %s.swiglu_clamp_exp / swiglu_clamp_shexp are not one "
                    "value for every block (glm5_next has one swiglu_limit)", s->f[0].path, arch);
            return fd_gguf_cfg_fail(d);
        }
    jv_set(d, "swiglu_limit", jv_float(fd_gguf_f32_decimal(lim)));
    int b;
    if (flag(s, arch, "expert_weights_norm", &b, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "norm_topk_prob", jv_bool(b));
    if (flag(s, arch, "attention.indexer.kpool_select_tail", &b, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "index_kpool_always_select_tail", jv_bool(b));
    if (fd_gguf_cfg_rope_none(s, arch, "glm5_next's attention has no RoPE", e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "tie_word_embeddings", jv_bool(fd_gguf_set_find(s, "output.weight") == NULL));
    jv_set(d, "attention_bias", jv_bool(0));
    jv_set(d, "hidden_act", jv_str("silu"));
    return d;
}

static const char *const NAMES[] = {"glm5-next", NULL};
const fd_gguf_arch FD_GGUF_GLM5_NEXT = {NAMES, MAP, config, NULL, NULL, NULL};
const fd_gguf_stored FD_GGUF_NEXT_STORED = {NULL, FD_GGUF_KDA_STORED};
