/* llama, qwen3 and qwen3_moe as llama.cpp names them (engine/gguf_model.h):
 * general.architecture "llama" (convert_hf_to_gguf.py LlamaModel: q_proj /
 * k_proj rows permuted for llama.cpp's interleaved RoPE, undone here as
 * FD_GG_PERMUTE; llama3 RoPE stored as the rope_freqs.weight tensor),
 * "qwen3" (Qwen3Model: no permutation) and "qwen3moe" (Qwen3MoeModel: the
 * experts stacked, every layer sparse).  The tables map the architecture's
 * own tensor list (llama_tensors.c); the config is the config.json document
 * the metadata implies, with llama.cpp's meaning where the metadata is
 * silent (qwen3moe: norm_topk_prob true, no mlp_only_layers). */
#include "engine/arch/llama/llama_internal.h"
#include "engine/gguf_model.h"
#include "format/ggml_quants.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define P "model.layers.%L."
#define COMMON(QK)                                                                                   \
    {"model.embed_tokens.weight", "token_embd.weight", FD_GG_ROWS, NULL},                            \
    {"model.norm.weight", "output_norm.weight", FD_GG_ROWS, NULL},                                   \
    {"lm_head.weight", "output.weight", FD_GG_ROWS, NULL},                                           \
    {P "input_layernorm.weight", "blk.%L.attn_norm.weight", FD_GG_ROWS, NULL},                      \
    {P "post_attention_layernorm.weight", "blk.%L.ffn_norm.weight", FD_GG_ROWS, NULL},              \
    {P "self_attn.q_proj.weight", "blk.%L.attn_q.weight", QK, NULL},                                \
    {P "self_attn.q_proj.bias", "blk.%L.attn_q.bias", QK, NULL},                                    \
    {P "self_attn.k_proj.weight", "blk.%L.attn_k.weight", QK, NULL},                                \
    {P "self_attn.k_proj.bias", "blk.%L.attn_k.bias", QK, NULL},                                    \
    {P "self_attn.v_proj.weight", "blk.%L.attn_v.weight", FD_GG_ROWS, NULL},                        \
    {P "self_attn.v_proj.bias", "blk.%L.attn_v.bias", FD_GG_ROWS, NULL},                            \
    {P "self_attn.o_proj.weight", "blk.%L.attn_output.weight", FD_GG_ROWS, NULL},                   \
    {P "self_attn.o_proj.bias", "blk.%L.attn_output.bias", FD_GG_ROWS, NULL},                       \
    {P "self_attn.q_norm.weight", "blk.%L.attn_q_norm.weight", FD_GG_ROWS, NULL},                   \
    {P "self_attn.k_norm.weight", "blk.%L.attn_k_norm.weight", FD_GG_ROWS, NULL},                   \
    {P "mlp.gate_proj.weight", "blk.%L.ffn_gate.weight", FD_GG_ROWS, NULL},                         \
    {P "mlp.gate_proj.bias", "blk.%L.ffn_gate.bias", FD_GG_ROWS, NULL},                             \
    {P "mlp.up_proj.weight", "blk.%L.ffn_up.weight", FD_GG_ROWS, NULL},                             \
    {P "mlp.up_proj.bias", "blk.%L.ffn_up.bias", FD_GG_ROWS, NULL},                                 \
    {P "mlp.down_proj.weight", "blk.%L.ffn_down.weight", FD_GG_ROWS, NULL},                         \
    {P "mlp.down_proj.bias", "blk.%L.ffn_down.bias", FD_GG_ROWS, NULL},                             \
    {P "mlp.gate.weight", "blk.%L.ffn_gate_inp.weight", FD_GG_ROWS, NULL},                          \
    {P "mlp.experts.%E.gate_proj.weight", "blk.%L.ffn_gate_exps.weight", FD_GG_ROWS, NULL},         \
    {P "mlp.experts.%E.up_proj.weight", "blk.%L.ffn_up_exps.weight", FD_GG_ROWS, NULL},             \
    {P "mlp.experts.%E.down_proj.weight", "blk.%L.ffn_down_exps.weight", FD_GG_ROWS, NULL},         \
    {NULL, NULL, 0, NULL}

