/* The kimi_linear fixture preset (engine/fixture_preset.h): the config.json
 * KimiLinearConfig.save_pretrained writes (transformers 5.25; attribute_map
 * spellings num_experts, num_experts_per_token, num_expert_group,
 * moe_renormalize, num_shared_experts, model_max_length; no RoPE), KDA and
 * MLA layers from the preset's indexer_types (L linear, F full).  The
 * tensors are save_pretrained's spelling (kimi_linear.c, w NULL). */
#include "engine/fixture_preset.h"
#include "format/json.h"

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
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
    jv_set(o, "layer_types", fd_fixture_layer_list(p->indexer_types, 'F', "full_attention", "linear_attention"));
    jv_set(o, "linear_conv_kernel_dim", jv_int(4));
    jv_set(o, "linear_head_dim", jv_int(p->idx_dim));
    jv_set(o, "linear_num_heads", jv_int(p->idx_heads));
    jv_set(o, "mlp_layer_types", fd_fixture_layer_list(p->mlp_types, 'S', "sparse", "dense"));
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

/* kimi-linear-tiny: Kimi Linear in miniature: KDA (4 heads of 16, conv 4) on
 * layers 0 and 2, MLA without RoPE on 1 and 3, a dense first layer, 16
 * experts top-4 (one group) */
const fd_fixture_preset FD_KIMI_LINEAR_PRESETS[] = {
    {.name = "kimi-linear-tiny", .vocab = 260, .hidden = 64, .inter = 128, .moe_inter = 32, .layers = 4, .heads = 4,
     .q_lora = 0, .kv_lora = 16, .dn = 8, .dr = 8, .dv = 16, .idx_heads = 4, .idx_dim = 16, .idx_topk = 0,
     .experts = 16, .top_k = 4, .shared = 1, .max_pos = 1048576, .rope_theta = 0.0, .routed_scaling = 2.446,
     .mlp_types = "DSSS", .indexer_types = "LFLF", .panel_windows = 4, .panel_len = 64,
     .experts_name = "block_sparse_moe.experts", .config = config},
    {.name = NULL},
};
