/* The tensor set of a qwen3_5 / qwen3_5_moe checkpoint as save_pretrained
 * writes it (bf16): the one list the loader's check and the fixture writer
 * read (engine/model.h).  The composite model_types keep the text model
 * under model.language_model. (the vision tower model.visual.* and the MTP
 * head mtp.* are skipped by name: qwen3_5.c). */
#include "engine/arch/qwen3_5/q35.h"
#include <stdarg.h>
#include <stdio.h>

typedef struct ex {
    fd_tensor_fn f;
    void *ctx;
    const char *P;
} ex;

__attribute__((format(printf, 7, 8)))
static void T(const ex *x, int init, int ndim, uint64_t a, uint64_t b, uint64_t cc, const char *fmt, ...)
{
    char name[320];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    fd_tensor_spec t = {name, "BF16", init, 0, ndim, {a, b, cc, 0, 0}};
    x->f(x->ctx, &t);
}

#define N FD_INIT_NORMAL
#define ONE FD_INIT_ONES
#define Z FD_INIT_ZEROS

static void experts(const ex *x, const fd_glm_config *c, fd_weights *w, long long l, uint64_t H)
{
    const char *P = x->P;
    uint64_t E = (uint64_t)c->n_routed_experts, Im = (uint64_t)c->moe_intermediate_size,
             Is = (uint64_t)QX(c)->shared_inter;
    T(x, N, 2, E, H, 0, "%slayers.%lld.mlp.gate.weight", P, l);
    char probe[320];
    snprintf(probe, sizeof probe, "%slayers.%lld.mlp.experts.gate_up_proj", P, l);
    int fused = w && fd_weights_get(w, probe) != NULL;
    if (w) w->fused[l] = (unsigned char)fused;
    if (fused) {
        T(x, N, 3, E, 2 * Im, H, "%s", probe);
        T(x, N, 3, E, H, Im, "%slayers.%lld.mlp.experts.down_proj", P, l);
    } else {
        static const char *const mlp[3] = {"gate", "up", "down"};
        for (uint64_t k = 0; k < E; k++)
            for (int i = 0; i < 3; i++)
                T(x, N, 2, i == 2 ? H : Im, i == 2 ? Im : H, 0, "%slayers.%lld.mlp.experts.%llu.%s_proj.weight", P, l,
                  (unsigned long long)k, mlp[i]);
    }
    T(x, N, 2, Is, H, 0, "%slayers.%lld.mlp.shared_expert.gate_proj.weight", P, l);
    T(x, N, 2, Is, H, 0, "%slayers.%lld.mlp.shared_expert.up_proj.weight", P, l);
    T(x, N, 2, H, Is, 0, "%slayers.%lld.mlp.shared_expert.down_proj.weight", P, l);
    T(x, N, 2, 1, H, 0, "%slayers.%lld.mlp.shared_expert_gate.weight", P, l);
}

void fd_q35_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx)
{
    const fd_q35_ext *q = QX(c);
    ex x = {f, ctx, q->prefix};
    const char *P = q->prefix;
    uint64_t H = (uint64_t)c->hidden_size, V = (uint64_t)c->vocab_size, I = (uint64_t)c->intermediate_size,
             d = (uint64_t)c->head_dim, Q = (uint64_t)c->num_attention_heads * d, K = (uint64_t)c->num_key_value_heads * d;
    uint64_t kd = (uint64_t)(q->nk * q->dk), vd = (uint64_t)(q->nv * q->dv), nv = (uint64_t)q->nv;
    T(&x, N, 2, V, H, 0, "%sembed_tokens.weight", P);
    T(&x, Z, 1, H, 0, 0, "%snorm.weight", P);
    if (!c->tie_word_embeddings) T(&x, N, 2, V, H, 0, "lm_head.weight");
    for (long long l = 0; l < c->num_hidden_layers; l++) {
        T(&x, Z, 1, H, 0, 0, "%slayers.%lld.input_layernorm.weight", P, l);
        T(&x, Z, 1, H, 0, 0, "%slayers.%lld.post_attention_layernorm.weight", P, l);
        if (q->linear[l]) {
            const char *A = "linear_attn";
            T(&x, N, 2, 2 * kd + vd, H, 0, "%slayers.%lld.%s.in_proj_qkv.weight", P, l, A);
            T(&x, N, 2, vd, H, 0, "%slayers.%lld.%s.in_proj_z.weight", P, l, A);
            T(&x, N, 2, nv, H, 0, "%slayers.%lld.%s.in_proj_b.weight", P, l, A);
            T(&x, N, 2, nv, H, 0, "%slayers.%lld.%s.in_proj_a.weight", P, l, A);
            T(&x, N, 3, 2 * kd + vd, 1, (uint64_t)q->conv_k, "%slayers.%lld.%s.conv1d.weight", P, l, A);
            T(&x, ONE, 1, nv, 0, 0, "%slayers.%lld.%s.dt_bias", P, l, A);
            T(&x, N, 1, nv, 0, 0, "%slayers.%lld.%s.A_log", P, l, A);
            T(&x, ONE, 1, (uint64_t)q->dv, 0, 0, "%slayers.%lld.%s.norm.weight", P, l, A);
            T(&x, N, 2, H, vd, 0, "%slayers.%lld.%s.out_proj.weight", P, l, A);
        } else {
            static const char *const proj[3] = {"q", "k", "v"};
            for (int i = 0; i < 3; i++) {
                uint64_t n = i ? K : 2 * Q; /* q_proj: query and its output gate per head */
                T(&x, N, 2, n, H, 0, "%slayers.%lld.self_attn.%s_proj.weight", P, l, proj[i]);
                if (c->attention_bias) T(&x, Z, 1, n, 0, 0, "%slayers.%lld.self_attn.%s_proj.bias", P, l, proj[i]);
            }
            T(&x, N, 2, H, Q, 0, "%slayers.%lld.self_attn.o_proj.weight", P, l);
            if (c->attention_bias) T(&x, Z, 1, H, 0, 0, "%slayers.%lld.self_attn.o_proj.bias", P, l);
            T(&x, Z, 1, d, 0, 0, "%slayers.%lld.self_attn.q_norm.weight", P, l);
            T(&x, Z, 1, d, 0, 0, "%slayers.%lld.self_attn.k_norm.weight", P, l);
        }
        if (q->moe) { experts(&x, c, w, l, H); continue; }
        static const char *const mlp[3] = {"gate", "up", "down"};
        for (int i = 0; i < 3; i++)
            T(&x, N, 2, i == 2 ? H : I, i == 2 ? I : H, 0, "%slayers.%lld.mlp.%s_proj.weight", P, l, mlp[i]);
    }
}
