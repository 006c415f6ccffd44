/* The glm5_next fixture preset (engine/fixture_preset.h) and its
 * config.json: a random-init Glm5NextForConditionalGeneration checkpoint
 * (text trunk + vision tower) as transformers 5.16.1's save_pretrained
 * writes it; its tensors are the architecture's one list (next_tensors.c).
 *
 * Initialisation follows transformers 5.16.1 _init_weights (the inits are
 * the tensor list's, written by capture/fixture.c): Linear / Conv /
 * embedding weights and hc_*_fn ~ normal(0, 0.02); RMSNorm, o_norm,
 * LayerNorm weights, hc_*_scale and index_kpool_compress_gate 1; biases,
 * hc_*_base, index_kpool_compress_ape, e_score_correction_bias 0; A_log 0
 * (the safe-gate lower bound is set); dt_bias = inverse softplus of
 * dt = exp(u), u ~ uniform(log 1e-3, log 1e-1), dt clamped to >= 1e-4.
 * The modules transformers keeps in fp32 (conv1d, dt_bias, A_log,
 * e_score_correction_bias) are written F32, the rest BF16. */
#include "engine/model.h"

/* what a glm5_next preset adds to fd_fixture_preset's dims */
typedef struct next_preset {
    int64_t lin_heads, lin_dim, conv_k, kpool, hc_mult, hc_iters;
    double swiglu_limit, lower_bound;
    const char *layer_kinds; /* one char a layer: L linear_attention (KDA), D deepseek_sparse_attention */
    int64_t v_depth, v_hidden, v_heads, v_inter, v_out, v_proj_inter;
} next_preset;

/* GLM-5.3-Flash-0.1B-A0.1B's shape (MODEL-GLM §6.4 and the seeds: hidden 256,
 * 5 layers 3 dense + 2 MoE, 8 routed experts of 256x128 top-4 + 1 shared,
 * 2-layer vision tower of width 128, 223 tensors); the dims the public
 * sources do not give are chosen here (docs/MODEL-GLM5-NEXT.md §5). */
static const next_preset FLASH = {.lin_heads = 4, .lin_dim = 32, .conv_k = 4, .kpool = 4, .hc_mult = 4,
                                  .hc_iters = 20, .swiglu_limit = 10.0, .lower_bound = -5.0, .layer_kinds = "LLLDL",
                                  .v_depth = 2, .v_hidden = 128, .v_heads = 2, .v_inter = 512, .v_out = 256,
                                  .v_proj_inter = 256};

/* glm5-next-tiny: the same layer kinds at toy width (hidden 64, vocab 260,
 * 4 layers KDA / KDA / DSA / KDA, 2 dense + 2 MoE of 4 experts top-2, a
 * 1-block vision tower of width 32): small enough for committed GGUF
 * vectors (tests/vectors/gguf-glm5). */
static const next_preset TINY = {.lin_heads = 2, .lin_dim = 16, .conv_k = 4, .kpool = 4, .hc_mult = 4,
                                 .hc_iters = 20, .swiglu_limit = 10.0, .lower_bound = -5.0, .layer_kinds = "LLDL",
                                 .v_depth = 1, .v_hidden = 32, .v_heads = 2, .v_inter = 64, .v_out = 64,
                                 .v_proj_inter = 64};

static jv *text_config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    const next_preset *x = p->ext;
    jv *o = jv_obj();
    jv_set(o, "attention_bias", jv_bool(0));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "hc_eps", jv_float(1e-6));
    jv_set(o, "hc_mult", jv_int(x->hc_mult));
    jv_set(o, "hc_sinkhorn_iters", jv_int(x->hc_iters));
    jv_set(o, "head_dim", jv_int(0));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(p->hidden));
    jv_set(o, "index_head_dim", jv_int(p->idx_dim));
    jv_set(o, "index_kpool", jv_int(x->kpool));
    jv_set(o, "index_kpool_always_select_tail", jv_bool(1));
    jv_set(o, "index_n_heads", jv_int(p->idx_heads));
    jv_set(o, "index_topk", jv_int(p->idx_topk));
    jv_set(o, "indexer_types", fd_fixture_layer_list(p->indexer_types, 'F', "full", "shared"));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "intermediate_size", jv_int(p->inter));
    jv_set(o, "kv_lora_rank", jv_int(p->kv_lora));
    jv_set(o, "layer_types", fd_fixture_layer_list(x->layer_kinds, 'L', "linear_attention", "deepseek_sparse_attention"));
    jv_set(o, "linear_conv_kernel_dim", jv_int(x->conv_k));
    jv_set(o, "linear_head_dim", jv_int(x->lin_dim));
    jv_set(o, "linear_lower_bound", jv_float(x->lower_bound));
    jv_set(o, "linear_num_heads", jv_int(x->lin_heads));
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    jv_set(o, "mlp_layer_types", fd_fixture_layer_list(p->mlp_types, 'S', "sparse", "dense"));
    jv_set(o, "model_type", jv_str("glm5_next_text"));
    jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "n_group", jv_int(1));
    jv_set(o, "n_routed_experts", jv_int(p->experts));
    jv_set(o, "n_shared_experts", jv_int(p->shared));
    jv_set(o, "norm_topk_prob", jv_bool(1));
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    jv_set(o, "num_experts_per_tok", jv_int(p->top_k));
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(p->heads));
    jv_set(o, "output_router_logits", jv_bool(0));
    jv_set(o, "pad_token_id", jv_int(pad));
    jv_set(o, "q_lora_rank", jv_int(p->q_lora));
    jv_set(o, "qk_head_dim", jv_int(p->dn));
    jv_set(o, "qk_nope_head_dim", jv_int(p->dn));
    jv_set(o, "qk_rope_head_dim", jv_int(0));
    jv_set(o, "rms_norm_eps", jv_float(1e-5));
    jv_set(o, "routed_scaling_factor", jv_float(p->routed_scaling));
    jv_set(o, "router_aux_loss_coef", jv_float(0.001));
    jv_set(o, "swiglu_limit", jv_float(x->swiglu_limit));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "topk_group", jv_int(1));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "v_head_dim", jv_int(p->dv));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

