/* model_types qwen4_exp and qwen4_exp_text: two entries of the architecture
 * table (engine/model.h) over one forward (q4x.h).  The composite one
 * (Qwen4ExpForConditionalGeneration) keeps the text model under
 * model.language_model. and the vision tower under model.visual. (skipped by
 * name, as the MTP head mtp.*). */
#include "engine/arch/qwen4_exp/q4x.h"
#include "engine/gguf_model.h"

extern const fd_gguf_arch FD_GGUF_QWEN4EXP; /* q4x_gguf.c */
extern const fd_gguf_stored FD_GGUF_Q4X_STORED;

/* per window between layers: the streams and the output rows (bf16), the
 * selection, the RoPE tables */
static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    const fd_q4x_ext *x = Q4X(c);
    return S * (uint64_t)c->hidden_size * 2 * ((uint64_t)x->hc + 1) + S * S + 2 * S * (uint64_t)x->q.rot;
}

/* the widest activation row of a layer: the streams (normed and mixed, twice),
 * query + gate, the linear-attention projections (fp32: twice), the routed
 * experts, the indexer's projection */
static uint64_t wide(const fd_glm_config *c)
{
    const fd_q4x_ext *x = Q4X(c);
    const fd_q35_ext *q = &x->q;
    uint64_t H = (uint64_t)c->hidden_size, A = 2 * (uint64_t)c->num_attention_heads * (uint64_t)c->head_dim,
             G = 2 * (uint64_t)(2 * q->nk * q->dk + q->nv * q->dv),
             X = (uint64_t)c->moe_intermediate_size * (uint64_t)c->num_experts_per_tok,
             N = 2 * (uint64_t)x->hc * H, I = ((uint64_t)x->ix_heads + 1) * (uint64_t)x->ix_dim;
    uint64_t w = N > A ? N : A;
    w = w > G ? w : G;
    w = w > X ? w : X;
    return w > I ? w : I;
}

static const char *const SKIP_COMPOSITE[] = {"model.visual.", "mtp.", NULL};
static const char *const SKIP_TEXT[] = {"mtp.", NULL};

#define Q4X_COMMON                   \
    .free_ext = fd_q35_ext_free,     \
    .tensors = fd_q4x_tensors,       \
    .begin = fd_q4x_begin,           \
    .layer = fd_q4x_layer,           \
    .end = fd_q4x_end,               \
    .free_state = fd_q4x_free,       \
    .state_bytes = state_bytes,      \
    .wide = wide,                    \
    .final_name = "hyper_connection_mixer"

const fd_arch FD_ARCH_QWEN4_EXP = {
    .info = {"qwen4_exp", "Qwen4ExpForConditionalGeneration",
             "Qwen4-Exp text model: qwen3_5_moe's hybrid layers over hyper-connection streams (gated residuals, a "
             "final mixer), QSA block selection on the attention layers; PLE refused; vision tower skipped",
             "docs/MODEL-MINIMAX-QWEN4.md", "bf16"},
    .prefix = "model.language_model.",
    .parse = fd_q4x_parse,
    .skipped = SKIP_COMPOSITE,
    Q4X_COMMON,
};

const fd_arch FD_ARCH_QWEN4_EXP_TEXT = {
    .info = {"qwen4_exp_text", "Qwen4ExpForCausalLM", "Qwen4-Exp text-only checkpoint (the qwen4_exp text model under model.)",
             "docs/MODEL-MINIMAX-QWEN4.md", "bf16, gguf"},
    .prefix = "model.",
    .parse = fd_q4x_text_parse,
    .gguf = &FD_GGUF_QWEN4EXP,
    .gguf_stored = &FD_GGUF_Q4X_STORED,
    .skipped = SKIP_TEXT,
    .presets = FD_Q4X_TEXT_PRESETS,
    Q4X_COMMON,
};
