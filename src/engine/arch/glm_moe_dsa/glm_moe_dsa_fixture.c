/* The glm_moe_dsa fixture presets (engine/fixture_preset.h) and their
 * config.json: every field transformers 5.16's GlmMoeDsaConfig reads, keys
 * sorted as save_pretrained writes them.
 *
 * tiny: MODEL-GLM §6.1 (277,824 params + 24 router-bias elements).
 * flash-0.1b: the shape of GLM-5.3-Flash-0.1B's text trunk (§6.4: hidden 256,
 *   5 layers 3 dense + 2 MoE, 8 routed top-4 + 1 shared, vocab 154,880) in
 *   glm_moe_dsa form; remaining dims chosen here.
 * small: a benchmark size (hidden 1024, 8 layers, 32 experts). */
#include "engine/arch/glm_moe_dsa/dsa_config.h"
#include "engine/model.h"

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    jv *o = jv_obj();
    jv *arch = jv_arr();
    jv_push(arch, jv_str("GlmMoeDsaForCausalLM"));
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
    jv_set(o, "index_head_dim", jv_int(p->idx_dim));
    jv_set(o, "index_n_heads", jv_int(p->idx_heads));
    jv_set(o, "index_topk", jv_int(p->idx_topk));
    jv_set(o, "indexer_types", fd_fixture_layer_list(p->indexer_types, 'F', "full", "shared"));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "intermediate_size", jv_int(p->inter));
    jv_set(o, "kv_lora_rank", jv_int(p->kv_lora));
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    jv_set(o, "mlp_layer_types", fd_fixture_layer_list(p->mlp_types, 'S', "sparse", "dense"));
    jv_set(o, "model_type", jv_str("glm_moe_dsa"));
    jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "n_group", jv_int(1));
    jv_set(o, "n_routed_experts", jv_int(p->experts));
    jv_set(o, "n_shared_experts", jv_int(p->shared));
    jv_set(o, "norm_topk_prob", jv_bool(1));
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    jv_set(o, "num_experts_per_tok", jv_int(p->top_k));
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(p->heads));
    jv_set(o, "pad_token_id", jv_int(pad));
    jv_set(o, "q_lora_rank", jv_int(p->q_lora));
    jv_set(o, "qk_head_dim", jv_int(p->dn + p->dr));
    jv_set(o, "qk_nope_head_dim", jv_int(p->dn));
    jv_set(o, "qk_rope_head_dim", jv_int(p->dr));
    jv_set(o, "rms_norm_eps", jv_float(1e-5));
    jv *rp = jv_obj();
    jv_set(rp, "rope_theta", jv_float(p->rope_theta));
    jv_set(rp, "rope_type", jv_str("default"));
    jv_set(o, "rope_parameters", rp);
    jv_set(o, "routed_scaling_factor", jv_float(p->routed_scaling));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "topk_group", jv_int(1));
    jv_set(o, "transformers_version", jv_str("5.16.1"));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "v_head_dim", jv_int(p->dv));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

const fd_fixture_preset FD_GLM_MOE_DSA_PRESETS[] = {
    {.name = "tiny", .vocab = 260, .hidden = 64, .inter = 128, .moe_inter = 32, .layers = 4, .heads = 4,
     .q_lora = 32, .kv_lora = 16, .dn = 8, .dr = 8, .dv = 16, .idx_heads = 4, .idx_dim = 16, .idx_topk = 8,
     .experts = 8, .top_k = 2, .shared = 1, .max_pos = 256, .rope_theta = 10000.0, .routed_scaling = 2.5,
     .mlp_types = "DSSS", .indexer_types = "FSFS", .panel_windows = 4, .panel_len = 64, .config = config},
    {.name = "flash-0.1b", .vocab = 154880, .hidden = 256, .inter = 768, .moe_inter = 256, .layers = 5, .heads = 4,
     .q_lora = 128, .kv_lora = 64, .dn = 32, .dr = 16, .dv = 32, .idx_heads = 4, .idx_dim = 32, .idx_topk = 256,
     .experts = 8, .top_k = 4, .shared = 1, .max_pos = 4096, .rope_theta = 1000000.0, .routed_scaling = 2.5,
     .mlp_types = "DDDSS", .indexer_types = "FSFSF", .panel_windows = 8, .panel_len = 2048, .config = config},
    {.name = "small", .vocab = 260, .hidden = 1024, .inter = 2816, .moe_inter = 128, .layers = 8, .heads = 8,
     .q_lora = 256, .kv_lora = 128, .dn = 64, .dr = 32, .dv = 64, .idx_heads = 8, .idx_dim = 64, .idx_topk = 512,
     .experts = 32, .top_k = 4, .shared = 1, .max_pos = 4096, .rope_theta = 1000000.0, .routed_scaling = 2.5,
     .mlp_types = "DSSSSSSS", .indexer_types = "FSSSFSSS", .panel_windows = 4, .panel_len = 512, .config = config},
    {.name = NULL},
};
