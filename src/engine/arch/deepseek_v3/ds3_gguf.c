/* deepseek_v3 (and deepseek_v32, at the end) as llama.cpp names it: general.architecture "deepseek2"
 * (convert_hf_to_gguf.py DeepseekV2Model, registered for
 * DeepseekV3ForCausalLM): kv_b_proj split into attn_k_b (transposed) and
 * attn_v_b, the routed experts stacked, the MTP layers dropped, no Q/K
 * permutation (llama.cpp's deepseek2 RoPE is the interleaved one:
 * rope_interleave true).  The table maps the architecture's own tensor list
 * (ds3_tensors.c); the config is the config.json document the metadata
 * implies, with llama.cpp's meaning where the metadata is silent (no
 * expert_weights_norm = no renormalisation, no expert_weights_scale = 1, no
 * group keys = one group). */
#include "engine/arch/deepseek_v3/ds3.h"
#include "engine/gguf_model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jv *bad(jv *d, const fd_gguf_set *s, const char *arch, const char *key, const char *why, fd_err *e)
{
    fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s.%s %s", s->f[0].path, arch, key, why);
    return fd_gguf_cfg_fail(d);
}

/* yarn: DeepseekV2Model writes rope.scaling.{type yarn, factor,
 * original_context_length, yarn_beta_fast, yarn_beta_slow} and
 * yarn_log_multiplier = 0.1 * mscale_all_dim; llama.cpp's deepseek2 applies
 * mscale_all_dim to both sides of transformers' attention_factor ratio, i.e.
 * mscale = mscale_all_dim */
static jv *rope(jv *d, const fd_gguf_set *s, const char *arch, double theta, fd_err *e)
{
    char k[160];
    snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    char *st = fd_gguf_get_str(&s->f[0], k);
    if (!kv || (st && !strcmp(st, "none"))) { free(st); return d; }
    if (!st || strcmp(st, "yarn")) {
        free(st);
        return bad(d, s, arch, "rope.scaling.type", "is not yarn or none (the engine's deepseek_v3 reads default and yarn RoPE)", e);
    }
    free(st);
    double f, bf = 32, bs = 1, lm;
    int64_t om;
    int r;
    if (fd_gguf_cfg_num(s, arch, "rope.scaling.factor", &f, e) ||
        fd_gguf_cfg_int(s, arch, "rope.scaling.original_context_length", &om, e))
        return fd_gguf_cfg_fail(d);
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.scaling.yarn_beta_fast", &bf, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) bf = 32;
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.scaling.yarn_beta_slow", &bs, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) bs = 1;
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.scaling.yarn_log_multiplier", &lm, e)) < 0) return fd_gguf_cfg_fail(d);
    for (const char *const *x = (const char *const[]){"rope.scaling.yarn_ext_factor", "rope.scaling.yarn_attn_factor", NULL}; *x;
         x++)
        if (fd_gguf_get(&s->f[0], (snprintf(k, sizeof k, "%s.%s", arch, *x), k)))
            return bad(d, s, arch, *x, "is written: transformers' yarn has no such parameter to set", e);
    jv *rp = jv_obj();
    jv_set(rp, "rope_type", jv_str("yarn"));
    jv_set(rp, "rope_theta", jv_float(theta));
    jv_set(rp, "factor", jv_float(fd_gguf_f32_decimal(f)));
    jv_set(rp, "original_max_position_embeddings", jv_int(om));
    jv_set(rp, "beta_fast", jv_float(fd_gguf_f32_decimal(bf)));
    jv_set(rp, "beta_slow", jv_float(fd_gguf_f32_decimal(bs)));
    if (!r) { /* the shortest m with float32(0.1 * m) == the stored multiplier */
        double m = fd_gguf_f32_decimal(lm / 0.1);
        if ((float)(0.1 * m) != (float)lm) m = lm / 0.1;
        jv_set(rp, "mscale", jv_float(m));
        jv_set(rp, "mscale_all_dim", jv_float(m));
    }
    jv_set(d, "rope_parameters", rp);
    return d;
}

