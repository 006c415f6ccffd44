/* deepseek_v4 as llama.cpp names it: general.architecture "deepseek4"
 * (conversion/deepseek.py DeepseekV4Model, registered for
 * DeepseekV4ForCausalLM): the routed experts stacked (MXFP4, repacked from
 * the release's fp4 + E8M0 scales, or as the source has them), FP8 Linears
 * dequantized to Q8_0, BF16 / F32 as stored, tid2eid as I32, hc_head as
 * output_hc_*, the MTP layers dropped. The config is the config.json
 * document the metadata implies (docs/MODEL-DEEPSEEK.md §11.6). */
#include "engine/arch/deepseek_v4/dsv4.h"
#include "engine/gguf_model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P "model.layers.%L."
static const fd_gguf_name MAP[] = {
    {"model.embed_tokens.weight", "token_embd.weight", FD_GG_ROWS, NULL},
    {"model.norm.weight", "output_norm.weight", FD_GG_ROWS, NULL},
    {"head.weight", "output.weight", FD_GG_ROWS, NULL}, /* the spec lists the stored spelling; read as lm_head */
    {"model.hc_head.hc_fn", "output_hc_fn.weight", FD_GG_ROWS, NULL},
    {"model.hc_head.hc_base", "output_hc_base.weight", FD_GG_ROWS, NULL},
    {"model.hc_head.hc_scale", "output_hc_scale.weight", FD_GG_ROWS, NULL},
    {P "hc_attn_fn", "blk.%L.hc_attn_fn.weight", FD_GG_ROWS, NULL},
    {P "hc_attn_base", "blk.%L.hc_attn_base.weight", FD_GG_ROWS, NULL},
    {P "hc_attn_scale", "blk.%L.hc_attn_scale.weight", FD_GG_ROWS, NULL},
    {P "hc_ffn_fn", "blk.%L.hc_ffn_fn.weight", FD_GG_ROWS, NULL},
    {P "hc_ffn_base", "blk.%L.hc_ffn_base.weight", FD_GG_ROWS, NULL},
    {P "hc_ffn_scale", "blk.%L.hc_ffn_scale.weight", FD_GG_ROWS, NULL},
    {P "attn_norm.weight", "blk.%L.attn_norm.weight", FD_GG_ROWS, NULL},
    {P "ffn_norm.weight", "blk.%L.ffn_norm.weight", FD_GG_ROWS, NULL},
    {P "attn.wq_a.weight", "blk.%L.attn_q_a.weight", FD_GG_ROWS, NULL},
    {P "attn.q_norm.weight", "blk.%L.attn_q_a_norm.weight", FD_GG_ROWS, NULL},
    {P "attn.wq_b.weight", "blk.%L.attn_q_b.weight", FD_GG_ROWS, NULL},
    {P "attn.wkv.weight", "blk.%L.attn_kv.weight", FD_GG_ROWS, NULL},
    {P "attn.norm.weight", "blk.%L.attn_kv_a_norm.weight", FD_GG_ROWS, NULL},
    {P "attn.wo_a.weight", "blk.%L.attn_output_a.weight", FD_GG_ROWS, NULL},
    {P "attn.wo_b.weight", "blk.%L.attn_output_b.weight", FD_GG_ROWS, NULL},
    {P "attn.attn_sink", "blk.%L.attn_sinks.weight", FD_GG_ROWS, NULL},
    {P "attn.compressor.wkv.weight", "blk.%L.attn_compressor_kv.weight", FD_GG_ROWS, NULL},
    {P "attn.compressor.wgate.weight", "blk.%L.attn_compressor_gate.weight", FD_GG_ROWS, NULL},
    {P "attn.compressor.ape", "blk.%L.attn_compressor_ape.weight", FD_GG_ROWS, NULL},
    {P "attn.compressor.norm.weight", "blk.%L.attn_compressor_norm.weight", FD_GG_ROWS, NULL},
    {P "attn.indexer.compressor.wkv.weight", "blk.%L.indexer_compressor_kv.weight", FD_GG_ROWS, NULL},
    {P "attn.indexer.compressor.wgate.weight", "blk.%L.indexer_compressor_gate.weight", FD_GG_ROWS, NULL},
    {P "attn.indexer.compressor.ape", "blk.%L.indexer_compressor_ape.weight", FD_GG_ROWS, NULL},
    {P "attn.indexer.compressor.norm.weight", "blk.%L.indexer_compressor_norm.weight", FD_GG_ROWS, NULL},
    {P "attn.indexer.wq_b.weight", "blk.%L.indexer.attn_q_b.weight", FD_GG_ROWS, NULL},
    {P "attn.indexer.weights_proj.weight", "blk.%L.indexer.proj.weight", FD_GG_ROWS, NULL},
    {P "ffn.gate.weight", "blk.%L.ffn_gate_inp.weight", FD_GG_ROWS, NULL},
    {P "ffn.gate.bias", "blk.%L.exp_probs_b.bias", FD_GG_ROWS, NULL},
    {P "ffn.gate.tid2eid", "blk.%L.ffn_gate_tid2eid.weight", FD_GG_ROWS, NULL},
    {P "ffn.experts.%E.w1.weight", "blk.%L.ffn_gate_exps.weight", FD_GG_ROWS, NULL},
    {P "ffn.experts.%E.w2.weight", "blk.%L.ffn_down_exps.weight", FD_GG_ROWS, NULL},
    {P "ffn.experts.%E.w3.weight", "blk.%L.ffn_up_exps.weight", FD_GG_ROWS, NULL},
    {P "ffn.shared_experts.w1.weight", "blk.%L.ffn_gate_shexp.weight", FD_GG_ROWS, NULL},
    {P "ffn.shared_experts.w2.weight", "blk.%L.ffn_down_shexp.weight", FD_GG_ROWS, NULL},
    {P "ffn.shared_experts.w3.weight", "blk.%L.ffn_up_shexp.weight", FD_GG_ROWS, NULL},
    {NULL, NULL, 0, NULL},
};
#undef P

