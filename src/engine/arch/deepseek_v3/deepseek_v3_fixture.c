/* The deepseek_v3 fixture preset (engine/fixture_preset.h) and the
 * config.json of it and of the deepseek_v32 one (deepseek_v32_fixture.c):
 * the keys transformers 5.25's DeepseekV3Config.save_pretrained writes,
 * sorted.  The tiny preset exercises what the real models use: q LoRA, yarn
 * with mscale and mscale_all_dim (DeepSeek V3 / Kimi K2's rope_scaling),
 * interleaved RoPE, group-limited routing (n_group 4, topk_group 2), a dense
 * first layer; the deepseek_v32 ones add the DSA indexer (index_* from the
 * preset). */
#include "engine/arch/deepseek_v3/ds3.h"

/* the routing groups of the presets: 4 groups, 2 kept (the presets have 16 experts) */
enum { N_GROUP = 4, TOPK_GROUP = 2 };

jv *fd_ds3_fixture_config(const fd_fixture_preset *p, int bos, int eos, int pad, int v32)
{
    jv *o = jv_obj(), *arch = jv_arr(), *rp = jv_obj();
    jv_push(arch, jv_str(v32 ? "DeepseekV32ForCausalLM" : "DeepseekV3ForCausalLM"));
    jv_set(o, "architectures", arch);
    jv_set(o, "attention_bias", jv_bool(0));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "first_k_dense_replace", jv_int(fd_fixture_first_dense(p)));
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
    if (v32) jv_set(o, "layer_types", fd_fixture_layer_list(p->mlp_types, 0, "", "indexed_attention"));
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    if (v32) {
        jv_set(o, "mlp_bias", jv_bool(0));
        jv_set(o, "mlp_layer_types", fd_fixture_layer_list(p->mlp_types, 'S', "sparse", "dense"));
    }
    jv_set(o, "model_type", jv_str(v32 ? "deepseek_v32" : "deepseek_v3"));
    jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "n_group", jv_int(N_GROUP));
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
    jv_set(rp, "beta_fast", jv_int(32));
    jv_set(rp, "beta_slow", jv_int(1));
    jv_set(rp, "factor", jv_float(4.0));
    jv_set(rp, "mscale", jv_float(1.0));
    jv_set(rp, "mscale_all_dim", jv_float(1.0));
    jv_set(rp, "original_max_position_embeddings", jv_int(p->max_pos / 4));
    jv_set(rp, "rope_theta", jv_float(p->rope_theta));
    jv_set(rp, "rope_type", jv_str("yarn"));
    jv_set(o, "rope_parameters", rp);
    jv_set(o, "routed_scaling_factor", jv_float(p->routed_scaling));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "topk_group", jv_int(TOPK_GROUP));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "v_head_dim", jv_int(p->dv));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    return fd_ds3_fixture_config(p, bos, eos, pad, 0);
}

/* deepseek-v3-tiny: deepseek_v3 (Kimi K2's architecture) in miniature: 16
 * experts in 4 groups (2 kept), top-4, yarn factor 4 */
const fd_fixture_preset FD_DEEPSEEK_V3_PRESETS[] = {
    {.name = "deepseek-v3-tiny", .vocab = 260, .hidden = 64, .inter = 128, .moe_inter = 32, .layers = 4, .heads = 4,
     .q_lora = 32, .kv_lora = 16, .dn = 8, .dr = 8, .dv = 16, .experts = 16, .top_k = 4, .shared = 1, .max_pos = 256,
     .rope_theta = 10000.0, .routed_scaling = 2.5, .mlp_types = "DSSS", .indexer_types = "FFFF", .panel_windows = 4,
     .panel_len = 64, .config = config},
    {.name = NULL},
};
