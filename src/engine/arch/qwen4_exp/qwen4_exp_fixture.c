/* The qwen4_exp_text fixture preset (engine/fixture_preset.h) and its
 * config.json: a random-init Qwen4ExpForCausalLM checkpoint as transformers
 * 5.25's save_pretrained writes it (sorted keys, layer_types as post_init
 * spells them); its tensors are the architecture's one list (q4x_tensors.c).
 * Initialisation: Linear, embedding, conv1d, A_log, the hyper-connection and
 * indexer norm weights ~ normal(0, 0.02) (so that each stream's slice of a
 * grouped weight matters), the other zero-centred RMSNorm weights 0, the
 * gated norm's weight and dt_bias 1.
 *
 * qwen4-exp-tiny: qwen35-moe-tiny's layers (linear / indexed / linear /
 * indexed, 8 experts of 32, top-2, a shared expert of 32), 4 streams of rank
 * 16, QSA with 2 index heads of 16, blocks of 4, a budget of 16 tokens (4
 * blocks): 100-token windows, so most queries choose among their blocks. */
#include "engine/arch/qwen4_exp/q4x.h"

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    jv *o = jv_obj(), *arch = jv_arr();
    jv_push(arch, jv_str("Qwen4ExpForCausalLM"));
    jv_set(o, "architectures", arch);
    jv_set(o, "attention_bias", jv_bool(0));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "hc_count", jv_int(4));
    jv_set(o, "hc_lowrank", jv_int(16));
    jv_set(o, "head_dim", jv_int(16));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(p->hidden));
    jv_set(o, "indexer_budget", jv_int(16));
    jv_set(o, "indexer_compress_ratio", jv_int(4));
    jv_set(o, "indexer_head_dim", jv_int(p->idx_dim));
    jv_set(o, "indexer_kv_heads", jv_int(1));
    jv_set(o, "indexer_n_heads", jv_int(p->idx_heads));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "layer_types", fd_fixture_layer_list(p->indexer_types, 'L', "linear_attention", "indexed_attention"));
    jv_set(o, "linear_conv_kernel_dim", jv_int(4));
    jv_set(o, "linear_key_head_dim", jv_int(16));
    jv_set(o, "linear_num_key_heads", jv_int(2));
    jv_set(o, "linear_num_value_heads", jv_int(4));
    jv_set(o, "linear_value_head_dim", jv_int(16));
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    jv_set(o, "model_type", jv_str("qwen4_exp_text"));
    jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "norm_topk_prob", jv_bool(1));
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    jv_set(o, "num_experts", jv_int(p->experts));
    jv_set(o, "num_experts_per_tok", jv_int(p->top_k));
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(2));
    jv_set(o, "output_router_logits", jv_bool(0));
    jv_set(o, "pad_token_id", jv_int(pad));
    jv_set(o, "ple_layer_ids", jv_arr());
    jv_set(o, "rms_norm_eps", jv_float(1e-6));
    jv *rp = jv_obj();
    jv_set(rp, "partial_rotary_factor", jv_float(0.25));
    jv_set(rp, "rope_theta", jv_float(p->rope_theta));
    jv_set(rp, "rope_type", jv_str("default"));
    jv_set(o, "rope_parameters", rp);
    jv_set(o, "router_aux_loss_coef", jv_float(0.001));
    jv_set(o, "shared_expert_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

const fd_fixture_preset FD_Q4X_TEXT_PRESETS[] = {
    {.name = "qwen4-exp-tiny", .vocab = 260, .hidden = 64, .moe_inter = 32, .layers = 4, .heads = 4, .idx_heads = 2,
     .idx_dim = 16, .experts = 8, .top_k = 2, .shared = 1, .max_pos = 32768, .rope_theta = 10000000.0,
     .mlp_types = "SSSS", .indexer_types = "LFLF", .panel_windows = 4, .panel_len = 100, .config = config},
    {.name = NULL},
};