static jv *bad(jv *d, const fd_gguf_set *s, const char *arch, const char *key, const char *why, fd_err *e)
{
    fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s.%s %s", s->f[0].path, arch, key, why);
    return fd_gguf_cfg_fail(d);
}

/* "<arch>.key": an integer (want_float 0) or float array of exactly n elements, else NULL (*e naming it) */
static const fd_gguf_kv *array(const fd_gguf_set *s, const char *arch, const char *key, int64_t n, int want_float,
                               fd_err *e)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    int sz = kv && kv->type == FD_GGUF_ARRAY ? fd_gguf_vtype_size(kv->atype) : 0;
    int isf = kv && (kv->atype == FD_GGUF_F32 || kv->atype == FD_GGUF_F64);
    if (!kv) { fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is missing", s->f[0].path, k); return NULL; }
    if (sz <= 0 || kv->alen != (uint64_t)n || kv->abytes < kv->alen * (uint64_t)sz || isf != want_float ||
        kv->atype == FD_GGUF_STRING || kv->atype == FD_GGUF_BOOL) {
        fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is not an array of block_count (%lld) %s", s->f[0].path, k,
                (long long)n, want_float ? "floats" : "integers");
        return NULL;
    }
    return kv;
}

/* compress_ratios (the per-layer compression rate: 0 sliding, 4 CSA, any other HCA, as llama.cpp's deepseek4
 * reads it) -> layer_types, compress_rates; hash_layer_count -> mlp_layer_types */
static jv *layers(jv *d, const fd_gguf_set *s, const char *arch, int64_t L, fd_err *e)
{
    const fd_gguf_kv *cr = array(s, arch, "attention.compress_ratios", L, 0, e);
    if (!cr) return fd_gguf_cfg_fail(d);
    int64_t hca = 0, nh;
    jv *lt = jv_arr(), *mt = jv_arr();
    jv_set(d, "layer_types", lt);
    jv_set(d, "mlp_layer_types", mt);
    for (int64_t i = 0; i < L; i++) {
        double r = fd_gguf_cfg_elem(cr, (uint64_t)i);
        if (r < 0 || r > 65536 || r != (double)(int64_t)r || r == 1 || (hca && r != 0 && r != 4 && (int64_t)r != hca))
            return bad(d, s, arch, "attention.compress_ratios", "is not 0 (sliding), 4 (CSA) or one HCA rate > 1 per layer", e);
        if (r != 0 && r != 4) hca = (int64_t)r;
        jv_push(lt, jv_str(r == 0 ? "sliding_attention" : r == 4 ? "compressed_sparse_attention" : "heavily_compressed_attention"));
    }
    jv *rates = jv_obj();
    jv_set(rates, "compressed_sparse_attention", jv_int(4));
    jv_set(rates, "heavily_compressed_attention", jv_int(hca ? hca : 128));
    jv_set(d, "compress_rates", rates);
    if (fd_gguf_cfg_int(s, arch, "hash_layer_count", &nh, e)) return fd_gguf_cfg_fail(d);
    if (nh < 0 || nh > L) return fd_gguf_cfg_contradicts(d, s, arch, "hash_layer_count", nh, L, "block_count allows at most", e);
    for (int64_t i = 0; i < L; i++) jv_push(mt, jv_str(i < nh ? "hash_moe" : "moe"));
    return d;
}

