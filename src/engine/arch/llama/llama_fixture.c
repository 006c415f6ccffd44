/* The llama, qwen3 and qwen3_moe fixture presets (engine/fixture_preset.h)
 * and their config.json: a random-init LlamaForCausalLM / Qwen3ForCausalLM /
 * Qwen3MoeForCausalLM checkpoint as transformers 5.25's save_pretrained
 * writes it (sorted keys); its tensors are the architecture's one list
 * (llama_tensors.c).  Initialisation as transformers' _init_weights: Linear
 * and embedding weights ~ normal(0, 0.02), RMSNorm weights 1, biases 0. */
#include "engine/arch/llama/llama_internal.h"
#include <string.h>

/* what a llama-family preset adds to fd_fixture_preset's dims */
typedef struct llama_preset {
    const char *model_type;    /* llama | qwen3 | qwen3_moe (experts, top_k, moe_inter and the
                                  mlp_types 'D' layers as mlp_only_layers come from fd_fixture_preset) */
    int64_t kv_heads, head_dim;
    int tie, attention_bias, mlp_bias;
    /* rope_type llama3 when factor > 0 */
    double factor, low_ff, high_ff;
    int64_t orig_max;
} llama_preset;

/* llama-tiny: GQA 4 heads over 2 KV heads of 16, llama3 RoPE (Llama-3.1's
 * factors; with theta 500,000 and head_dim 16 one frequency falls in the
 * smoothed band and three in the divided one), untied head. */
static const llama_preset LLAMA_TINY = {.model_type = "llama", .kv_heads = 2, .head_dim = 16, .factor = 8.0,
                                        .low_ff = 1.0, .high_ff = 4.0, .orig_max = 8192};
/* llama-small (a benchmark and long-window parity size): hidden 1024, 16
 * query heads over 4 KV heads of 64, intermediate 2,816 (down_proj K past
 * 2,048: oneDNN's 1024-wide K-blocks), 1,024-token windows (P.V in two key
 * blocks), llama3 RoPE */
static const llama_preset LLAMA_SMALL = {.model_type = "llama", .kv_heads = 4, .head_dim = 64, .factor = 8.0,
                                         .low_ff = 1.0, .high_ff = 4.0, .orig_max = 8192};
/* qwen3-tiny: GQA 4 / 2 heads of 32 (head_dim x heads != hidden, as in
 * Qwen3), q_norm / k_norm, default RoPE, tied head (Qwen3-0.6B-like). */
static const llama_preset QWEN3_TINY = {.model_type = "qwen3", .kv_heads = 2, .head_dim = 32, .tie = 1};
/* qwen3-moe-tiny: 16 experts of 32, top-4 (torch.topk's nth_element path,
 * the first 3 sorted), norm_topk_prob, layer 0 dense (mlp_only_layers [0]) */
static const llama_preset QWEN3_MOE_TINY = {.model_type = "qwen3_moe", .kv_heads = 2, .head_dim = 16};

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    const llama_preset *x = p->ext;
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

/* hidden 64, 2 layers, 4 query heads over 2 KV heads */
const fd_fixture_preset FD_LLAMA_PRESETS[] = {
    {.name = "llama-tiny", .vocab = 260, .hidden = 64, .inter = 128, .layers = 2, .heads = 4, .max_pos = 131072,
     .rope_theta = 500000.0, .mlp_types = "DD", .indexer_types = "FF", .panel_windows = 4, .panel_len = 64,
     .ext = &LLAMA_TINY, .config = config},
    {.name = "llama-small", .vocab = 260, .hidden = 1024, .inter = 2816, .layers = 2, .heads = 16, .max_pos = 131072,
     .rope_theta = 500000.0, .mlp_types = "DD", .indexer_types = "FF", .panel_windows = 2, .panel_len = 1024,
     .ext = &LLAMA_SMALL, .config = config},
    {.name = NULL},
};
const fd_fixture_preset FD_QWEN3_PRESETS[] = {
    {.name = "qwen3-tiny", .vocab = 260, .hidden = 64, .inter = 128, .layers = 2, .heads = 4, .max_pos = 40960,
     .rope_theta = 1000000.0, .mlp_types = "DD", .indexer_types = "FF", .panel_windows = 4, .panel_len = 64,
     .ext = &QWEN3_TINY, .config = config},
    {.name = NULL},
};
const fd_fixture_preset FD_QWEN3_MOE_PRESETS[] = {
    {.name = "qwen3-moe-tiny", .vocab = 260, .hidden = 64, .inter = 128, .moe_inter = 32, .layers = 2, .heads = 4,
     .experts = 16, .top_k = 4, .max_pos = 40960, .rope_theta = 1000000.0, .mlp_types = "DS", .indexer_types = "FF",
     .panel_windows = 4, .panel_len = 64, .ext = &QWEN3_MOE_TINY, .config = config},
    {.name = NULL},
};
