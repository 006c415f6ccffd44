/* model_types qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text: four
 * entries of the architecture table (engine/model.h) over one forward (q35.h).
 * The composite ones (ForConditionalGeneration) keep the text model under
 * model.language_model. and the vision tower under model.visual. (skipped by
 * name, as the MTP head mtp.* that transformers ignores on load). */
#include "engine/arch/qwen3_5/q35.h"
#include "engine/gguf_model.h"

extern const fd_gguf_arch FD_GGUF_QWEN35, FD_GGUF_QWEN35MOE; /* q35_gguf.c */
extern const fd_gguf_stored FD_GGUF_Q35_STORED;

/* per window between layers: the residual stream and the output rows
 * (bf16), the causal selection, the RoPE tables */
static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    return S * (uint64_t)c->hidden_size * 4 + S * S + 2 * S * (uint64_t)QX(c)->rot;
}

/* the widest activation row of a layer: hidden, the MLP, query + gate,
 * the linear-attention projections (fp32: twice), the routed experts */
static uint64_t wide(const fd_glm_config *c)
{
    const fd_q35_ext *q = QX(c);
    uint64_t H = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size,
             A = 2 * (uint64_t)c->num_attention_heads * (uint64_t)c->head_dim,
             G = 2 * (uint64_t)(2 * q->nk * q->dk + q->nv * q->dv),
             X = (uint64_t)c->moe_intermediate_size * (uint64_t)c->num_experts_per_tok;
    uint64_t w = H > I ? H : I;
    w = w > A ? w : A;
    w = w > G ? w : G;
    return w > X ? w : X;
}

static const char *const SKIP_COMPOSITE[] = {"model.visual.", "mtp.", NULL};
static const char *const SKIP_TEXT[] = {"mtp.", NULL};

#define Q35_COMMON                   \
    .free_ext = fd_q35_ext_free,     \
    .tensors = fd_q35_tensors,       \
    .begin = fd_q35_begin,           \
    .layer = fd_q35_layer,           \
    .end = fd_q35_end,               \
    .free_state = fd_q35_free,       \
    .state_bytes = state_bytes,      \
    .wide = wide

const fd_arch FD_ARCH_QWEN3_5 = {
    .info = {"qwen3_5", "Qwen3_5ForConditionalGeneration",
             "Qwen3.5 text model: gated delta-net linear attention + gated full attention (partial RoPE, QK-norm), "
             "zero-centred RMSNorm, SwiGLU MLP; text_config, vision tower skipped",
             "docs/MODEL-QWEN35.md", "bf16"},
    .prefix = "model.language_model.",
    .parse = fd_q35_parse,
    .skipped = SKIP_COMPOSITE,
    Q35_COMMON,
};

const fd_arch FD_ARCH_QWEN3_5_TEXT = {
    .info = {"qwen3_5_text", "Qwen3_5ForCausalLM", "Qwen3.5 text-only checkpoint (the qwen3_5 text model under model.)",
             "docs/MODEL-QWEN35.md", "bf16, gguf"},
    .prefix = "model.",
    .parse = fd_q35_text_parse,
    .gguf = &FD_GGUF_QWEN35,
    .gguf_stored = &FD_GGUF_Q35_STORED,
    .skipped = SKIP_TEXT,
    .presets = FD_Q35_TEXT_PRESETS,
    Q35_COMMON,
};

const fd_arch FD_ARCH_QWEN3_5_MOE = {
    .info = {"qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration",
             "Qwen3.5-MoE text model: qwen3_5's hybrid layers with softmax-routed top-k experts (renormalised) and a "
             "sigmoid-gated shared expert",
             "docs/MODEL-QWEN35.md", "bf16"},
    .prefix = "model.language_model.",
    .parse = fd_q35_moe_parse,
    .skipped = SKIP_COMPOSITE,
    Q35_COMMON,
};

const fd_arch FD_ARCH_QWEN3_5_MOE_TEXT = {
    .info = {"qwen3_5_moe_text", "Qwen3_5MoeForCausalLM", "Qwen3.5-MoE text-only checkpoint (under model.)",
             "docs/MODEL-QWEN35.md", "bf16, gguf"},
    .prefix = "model.",
    .parse = fd_q35_moe_text_parse,
    .gguf = &FD_GGUF_QWEN35MOE,
    .gguf_stored = &FD_GGUF_Q35_STORED,
    .skipped = SKIP_TEXT,
    .presets = FD_Q35_MOE_TEXT_PRESETS,
    Q35_COMMON,
};
