#include "capture/qscope.h"
#include "engine/weights_quant.h"
#include "format/digest.h"
#include "format/ggml_quants.h"
#include "util/buf.h"
#include <stdio.h>
#include <string.h>

static const char *const CLASSES[] = {"embed_tokens", "attn.qkv", "attn.o", "attn.other", "mlp.gate",
                                      "mlp.up", "mlp.down", "moe.router", "moe.experts", "moe.shared_expert",
                                      "mtp", "norm", "lm_head", "kv_cache", "activations", "other"};
enum { NCLASS = sizeof CLASSES / sizeof *CLASSES };

/* Layer index after "layers.", or -1. */
static long long layer_index(const char *name)
{
    const char *p = strstr(name, "layers.");
    if (!p) return -1;
    p += 7;
    long long v = 0;
    int nd = 0;
    while (*p >= '0' && *p <= '9' && nd < 12) { v = v * 10 + (*p++ - '0'); nd++; }
    return nd && *p == '.' ? v : -1;
}

static int has(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

const char *fd_tensor_class(const char *n, int64_t L)
{
    if (!strcmp(n, "model.embed_tokens.weight")) return "embed_tokens";
    if (!strcmp(n, "lm_head.weight")) return "lm_head";
    long long li = layer_index(n);
    if ((li >= 0 && li >= L) || has(n, ".eh_proj.") || has(n, ".enorm.") || has(n, ".hnorm.") || has(n, ".shared_head."))
        return "mtp";
    if (has(n, "mlp.gate.weight") || has(n, "mlp.gate.e_score_correction_bias")) return "moe.router";
    /* minimax_m2's on-disk spelling (block_sparse_moe.gate, .e_score_correction_bias, .experts.X.w1/w2/w3) */
    if (has(n, "block_sparse_moe.gate.weight") || has(n, "block_sparse_moe.e_score_correction_bias")) return "moe.router";
    if (has(n, "mlp.experts.") || has(n, "block_sparse_moe.experts.")) return "moe.experts";
    if (has(n, "mlp.shared_experts.")) return "moe.shared_expert";
    if (has(n, "mlp.gate_proj.weight")) return "mlp.gate";
    if (has(n, "mlp.up_proj.weight")) return "mlp.up";
    if (has(n, "mlp.down_proj.weight")) return "mlp.down";
    static const char *const QKV[] = {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "q_proj", "k_proj", "v_proj"};
    for (size_t i = 0; i < sizeof QKV / sizeof *QKV; i++) {
        char pat[64];
        snprintf(pat, sizeof pat, "self_attn.%s.weight", QKV[i]);
        if (has(n, pat)) return "attn.qkv";
    }
    if (has(n, "self_attn.o_proj.weight")) return "attn.o";
    if (has(n, "self_attn.")) return "attn.other";
    if (!strcmp(n, "model.norm.weight") || has(n, "layernorm") || has(n, ".norm.")) return "norm";
    return "other";
}

/* a GGUF tensor of a quantized ggml type (its head too) */
static const fd_ggml_type *gguf_quant(const fd_weights *W, const fd_tensor *t)
{
    const fd_ggml_type *g = W->gguf ? fd_ggml_type_of(t->gtype) : NULL;
    return g && g->quantized ? g : NULL;
}

static const char *tensor_format(const fd_weights *W, const fd_tensor *t)
{
    const fd_ggml_type *g = gguf_quant(W, t);
    if (g) return g->name; /* ggml's name, lowercased in the block */
    if (t->qfmt == FD_Q_CT_PACK)
        return t->ct.dense == FD_CT_DENSE_FP8 ? "fp8_e4m3" : t->ct.dense == FD_CT_NVFP4 ? "nvfp4"
             : t->ct.dense == FD_CT_MXFP4 ? "mxfp4" : fd_q_int_format(t->ct.bits);
    if (t->qfmt) return fd_q_format(t->qfmt);
    if (!strcmp(t->dtype, "BF16")) return "bf16";
    if (!strcmp(t->dtype, "F32")) return "fp32";
    if (!strcmp(t->dtype, "F16")) return "fp16";
    return "unknown";
}

static int64_t format_bits(const char *f)
{
    return !strcmp(f, "fp32") ? 32 : !strcmp(f, "fp8_e4m3") || !strcmp(f, "int8") ? 8
         : !strcmp(f, "nvfp4") || !strcmp(f, "mxfp4") || !strcmp(f, "int4") ? 4 : !strcmp(f, "unknown") ? -1 : 16;
}

/* a ggml type by its exact (upper-case) name: tensor_format's GGUF formats */
static const fd_ggml_type *ggml_format(const char *f)
{
    const fd_ggml_type *g = fd_ggml_type_named(f);
    return g && !strcmp(g->name, f) && g->quantized ? g : NULL;
}

static int is_quantized(const char *f)
{
    return !strcmp(f, "fp8_e4m3") || !strcmp(f, "nvfp4") || !strcmp(f, "mxfp4") || !strcmp(f, "int8") || !strcmp(f, "int4") ||
           !strcmp(f, "gptq") || !strcmp(f, "awq") || !strcmp(f, "mlx-affine") || ggml_format(f);
}

/* a ggml type's nominal bits: block bytes x 8 / block elements (Q4_K 4.5) */
static jv *bits_of(const char *f)
{
    const fd_ggml_type *g = ggml_format(f);
    if (!g) return NULL;
    double b = (double)g->tsize * 8.0 / g->blck;
    return b == (double)(int64_t)b ? jv_int((int64_t)b) : jv_float(b);
}

jv *fd_qscope_derive(const fd_weights *W, const fd_glm_config *c)
{
    const char *fmt[NCLASS] = {0};
    int64_t tbits[NCLASS] = {0};
    int mixed[NCLASS] = {0}, quant[NCLASS] = {0};
    for (size_t i = 0; i < W->n; i++) {
        const fd_tensor *t = &W->t[i];
        if (fd_wq_is_companion(W, t->name)) continue;
        const char *cl = fd_tensor_class(t->name, c->num_hidden_layers), *f = tensor_format(W, t);
        size_t k = 0;
        while (strcmp(CLASSES[k], cl)) k++;
        int64_t b = t->qfmt == FD_Q_GPTQ || t->qfmt == FD_Q_AWQ || t->qfmt == FD_Q_MLX ? t->ct.bits : format_bits(f);
        if (!fmt[k]) { fmt[k] = f; tbits[k] = b; }
        else if (strcmp(fmt[k], f) || tbits[k] != b) mixed[k] = 1;
        quant[k] |= is_quantized(f);
    }
    if (!fmt[12] && fmt[0]) { fmt[12] = fmt[0]; mixed[12] = mixed[0]; quant[12] = quant[0]; tbits[12] = tbits[0]; } /* tied head */
    jv *s = jv_obj(), *as = jv_arr();
    int anyq = 0;
    for (size_t k = 0; k < NCLASS; k++) {
        if (!fmt[k]) continue;
        jv *a = jv_obj();
        int64_t bits = mixed[k] ? -1 : tbits[k];
        jv *gb = mixed[k] ? NULL : bits_of(fmt[k]);
        char low[32];
        size_t n = 0;
        for (const char *p = mixed[k] ? "mixed" : fmt[k]; *p && n + 1 < sizeof low; p++)
            low[n++] = gb && *p >= 'A' && *p <= 'Z' ? (char)(*p - 'A' + 'a') : *p;
        low[n] = 0;
        jv_set(a, "tensor_class", jv_str(CLASSES[k]));
        jv_set(a, "treatment", jv_str(quant[k] ? "quantized" : "native"));
        jv_set(a, "format", jv_str(low));
        jv_set(a, "bits_per_weight", gb ? gb : bits < 0 ? jv_null() : jv_int(bits));
        jv_set(a, "layer_range", jv_null());
        jv_push(as, a);
        anyq |= quant[k];
    }
    jv_set(s, "policy", jv_str(anyq ? "mixed" : "native"));
    jv_set(s, "head_policy", jv_str(quant[12] ? "quantized" : "native"));
    jv_set(s, "kv_cache_dtype", jv_str("bf16"));
    jv_set(s, "assignments", as);
    fd_buf d = {0};
    fd_err e;
    if (!fd_scope_digest(s, &d, &e)) jv_set(s, "scope_digest", jv_strn(d.p, d.n));
    fd_buf_free(&d);
    return s;
}