static jv *vision_config(const next_preset *x)
{
    jv *o = jv_obj();
    jv_set(o, "attention_bias", jv_bool(1));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "depth", jv_int(x->v_depth));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(x->v_hidden));
    jv_set(o, "image_size", jv_int(336));
    jv_set(o, "in_channels", jv_int(3));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "intermediate_size", jv_int(x->v_inter));
    jv_set(o, "model_type", jv_str("glm5_next_vision"));
    jv_set(o, "num_heads", jv_int(x->v_heads));
    jv_set(o, "out_hidden_size", jv_int(x->v_out));
    jv_set(o, "patch_size", jv_int(14));
    jv_set(o, "projection_intermediate_size", jv_int(x->v_proj_inter));
    jv_set(o, "rms_norm_eps", jv_float(1e-5));
    jv_set(o, "spatial_merge_size", jv_int(2));
    jv_set(o, "swiglu_limit", jv_float(x->swiglu_limit));
    jv_set(o, "temporal_patch_size", jv_int(2));
    return o;
}

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    jv *o = jv_obj(), *arch = jv_arr();
    jv_push(arch, jv_str("Glm5NextForConditionalGeneration"));
    jv_set(o, "architectures", arch);
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "image_end_token_id", jv_int(154831));
    jv_set(o, "image_start_token_id", jv_int(154830));
    jv_set(o, "image_token_id", jv_int(154854));
    jv_set(o, "model_type", jv_str("glm5_next"));
    jv_set(o, "text_config", text_config(p, bos, eos, pad));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "transformers_version", jv_str("5.16.1"));
    jv_set(o, "video_end_token_id", jv_int(154833));
    jv_set(o, "video_start_token_id", jv_int(154832));
    jv_set(o, "video_token_id", jv_int(154855));
    jv_set(o, "vision_config", vision_config(p->ext));
    return o;
}

/* flash-0.1b-next: GLM-5.3-Flash-0.1B-A0.1B itself (MODEL-GLM §6.4) */
const fd_fixture_preset FD_GLM5_NEXT_PRESETS[] = {
    {.name = "flash-0.1b-next", .vocab = 154880, .hidden = 256, .inter = 512, .moe_inter = 128, .layers = 5,
     .heads = 4, .q_lora = 128, .kv_lora = 64, .dn = 64, .dr = 0, .dv = 64, .idx_heads = 4, .idx_dim = 32,
     .idx_topk = 256, .experts = 8, .top_k = 4, .shared = 1, .max_pos = 1048576, .rope_theta = 0.0,
     .routed_scaling = 2.5, .mlp_types = "DDDSS", .indexer_types = "FFFFF", .panel_windows = 8, .panel_len = 2048,
     .ext = &FLASH, .config = config},
    {.name = "glm5-next-tiny", .vocab = 260, .hidden = 64, .inter = 128, .moe_inter = 32, .layers = 4, .heads = 2,
     .q_lora = 32, .kv_lora = 32, .dn = 16, .dr = 0, .dv = 16, .idx_heads = 2, .idx_dim = 16, .idx_topk = 16,
     .experts = 4, .top_k = 2, .shared = 1, .max_pos = 32768, .rope_theta = 0.0, .routed_scaling = 2.5,
     .mlp_types = "DDSS", .indexer_types = "FFFF", .panel_windows = 4, .panel_len = 100, .ext = &TINY,
     .config = config},
    {.name = NULL},
};