static jv *config(const fd_gguf_set *s, const char *arch, int dsa, fd_err *e)
{
    jv *d = jv_obj();
    static const struct { const char *key, *field; } INTS[] = {
        {"embedding_length", "hidden_size"},
        {"feed_forward_length", "intermediate_size"},
        {"expert_feed_forward_length", "moe_intermediate_size"},
        {"attention.head_count", "num_attention_heads"},
        {"attention.kv_lora_rank", "kv_lora_rank"},
        {"rope.dimension_count", "qk_rope_head_dim"},
        {"attention.value_length_mla", "v_head_dim"},
        {"expert_count", "n_routed_experts"},
        {"expert_shared_count", "n_shared_experts"},
        {"expert_used_count", "num_experts_per_tok"},
        {"leading_dense_block_count", "first_k_dense_replace"},
        {"context_length", "max_position_embeddings"},
        {"block_count", "num_hidden_layers"},
    };
    int64_t v, kml, dr, rkv, nh, vocab;
    int r;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    jv_get_i64(d, "qk_rope_head_dim", &dr);
    jv_get_i64(d, "kv_lora_rank", &rkv);
    jv_get_i64(d, "num_attention_heads", &nh);
    /* deepseek2: the NextN (MTP) layers are dropped by the converter
     * (skip_mtp); deepseek32 keeps them as blocks past the trunk (ignored) */
    if ((r = fd_gguf_cfg_int_opt(s, arch, "nextn_predict_layers", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v && !dsa) return bad(d, s, arch, "nextn_predict_layers", "is not 0: the deepseek2 converter drops the MTP layers", e);
    if (!r && dsa) {
        int64_t blocks;
        jv_get_i64(d, "num_hidden_layers", &blocks);
        if (v >= blocks) return fd_gguf_cfg_contradicts(d, s, arch, "nextn_predict_layers", v, blocks - 1, "block_count leaves at most", e);
        jv_set(d, "num_hidden_layers", jv_int(blocks - v));
    }
    /* deepseek32: DeepseekV32Model's indexer keys (an indexer on every layer) */
    static const struct { const char *key, *field; } IDX[] = {{"attention.indexer.head_count", "index_n_heads"},
                                                               {"attention.indexer.key_length", "index_head_dim"},
                                                               {"attention.indexer.top_k", "index_topk"}};
    for (size_t i = 0; dsa && i < sizeof IDX / sizeof *IDX; i++) {
        if (fd_gguf_cfg_int(s, arch, IDX[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, IDX[i].field, jv_int(v));
    }
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.q_lora_rank", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    jv_set(d, "q_lora_rank", r ? jv_null() : jv_int(v));
    if (fd_gguf_cfg_int(s, arch, "attention.key_length_mla", &kml, e)) return fd_gguf_cfg_fail(d);
    if (kml <= dr) return fd_gguf_cfg_contradicts(d, s, arch, "attention.key_length_mla", kml, dr + 1, "rope.dimension_count + 1", e);
    jv_set(d, "qk_nope_head_dim", jv_int(kml - dr));
    /* MLA as llama.cpp writes it: one KV head of kv_lora_rank + rope dims */
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.head_count_kv", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != 1) return fd_gguf_cfg_contradicts(d, s, arch, "attention.head_count_kv", v, 1, "MLA (one latent KV head)", e);
    jv_set(d, "num_key_value_heads", jv_int(nh));
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.key_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != rkv + dr) return fd_gguf_cfg_contradicts(d, s, arch, "attention.key_length", v, rkv + dr, "kv_lora_rank + rope dims", e);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.value_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != rkv) return fd_gguf_cfg_contradicts(d, s, arch, "attention.value_length", v, rkv, "kv_lora_rank", e);
    vocab = fd_gguf_rows(s, "token_embd.weight");
    if ((r = fd_gguf_cfg_int_opt(s, arch, "vocab_size", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && vocab && v != vocab) return fd_gguf_cfg_contradicts(d, s, arch, "vocab_size", v, vocab, "token_embd.weight's rows", e);
    jv_set(d, "vocab_size", jv_int(vocab ? vocab : r ? 0 : v));
    static const struct { const char *key, *field; } GROUPS[] = {{"expert_group_count", "n_group"},
                                                                  {"expert_group_used_count", "topk_group"}};
    for (int i = 0; i < 2; i++) {
        if ((r = fd_gguf_cfg_int_opt(s, arch, GROUPS[i].key, &v, e)) < 0) return fd_gguf_cfg_fail(d);
        jv_set(d, GROUPS[i].field, jv_int(r ? 1 : v));
    }
    /* llama.cpp reads a deepseek2 GGUF without expert_gating_func as softmax
     * routing (DeepSeek V2); deepseek_v3 is sigmoid-routed (2) */
    if ((r = fd_gguf_cfg_int_opt(s, arch, "expert_gating_func", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) return bad(d, s, arch, "expert_gating_func", "is missing: llama.cpp then routes by softmax (DeepSeek V2), "
                      "deepseek_v3 routes by sigmoid (2)", e);
    if (v != 2) return fd_gguf_cfg_contradicts(d, s, arch, "expert_gating_func", v, 2, "deepseek_v3's sigmoid router", e);
    double f;
    if (fd_gguf_cfg_num(s, arch, "attention.layer_norm_rms_epsilon", &f, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "rms_norm_eps", jv_float(fd_gguf_f32_decimal(f)));
    double theta = 10000.0;
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.freq_base", &f, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r) theta = fd_gguf_f32_decimal(f);
    jv_set(d, "rope_theta", jv_float(theta));
    if ((r = fd_gguf_cfg_num_opt(s, arch, "expert_weights_scale", &f, e)) < 0) return fd_gguf_cfg_fail(d);
    jv_set(d, "routed_scaling_factor", jv_float(r ? 1.0 : fd_gguf_f32_decimal(f)));
    char k[160];
    snprintf(k, sizeof k, "%s.expert_weights_norm", arch);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    if (kv && kv->type != FD_GGUF_BOOL) return bad(d, s, arch, "expert_weights_norm", "is not a bool", e);
    jv_set(d, "norm_topk_prob", jv_bool(kv && kv->v.u));
    jv_set(d, "rope_interleave", jv_bool(1));
    jv_set(d, "tie_word_embeddings", jv_bool(fd_gguf_set_find(s, "output.weight") == NULL));
    jv_set(d, "attention_bias", jv_bool(fd_gguf_set_find(s, "blk.0.attn_q_a.bias") != NULL ||
                                        fd_gguf_set_find(s, "blk.0.attn_kv_a_mqa.bias") != NULL));
    return rope(d, s, arch, theta, e);
}

static jv *config2(const fd_gguf_set *s, const char *arch, fd_err *e) { return config(s, arch, 0, e); }
static jv *config32(const fd_gguf_set *s, const char *arch, fd_err *e) { return config(s, arch, 1, e); }

static int unwritable(fd_err *e, const char *why)
{
    return fd_fail(e, "gguf_write_unsupported", "", "deepseek2 GGUF: %s", why);
}

/* config()'s inverse for deepseek_v3: the keys DeepseekV2Model (and
 * TextModel.set_gguf_parameters before it) writes for a config with
 * scoring_func sigmoid; what the format cannot say is refused: rotate_half
 * RoPE, yarn with mscale != mscale_all_dim or an explicit attention_factor,
 * norm_topk_prob false (the converter then writes no expert_weights_norm,
 * which config() reads as false: that one it can say). */
static int write_kv(const fd_glm_config *c, fd_gguf_kvw *w, fd_err *e)
{
    const fd_ds3_ext *x = DS3(c);
    if (x->dsa || x->nope || x->kda) return unwritable(e, "only deepseek_v3 itself has a writer");
    if (!x->rope_interleave) return unwritable(e, "rope_interleave false (llama.cpp's deepseek2 RoPE is the interleaved one)");
    if (x->yarn && (x->attention_factor_given || (x->mscale_all_dim != 0 && x->mscale != x->mscale_all_dim)))
        return unwritable(e, "yarn with mscale != mscale_all_dim or an explicit attention_factor (llama.cpp's deepseek2 "
                             "reads one yarn_log_multiplier for both)");
    fd_gguf_kv_text_model(w, c, 1); /* MLA as MQA: one KV head */
    if (x->yarn) {
        fd_gguf_kv_str(w, "rope.scaling.type", "yarn");
        fd_gguf_kv_f32(w, "rope.scaling.factor", x->factor);
        fd_gguf_kv_u32(w, "rope.scaling.original_context_length", (int64_t)x->orig_max_pos);
        fd_gguf_kv_f32(w, "rope.scaling.yarn_beta_fast", x->beta_fast);
        fd_gguf_kv_f32(w, "rope.scaling.yarn_beta_slow", x->beta_slow);
    }
    fd_gguf_kv_u32(w, "expert_count", c->n_routed_experts);
    fd_gguf_kv_u32(w, "expert_used_count", c->num_experts_per_tok);
    fd_gguf_kv_u32(w, "expert_group_count", c->n_group);
    fd_gguf_kv_u32(w, "expert_group_used_count", c->topk_group);
    fd_gguf_kv_u32(w, "expert_gating_func", 2); /* sigmoid */
    fd_gguf_kv_u32(w, "attention.key_length", c->kv_lora_rank + c->qk_rope_head_dim);
    fd_gguf_kv_u32(w, "attention.value_length", c->kv_lora_rank);
    fd_gguf_kv_u32(w, "leading_dense_block_count", c->first_k_dense_replace);
    fd_gguf_kv_u32(w, "vocab_size", c->vocab_size);
    if (x->q_lora) fd_gguf_kv_u32(w, "attention.q_lora_rank", c->q_lora_rank);
    fd_gguf_kv_u32(w, "attention.kv_lora_rank", c->kv_lora_rank);
    fd_gguf_kv_u32(w, "attention.key_length_mla", c->qk_nope_head_dim + c->qk_rope_head_dim);
    fd_gguf_kv_u32(w, "attention.value_length_mla", c->v_head_dim);
    fd_gguf_kv_u32(w, "expert_feed_forward_length", c->moe_intermediate_size);
    fd_gguf_kv_u32(w, "expert_shared_count", c->n_shared_experts);
    fd_gguf_kv_f32(w, "expert_weights_scale", c->routed_scaling_factor);
    if (c->norm_topk_prob) fd_gguf_kv_bool(w, "expert_weights_norm", 1);
    fd_gguf_kv_u32(w, "rope.dimension_count", c->qk_rope_head_dim);
    if (x->yarn && x->mscale_all_dim != 0) fd_gguf_kv_f32(w, "rope.scaling.yarn_log_multiplier", 0.1 * x->mscale_all_dim);
    return 0;
}

static const char *const NAMES[] = {"deepseek2", NULL}, *const NAMES32[] = {"deepseek32", NULL};

const fd_gguf_arch FD_GGUF_DEEPSEEK2 = {NAMES, FD_GGUF_DS2_MAP, config2, NULL, write_kv, NULL};
/* deepseek_v32 as llama.cpp's DeepseekV32Model writes it: deepseek2 plus
 * the indexer (blk.N.indexer.*, the table's indexer rows) and the NextN
 * blocks kept past the trunk */
const fd_gguf_arch FD_GGUF_DEEPSEEK32 = {NAMES32, FD_GGUF_DS2_MAP, config32, NULL, NULL, NULL};
