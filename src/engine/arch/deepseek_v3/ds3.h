/* model_type deepseek_v3 (DeepseekV3ForCausalLM, transformers 5.25: Kimi K2,
 * DeepSeek V3/R1): MLA attention (q_lora_rank optional), interleaved or
 * rotate_half RoPE, default or yarn rope_type with mscale folded into the
 * softmax scale, the sigmoid-routed MoE of ops/moe.c after
 * first_k_dense_replace dense layers.  glm_moe_dsa without the indexer:
 * every rounding point is the one engine/arch/glm_moe_dsa/dsa_forward.h
 * lists.  docs/MODEL-DEEPSEEK.md. */
#ifndef FD_ENGINE_ARCH_DEEPSEEK_V3_H
#define FD_ENGINE_ARCH_DEEPSEEK_V3_H
#include <stddef.h>
#include <stdint.h>
#include "engine/config.h"
#include "engine/model.h"

/* the private part of the config (c->ext) */
typedef struct fd_ds3_ext {
    int q_lora;           /* 0: q_lora_rank null (one q_proj) */
    int rope_interleave;  /* 1: apply_rotary_pos_emb_interleave, 0: rotate_half */
    int yarn;             /* rope_type yarn (else default) */
    double factor, attention_factor, beta_fast, beta_slow, orig_max_pos;
    double mscale, mscale_all_dim; /* as the config gives them (0: absent) */
    int attention_factor_given;    /* an explicit rope_parameters.attention_factor */
    int truncate;
    double scaling;       /* the softmax scale: qk_head_dim^-0.5 (* mscale^2 under yarn) */
    int dsa;              /* deepseek_v32: the DSA indexer on every layer (ops/indexer.h) */
    /* kimi_linear (engine/arch/kimi_linear/): MLA without RoPE, and the
     * layers whose token mixer is not MLA (kda[L] 1: mixer runs on the
     * input_layernorm output h [S][H], writing y [S][H], added to the residual) */
    int nope;
    unsigned char *kda;
    int64_t lin_heads, lin_dim, conv_k;
    int (*mixer)(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, const uint16_t *h, size_t S,
                 uint16_t *y, fd_err *e);
} fd_ds3_ext;

#define DS3(c) ((const fd_ds3_ext *)(c)->ext)

int fd_ds3_parse(const jv *doc, fd_glm_config *c, fd_err *e);
/* model_type deepseek_v32 (DeepseekV32Config): deepseek_v3's fields with
 * its defaults, q LoRA required, the MLA RoPE always interleaved, plus
 * index_topk / index_head_dim / index_n_heads, mlp_layer_types, layer_types. */
int fd_ds32_parse(const jv *doc, fd_glm_config *c, fd_err *e);
void fd_ds3_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);
void *fd_ds3_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_ds3_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
int fd_ds3_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
void fd_ds3_free(void *st);
uint16_t *fd_ds3_stream(const fd_glm_config *c, void *st, size_t *n);
/* the fixture presets (deepseek_v3_fixture.c, deepseek_v32_fixture.c) and
 * their config.json (v32: deepseek_v32's keys and the indexer) */
extern const fd_fixture_preset FD_DEEPSEEK_V3_PRESETS[], FD_DEEPSEEK_V32_PRESETS[];
/* kimi_k25 / kimi_linear run deepseek_v3's hooks (engine/arch/kimi_k25/, engine/arch/kimi_linear/) */
extern const fd_fixture_preset FD_KIMI_K25_PRESETS[], FD_KIMI_LINEAR_PRESETS[];
jv *fd_ds3_fixture_config(const fd_fixture_preset *p, int bos, int eos, int pad, int v32);

#endif
