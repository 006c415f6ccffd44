/* The kimi_k25 fixture preset (engine/fixture_preset.h): the config.json
 * Kimi_K25Config.save_pretrained writes (transformers 5.25): the text model
 * (deepseek_v3's fixture config, engine/arch/deepseek_v3/deepseek_v3_fixture.c,
 * with Kimi K2's routing and RoPE) under text_config, the vision tower's
 * config (the one kimi_k25.c's extra tensors describe), the top-level
 * tie_word_embeddings false (an untied head). */
#include "engine/arch/deepseek_v3/ds3.h"

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    /* deepseek_v3's config with Kimi K2's routing and RoPE (n_group 1, yarn factor 32, beta_fast 1) */
    jv *tc = fd_ds3_fixture_config(p, bos, eos, pad, 0);
    jv_del(tc, "architectures");
    jv_del(tc, "transformers_version");
    jv_set(tc, "n_group", jv_int(1));
    jv_set(tc, "topk_group", jv_int(1));
    jv *rp = jv_get(tc, "rope_parameters");
    jv_set(rp, "beta_fast", jv_int(1));
    jv_set(rp, "factor", jv_float(32));
    jv_set(rp, "original_max_position_embeddings", jv_int(p->max_pos / 32));
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

/* kimi-k25-tiny: Kimi K2.5 in miniature: deepseek-v3-tiny's text dims,
 * routed_scaling_factor 2.827, rope_theta 5e4, a 1-layer vision tower the
 * loader skips */
const fd_fixture_preset FD_KIMI_K25_PRESETS[] = {
    {.name = "kimi-k25-tiny", .vocab = 260, .hidden = 64, .inter = 128, .moe_inter = 32, .layers = 4, .heads = 4,
     .q_lora = 32, .kv_lora = 16, .dn = 8, .dr = 8, .dv = 16, .experts = 16, .top_k = 4, .shared = 1, .max_pos = 256,
     .rope_theta = 50000.0, .routed_scaling = 2.827, .mlp_types = "DSSS", .indexer_types = "FFFF", .panel_windows = 4,
     .panel_len = 64, .config = config},
    {.name = NULL},
};
