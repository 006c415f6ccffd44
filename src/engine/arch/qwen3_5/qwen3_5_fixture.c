/* The qwen3_5_text and qwen3_5_moe_text fixture presets
 * (engine/fixture_preset.h) and their config.json: a random-init
 * Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM checkpoint as transformers
 * 5.25's save_pretrained writes it (sorted keys); its tensors are the
 * architecture's one list (q35_tensors.c).  Initialisation: Linear,
 * embedding, conv1d and A_log ~ normal(0, 0.02), the zero-centred RMSNorm
 * weights 0, the gated norm's weight and dt_bias 1.  indexer_types spells the
 * layer types (L linear_attention, F full_attention). */
#include "engine/arch/qwen3_5/q35.h"

typedef struct q35_preset {
    int moe;
    int64_t head_dim, kv_heads, dk, dv, nk, nv;
} q35_preset;

/* qwen35-tiny: 4 layers linear / full / linear / full, GQA 4 / 2 heads of 16
 * (rotary dims 4 of 16: partial_rotary_factor 0.25), linear attention 2 key
 * heads over 4 value heads of 16, conv kernel 4; qwen35-moe-tiny: the same
 * with 8 experts of 32, top-2, a shared expert of 32; qwen35-small: the real
 * models' linear head dims (128) and a 64-dim attention head.  100-token
 * windows: two delta-rule chunks of 64, a padded last one. */
static const q35_preset TINY = {0, 16, 2, 16, 16, 2, 4}, MOE_TINY = {1, 16, 2, 16, 16, 2, 4},
                        SMALL = {0, 64, 2, 128, 128, 2, 4};

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    const q35_preset *x = p->ext;
    int moe = x->moe;
    jv *o = jv_obj(), *arch = jv_arr();
    jv_push(arch, jv_str(moe ? "Qwen3_5MoeForCausalLM" : "Qwen3_5ForCausalLM"));
    jv_set(o, "architectures", arch);
    jv_set(o, "attention_bias", jv_bool(0));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "head_dim", jv_int(x->head_dim));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(p->hidden));
    jv_set(o, "initializer_range", jv_float(0.02));
    if (!moe) jv_set(o, "intermediate_size", jv_int(p->inter));
    jv *lt = jv_arr();
    for (int64_t i = 0; i < p->layers; i++) jv_push(lt, jv_str(p->indexer_types[i] == 'L' ? "linear_attention" : "full_attention"));
    jv_set(o, "layer_types", lt);
    jv_set(o, "linear_conv_kernel_dim", jv_int(4));
    jv_set(o, "linear_key_head_dim", jv_int(x->dk));
    jv_set(o, "linear_num_key_heads", jv_int(x->nk));
    jv_set(o, "linear_num_value_heads", jv_int(x->nv));
    jv_set(o, "linear_value_head_dim", jv_int(x->dv));
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    jv_set(o, "model_type", jv_str(moe ? "qwen3_5_moe_text" : "qwen3_5_text"));
    if (moe) jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    if (moe) {
        jv_set(o, "num_experts", jv_int(p->experts));
        jv_set(o, "num_experts_per_tok", jv_int(p->top_k));
    }
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(x->kv_heads));
    if (moe) jv_set(o, "output_router_logits", jv_bool(0));
    jv_set(o, "pad_token_id", jv_int(pad));
    jv_set(o, "rms_norm_eps", jv_float(1e-6));
    jv *rp = jv_obj();
    jv_set(rp, "partial_rotary_factor", jv_float(0.25));
    jv_set(rp, "rope_theta", jv_float(p->rope_theta));
    jv_set(rp, "rope_type", jv_str("default"));
    jv_set(o, "rope_parameters", rp);
    if (moe) {
        jv_set(o, "router_aux_loss_coef", jv_float(0.001));
        jv_set(o, "shared_expert_intermediate_size", jv_int(p->moe_inter));
    }
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}


const fd_fixture_preset FD_Q35_TEXT_PRESETS[] = {
    {.name = "qwen35-tiny", .vocab = 260, .hidden = 64, .inter = 128, .layers = 4, .heads = 4, .max_pos = 32768,
     .rope_theta = 10000000.0, .mlp_types = "DDDD", .indexer_types = "LFLF", .panel_windows = 4, .panel_len = 100,
     .ext = &TINY, .config = config},
    {.name = "qwen35-small", .vocab = 260, .hidden = 256, .inter = 512, .layers = 4, .heads = 8, .max_pos = 32768,
     .rope_theta = 10000000.0, .mlp_types = "DDDD", .indexer_types = "LFLF", .panel_windows = 2, .panel_len = 100,
     .ext = &SMALL, .config = config},
    {.name = NULL},
};
const fd_fixture_preset FD_Q35_MOE_TEXT_PRESETS[] = {
    {.name = "qwen35-moe-tiny", .vocab = 260, .hidden = 64, .moe_inter = 32, .layers = 4, .heads = 4, .experts = 8,
     .top_k = 2, .shared = 1, .max_pos = 32768, .rope_theta = 10000000.0, .mlp_types = "SSSS", .indexer_types = "LFLF",
     .panel_windows = 4, .panel_len = 100, .ext = &MOE_TINY, .config = config},
    {.name = NULL},
};
