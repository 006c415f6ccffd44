/* The config.json of the deepseek_v3 fixture presets (fixture.h): the keys
 * transformers 5.25's DeepseekV3Config.save_pretrained writes, sorted.  The
 * tiny preset exercises what the real models use: q LoRA, yarn with mscale
 * and mscale_all_dim (DeepSeek V3 / Kimi K2's rope_scaling), interleaved
 * RoPE, group-limited routing (n_group 4, topk_group 2), a dense first layer;
 * the deepseek_v32 ones add the DSA indexer (index_* from the preset); the
 * kimi_k25 one nests a Kimi K2-style text model (n_group 1, yarn factor 32,
 * beta_fast 1) as text_config next to a 1-layer vision tower (the one
 * engine/arch/kimi_k25/'s extra tensors describe). */
#include "capture/fixture_deepseek.h"
#include <string.h>

/* the routing groups of the presets: 4 groups, 2 kept (the presets have 16 experts) */
enum { N_GROUP = 4, TOPK_GROUP = 2 };

static jv *layer_list(const char *types, char one, const char *yes, const char *no)
{
    jv *a = jv_arr();
    for (const char *c = types; *c; c++) jv_push(a, jv_str(*c == one ? yes : no));
    return a;
}

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad, int v32, int kimi)
{
    const int n_group = kimi ? 1 : N_GROUP, topk_group = kimi ? 1 : TOPK_GROUP, factor = kimi ? 32 : 4;
    int64_t first_dense = 0;
    while (p->mlp_types[first_dense] == 'D') first_dense++;
    jv *o = jv_obj(), *arch = jv_arr(), *rp = jv_obj();
    jv_push(arch, jv_str(v32 ? "DeepseekV32ForCausalLM" : "DeepseekV3ForCausalLM"));
    jv_set(o, "architectures", arch);
    jv_set(o, "attention_bias", jv_bool(0));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "first_k_dense_replace", jv_int(first_dense));
    jv_set(o, "head_dim", jv_int(p->dr));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(p->hidden));
    if (v32) {
        jv_set(o, "index_head_dim", jv_int(p->idx_dim));
        jv_set(o, "index_n_heads", jv_int(p->idx_heads));
        jv_set(o, "index_topk", jv_int(p->idx_topk));
    }
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "intermediate_size", jv_int(p->inter));
    jv_set(o, "kv_lora_rank", jv_int(p->kv_lora));
    if (v32) jv_set(o, "layer_types", layer_list(p->mlp_types, 0, "", "indexed_attention"));
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    if (v32) {
        jv_set(o, "mlp_bias", jv_bool(0));
        jv_set(o, "mlp_layer_types", layer_list(p->mlp_types, 'S', "sparse", "dense"));
    }
    jv_set(o, "model_type", jv_str(v32 ? "deepseek_v32" : "deepseek_v3"));
    jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "n_group", jv_int(n_group));
    jv_set(o, "n_routed_experts", jv_int(p->experts));
    jv_set(o, "n_shared_experts", jv_int(p->shared));
    jv_set(o, "norm_topk_prob", jv_bool(1));
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    jv_set(o, "num_experts_per_tok", jv_int(p->top_k));
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(p->heads));
    if (!v32) jv_set(o, "num_nextn_predict_layers", jv_int(1));
    jv_set(o, "output_router_logits", jv_bool(0));
    jv_set(o, "pad_token_id", jv_int(pad));
    jv_set(o, "pretraining_tp", jv_int(1));
    jv_set(o, "q_lora_rank", jv_int(p->q_lora));
    jv_set(o, "qk_head_dim", jv_int(p->dn + p->dr));
    jv_set(o, "qk_nope_head_dim", jv_int(p->dn));
    jv_set(o, "qk_rope_head_dim", jv_int(p->dr));
    jv_set(o, "rms_norm_eps", jv_float(1e-6));
    if (!v32) jv_set(o, "rope_interleave", jv_bool(1));
    jv_set(rp, "beta_fast", jv_int(kimi ? 1 : 32));
    jv_set(rp, "beta_slow", jv_int(1));
    jv_set(rp, "factor", jv_float(factor));
    jv_set(rp, "mscale", jv_float(1.0));
    jv_set(rp, "mscale_all_dim", jv_float(1.0));
    jv_set(rp, "original_max_position_embeddings", jv_int(p->max_pos / factor));
    jv_set(rp, "rope_theta", jv_float(p->rope_theta));
    jv_set(rp, "rope_type", jv_str("yarn"));
    jv_set(o, "rope_parameters", rp);
    jv_set(o, "routed_scaling_factor", jv_float(p->routed_scaling));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "topk_group", jv_int(topk_group));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "v_head_dim", jv_int(p->dv));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

jv *fd_fixture_ds3_config(const fd_fixture_preset *p, int bos, int eos, int pad) { return config(p, bos, eos, pad, 0, 0); }
jv *fd_fixture_ds32_config(const fd_fixture_preset *p, int bos, int eos, int pad) { return config(p, bos, eos, pad, 1, 0); }