/* LlamaModel.permute on q_proj / k_proj (weights; a permuted 1-D bias is
 * refused by the view builder: only a Linear weight is rearranged) */
static const fd_gguf_name MAP_LLAMA[] = {COMMON(FD_GG_PERMUTE)};
static const fd_gguf_name MAP_QWEN3[] = {COMMON(FD_GG_ROWS)};
#undef COMMON
#undef P

enum { LLAMA, QWEN3, QWEN3MOE };

/* llama3 RoPE: LlamaModel.generate_extra_tensors writes rope_freqs.weight
 * [head_dim/2] F32 = 1 (wavelength < original/high_freq_factor), factor
 * (> original/low_freq_factor), else 1/((1-smooth)/factor + smooth).  The
 * factor is the largest entry; low 1, high 4, original 8192 are the
 * converter's own defaults (every Llama 3.x release); the whole tensor must
 * be what those parameters give (relative 1e-5: the converter computes in
 * torch float32), else refused: other parameters are not recovered. */
static int llama3(jv *d, const fd_gguf_set *s, double theta, int64_t hd, fd_err *e)
{
    const fd_gguf_tensor *g = fd_gguf_set_find(s, "rope_freqs.weight");
    if (!g) return 0;
    if (g->type != FD_GGML_F32 || g->ndim != 1 || g->ne[0] != (uint64_t)(hd / 2))
        return fd_fail(e, "bad_gguf_config", "", "%s: rope_freqs.weight is not F32 [%lld] (head_dim / 2)", s->f[0].path,
                       (long long)(hd / 2));
    size_t n = (size_t)(hd / 2);
    float *r = fd_xmalloc(n * sizeof *r);
    memcpy(r, g->data, n * sizeof *r);
    double f = 1;
    for (size_t i = 0; i < n; i++)
        if (!(r[i] >= 1 && r[i] <= 1e6)) { /* NaN too */
            double bad = r[i];
            free(r);
            return fd_fail(e, "bad_gguf_config", "", "%s: rope_freqs.weight[%zu] = %g is not a llama3 factor (1 .. 1e6)",
                           s->f[0].path, i, bad);
        }
        else if (r[i] > f) f = r[i];
    f = fd_gguf_f32_decimal(f);
    const double lo = 1, hi = 4, om = 8192;
    for (size_t i = 0; i < n; i++) {
        double freq = 1.0 / pow(theta, (double)(2 * i) / (double)hd), wl = 2 * M_PI / freq, want;
        if (wl < om / hi) want = 1;
        else if (wl > om / lo) want = f;
        else {
            double sm = (om / wl - lo) / (hi - lo);
            want = 1 / ((1 - sm) / f + sm);
        }
        if (fabs(r[i] - want) > 1e-5 * want) {
            double got = r[i];
            free(r);
            return fd_fail(e, "unsupported_gguf_rope", "", "%s: rope_freqs.weight[%zu] = %.9g, llama3 RoPE with factor %g, "
                           "low_freq_factor 1, high_freq_factor 4, original_max_position_embeddings 8192 (the converter's "
                           "defaults) gives %.9g: other llama3 parameters are not recovered from a GGUF", s->f[0].path, i, got,
                           f, want);
        }
    }
    free(r);
    if (f == 1) return 0; /* every dimension unscaled: the default RoPE */
    jv *rp = jv_obj();
    jv_set(rp, "rope_type", jv_str("llama3"));
    jv_set(rp, "rope_theta", jv_float(theta));
    jv_set(rp, "factor", jv_float(f));
    jv_set(rp, "low_freq_factor", jv_float(lo));
    jv_set(rp, "high_freq_factor", jv_float(hi));
    jv_set(rp, "original_max_position_embeddings", jv_int((int64_t)om));
    jv_set(d, "rope_parameters", rp);
    return 0;
}