/* the compress RoPE: rope.scaling.* (yarn or none) is the compress table's (the main one is default) */
static jv *rope(jv *d, const fd_gguf_set *s, const char *arch, double theta, double ctheta, fd_err *e)
{
    char k[160];
    snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
    char *st = fd_gguf_get_str(&s->f[0], k);
    int yarn = st && !strcmp(st, "yarn"), none = !fd_gguf_get(&s->f[0], k) || (st && !strcmp(st, "none"));
    free(st);
    if (!yarn && !none) return bad(d, s, arch, "rope.scaling.type", "is not yarn or none (deepseek_v4's compress RoPE)", e);
    jv *rp = jv_obj(), *mn = jv_obj(), *cp = jv_obj();
    jv_set(d, "rope_parameters", rp);
    jv_set(mn, "rope_type", jv_str("default"));
    jv_set(mn, "rope_theta", jv_float(theta));
    jv_set(rp, "main", mn);
    jv_set(cp, "rope_type", jv_str(yarn ? "yarn" : "default"));
    jv_set(cp, "rope_theta", jv_float(ctheta));
    jv_set(rp, "compress", cp);
    if (!yarn) return d;
    double f, bf = 32, bs = 1;
    int64_t om;
    int r;
    if (fd_gguf_cfg_num(s, arch, "rope.scaling.factor", &f, e) ||
        fd_gguf_cfg_int(s, arch, "rope.scaling.original_context_length", &om, e))
        return fd_gguf_cfg_fail(d);
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.scaling.yarn_beta_fast", &bf, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) bf = 32;
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.scaling.yarn_beta_slow", &bs, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) bs = 1;
    /* yarn_log_multiplier (mscale) is not read: transformers' deepseek_v4 forces attention_factor 1.0 */
    jv_set(cp, "factor", jv_float(fd_gguf_f32_decimal(f)));
    jv_set(cp, "original_max_position_embeddings", jv_int(om));
    jv_set(cp, "beta_fast", jv_float(fd_gguf_f32_decimal(bf)));
    jv_set(cp, "beta_slow", jv_float(fd_gguf_f32_decimal(bs)));
    jv_set(cp, "attention_factor", jv_float(1.0));
    return d;
}

