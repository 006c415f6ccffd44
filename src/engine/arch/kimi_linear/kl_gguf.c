/* kimi_linear as llama.cpp names it: general.architecture "kimi-linear"
 * (conversion/kimi_linear.py KimiLinearModel of the llama-cpp-python 0.3.36
 * sdist; docs/QUANT-FORMATS.md "GGUF: rewrites read as stored").  The tensor
 * names are the deepseek2 family's (engine/gguf_ds2map.c, which lists the KDA
 * ones too).  The converter's rewrites:
 *   - the routed experts stacked [E, rows, cols] (ffn_*_exps): views;
 *   - kv_b_proj split into attn_k_b (transposed) and attn_v_b: rebuilt
 *     exactly (FD_GG_KV_B);
 *   - the KDA conv1d reshaped [C, 1, K] -> [1, C, 1, K] and stored F32 (a
 *     bf16 value widened: exact): read in place (FD_GG_RESHAPE);
 *   - dt_bias renamed ssm_dt.bias;
 *   - A_log stored as ssm_a = -exp(A_log), computed by torch in float32 on
 *     the bf16 parameter widened (the converter widens every bf16 tensor
 *     before modify_tensors), stored F32: no bit-exact inverse, so the
 *     forward reads the file as it defines the model (fd_arch.gguf_stored):
 *     exp(A_log) = -ssm_a (kimi_linear.c), disclosed
 *     gguf_converter_rewrite_as_stored.
 * The config is the config.json document the metadata implies; where the
 * metadata is silent it takes llama.cpp's kimi-linear graph's meaning: the
 * router sigmoid with the top-k weights renormalised (build_moe_ffn norm_w
 * true), one expert group, no RoPE (LLAMA_ROPE_TYPE_NONE).  The converter
 * writes attention.value_length from the config's head_dim (not a width of
 * this model's MLA): read by neither llama.cpp's kimi-linear nor this. */
#include "engine/arch/deepseek_v3/ds3.h"
#include "engine/gguf_model.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static jv *refuse(jv *d, const fd_gguf_set *s, const char *arch, const char *key, const char *why, fd_err *e)
{
    fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s.%s %s", s->f[0].path, arch, key, why);
    return fd_gguf_cfg_fail(d);
}

static jv *types(int64_t L, const unsigned char *v, const char *yes, const char *no)
{
    jv *a = jv_arr();
    for (int64_t i = 0; i < L; i++) jv_push(a, jv_str(v[i] ? yes : no));
    return a;
}

