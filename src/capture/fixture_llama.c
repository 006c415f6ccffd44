/* llama / qwen3 fixtures (fixture_llama.h). */
#include "capture/fixture_llama.h"
#include "capture/fixture_qwen35.h"
#include <string.h>

/* llama-tiny: GQA 4 heads over 2 KV heads of 16, llama3 RoPE (Llama-3.1's
 * factors; with theta 500,000 and head_dim 16 one frequency falls in the
 * smoothed band and three in the divided one), untied head.
 * qwen3-tiny: GQA 4 / 2 heads of 32 (head_dim x heads != hidden, as in
 * Qwen3), q_norm / k_norm, default RoPE, tied head (Qwen3-0.6B-like). */
static const fd_llama_preset fd_llama_preset_tiny = {"llama", 2, 16, 0, 0, 0, 8.0, 1.0, 4.0, 8192};
/* llama-small (a benchmark and long-window parity size): hidden 1024, 16
 * query heads over 4 KV heads of 64, intermediate 2,816 (down_proj K past
 * 2,048: oneDNN's 1024-wide K-blocks), 1,024-token windows (P.V in two key
 * blocks), llama3 RoPE */
static const fd_llama_preset fd_llama_preset_small = {"llama", 4, 64, 0, 0, 0, 8.0, 1.0, 4.0, 8192};
static const fd_llama_preset fd_qwen3_preset_tiny = {"qwen3", 2, 32, 1, 0, 0, 0.0, 0.0, 0.0, 0};
/* qwen3-moe-tiny: 16 experts of 32, top-4 (torch.topk's nth_element path,
 * the first 3 sorted), norm_topk_prob, layer 0 dense (mlp_only_layers [0]) */
static const fd_llama_preset fd_qwen3_moe_preset_tiny = {"qwen3_moe", 2, 16, 0, 0, 0, 0.0, 0.0, 0.0, 0};

static jv *config(const fd_llama_preset *x, const fd_fixture_preset *p, int bos, int eos, int pad)
{
    int moe = !strcmp(x->model_type, "qwen3_moe"), qwen3 = moe || !strcmp(x->model_type, "qwen3");
    jv *o = jv_obj(), *arch = jv_arr();
    jv_push(arch, jv_str(moe ? "Qwen3MoeForCausalLM" : qwen3 ? "Qwen3ForCausalLM" : "LlamaForCausalLM"));
    jv_set(o, "architectures", arch);
    jv_set(o, "attention_bias", jv_bool(x->attention_bias));
    jv_set(o, "attention_dropout", jv_float(0.0));
    jv_set(o, "bos_token_id", jv_int(bos));
    if (moe) jv_set(o, "decoder_sparse_step", jv_int(1));
    jv_set(o, "dtype", jv_str("bfloat16"));
    jv_set(o, "eos_token_id", jv_int(eos));
    jv_set(o, "head_dim", jv_int(x->head_dim));
    jv_set(o, "hidden_act", jv_str("silu"));
    jv_set(o, "hidden_size", jv_int(p->hidden));
    jv_set(o, "initializer_range", jv_float(0.02));
    jv_set(o, "intermediate_size", jv_int(p->inter));
    if (qwen3) {
        jv *lt = jv_arr();
        for (int64_t i = 0; i < p->layers; i++) jv_push(lt, jv_str("full_attention"));
        jv_set(o, "layer_types", lt);
    }
    jv_set(o, "max_position_embeddings", jv_int(p->max_pos));
    if (qwen3 && !moe) jv_set(o, "max_window_layers", jv_int(p->layers));
    if (!qwen3) jv_set(o, "mlp_bias", jv_bool(x->mlp_bias));
    if (moe) {
        jv *only = jv_arr();
        for (int64_t i = 0; i < p->layers; i++)
            if (p->mlp_types[i] == 'D') jv_push(only, jv_int(i));
        jv_set(o, "mlp_only_layers", only);
    }
    jv_set(o, "model_type", jv_str(x->model_type));
    if (moe) {
        jv_set(o, "moe_intermediate_size", jv_int(p->moe_inter));
        jv_set(o, "norm_topk_prob", jv_bool(1));
    }
    jv_set(o, "num_attention_heads", jv_int(p->heads));
    if (moe) jv_set(o, "num_experts_per_tok", jv_int(p->top_k));
    jv_set(o, "num_hidden_layers", jv_int(p->layers));
    jv_set(o, "num_key_value_heads", jv_int(x->kv_heads));
    if (moe) jv_set(o, "num_local_experts", jv_int(p->experts)); /* save_pretrained's spelling of num_experts */
    if (moe) jv_set(o, "output_router_logits", jv_bool(0));
    jv_set(o, "pad_token_id", jv_int(pad));
    if (!qwen3) jv_set(o, "pretraining_tp", jv_int(1));
    jv_set(o, "rms_norm_eps", jv_float(1e-6));
    jv *rp = jv_obj();
    if (x->factor > 0) {
        jv_set(rp, "factor", jv_float(x->factor));
        jv_set(rp, "high_freq_factor", jv_float(x->high_ff));
        jv_set(rp, "low_freq_factor", jv_float(x->low_ff));
        jv_set(rp, "original_max_position_embeddings", jv_int(x->orig_max));
    }
    jv_set(rp, "rope_theta", jv_float(p->rope_theta));
    jv_set(rp, "rope_type", jv_str(x->factor > 0 ? "llama3" : "default"));
    jv_set(o, "rope_parameters", rp);
    if (moe) jv_set(o, "router_aux_loss_coef", jv_float(0.001));
    if (qwen3) jv_set(o, "sliding_window", jv_null());
    jv_set(o, "tie_word_embeddings", jv_bool(x->tie));
    jv_set(o, "transformers_version", jv_str("5.25.0"));
    jv_set(o, "use_cache", jv_bool(1));
    if (qwen3) jv_set(o, "use_sliding_window", jv_bool(0));
    jv_set(o, "vocab_size", jv_int(p->vocab));
    return o;
}

jv *fd_fixture_llama_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    return config(&fd_llama_preset_tiny, p, bos, eos, pad);
}
jv *fd_fixture_llama_small_config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    return config(&fd_llama_preset_small, p, bos, eos, pad);
}
jv *fd_fixture_qwen3_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    return config(&fd_qwen3_preset_tiny, p, bos, eos, pad);
}
jv *fd_fixture_qwen3_moe_tiny_config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    return config(&fd_qwen3_moe_preset_tiny, p, bos, eos, pad);
}
int fd_fixture_preset_dense(const fd_fixture_preset *p)
{
    return p->config == fd_fixture_llama_tiny_config || p->config == fd_fixture_llama_small_config ||
           p->config == fd_fixture_qwen3_tiny_config || p->config == fd_fixture_qwen35_tiny_config ||
           p->config == fd_fixture_qwen35_small_config;
}