static jv *config(const fd_gguf_set *s, const char *arch, int kind, fd_err *e)
{
    jv *d = jv_obj();
    static const struct { const char *key, *field; } INTS[] = {
        {"block_count", "num_hidden_layers"},
        {"embedding_length", "hidden_size"},
        {"feed_forward_length", "intermediate_size"},
        {"attention.head_count", "num_attention_heads"},
        {"context_length", "max_position_embeddings"},
    };
    int64_t v, nh, nkv, H, hd, vocab, r;
    for (size_t i = 0; i < sizeof INTS / sizeof *INTS; i++) {
        if (fd_gguf_cfg_int(s, arch, INTS[i].key, &v, e)) return fd_gguf_cfg_fail(d);
        jv_set(d, INTS[i].field, jv_int(v));
    }
    jv_get_i64(d, "num_attention_heads", &nh);
    jv_get_i64(d, "hidden_size", &H);
    if (nh < 1) return fd_gguf_cfg_contradicts(d, s, arch, "attention.head_count", nh, 1, "a model with attention", e);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.head_count_kv", &nkv, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) nkv = nh; /* llama.cpp: absent = head_count */
    jv_set(d, "num_key_value_heads", jv_int(nkv));
    /* head_dim: attention.key_length (= value_length), else hidden / heads */
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.key_length", &hd, e)) < 0) return fd_gguf_cfg_fail(d);
    if (r) hd = H / nh;
    if ((r = fd_gguf_cfg_int_opt(s, arch, "attention.value_length", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != hd) return fd_gguf_cfg_contradicts(d, s, arch, "attention.value_length", v, hd, "attention.key_length", e);
    if ((r = fd_gguf_cfg_int_opt(s, arch, "rope.dimension_count", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && v != hd) return fd_gguf_cfg_contradicts(d, s, arch, "rope.dimension_count", v, hd, "head_dim (rotary over the whole head)", e);
    jv_set(d, "head_dim", jv_int(hd));
    /* vocab: the embedding's rows; vocab_size when written must agree */
    vocab = fd_gguf_rows(s, "token_embd.weight");
    if ((r = fd_gguf_cfg_int_opt(s, arch, "vocab_size", &v, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r && vocab && v != vocab) return fd_gguf_cfg_contradicts(d, s, arch, "vocab_size", v, vocab, "token_embd.weight's rows", e);
    jv_set(d, "vocab_size", jv_int(vocab ? vocab : r ? 0 : v));
    double f;
    if (fd_gguf_cfg_num(s, arch, "attention.layer_norm_rms_epsilon", &f, e)) return fd_gguf_cfg_fail(d);
    jv_set(d, "rms_norm_eps", jv_float(fd_gguf_f32_decimal(f)));
    double theta = 10000.0;
    if ((r = fd_gguf_cfg_num_opt(s, arch, "rope.freq_base", &f, e)) < 0) return fd_gguf_cfg_fail(d);
    if (!r) theta = fd_gguf_f32_decimal(f);
    jv_set(d, "rope_theta", jv_float(theta));
    if (fd_gguf_cfg_rope_none(s, arch, "the engine reads default and llama3 RoPE only", e)) return fd_gguf_cfg_fail(d);
    if (kind == LLAMA && llama3(d, s, theta, hd, e)) return fd_gguf_cfg_fail(d);
    if (kind != LLAMA && fd_gguf_set_find(s, "rope_freqs.weight"))
        return fd_gguf_cfg_fail((fd_fail(e, "bad_gguf_config", "", "%s: rope_freqs.weight in a %s GGUF (llama.cpp reads none)",
                             s->f[0].path, arch), d));
    jv_set(d, "tie_word_embeddings", jv_bool(fd_gguf_set_find(s, "output.weight") == NULL));
    jv_set(d, "attention_bias", jv_bool(fd_gguf_set_find(s, "blk.0.attn_q.bias") != NULL));
    if (kind == LLAMA) jv_set(d, "mlp_bias", jv_bool(fd_gguf_set_find(s, "blk.0.ffn_gate.bias") != NULL));
    if (kind == QWEN3MOE) {
        static const struct { const char *key, *field; } MOE[] = {
            {"expert_count", "num_experts"},
            {"expert_used_count", "num_experts_per_tok"},
            {"expert_feed_forward_length", "moe_intermediate_size"},
        };
        for (size_t i = 0; i < sizeof MOE / sizeof *MOE; i++) {
            if (fd_gguf_cfg_int(s, arch, MOE[i].key, &v, e)) return fd_gguf_cfg_fail(d);
            jv_set(d, MOE[i].field, jv_int(v));
        }
        /* llama.cpp's qwen3moe: softmax routing, the top-k weights renormalised
         * (build_moe_ffn norm_w = true), every layer sparse */
        if ((r = fd_gguf_cfg_int_opt(s, arch, "expert_gating_func", &v, e)) < 0) return fd_gguf_cfg_fail(d);
        if (!r && v != 1) return fd_gguf_cfg_contradicts(d, s, arch, "expert_gating_func", v, 1, "qwen3_moe's softmax router", e);
        char k[160];
        snprintf(k, sizeof k, "%s.expert_weights_norm", arch);
        const fd_gguf_kv *kv;
        if ((kv = fd_gguf_get(&s->f[0], k)) && (kv->type != FD_GGUF_BOOL || !kv->v.u))
            return fd_gguf_cfg_fail((fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is not true (llama.cpp's qwen3moe always "
                                 "renormalises the top-k weights)", s->f[0].path, k), d));
        jv_set(d, "norm_topk_prob", jv_bool(1));
        jv_set(d, "decoder_sparse_step", jv_int(1));
        jv_set(d, "mlp_only_layers", jv_arr());
    }
    return d;
}

static jv *config_llama(const fd_gguf_set *s, const char *arch, fd_err *e) { return config(s, arch, LLAMA, e); }
static jv *config_qwen3(const fd_gguf_set *s, const char *arch, fd_err *e) { return config(s, arch, QWEN3, e); }
static jv *config_qwen3moe(const fd_gguf_set *s, const char *arch, fd_err *e) { return config(s, arch, QWEN3MOE, e); }

/* config()'s inverse: the keys LlamaModel / Qwen3Model / Qwen3MoeModel (and
 * TextModel.set_gguf_parameters) write; what the reader cannot recover is
 * refused: a permuted q/k bias, llama3 RoPE with parameters other than the
 * converter's defaults, a qwen3_moe with dense layers or without top-k
 * renormalisation. */
static int write_kv(const fd_glm_config *c, fd_gguf_kvw *w, int kind, fd_err *e)
{
    const fd_llama_ext *x = LX(c);
    if (kind == LLAMA && c->attention_bias)
        return fd_fail(e, "gguf_write_unsupported", "", "llama GGUF: attention_bias (the converter permutes q/k rows, "
                       "and a permuted bias is not read back)");
    if (kind == LLAMA && !strcmp(c->rope_type, "llama3") &&
        (x->low_ff != 1 || x->high_ff != 4 || x->orig_max != 8192))
        return fd_fail(e, "gguf_write_unsupported", "", "llama GGUF: llama3 RoPE with low_freq_factor %g, high_freq_factor "
                       "%g, original_max_position_embeddings %g: a GGUF reader recovers only the converter's defaults "
                       "(1, 4, 8192)", x->low_ff, x->high_ff, x->orig_max);
    if (kind == QWEN3MOE) {
        for (int64_t l = 0; l < c->num_hidden_layers; l++)
            if (!c->mlp_sparse[l])
                return fd_fail(e, "gguf_write_unsupported", "", "qwen3moe GGUF: layer %lld is dense (llama.cpp's qwen3moe "
                               "has every layer sparse)", (long long)l);
        if (!c->norm_topk_prob)
            return fd_fail(e, "gguf_write_unsupported", "", "qwen3moe GGUF: norm_topk_prob false (llama.cpp's qwen3moe "
                           "always renormalises the top-k weights)");
    }
    fd_gguf_kv_text_model(w, c, c->num_key_value_heads);
    if (kind == QWEN3MOE) {
        fd_gguf_kv_u32(w, "expert_count", c->n_routed_experts);
        fd_gguf_kv_u32(w, "expert_used_count", c->num_experts_per_tok);
    }
    fd_gguf_kv_u32(w, "attention.key_length", c->head_dim);
    fd_gguf_kv_u32(w, "attention.value_length", c->head_dim);
    if (kind == QWEN3MOE) fd_gguf_kv_u32(w, "expert_feed_forward_length", c->moe_intermediate_size);
    if (kind == LLAMA) {
        fd_gguf_kv_u32(w, "vocab_size", c->vocab_size);
        fd_gguf_kv_u32(w, "rope.dimension_count", c->head_dim);
    }
    return 0;
}

static int write_kv_llama(const fd_glm_config *c, fd_gguf_kvw *w, fd_err *e) { return write_kv(c, w, LLAMA, e); }
static int write_kv_qwen3(const fd_glm_config *c, fd_gguf_kvw *w, fd_err *e) { return write_kv(c, w, QWEN3, e); }
static int write_kv_qwen3moe(const fd_glm_config *c, fd_gguf_kvw *w, fd_err *e) { return write_kv(c, w, QWEN3MOE, e); }

/* rope_freqs.weight of a llama3 config as LlamaModel.generate_extra_tensors
 * computes it in float32 (1, factor, or the smoothed factor per frequency;
 * torch's pow may differ from powf in the last place of a smoothed entry,
 * which config() reads within 1e-5) */
static int write_aux(const fd_glm_config *c, const char *name, float **data, uint64_t *n, fd_err *e)
{
    (void)e;
    *data = NULL, *n = 0;
    if (strcmp(name, "rope_freqs.weight") || strcmp(c->rope_type, "llama3")) return 0;
    const fd_llama_ext *x = LX(c);
    uint64_t half = (uint64_t)c->head_dim / 2;
    float *r = fd_xmalloc(half * sizeof *r + 4), dim = (float)c->head_dim, lo = (float)x->low_ff, hi = (float)x->high_ff,
          f = (float)x->factor, om = (float)x->orig_max, hw = (float)(x->orig_max / x->high_ff),
          lw = (float)(x->orig_max / x->low_ff);
    for (uint64_t i = 0; i < half; i++) {
        float fr = 1.0f / powf((float)c->rope_theta, (float)(2 * i) / dim), wl = (float)(2 * M_PI) / fr;
        if (wl < hw) r[i] = 1.0f;
        else if (wl > lw) r[i] = f;
        else {
            float sm = (om / wl - lo) / (hi - lo);
            r[i] = 1.0f / ((1.0f - sm) / f + sm);
        }
    }
    *data = r, *n = half;
    return 0;
}

static const char *const N_LLAMA[] = {"llama", NULL}, *const N_QWEN3[] = {"qwen3", NULL},
                         *const N_QWEN3MOE[] = {"qwen3moe", NULL}, *const AUX_LLAMA[] = {"rope_freqs.weight", NULL};

const fd_gguf_arch FD_GGUF_LLAMA = {N_LLAMA, MAP_LLAMA, config_llama, AUX_LLAMA, write_kv_llama, write_aux};
const fd_gguf_arch FD_GGUF_QWEN3 = {N_QWEN3, MAP_QWEN3, config_qwen3, NULL, write_kv_qwen3, NULL};
const fd_gguf_arch FD_GGUF_QWEN3MOE = {N_QWEN3MOE, MAP_QWEN3, config_qwen3moe, NULL, write_kv_qwen3moe, NULL};