static jv *config(const fd_gguf_set *s, const char *arch, fd_err *e)
{
    jv *d = jv_obj();
    static const struct { const char *key, *field; } INTS[] = {
        {"embedding_length", "hidden_size"},
        {"feed_forward_length", "intermediate_size"},
        {"expert_feed_forward_length", "moe_intermediate_size"},
        {"attention.head_count", "num_attention_heads"},
        {"attention.kv_lora_rank", "kv_lora_rank"},
        {"attention.value_length_mla", "v_head_dim"},
        {"expert_count", "n_routed_experts"},
        {"expert_shared_count", "n_shared_experts"},
        {"expert_used_count", "num_experts_per_tok"},
        {"context_length", "max_position_embeddings"},
        {"ssm.conv_kernel", "linear_conv_kernel_dim"},
        {"kda.head_dim", "linear_head_dim"},
    };
    int64_t v, L, nh, rkv, dr, kml, dense;
    int r;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        if (v < 1) return fd_gguf_cfg_contradicts(d, s, arch, INTS[i].key, v, 1, "a non-empty model", e);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    jv_get_i64(d, "num_attention_heads", &nh);
    jv_get_i64(d, "kv_lora_rank", &rkv);
    jv_set(d, "num_key_value_heads", jv_int(nh));
    jv_set(d, "linear_num_heads", jv_int(nh)); /* llama.cpp's KDA runs n_head heads (ssm_a {1, n_head}) */
    /* MLA: rope dims (applied to no position: kimi-linear has no RoPE) and the nope part */
    if (fd_gguf_cfg_int(s, arch, "rope.dimension_count", &dr, e) || fd_gguf_cfg_int(s, arch, "attention.key_length_mla", &kml, e))
        return fd_gguf_cfg_fail(d);
    if (kml <= dr) return fd_gguf_cfg_contradicts(d, s, arch, "attention.key_length_mla", kml, dr + 1, "rope.dimension_count + 1", e);
    jv_set(d, "qk_rope_head_dim", jv_int(dr));
    jv_set(d, "qk_nope_head_dim", jv_int(kml - dr));
    if (fd_gguf_cfg_int(s, arch, "attention.key_length", &v, e)) return fd_gguf_cfg_fail(d);
    if (v != rkv + dr) return fd_gguf_cfg_contradicts(d, s, arch, "attention.key_length", v, rkv + dr, "kv_lora_rank + rope dims", e);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.q_lora_rank", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    jv_set(d, "q_lora_rank", r ? jv_null() : jv_int(v));
    /* block_count; MTP blocks past the trunk (none in Kimi Linear) are ignored as transformers ignores them */
    if (fd_gguf_cfg_int(s, arch, "block_count", &L, e)) return fd_gguf_cfg_fail(d);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "nextn_predict_layers", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v >= L) return fd_gguf_cfg_contradicts(d, s, arch, "nextn_predict_layers", v, L - 1, "block_count leaves at most", e);
    if (!r) L -= v;
    if (L < 1) return fd_gguf_cfg_contradicts(d, s, arch, "block_count", L, 1, "a non-empty model", e);
    jv_set(d, "num_hidden_layers", jv_int(L));
    int64_t vocab = fd_gguf_rows(s, "token_embd.weight");
    if ((r = fd_gguf_cfg_int_opt(s, arch, "vocab_size", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != vocab) return fd_gguf_cfg_contradicts(d, s, arch, "vocab_size", v, vocab, "token_embd.weight's rows", e);
    jv_set(d, "vocab_size", jv_int(vocab));
    /* layer kinds: head_count_kv per block, 0 on a KDA block, 1 (MLA as MQA) on a full-attention one */
    const fd_gguf_kv *kv = fd_gguf_cfg_array(s, arch, "attention.head_count_kv", L, 0, e);
    if (!kv) return fd_gguf_cfg_fail(d);
    unsigned char *full = fd_xcalloc((size_t)L + 1, 1);
    for (int64_t i = 0; i < L; i++) {
        double x = fd_gguf_cfg_elem(kv, (uint64_t)i);
        if (x != 0 && x != 1) {
            free(full);
            return refuse(d, s, arch, "attention.head_count_kv", "has an entry other than 0 (KDA) or 1 (MLA as MQA)", e);
        }
        full[i] = x == 1;
    }
    jv_set(d, "layer_types", types(L, full, "full_attention", "linear_attention"));
    if (fd_gguf_cfg_int(s, arch, "leading_dense_block_count", &dense, e)) { free(full); return fd_gguf_cfg_fail(d); }
    if (dense > L) { free(full); return fd_gguf_cfg_contradicts(d, s, arch, "leading_dense_block_count", dense, L, "block_count", e); }
    for (int64_t i = 0; i < L; i++) full[i] = i >= dense;
    jv_set(d, "mlp_layer_types", types(L, full, "sparse", "dense"));
    jv_set(d, "first_k_dense_replace", jv_int(dense));
    free(full);
    /* expert groups: absent = one group (the converter finds no n_group in a Kimi config) */
    static const struct { const char *key, *field; } GROUPS[] = {
        {"expert_group_count", "n_group"},
        {"expert_group_used_count", "topk_group"},
    };
    for (size_t i = 0; i < sizeof GROUPS / sizeof *GROUPS; i++) {
        if ((r = fd_gguf_cfg_int_opt(s, arch, GROUPS[i].key, &v, e)) < 0) return fd_gguf_cfg_fail(d);
        if (!r && v < 1) return fd_gguf_cfg_contradicts(d, s, arch, GROUPS[i].key, v, 1, "a non-empty model", e);
        jv_set(d, GROUPS[i].field, jv_int(r ? 1 : v));
    }
    /* the router: sigmoid (the only one transformers' KimiLinear has; the converter writes no gating key) */
    if ((r = fd_gguf_cfg_int_opt(s, arch, "expert_gating_func", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != 2) return fd_gguf_cfg_contradicts(d, s, arch, "expert_gating_func", v, 2, "kimi_linear's sigmoid router", e);
    /* renormalised top-k weights: llama.cpp's kimi-linear graph always renormalises */
    char k[160];
    snprintf(k, sizeof k, "%s.expert_weights_norm", arch);
    const fd_gguf_kv *nk = fd_gguf_get(&s->f[0], k);
    if (nk && (nk->type != FD_GGUF_BOOL || !nk->v.u))
        return refuse(d, s, arch, "expert_weights_norm", "is not true (llama.cpp's kimi-linear renormalises the top-k weights)", e);
    jv_set(d, "moe_renormalize", jv_bool(1));
    double f;
    if (fd_gguf_cfg_num(s, arch, "attention.layer_norm_rms_epsilon", &f, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "rms_norm_eps", jv_float(fd_gguf_f32_decimal(f)));
    if (fd_gguf_cfg_num(s, arch, "expert_weights_scale", &f, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "routed_scaling_factor", jv_float(fd_gguf_f32_decimal(f)));
    if (fd_gguf_cfg_rope_none(s, arch, "kimi_linear's MLA applies no RoPE", e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "tie_word_embeddings", jv_bool(fd_gguf_set_find(s, "output.weight") == NULL));
    jv_set(d, "attention_bias", jv_bool(0));
    jv_set(d, "hidden_act", jv_str("silu"));
    return d;
}

static const char *const NAMES[] = {"kimi-linear", NULL};
const fd_gguf_arch FD_GGUF_KIMI_LINEAR = {NAMES, FD_GGUF_DS2_MAP, config, NULL, NULL, NULL};
const fd_gguf_stored FD_GGUF_KL_STORED = {NULL, FD_GGUF_KDA_STORED};
