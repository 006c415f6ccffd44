/* model_type deepseek_v4 (DeepSeek V4, transformers 5.25
 * DeepseekV4ForCausalLM; docs/MODEL-DEEPSEEK.md §11): the private config
 * part, the tensor list and the forward hooks of engine/model.h.
 *   dsv4_config.c   config.json (every field of §11.2, refusals by name)
 *   dsv4_tensors.c  the tensor list (save_pretrained's `model.` spelling or
 *                   the hub's release spelling, one of them; tid2eid I64)
 *   dsv4_forward.c  streams, mHC, attention, compressors, indexer, MoE */
#ifndef FD_ENGINE_DSV4_H
#define FD_ENGINE_DSV4_H
#include <stddef.h>
#include <stdint.h>
#include "engine/config.h"
#include "engine/model.h"

enum { V4_SLIDING = 0, V4_CSA = 1, V4_HCA = 2 };
enum { V4_SQRTSOFTPLUS = 0, V4_SIGMOID = 1 };

typedef struct fd_v4_ext {
    int64_t rope_dim;             /* int(head_dim * partial_rotary_factor) */
    double main_theta, comp_theta;
    int comp_yarn;                /* compress rope: 1 yarn, 0 default */
    double y_factor, y_orig, y_beta_fast, y_beta_slow, y_attn_factor;
    int y_truncate;
    int64_t rate_csa, rate_hca, window, o_groups, o_lora;
    int64_t hc_mult, hc_iters;
    double hc_eps, swiglu_limit;
    int scoring, mlp_bias;
    unsigned char *type;          /* [L]: V4_SLIDING / V4_CSA / V4_HCA */
    unsigned char *hash;          /* [L]: 1 hash_moe, 0 moe */
    int release;                  /* the checkpoint is in the hub's release spelling (set by the tensor list) */
} fd_v4_ext;

#define V4X(c) ((const fd_v4_ext *)(c)->ext)

int fd_v4_config_parse(const jv *d, fd_glm_config *c, fd_err *e);
void fd_v4_ext_free(void *x);
void fd_v4_tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);
/* the stored name of logical tensor piece `name` (after "model."), in the
 * spelling of the checkpoint (c's ext->release) into out */
void fd_v4_name(const fd_glm_config *c, const char *name, char *out, size_t cap);

void *fd_v4_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_v4_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
int fd_v4_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
void fd_v4_free(void *st);
uint16_t *fd_v4_stream(const fd_glm_config *c, void *st, size_t *n);

#endif
