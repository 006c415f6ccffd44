/* capture.c's record of the checkpoint (capture_meta.c), private to capture.c. */
#ifndef FD_CAPTURE_CAPTURE_META_H
#define FD_CAPTURE_CAPTURE_META_H
#include <stddef.h>
#include <stdint.h>
#include "engine/weights.h"
#include "format/json.h"
#include "util/err.h"

/* The tokenizer identity of a model directory, by content (docs/CAPTURE.md "Tokenizer identity"). */
int fd_capture_tokenizer_identity(const char *model, int64_t vocab, char *out, size_t cap, fd_err *e);
/* The disclosure of F32 tensors cast to bf16 as loaded, or NULL. */
jv *fd_capture_f32_cast_disclosure(const fd_weights *W);
/* gguf_converter_rewrite_as_stored for a GGUF read as stored (fd_weights.gstored), or NULL. */
jv *fd_capture_gguf_stored_disclosure(const fd_weights *W);
/* A quantized checkpoint's disclosures (weight-only dequantization, input_scale tensors). */
jv *fd_capture_quant_disclosures(const fd_weights *W);
/* --memory-report: peak RSS against the checkpoint's bytes. */
int fd_capture_write_memory_report(const char *path, const fd_weights *W, const jv *files, size_t windows, size_t max_tokens, fd_err *e);

#endif
