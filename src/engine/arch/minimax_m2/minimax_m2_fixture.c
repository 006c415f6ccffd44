/* The minimax_m2 fixture preset (engine/fixture_preset.h) and its
 * config.json: a random-init MiniMaxM2ForCausalLM checkpoint as transformers
 * 5.25's save_pretrained writes it (sorted keys); its tensors are the
 * architecture's one list (mm2_tensors.c). */
#include "engine/arch/minimax_m2/mm2.h"

/* minimax-m2-tiny: 4 query heads over 2 KV heads of 16, rotary_dim 8 (the
 * released M2's partial_rotary_factor 0.5, spelled as its legacy rotary_dim
 * and as rope_parameters, both as save_pretrained writes them), q/k norms
 * over all heads, every layer 16 experts of 32, top-8 (M2's k) */
static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    const int64_t kv_heads = 2, head_dim = 16, rotary_dim = 8;
    jv *o = jv_obj(), *arch = jv_arr();
    jv_push(arch, jv_str("MiniMaxM2ForCausalLM"));
    jv_set(o, "architectures", arch);
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "head_dim", jv_int(head_dim));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(p->hidden));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "intermediate_size", jv_int(p->moe_inter)); /* the experts' width */
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    jv_set(o, "model_type", jv_str("minimax_m2"));
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    jv_set(o, "num_experts_per_tok", jv_int(p->top_k));
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(kv_heads));
    jv_set(o, "num_local_experts", jv_int(p->experts));
    jv_set(o, "output_router_logits", jv_bool(0));
    jv_set(o, "pad_token_id", jv_int(pad));
    jv_set(o, "rms_norm_eps", jv_float(1e-6));
    jv *rp = jv_obj();
    jv_set(rp, "partial_rotary_factor", jv_float((double)rotary_dim / (double)head_dim));
    jv_set(rp, "rope_theta", jv_float(p->rope_theta));
    jv_set(rp, "rope_type", jv_str("default"));
    jv_set(o, "rope_parameters", rp);
    jv_set(o, "rotary_dim", jv_int(rotary_dim));
    jv_set(o, "router_aux_loss_coef", jv_float(0.001));
    jv_set(o, "router_jitter_noise", jv_float(0.0));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

const fd_fixture_preset FD_MM2_PRESETS[] = {
    {.name = "minimax-m2-tiny", .vocab = 260, .hidden = 64, .inter = 32, .moe_inter = 32, .layers = 2, .heads = 4,
     .experts = 16, .top_k = 8, .max_pos = 196608, .rope_theta = 5000000.0, .mlp_types = "SS", .indexer_types = "FF",
     .panel_windows = 4, .panel_len = 64, .experts_name = "block_sparse_moe.experts", .config = config},
    {.name = NULL},
};
