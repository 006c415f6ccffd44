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

typedef struct adder {
    fd_fixture_put_fn put;
    void *ctx;
} adder;

__attribute__((format(printf, 5, 6)))
static void T(const adder *a, const char *dtype, int init, const uint64_t *s, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int nd = 0;
    while (nd < 5 && s[nd]) nd++;
    a->put(a->ctx, dtype, init, nd, s, name);
}

#define S(...) ((const uint64_t[6]){__VA_ARGS__, 0})
#define N FD_INIT_NORMAL
#define ONE FD_INIT_ONES
#define Z FD_INIT_ZEROS
#define PFX "model.language_model.layers.%lld."

static void vision(const adder *a, const fd_next_preset *x)
{
    uint64_t h = (uint64_t)x->v_hidden, vi = (uint64_t)x->v_inter, o = (uint64_t)x->v_out, pi = (uint64_t)x->v_proj_inter,
             hd = h / (uint64_t)x->v_heads;
    const char *B = "BF16";
    T(a, B, N, S(h, 3, 2, 14, 14), "model.visual.patch_embed.proj.weight");
    T(a, B, Z, S(h), "model.visual.patch_embed.proj.bias");
    for (long long b = 0; b < x->v_depth; b++) {
        T(a, B, ONE, S(h), "model.visual.blocks.%lld.norm1.weight", b);
        T(a, B, ONE, S(h), "model.visual.blocks.%lld.norm2.weight", b);
        T(a, B, N, S(3 * h, h), "model.visual.blocks.%lld.attn.qkv.weight", b);
        T(a, B, Z, S(3 * h), "model.visual.blocks.%lld.attn.qkv.bias", b);
        T(a, B, N, S(h, h), "model.visual.blocks.%lld.attn.proj.weight", b);
        T(a, B, Z, S(h), "model.visual.blocks.%lld.attn.proj.bias", b);
        T(a, B, ONE, S(hd), "model.visual.blocks.%lld.attn.q_norm.weight", b);
        T(a, B, ONE, S(hd), "model.visual.blocks.%lld.attn.k_norm.weight", b);
        T(a, B, N, S(vi, h), "model.visual.blocks.%lld.mlp.gate_proj.weight", b);
        T(a, B, Z, S(vi), "model.visual.blocks.%lld.mlp.gate_proj.bias", b);
        T(a, B, N, S(vi, h), "model.visual.blocks.%lld.mlp.up_proj.weight", b);
        T(a, B, Z, S(vi), "model.visual.blocks.%lld.mlp.up_proj.bias", b);
        T(a, B, N, S(h, vi), "model.visual.blocks.%lld.mlp.down_proj.weight", b);
        T(a, B, Z, S(h), "model.visual.blocks.%lld.mlp.down_proj.bias", b);
    }
    T(a, B, ONE, S(h), "model.visual.post_layernorm.weight");
    T(a, B, N, S(o, h, 2, 2), "model.visual.downsample.weight");
    T(a, B, Z, S(o), "model.visual.downsample.bias");
    T(a, B, N, S(o, o), "model.visual.merger.proj.weight");
    T(a, B, ONE, S(o), "model.visual.merger.post_projection_norm.weight");
    T(a, B, Z, S(o), "model.visual.merger.post_projection_norm.bias");
    T(a, B, N, S(pi, o), "model.visual.merger.gate_proj.weight");
    T(a, B, N, S(pi, o), "model.visual.merger.up_proj.weight");
    T(a, B, N, S(o, pi), "model.visual.merger.down_proj.weight");
}

