/* glm_moe_dsa as llama.cpp names it: general.architecture "glm-dsa"
 * (LLM_ARCH_GLM_DSA, src/llama-arch.cpp; the converter's GlmMoeDsaModel, a
 * DeepseekV2Model: kv_b_proj split into attn_k_b (transposed) and attn_v_b,
 * the routed experts stacked, no Q/K permutation).  The table (the
 * DeepseekV2Model family's, engine/gguf_ds2map.c) maps the architecture's own
 * tensor list (dsa_tensors.c, per-expert spelling); the
 * config is the config.json document the metadata implies
 * (engine/gguf_model.h). */
#include "engine/gguf_model.h"
#include "util/buf.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* metadata key -> config.json field (required integers) */
static const struct { const char *key, *field; } INTS[] = {
    {"vocab_size", "vocab_size"},
    {"embedding_length", "hidden_size"},
    {"feed_forward_length", "intermediate_size"},
    {"expert_feed_forward_length", "moe_intermediate_size"},
    {"attention.head_count", "num_attention_heads"},
    {"attention.q_lora_rank", "q_lora_rank"},
    {"attention.kv_lora_rank", "kv_lora_rank"},
    {"rope.dimension_count", "qk_rope_head_dim"},
    {"attention.value_length_mla", "v_head_dim"},
    {"attention.indexer.head_count", "index_n_heads"},
    {"attention.indexer.key_length", "index_head_dim"},
    {"attention.indexer.top_k", "index_topk"},
    {"expert_count", "n_routed_experts"},
    {"expert_shared_count", "n_shared_experts"},
    {"expert_used_count", "num_experts_per_tok"},
    {"leading_dense_block_count", "first_k_dense_replace"},
    {"context_length", "max_position_embeddings"},
};

