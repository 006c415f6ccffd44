/* The tensor set of a minimax_m2 checkpoint as save_pretrained writes it
 * (bf16; transformers 5.25 reverses its conversion mapping on save, so the
 * experts are the released checkpoints' per-expert
 * block_sparse_moe.experts.X.w1 / w3 / w2): the one list the loader's check
 * and the fixture writer read (engine/model.h). */
#include "engine/arch/minimax_m2/mm2.h"
#include <stdarg.h>
#include <stdio.h>

typedef struct ex {
    fd_tensor_fn f;
    void *ctx;
} ex;

__attribute__((format(printf, 6, 7)))
static void T(const ex *x, int init, int ndim, uint64_t a, uint64_t b, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    fd_tensor_spec t = {name, "BF16", init, 0, ndim, {a, b, 0, 0, 0}};
    x->f(x->ctx, &t);
}

#define N FD_INIT_NORMAL
#define ONE FD_INIT_ONES

void fd_mm2_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx)
{
    (void)w; /* one spelling: per expert */
    ex x = {f, ctx};
    uint64_t H = (uint64_t)c->hidden_size, V = (uint64_t)c->vocab_size, d = (uint64_t)c->head_dim,
             Q = (uint64_t)c->num_attention_heads * d, K = (uint64_t)c->num_key_value_heads * d,
             E = (uint64_t)c->n_routed_experts, Im = (uint64_t)c->moe_intermediate_size;
    T(&x, N, 2, V, H, "model.embed_tokens.weight");
    T(&x, ONE, 1, H, 0, "model.norm.weight");
    if (!c->tie_word_embeddings) T(&x, N, 2, V, H, "lm_head.weight");
    for (long long l = 0; l < c->num_hidden_layers; l++) {
        const char *p = "model.layers.";
        T(&x, ONE, 1, H, 0, "%s%lld.input_layernorm.weight", p, l);
        T(&x, ONE, 1, H, 0, "%s%lld.post_attention_layernorm.weight", p, l);
        T(&x, N, 2, Q, H, "%s%lld.self_attn.q_proj.weight", p, l);
        T(&x, N, 2, K, H, "%s%lld.self_attn.k_proj.weight", p, l);
        T(&x, N, 2, K, H, "%s%lld.self_attn.v_proj.weight", p, l);
        T(&x, N, 2, H, Q, "%s%lld.self_attn.o_proj.weight", p, l);
        T(&x, ONE, 1, Q, 0, "%s%lld.self_attn.q_norm.weight", p, l);
        T(&x, ONE, 1, K, 0, "%s%lld.self_attn.k_norm.weight", p, l);
        T(&x, N, 2, E, H, "%s%lld.block_sparse_moe.gate.weight", p, l);
        /* transformers initialises the correction bias to 0; the fixture draws
         * it normal so that a forward ignoring it shows (the loader also
         * takes the F32 of released checkpoints) */
        T(&x, N, 1, E, 0, "%s%lld.block_sparse_moe.e_score_correction_bias", p, l);
        static const char *const wn[3] = {"w1", "w3", "w2"}; /* gate [Im, H], up [Im, H], down [H, Im] */
        for (uint64_t k = 0; k < E; k++)
            for (int i = 0; i < 3; i++)
                T(&x, N, 2, i == 2 ? H : Im, i == 2 ? Im : H, "%s%lld.block_sparse_moe.experts.%llu.%s.weight", p, l,
                  (unsigned long long)k, wn[i]);
    }
}