void fd_fixture_next_tensors(const fd_fixture_preset *p, fd_fixture_put_fn put, void *ctx)
{
    const fd_next_preset *x = p->next;
    adder A = {put, ctx}, *a = &A;
    uint64_t H = (uint64_t)p->hidden, V = (uint64_t)p->vocab, m = (uint64_t)x->hc_mult, Q = (uint64_t)(x->lin_heads * x->lin_dim),
             dl = (uint64_t)x->lin_dim, nl = (uint64_t)x->lin_heads, rq = (uint64_t)p->q_lora, rkv = (uint64_t)p->kv_lora,
             nh = (uint64_t)p->heads, dn = (uint64_t)p->dn, dv = (uint64_t)p->dv, Hi = (uint64_t)p->idx_heads,
             Di = (uint64_t)p->idx_dim, E = (uint64_t)p->experts, Im = (uint64_t)p->moe_inter, I = (uint64_t)p->inter,
             Is = Im * (uint64_t)p->shared;
    const char *B = "BF16";
    T(a, B, N, S(V, H), "lm_head.weight");
    T(a, B, N, S(V, H), "model.language_model.embed_tokens.weight");
    T(a, B, ONE, S(H), "model.language_model.norm.weight");
    for (long long n = 0; n < p->layers; n++) {
        static const char *const site[2] = {"attn", "ffn"};
        for (int s = 0; s < 2; s++) {
            T(a, B, N, S((2 + m) * m, m * H), PFX "hc_%s_fn", n, site[s]);
            T(a, B, Z, S((2 + m) * m), PFX "hc_%s_base", n, site[s]);
            T(a, B, ONE, S(3), PFX "hc_%s_scale", n, site[s]);
        }
        T(a, B, ONE, S(H), PFX "input_layernorm.weight", n);
        T(a, B, ONE, S(H), PFX "post_attention_layernorm.weight", n);
        if (x->layer_kinds[n] == 'L') {
            static const char *const qkv[3] = {"q", "k", "v"};
            for (int i = 0; i < 3; i++) {
                T(a, B, N, S(Q, H), PFX "self_attn.%s_proj.weight", n, qkv[i]);
                T(a, "F32", N, S(Q, 1, (uint64_t)x->conv_k), PFX "self_attn.%s_conv1d.weight", n, qkv[i]);
            }
            T(a, B, N, S(dl, H), PFX "self_attn.f_a_proj.weight", n);
            T(a, B, N, S(Q, dl), PFX "self_attn.f_b_proj.weight", n);
            T(a, "F32", FD_INIT_DT_BIAS, S(Q), PFX "self_attn.dt_bias", n);
            T(a, "F32", Z, S(nl), PFX "self_attn.A_log", n);
            T(a, B, N, S(nl, H), PFX "self_attn.b_proj.weight", n);
            T(a, B, N, S(dl, H), PFX "self_attn.g_a_proj.weight", n);
            T(a, B, N, S(Q, dl), PFX "self_attn.g_b_proj.weight", n);
            T(a, B, ONE, S(dl), PFX "self_attn.o_norm.weight", n);
            T(a, B, N, S(H, Q), PFX "self_attn.o_proj.weight", n);
        } else {
            T(a, B, N, S(rq, H), PFX "self_attn.q_a_proj.weight", n);
            T(a, B, ONE, S(rq), PFX "self_attn.q_a_layernorm.weight", n);
            T(a, B, N, S(nh * dn, rq), PFX "self_attn.q_b_proj.weight", n);
            T(a, B, N, S(rkv, H), PFX "self_attn.kv_a_proj_with_mqa.weight", n);
            T(a, B, ONE, S(rkv), PFX "self_attn.kv_a_layernorm.weight", n);
            T(a, B, N, S(nh * (dn + dv), rkv), PFX "self_attn.kv_b_proj.weight", n);
            T(a, B, N, S(H, nh * dv), PFX "self_attn.o_proj.weight", n);
            if (p->indexer_types[n] == 'F') {
                T(a, B, N, S(Hi * Di, rq), PFX "self_attn.indexer.wq_b.weight", n);
                T(a, B, N, S(Di, H), PFX "self_attn.indexer.wk.weight", n);
                T(a, B, ONE, S(Di), PFX "self_attn.indexer.k_norm.weight", n);
                T(a, B, Z, S(Di), PFX "self_attn.indexer.k_norm.bias", n);
                T(a, B, N, S(Hi, H), PFX "self_attn.indexer.weights_proj.weight", n);
                T(a, B, Z, S((uint64_t)x->kpool, Di), PFX "self_attn.indexer.index_kpool_compress_ape", n);
                T(a, B, ONE, S(Di, H), PFX "self_attn.indexer.index_kpool_compress_gate", n);
            }
        }
        if (p->mlp_types[n] == 'D') {
            T(a, B, N, S(I, H), PFX "mlp.gate_proj.weight", n);
            T(a, B, N, S(I, H), PFX "mlp.up_proj.weight", n);
            T(a, B, N, S(H, I), PFX "mlp.down_proj.weight", n);
            continue;
        }
        T(a, B, N, S(E, H), PFX "mlp.gate.weight", n);
        T(a, "F32", Z, S(E), PFX "mlp.gate.e_score_correction_bias", n);
        for (long long k = 0; k < (long long)E; k++) {
            T(a, B, N, S(Im, H), PFX "mlp.experts.%lld.gate_proj.weight", n, k);
            T(a, B, N, S(Im, H), PFX "mlp.experts.%lld.up_proj.weight", n, k);
            T(a, B, N, S(H, Im), PFX "mlp.experts.%lld.down_proj.weight", n, k);
        }
        T(a, B, N, S(Is, H), PFX "mlp.shared_experts.gate_proj.weight", n);
        T(a, B, N, S(Is, H), PFX "mlp.shared_experts.up_proj.weight", n);
        T(a, B, N, S(H, Is), PFX "mlp.shared_experts.down_proj.weight", n);
    }
    vision(a, x);
}

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
