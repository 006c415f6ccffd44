/* The scope block of a checkpoint read from its tensors (the dataset's
 * `scope` for a capture of a quantized checkpoint; seed 002's layout):
 *
 *   class of a tensor: CLASS_RULES of P engines/tools/fp8_scope.py (FORMAT.md
 *     §7), first match wins, a layer index >= num_hidden_layers is mtp;
 *   format of a tensor: its numeric_format (fp8_e4m3 / nvfp4 for a bound
 *     quantized weight, else bf16 / fp32 / fp16 from the dtype); scale
 *     companions belong to their weight and are not counted;
 *   per class (registry tensor_class order, classes with no tensor left out,
 *     lm_head taken from embed_tokens when tied): treatment "quantized" when
 *     any tensor is fp8_e4m3 / nvfp4, else "native"; format the common one
 *     with its bits, or "mixed" with bits null; layer_range null;
 *   policy "mixed" when any class is quantized, else "native"; head_policy
 *     from lm_head; kv_cache_dtype "bf16".
 * GLM-5.3-NVFP4 with this rule gives seed 002's scope_digest segment for
 * segment (moe.router and mtp native:mixed: bf16 weights with fp32 biases). */
#ifndef FD_CAPTURE_QSCOPE_H
#define FD_CAPTURE_QSCOPE_H
#include "engine/config.h"
#include "engine/weights.h"

const char *fd_tensor_class(const char *name, int64_t num_hidden_layers);
/* W after fd_weights_check; the block carries its scope_digest. */
jv *fd_qscope_derive(const fd_weights *W, const fd_glm_config *c);

#endif