static jv *config(const fd_gguf_set *s, const char *arch, fd_err *e)
{
    jv *d = jv_obj();
    int64_t v, blocks, nextn = 0, kml, dr, rkv, nh;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    jv_get_i64(d, "qk_rope_head_dim", &dr);
    jv_get_i64(d, "kv_lora_rank", &rkv);
    jv_get_i64(d, "num_attention_heads", &nh);
    if (fd_gguf_cfg_int(s, arch, "block_count", &blocks, e)) return fd_gguf_cfg_fail(d);
    int r = fd_gguf_cfg_int_opt(s, arch, "nextn_predict_layers", &nextn, e);
    if (r < 0) return fd_gguf_cfg_fail(d);
    if (nextn >= blocks)
        return fd_gguf_cfg_contradicts(d, s, arch, "nextn_predict_layers", nextn, blocks - 1, "block_count leaves at most", e);
    jv_set(d, "num_hidden_layers", jv_int(blocks - nextn)); /* the NextN blocks follow the trunk */
    if (fd_gguf_cfg_int(s, arch, "attention.key_length_mla", &kml, e)) return fd_gguf_cfg_fail(d);
    if (kml <= dr) return fd_gguf_cfg_contradicts(d, s, arch, "attention.key_length_mla", kml, dr + 1, "rope.dimension_count + 1", e);
    jv_set(d, "qk_nope_head_dim", jv_int(kml - dr));
    /* MLA as llama.cpp writes it: one KV head of kv_lora_rank + rope dims */
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.head_count_kv", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != 1 && v != nh) return fd_gguf_cfg_contradicts(d, s, arch, "attention.head_count_kv", v, 1, "MLA (one latent KV head)", e);
    jv_set(d, "num_key_value_heads", jv_int(nh));
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.key_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != rkv + dr) return fd_gguf_cfg_contradicts(d, s, arch, "attention.key_length", v, rkv + dr, "kv_lora_rank + rope dims", e);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.value_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != rkv) return fd_gguf_cfg_contradicts(d, s, arch, "attention.value_length", v, rkv, "kv_lora_rank", e);
    static const struct { const char *key, *field; } GROUPS[] = {{"expert_group_count", "n_group"},
                                                                  {"expert_group_used_count", "topk_group"}};
    for (int i = 0; i < 2; i++) {
        if ((r = fd_gguf_cfg_int_opt(s, arch, GROUPS[i].key, &v, e)) < 0) return fd_gguf_cfg_fail(d);
        jv_set(d, GROUPS[i].field, jv_int(r ? 1 : v));
    }
    /* sigmoid routing (LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID = 2) is the only one glm_moe_dsa has */
    if ((r = fd_gguf_cfg_int_opt(s, arch, "expert_gating_func", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != 2) return fd_gguf_cfg_contradicts(d, s, arch, "expert_gating_func", v, 2, "glm_moe_dsa's sigmoid router", e);
    double f;
    if (fd_gguf_cfg_num(s, arch, "attention.layer_norm_rms_epsilon", &f, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "rms_norm_eps", jv_float(f));
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.freq_base", &f, e)) < 0) return fd_gguf_cfg_fail(d);
    jv_set(d, "rope_theta", jv_float(r ? 10000.0 : f));
    /* llama.cpp: no expert_weights_scale = no scaling */
    if ((r = fd_gguf_cfg_num_opt(s, arch, "expert_weights_scale", &f, e)) < 0) return fd_gguf_cfg_fail(d);
    jv_set(d, "routed_scaling_factor", jv_float(r ? 1.0 : f));
    char k[160];
    snprintf(k, sizeof k, "%s.expert_weights_norm", arch);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    if (kv && kv->type != FD_GGUF_BOOL)
        return fd_gguf_cfg_fail((fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is not a bool", s->f[0].path, k), d));
    jv_set(d, "norm_topk_prob", jv_bool(kv && kv->v.u));
    if (fd_gguf_cfg_rope_none(s, arch, "the engine has default RoPE only", e)) return fd_gguf_cfg_fail(d);
    /* the indexer on every layer unless indexer.types says which are full */
    snprintf(k, sizeof k, "%s.attention.indexer.types", arch);
    int64_t L = blocks - nextn;
    if ((kv = fd_gguf_get(&s->f[0], k))) {
        int sz = kv->type == FD_GGUF_ARRAY ? fd_gguf_vtype_size(kv->atype) : 0;
        if (kv->type != FD_GGUF_ARRAY || (kv->atype != FD_GGUF_BOOL && kv->atype != FD_GGUF_U8 && kv->atype != FD_GGUF_I8 &&
                                          kv->atype != FD_GGUF_I32 && kv->atype != FD_GGUF_U32) ||
            (kv->alen != (uint64_t)L && kv->alen != (uint64_t)blocks))
            return fd_gguf_cfg_fail((fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is not one bool per layer (%lld)",
                                 s->f[0].path, k, (long long)L), d));
        jv *it = jv_arr();
        for (int64_t i = 0; i < L; i++) {
            uint32_t u = 0;
            memcpy(&u, kv->adata + (size_t)i * (size_t)sz, (size_t)sz);
            jv_push(it, jv_str(u ? "full" : "shared"));
        }
        jv_set(d, "indexer_types", it);
    } else {
        jv *it = jv_arr();
        for (int64_t i = 0; i < L; i++) jv_push(it, jv_str("full"));
        jv_set(d, "indexer_types", it);
    }
    jv_set(d, "tie_word_embeddings", jv_bool(fd_gguf_set_find(s, "output.weight") == NULL));
    jv_set(d, "attention_bias", jv_bool(fd_gguf_set_find(s, "blk.0.attn_q_a.bias") != NULL));
    return d;
}

/* The inverse of config(): the keys convert_hf_to_gguf.py's GlmMoeDsaModel
 * writes (w->arch is "glm-dsa"; no expert_gating_func: llama.cpp's glm-dsa
 * routes by sigmoid without it, and config() reads its absence so). */
static int write_kv(const fd_glm_config *c, fd_gguf_kvw *w, fd_err *e)
{
    (void)e;
    static const struct { const char *key; size_t off; } I[] = {
        {"block_count", offsetof(fd_glm_config, num_hidden_layers)},
        {"context_length", offsetof(fd_glm_config, max_position_embeddings)},
        {"embedding_length", offsetof(fd_glm_config, hidden_size)},
        {"feed_forward_length", offsetof(fd_glm_config, intermediate_size)},
        {"attention.head_count", offsetof(fd_glm_config, num_attention_heads)},
        {"leading_dense_block_count", offsetof(fd_glm_config, first_k_dense_replace)},
        {"vocab_size", offsetof(fd_glm_config, vocab_size)},
        {"attention.q_lora_rank", offsetof(fd_glm_config, q_lora_rank)},
        {"attention.kv_lora_rank", offsetof(fd_glm_config, kv_lora_rank)},
        {"attention.value_length_mla", offsetof(fd_glm_config, v_head_dim)},
        {"expert_feed_forward_length", offsetof(fd_glm_config, moe_intermediate_size)},
        {"expert_count", offsetof(fd_glm_config, n_routed_experts)},
        {"expert_shared_count", offsetof(fd_glm_config, n_shared_experts)},
        {"rope.dimension_count", offsetof(fd_glm_config, qk_rope_head_dim)},
        {"expert_used_count", offsetof(fd_glm_config, num_experts_per_tok)},
        {"expert_group_count", offsetof(fd_glm_config, n_group)},
        {"expert_group_used_count", offsetof(fd_glm_config, topk_group)},
        {"attention.indexer.head_count", offsetof(fd_glm_config, index_n_heads)},
        {"attention.indexer.key_length", offsetof(fd_glm_config, index_head_dim)},
        {"attention.indexer.top_k", offsetof(fd_glm_config, index_topk)},
    };
    for (size_t i = 0; i < sizeof I / sizeof *I; i++) {
        int64_t v;
        memcpy(&v, (const char *)c + I[i].off, sizeof v);
        fd_gguf_kv_u32(w, I[i].key, v);
    }
    fd_gguf_kv_u32(w, "attention.head_count_kv", 1); /* MLA: one latent KV head */
    fd_gguf_kv_u32(w, "attention.key_length", c->kv_lora_rank + c->qk_rope_head_dim);
    fd_gguf_kv_u32(w, "attention.value_length", c->kv_lora_rank);
    fd_gguf_kv_u32(w, "attention.key_length_mla", c->qk_nope_head_dim + c->qk_rope_head_dim);
    fd_gguf_kv_f32(w, "rope.freq_base", c->rope_theta);
    fd_gguf_kv_f32(w, "attention.layer_norm_rms_epsilon", c->rms_norm_eps);
    fd_gguf_kv_f32(w, "expert_weights_scale", c->routed_scaling_factor);
    fd_gguf_kv_bool(w, "expert_weights_norm", c->norm_topk_prob);
    fd_gguf_kv_bools(w, "attention.indexer.types", c->indexer_full, (uint64_t)c->num_hidden_layers);
    return 0;
}

static const char *const NAMES[] = {"glm-dsa", NULL};

const fd_gguf_arch FD_GGUF_GLM_DSA = {NAMES, FD_GGUF_DS2_MAP, config, NULL, write_kv, NULL};
