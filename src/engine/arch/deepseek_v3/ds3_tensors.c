/* The tensor set of a deepseek_v3 checkpoint as DeepseekV3ForCausalLM
 * (transformers 5.25) saves it: the one list the loader's check and the
 * fixture writer read (engine/model.h), under the architecture's prefix
 * (model. here, language_model.model. for kimi_k25).  MTP layers (layers.N for N >=
 * num_hidden_layers) are not listed: the loader reports them as ignored, as
 * transformers ignores them. */
#include "engine/arch/deepseek_v3/ds3.h"
#include <stdarg.h>
#include <stdio.h>

typedef struct ex {
    fd_tensor_fn f;
    void *ctx;
} ex;

#define N FD_INIT_NORMAL
#define ONE FD_INIT_ONES
#define Z FD_INIT_ZEROS

__attribute__((format(printf, 8, 9)))
static void T(const ex *x, const char *dtype, int init, int ndim, uint64_t a, uint64_t b, uint64_t c, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    fd_tensor_spec t = {name, dtype, init, 0, ndim, {a, b, c, 0, 0}};
    x->f(x->ctx, &t);
}

static void attention(const ex *x, const fd_glm_config *c, long long n)
{
    uint64_t H = (uint64_t)c->hidden_size, rq = (uint64_t)c->q_lora_rank, rkv = (uint64_t)c->kv_lora_rank,
             nh = (uint64_t)c->num_attention_heads, dn = (uint64_t)c->qk_nope_head_dim, dr = (uint64_t)c->qk_rope_head_dim,
             dv = (uint64_t)c->v_head_dim;
    const char *B = "BF16";
    char p[64];
    snprintf(p, sizeof p, "%slayers.", c->arch->prefix);
    T(x, B, ONE, 1, H, 0, 0, "%s%lld.input_layernorm.weight", p, n);
    T(x, B, ONE, 1, H, 0, 0, "%s%lld.post_attention_layernorm.weight", p, n);
    if (DS3(c)->kda && DS3(c)->kda[n]) return; /* kimi_linear's KDA layer: its own list (arch/kimi_linear/) */
    if (DS3(c)->q_lora) {
        T(x, B, N, 2, rq, H, 0, "%s%lld.self_attn.q_a_proj.weight", p, n);
        T(x, B, ONE, 1, rq, 0, 0, "%s%lld.self_attn.q_a_layernorm.weight", p, n);
        T(x, B, N, 2, nh * (dn + dr), rq, 0, "%s%lld.self_attn.q_b_proj.weight", p, n);
        if (c->attention_bias) T(x, B, Z, 1, rq, 0, 0, "%s%lld.self_attn.q_a_proj.bias", p, n);
    } else
        T(x, B, N, 2, nh * (dn + dr), H, 0, "%s%lld.self_attn.q_proj.weight", p, n);
    T(x, B, N, 2, rkv + dr, H, 0, "%s%lld.self_attn.kv_a_proj_with_mqa.weight", p, n);
    T(x, B, ONE, 1, rkv, 0, 0, "%s%lld.self_attn.kv_a_layernorm.weight", p, n);
    T(x, B, N, 2, nh * (dn + dv), rkv, 0, "%s%lld.self_attn.kv_b_proj.weight", p, n);
    T(x, B, N, 2, H, nh * dv, 0, "%s%lld.self_attn.o_proj.weight", p, n);
    if (c->attention_bias) {
        T(x, B, Z, 1, rkv + dr, 0, 0, "%s%lld.self_attn.kv_a_proj_with_mqa.bias", p, n);
        T(x, B, Z, 1, H, 0, 0, "%s%lld.self_attn.o_proj.bias", p, n);
    }
    if (!DS3(c)->dsa) return;
    uint64_t Hi = (uint64_t)c->index_n_heads, Di = (uint64_t)c->index_head_dim;
    T(x, B, N, 2, Hi * Di, rq, 0, "%s%lld.self_attn.indexer.wq_b.weight", p, n);
    T(x, B, N, 2, Di, H, 0, "%s%lld.self_attn.indexer.wk.weight", p, n);
    T(x, B, ONE, 1, Di, 0, 0, "%s%lld.self_attn.indexer.k_norm.weight", p, n);
    T(x, B, Z, 1, Di, 0, 0, "%s%lld.self_attn.indexer.k_norm.bias", p, n);
    T(x, B, N, 2, Hi, H, 0, "%s%lld.self_attn.indexer.weights_proj.weight", p, n);
}