/* KimiLinearConfig.save_pretrained (attribute_map spellings: num_experts,
 * num_experts_per_token, num_expert_group, moe_renormalize,
 * num_shared_experts, model_max_length; no RoPE), KDA on layers 0 and 2,
 * MLA on 1 and 3 (the preset's indexer_types: L linear, F full) */
jv *fd_fixture_kl_config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    jv *o = jv_obj(), *arch = jv_arr();
    jv_push(arch, jv_str("KimiLinearForCausalLM"));
    jv_set(o, "architectures", arch);
    jv_set(o, "attention_bias", jv_bool(0));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "head_dim", jv_int(p->dr));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(p->hidden));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "intermediate_size", jv_int(p->inter));
    jv_set(o, "kv_lora_rank", jv_int(p->kv_lora));
    jv_set(o, "layer_types", layer_list(p->indexer_types, 'F', "full_attention", "linear_attention"));
    jv_set(o, "linear_conv_kernel_dim", jv_int(4));
    jv_set(o, "linear_head_dim", jv_int(p->idx_dim));
    jv_set(o, "linear_num_heads", jv_int(p->idx_heads));
    jv_set(o, "mlp_layer_types", layer_list(p->mlp_types, 'S', "sparse", "dense"));
    jv_set(o, "model_max_length", jv_int(p->max_pos));
    jv_set(o, "model_type", jv_str("kimi_linear"));
    jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "moe_renormalize", jv_bool(1));
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    jv_set(o, "num_expert_group", jv_int(1));
    jv_set(o, "num_experts", jv_int(p->experts));
    jv_set(o, "num_experts_per_token", jv_int(p->top_k));
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(p->heads));
    jv_set(o, "num_shared_experts", jv_int(p->shared));
    jv_set(o, "output_router_logits", jv_bool(0));
    jv_set(o, "pad_token_id", jv_int(pad));
    jv_set(o, "pretraining_tp", jv_int(1));
    if (p->q_lora) jv_set(o, "q_lora_rank", jv_int(p->q_lora));
    else jv_set(o, "q_lora_rank", jv_null());
    jv_set(o, "qk_head_dim", jv_int(p->dn + p->dr));
    jv_set(o, "qk_nope_head_dim", jv_int(p->dn));
    jv_set(o, "qk_rope_head_dim", jv_int(p->dr));
    jv_set(o, "rms_norm_eps", jv_float(1e-5));
    jv_set(o, "routed_scaling_factor", jv_float(p->routed_scaling));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "topk_group", jv_int(1));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "v_head_dim", jv_int(p->dv));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

/* Kimi_K25Config.save_pretrained: the text model under text_config (no
 * architectures / transformers_version there), the vision tower's config,
 * the top-level tie_word_embeddings false (an untied head) */
jv *fd_fixture_k25_config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    jv *tc = config(p, bos, eos, pad, 0, 1);
    jv_del(tc, "architectures");
    jv_del(tc, "transformers_version");
    jv *o = jv_obj(), *arch = jv_arr(), *vc = jv_obj(), *mk = jv_arr(), *vr = jv_obj();
    jv_push(arch, jv_str("Kimi_K25ForConditionalGeneration"));
    jv_set(o, "architectures", arch);
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "image_token_id", jv_int(163605));
    jv_set(o, "model_type", jv_str("kimi_k25"));
    jv_set(o, "projection_hidden_size", jv_int(32));
    jv_set(o, "projection_layer_norm_eps", jv_float(1e-5));
    jv_set(o, "text_config", tc);
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "video_token_id", jv_int(163840));
    jv_set(vc, "dtype", jv_str("bfloat16"));
    jv_set(vc, "hidden_act", jv_str("gelu_pytorch_tanh"));
    jv_set(vc, "hidden_size", jv_int(32));
    jv_set(vc, "intermediate_size", jv_int(64));
    jv_push(mk, jv_int(2));
    jv_push(mk, jv_int(2));
    jv_set(vc, "merge_kernel_size", mk);
    jv_set(vc, "model_type", jv_str("kimi_k25_vision"));
    jv_set(vc, "num_attention_heads", jv_int(2));
    jv_set(vc, "num_hidden_layers", jv_int(1));
    jv_set(vc, "patch_size", jv_int(14));
    jv_set(vc, "pos_emb_height", jv_int(4));
    jv_set(vc, "pos_emb_time", jv_int(2));
    jv_set(vc, "pos_emb_width", jv_int(4));
    jv_set(vr, "rope_theta", jv_float(10000.0));
    jv_set(vr, "rope_type", jv_str("axial"));
    jv_set(vc, "rope_parameters", vr);
    jv_set(o, "vision_config", vc);
    jv_set(o, "vision_end_token_id", jv_int(163604));
    jv_set(o, "vision_start_token_id", jv_int(163602));
    return o;
}
