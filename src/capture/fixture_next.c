/* glm5_next fixtures (fixture_next.h). */
#include "capture/fixture_next.h"
#include "util/rng.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* GLM-5.3-Flash-0.1B-A0.1B's shape (MODEL-GLM §6.4 and the seeds: hidden 256,
 * 5 layers 3 dense + 2 MoE, 8 routed experts of 256x128 top-4 + 1 shared,
 * 2-layer vision tower of width 128, 223 tensors); the dims the public
 * sources do not give are chosen here (docs/MODEL-GLM5-NEXT.md §5). */
const fd_next_preset fd_next_preset_flash = {4, 32, 4, 4, 4, 20, 10.0, -5.0, "LLLDL", 2, 128, 2, 512, 256, 256};

float fd_fixture_f32_init(int init, uint64_t *s)
{
    double u1 = (double)((fd_rng_next(s) >> 11) + 1) * (1.0 / 9007199254740992.0);
    if (init == FD_INIT_ONES) return 1.0f;
    if (init == FD_INIT_ZEROS) return 0.0f;
    if (init == FD_INIT_DT_BIAS) {
        double lo = log(1e-3), hi = log(1e-1);
        float dt = expf((float)(lo + (hi - lo) * u1));
        if (dt < 1e-4f) dt = 1e-4f;
        return dt + logf(-expm1f(-dt));
    }
    double u2 = (double)(fd_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(0.02 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static jv *list(const char *kinds, char one, const char *yes, const char *no)
{
    jv *arr = jv_arr();
    for (const char *c = kinds; *c; c++) jv_push(arr, jv_str(*c == one ? yes : no));
    return arr;
}

static jv *text_config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    const fd_next_preset *x = p->next;
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
    jv_set(o, "indexer_types", list(p->indexer_types, 'F', "full", "shared"));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "intermediate_size", jv_int(p->inter));
    jv_set(o, "kv_lora_rank", jv_int(p->kv_lora));
    jv_set(o, "layer_types", list(x->layer_kinds, 'L', "linear_attention", "deepseek_sparse_attention"));
    jv_set(o, "linear_conv_kernel_dim", jv_int(x->conv_k));
    jv_set(o, "linear_head_dim", jv_int(x->lin_dim));
    jv_set(o, "linear_lower_bound", jv_float(x->lower_bound));
    jv_set(o, "linear_num_heads", jv_int(x->lin_heads));
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    jv_set(o, "mlp_layer_types", list(p->mlp_types, 'S', "sparse", "dense"));
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

static jv *vision_config(const fd_next_preset *x)
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

jv *fd_fixture_next_config(const fd_fixture_preset *p, int bos, int eos, int pad)
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
    jv_set(o, "vision_config", vision_config(p->next));
    return o;
}