static void mlp(const ex *x, const fd_glm_config *c, fd_weights *w, long long n)
{
    uint64_t H = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size, Im = (uint64_t)c->moe_intermediate_size,
             E = (uint64_t)c->n_routed_experts, Is = Im * (uint64_t)c->n_shared_experts;
    const char *B = "BF16";
    char p[64];
    snprintf(p, sizeof p, "%slayers.", c->arch->prefix);
    if (!c->mlp_sparse[n]) {
        T(x, B, N, 2, I, H, 0, "%s%lld.mlp.gate_proj.weight", p, n);
        T(x, B, N, 2, I, H, 0, "%s%lld.mlp.up_proj.weight", p, n);
        T(x, B, N, 2, H, I, 0, "%s%lld.mlp.down_proj.weight", p, n);
        return;
    }
    /* _keep_in_fp32_modules_strict: save_pretrained writes the router weight
     * F32 (the loader also takes the BF16 of released checkpoints) */
    T(x, "F32", N, 2, E, H, 0, "%s%lld.mlp.gate.weight", p, n);
    char name[128];
    snprintf(name, sizeof name, "%s%lld.mlp.gate.e_score_correction_bias", p, n);
    fd_tensor_spec b = {name, "F32", Z, 1, 1, {E, 0, 0, 0, 0}}; /* the loader accepts F32 only */
    x->f(x->ctx, &b);
    char probe[128];
    snprintf(probe, sizeof probe, "%s%lld.mlp.experts.gate_up_proj", p, n);
    int fused = w && fd_weights_get(w, probe) != NULL;
    if (w) w->fused[n] = (unsigned char)fused;
    if (fused) {
        T(x, B, N, 3, E, 2 * Im, H, "%s%lld.mlp.experts.gate_up_proj", p, n);
        T(x, B, N, 3, E, H, Im, "%s%lld.mlp.experts.down_proj", p, n);
    } else
        for (uint64_t k = 0; k < E; k++) {
            T(x, B, N, 2, Im, H, 0, "%s%lld.mlp.experts.%llu.gate_proj.weight", p, n, (unsigned long long)k);
            T(x, B, N, 2, Im, H, 0, "%s%lld.mlp.experts.%llu.up_proj.weight", p, n, (unsigned long long)k);
            T(x, B, N, 2, H, Im, 0, "%s%lld.mlp.experts.%llu.down_proj.weight", p, n, (unsigned long long)k);
        }
    T(x, B, N, 2, Is, H, 0, "%s%lld.mlp.shared_experts.gate_proj.weight", p, n);
    T(x, B, N, 2, Is, H, 0, "%s%lld.mlp.shared_experts.up_proj.weight", p, n);
    T(x, B, N, 2, H, Is, 0, "%s%lld.mlp.shared_experts.down_proj.weight", p, n);
}

void fd_ds3_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx)
{
    ex x = {f, ctx};
    uint64_t H = (uint64_t)c->hidden_size, V = (uint64_t)c->vocab_size;
    T(&x, "BF16", N, 2, V, H, 0, "%sembed_tokens.weight", c->arch->prefix);
    T(&x, "BF16", ONE, 1, H, 0, 0, "%snorm.weight", c->arch->prefix);
    if (!c->tie_word_embeddings) T(&x, "BF16", N, 2, V, H, 0, "lm_head.weight");
    for (long long l = 0; l < c->num_hidden_layers; l++) {
        attention(&x, c, l);
        mlp(&x, c, w, l);
    }
}