static jv *config(const fd_gguf_set *s, const char *arch, fd_err *e)
{
    jv *d = jv_obj();
    static const struct { const char *key, *field; } INTS[] = {
        {"embedding_length", "hidden_size"}, {"block_count", "num_hidden_layers"},
        {"attention.head_count", "num_attention_heads"}, {"attention.key_length", "head_dim"},
        {"attention.q_lora_rank", "q_lora_rank"}, {"rope.dimension_count", "qk_rope_head_dim"},
        {"attention.sliding_window", "sliding_window"}, {"attention.output_group_count", "o_groups"},
        {"attention.output_lora_rank", "o_lora_rank"}, {"attention.indexer.head_count", "index_n_heads"},
        {"attention.indexer.key_length", "index_head_dim"}, {"attention.indexer.top_k", "index_topk"},
        {"hyper_connection.count", "hc_mult"}, {"hyper_connection.sinkhorn_iterations", "hc_sinkhorn_iters"},
        {"expert_count", "n_routed_experts"}, {"expert_used_count", "num_experts_per_tok"},
        {"expert_feed_forward_length", "moe_intermediate_size"}, {"expert_shared_count", "n_shared_experts"},
        {"context_length", "max_position_embeddings"},
    };
    int64_t v, L, hd;
    int r;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    jv_get_i64(d, "num_hidden_layers", &L);
    jv_get_i64(d, "head_dim", &hd);
    if (L < 1 || L > 65536) return bad(d, s, arch, "block_count", "is not in [1, 65536]", e);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "nextn_predict_layers", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v) return bad(d, s, arch, "nextn_predict_layers", "is not 0 (an MTP export: the trunk is not its blocks)", e);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.head_count_kv", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    jv_set(d, "num_key_value_heads", jv_int(r ? 1 : v));
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.value_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != hd) return fd_gguf_cfg_contradicts(d, s, arch, "attention.value_length", v, hd, "attention.key_length (K = V)", e);
    if (fd_gguf_cfg_int(s, arch, "expert_gating_func", &v, e)) return fd_gguf_cfg_fail(d);
    if (v != 4 && v != 2) return bad(d, s, arch, "expert_gating_func", "is not 4 (sqrtsoftplus) or 2 (sigmoid)", e);
    jv_set(d, "scoring_func", jv_str(v == 4 ? "sqrtsoftplus" : "sigmoid"));
    static const struct { const char *key, *field; } NUMS[] = {
        {"attention.layer_norm_rms_epsilon", "rms_norm_eps"}, {"hyper_connection.epsilon", "hc_eps"},
        {"expert_weights_scale", "routed_scaling_factor"}};
    double f, theta = 10000.0, ctheta;
    for (size_t i = 0; i < sizeof NUMS / sizeof *NUMS; i++) {
        if (fd_gguf_cfg_num(s, arch, NUMS[i].key, &f, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, NUMS[i].field, jv_float(fd_gguf_f32_decimal(f)));
    }
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.freq_base", &f, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r) theta = fd_gguf_f32_decimal(f);
    if (fd_gguf_cfg_num(s, arch, "attention.compress_rope_freq_base", &f, e)) return fd_gguf_cfg_fail(d);
    ctheta = fd_gguf_f32_decimal(f);
    jv_set(d, "rope_theta", jv_float(theta));
    jv_set(d, "compress_rope_theta", jv_float(ctheta));
    /* one swiglu limit for every layer, routed and shared (transformers' swiglu_limit) */
    const fd_gguf_kv *ce = array(s, arch, "swiglu_clamp_exp", L, 1, e), *cs = ce ? array(s, arch, "swiglu_clamp_shexp", L, 1, e) : NULL;
    if (!cs) return fd_gguf_cfg_fail(d);
    for (int64_t i = 0; i < L; i++)
        if (fd_gguf_cfg_elem(ce, (uint64_t)i) != fd_gguf_cfg_elem(ce, 0) || fd_gguf_cfg_elem(cs, (uint64_t)i) != fd_gguf_cfg_elem(ce, 0))
            return bad(d, s, arch, "swiglu_clamp_exp", "differs across layers or from swiglu_clamp_shexp (one swiglu_limit)", e);
    jv_set(d, "swiglu_limit", jv_float(fd_gguf_f32_decimal(fd_gguf_cfg_elem(ce, 0))));
    char k[160];
    snprintf(k, sizeof k, "%s.expert_weights_norm", arch);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    if (kv && kv->type != FD_GGUF_BOOL) return bad(d, s, arch, "expert_weights_norm", "is not a bool", e);
    jv_set(d, "norm_topk_prob", jv_bool(kv && kv->v.u));
    int64_t vocab = fd_gguf_rows(s, "token_embd.weight");
    if (!vocab) return bad(d, s, arch, "vocab_size", "cannot be read: token_embd.weight is missing or not 2-D", e);
    jv_set(d, "vocab_size", jv_int(vocab));
    jv_set(d, "tie_word_embeddings", jv_bool(fd_gguf_set_find(s, "output.weight") == NULL));
    jv_set(d, "mlp_bias", jv_bool(fd_gguf_set_find(s, "blk.0.ffn_gate_shexp.bias") != NULL));
    jv_set(d, "hidden_act", jv_str("silu"));
    if (!layers(d, s, arch, L, e)) return NULL;
    return rope(d, s, arch, theta, ctheta, e);
}

static const char *const NAMES[] = {"deepseek4", NULL};

const fd_gguf_arch FD_GGUF_DEEPSEEK4 = {NAMES, MAP, config, NULL, NULL, NULL};
