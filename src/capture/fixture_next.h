/* The glm5_next part of `fidelity fixture` (fixture.h): the config.json of
 * a random-init Glm5NextForConditionalGeneration checkpoint
 * (text trunk + vision tower); its tensors are the architecture's one list
 * (engine/arch/glm5_next/next_tensors.c, read through engine/model.h).
 *
 * Initialisation follows transformers 5.16.1 _init_weights: Linear / Conv /
 * embedding weights and hc_*_fn ~ normal(0, 0.02); RMSNorm, o_norm,
 * LayerNorm weights, hc_*_scale and index_kpool_compress_gate 1; biases,
 * hc_*_base, index_kpool_compress_ape, e_score_correction_bias 0; A_log 0
 * (the safe-gate lower bound is set); dt_bias = inverse softplus of
 * dt = exp(u), u ~ uniform(log 1e-3, log 1e-1), dt clamped to >= 1e-4.
 * The modules transformers keeps in fp32 (conv1d, dt_bias, A_log,
 * e_score_correction_bias) are written F32, the rest BF16. */
#ifndef FD_CAPTURE_FIXTURE_NEXT_H
#define FD_CAPTURE_FIXTURE_NEXT_H
#include <stdint.h>
#include "capture/fixture.h"
#include "engine/model.h" /* FD_INIT_*; the tensor list is engine/arch/glm5_next/next_tensors.c */
#include "format/json.h"


typedef struct fd_next_preset {
    int64_t lin_heads, lin_dim, conv_k, kpool, hc_mult, hc_iters;
    double swiglu_limit, lower_bound;
    const char *layer_kinds; /* one char a layer: L linear_attention (KDA), D deepseek_sparse_attention */
    int64_t v_depth, v_hidden, v_heads, v_inter, v_out, v_proj_inter;
} fd_next_preset;

extern const fd_next_preset fd_next_preset_flash;

jv *fd_fixture_next_config(const fd_fixture_preset *p, int bos, int eos, int pad);
/* One F32 value of init kind `init` from the tensor's generator state. */
float fd_fixture_f32_init(int init, uint64_t *state);

#endif
