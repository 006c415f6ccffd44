/* Glm5NextConfig (model_type "glm5_next", transformers 5.16.1
 * configuration_glm5_next.py; docs/MODEL-GLM5-NEXT.md §1): the text fields
 * come from "text_config" (or the top level for flat text-only configs) and
 * fill the common fd_glm_config fields; what glm_moe_dsa lacks lives in
 * fd_next_ext.  Defaults are the dataclass defaults; derived as
 * __post_init__ does:
 *   - mlp_layer_types: explicit, else dense for i < min(3, L)
 *   - layer_types: explicit ("full_attention" read as
 *     "deepseek_sparse_attention"), else linear_attention iff i % 4 != 3
 *   - indexer_types: as glm_moe_dsa (explicit, index_topk_pattern, freq/offset)
 *   - linear_attn_config {head_dim, num_heads, short_conv_kernel_size,
 *     gate_lower_bound, safe_gate} overrides the linear_* fields
 * validate_architecture's refusals are kept (qk_rope_head_dim must be 0,
 * index_topk % index_kpool == 0, num_key_value_heads == num_attention_heads).
 * The vision tower's fields are read only to name its tensors; a flat config
 * (no text_config) without vision_config is text-only (a GGUF's document,
 * engine/gguf_model.h: llama.cpp's converter writes no vision tower). */
#ifndef FD_ENGINE_NEXT_CONFIG_H
#define FD_ENGINE_NEXT_CONFIG_H
#include "engine/config.h"

typedef struct fd_next_ext {
    int64_t lin_heads, lin_dim, conv_k;
    int has_lower;                /* linear_lower_bound not null: the "safe gate" */
    double lower, swiglu_limit, hc_eps;
    int64_t hc_mult, hc_iters, kpool;
    int kpool_tail;
    unsigned char *kda;           /* [L]: 1 linear_attention (KDA), 0 deepseek_sparse_attention */
    /* vision tower (tensor names and shapes only) */
    int64_t v_depth, v_hidden, v_heads, v_in_ch, v_patch, v_temporal, v_merge, v_out, v_inter, v_proj_inter;
    int v_bias;
    int text_only;                /* a flat config with no vision_config (a GGUF's): no vision tensors */
} fd_next_ext;

/* the private part of a glm5_next config */
#define NX(c) ((const fd_next_ext *)(c)->ext)

/* d: the whole config.json object (model_type glm5_next). */
int fd_next_config_parse(const jv *d, fd_glm_config *c, fd_err *e);
void fd_next_ext_free(void *x);

#endif
