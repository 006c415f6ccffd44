/* The common config of every architecture (fd_glm_config: the fields the
 * op library and the driver read; an architecture's private fields live
 * under ->ext), its load/free, and the field readers each architecture's
 * parser uses (engine/arch/<model_type>/: glm_moe_dsa's is dsa_config.c).
 * Refusals: unsupported_model_type (naming it), bad_config (naming the field). */
#ifndef FD_ENGINE_CONFIG_H
#define FD_ENGINE_CONFIG_H
#include <stddef.h>
#include <stdint.h>
#include "format/json.h"
#include "util/err.h"

typedef struct fd_glm_config {
    int64_t vocab_size, hidden_size, intermediate_size, moe_intermediate_size;
    int64_t num_hidden_layers, num_attention_heads, num_key_value_heads;
    int64_t q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    int64_t qk_head_dim, head_dim;                      /* derived */
    int64_t index_n_heads, index_head_dim, index_topk;
    int64_t n_routed_experts, n_shared_experts, num_experts_per_tok, n_group, topk_group;
    int64_t first_k_dense_replace, max_position_embeddings;
    int norm_topk_prob, attention_bias, tie_word_embeddings;
    double routed_scaling_factor, rms_norm_eps, attention_dropout, rope_theta;
    char hidden_act[32], rope_type[32];
    unsigned char *mlp_sparse;   /* [num_hidden_layers]: 1 "sparse" (MoE), 0 "dense" */
    unsigned char *indexer_full; /* [num_hidden_layers]: 1 "full", 0 "shared" */
    const struct fd_arch *arch;  /* the architecture of model_type (engine/model.h); set by the parser */
    void *ext;                   /* its private part (glm5_next: fd_next_ext); NULL for glm_moe_dsa */
} fd_glm_config;

int fd_glm_config_from_json(const jv *doc, fd_glm_config *c, fd_err *e);
/* Reads DIR/config.json (or a file path ending in .json). */
int fd_glm_config_load(const char *path, fd_glm_config *c, fd_err *e);
void fd_glm_config_free(fd_glm_config *c);
/* Number of "full" indexer layers / "sparse" MLP layers. */
int64_t fd_glm_config_count_full(const fd_glm_config *c);
int64_t fd_glm_config_count_sparse(const fd_glm_config *c);

/* The field readers of config.c, for other model types' parsers (absent ->
 * def; wrong type / out of range -> bad_config naming the field). */
int fd_cfg_int(const jv *d, const char *k, int64_t def, int64_t lo, int64_t *out, fd_err *e);
int fd_cfg_num(const jv *d, const char *k, double def, double *out, fd_err *e);
int fd_cfg_bool(const jv *d, const char *k, int def, int *out, fd_err *e);
int fd_cfg_str(const jv *d, const char *k, const char *def, char *out, size_t cap, fd_err *e);
int fd_cfg_types(const jv *v, const char *k, int64_t L, const char *a, const char *b, unsigned char *out, fd_err *e);
/* A layer_types entry naming a DSA (MLA + indexer) layer, in any spelling
 * transformers writes: indexed_attention, deepseek_sparse_attention,
 * full_attention. */
int fd_cfg_is_dsa_layer(const char *s);

#endif
