/* The deepseek_v4 fixture preset (engine/fixture_preset.h): the config.json
 * DeepseekV4Config.save_pretrained writes (transformers 5.25) for the tiny
 * model of docs/MODEL-DEEPSEEK.md §11.4: the three attention types (sliding,
 * CSA, HCA, CSA), a hash-routed first MoE layer, compress-rope yarn.  The
 * tensors are dsv4_tensors.c's (save_pretrained's spelling); the fixture
 * writes what transformers' _init_weights zeroes (tid2eid, sinks,
 * position_bias, the hc bases, the router bias) as distinct experts per
 * token and small random values, so those paths are exercised. */
#include "engine/arch/deepseek_v4/dsv4.h"
#include "engine/fixture_preset.h"
#include "format/json.h"

typedef struct v4_preset {
    const char *layer_types;   /* one char a layer: W sliding, C CSA, H HCA */
    int64_t rate_csa, rate_hca, window, o_groups, o_lora, hc_mult;
    double yarn_factor;
    int64_t yarn_orig;
} v4_preset;

static jv *strlist(const char *s, const char *const names[3], const char *chars)
{
    jv *a = jv_arr();
    for (; *s; s++)
        for (int j = 0; j < 3; j++)
            if (*s == chars[j]) jv_push(a, jv_str(names[j]));
    return a;
}

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    const v4_preset *x = p->ext;
    static const char *const LT[3] = {"sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention"};
    static const char *const MT[3] = {"hash_moe", "moe", "moe"};
    double prf = (double)p->dr / (double)p->dn;
    jv *o = jv_obj(), *arch = jv_arr(), *cr = jv_obj(), *rp = jv_obj(), *mn = jv_obj(), *cp = jv_obj();
    jv_push(arch, jv_str("DeepseekV4ForCausalLM"));
    jv_set(o, "architectures", arch);
    jv_set(o, "attention_bias", jv_bool(0));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    jv_set(cr, "compressed_sparse_attention", jv_int(x->rate_csa));
    jv_set(cr, "heavily_compressed_attention", jv_int(x->rate_hca));
    jv_set(o, "compress_rates", cr);
    jv_set(o, "compress_rope_theta", jv_float(160000.0));
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "hc_eps", jv_float(1e-6));
    jv_set(o, "hc_mult", jv_int(x->hc_mult));
    jv_set(o, "hc_sinkhorn_iters", jv_int(20));
    jv_set(o, "head_dim", jv_int(p->dn));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(p->hidden));
    jv_set(o, "index_head_dim", jv_int(p->idx_dim));
    jv_set(o, "index_n_heads", jv_int(p->idx_heads));
    jv_set(o, "index_topk", jv_int(p->idx_topk));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "layer_types", strlist(x->layer_types, LT, "WCH"));
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    jv_set(o, "mlp_bias", jv_bool(0));
    jv_set(o, "mlp_layer_types", strlist(p->mlp_types, MT, "HM"));
    jv_set(o, "model_type", jv_str("deepseek_v4"));
    jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
    jv_set(o, "n_routed_experts", jv_int(p->experts));
    jv_set(o, "n_shared_experts", jv_int(p->shared));
    jv_set(o, "norm_topk_prob", jv_bool(1));
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    jv_set(o, "num_experts_per_tok", jv_int(p->top_k));
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(1));
    jv_set(o, "num_nextn_predict_layers", jv_int(1));
    jv_set(o, "o_groups", jv_int(x->o_groups));
    jv_set(o, "o_lora_rank", jv_int(x->o_lora));
    jv_set(o, "output_router_logits", jv_bool(0));
    jv_set(o, "pad_token_id", jv_int(pad));
    jv_set(o, "partial_rotary_factor", jv_float(prf));
    jv_set(o, "q_lora_rank", jv_int(p->q_lora));
    jv_set(o, "qk_rope_head_dim", jv_int(p->dr));
    jv_set(o, "rms_norm_eps", jv_float(1e-6));
    jv_set(cp, "attention_factor", jv_float(1.0));
    jv_set(cp, "factor", jv_float(x->yarn_factor));
    jv_set(cp, "original_max_position_embeddings", jv_int(x->yarn_orig));
    jv_set(cp, "partial_rotary_factor", jv_float(prf));
    jv_set(cp, "rope_theta", jv_float(160000.0));
    jv_set(cp, "rope_type", jv_str("yarn"));
    jv_set(rp, "compress", cp);
    jv_set(mn, "partial_rotary_factor", jv_float(prf));
    jv_set(mn, "rope_theta", jv_float(p->rope_theta));
    jv_set(mn, "rope_type", jv_str("default"));
    jv_set(rp, "main", mn);
    jv_set(o, "rope_parameters", rp);
    jv_set(o, "rope_theta", jv_float(p->rope_theta));
    jv_set(o, "routed_scaling_factor", jv_float(p->routed_scaling));
    jv_set(o, "router_aux_loss_coef", jv_float(0.001));
    jv_set(o, "router_jitter_noise", jv_float(0.0));
    jv_set(o, "scoring_func", jv_str("sqrtsoftplus"));
    jv_set(o, "sliding_window", jv_int(x->window));
    jv_set(o, "swiglu_limit", jv_float(10.0));
    jv_set(o, "tie_word_embeddings", jv_bool(0));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "use_cache", jv_bool(1));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

static const v4_preset TINY = {.layer_types = "WCHC", .rate_csa = 4, .rate_hca = 8, .window = 16, .o_groups = 2,
                               .o_lora = 16, .hc_mult = 4, .yarn_factor = 4.0, .yarn_orig = 64};

/* deepseek-v4-tiny (§11.4): head_dim 32 (dn) with 8 rope dims (dr), 4 heads,
 * q LoRA 32, indexer 8 heads of 16 keeping 4, 8 experts top-2 of width 32 */
const fd_fixture_preset FD_DEEPSEEK_V4_PRESETS[] = {
    {.name = "deepseek-v4-tiny", .vocab = 260, .hidden = 64, .inter = 32, .moe_inter = 32, .layers = 4, .heads = 4,
     .q_lora = 32, .kv_lora = 0, .dn = 32, .dr = 8, .dv = 32, .idx_heads = 8, .idx_dim = 16, .idx_topk = 4,
     .experts = 8, .top_k = 2, .shared = 1, .max_pos = 1048576, .rope_theta = 10000.0, .routed_scaling = 1.5,
     .mlp_types = "HMMM", .indexer_types = "SFSF", .panel_windows = 4, .panel_len = 64, .ext = &TINY,
     .experts_name = "ffn.experts", .config = config},
    {.name = NULL},
};
