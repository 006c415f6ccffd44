/* `fidelity quantize --format gguf`: a bf16 checkpoint of ours written as
 * llama.cpp's converter lays it out (general.architecture, the metadata its
 * config hook reads, llama.cpp's tensor names from the architecture's GGUF
 * name table, experts stacked, kv_b_proj split into attn_k_b (transposed)
 * and attn_v_b), each tensor BF16, F32 (where the converter keeps F32),
 * F16 (a row not whole blocks, the converter's fallback) or Q8_0 / Q4_0
 * with ggml's reference quantizers (quantize_row_q8_0_ref /
 * quantize_row_q4_0_ref, which gguf-py's gguf.quants.quantize mirrors): the
 * candidate of a GGUF demo row and test vectors, without llama.cpp.
 *
 * Which tensors are quantized: every one whose GGUF row length is a
 * multiple of 32 (the block) and that is not F32 as above, or with --match
 * only those whose HF name (an expert's for a stacked tensor, kv_b_proj for
 * attn_k_b / attn_v_b) contains a --match substring; the rest stay BF16.
 * The checkpoint's tokenizer.json is embedded verbatim as the string
 * tokenizer.huggingface.json (a key gguf-py defines), so the capture's
 * tokenizer identity is the checkpoint directory's (engine/gguf_model.h);
 * llama.cpp's tokenizer.ggml.* vocabulary is not written (the engine never
 * tokenizes: the panel carries the token ids).
 *
 * Architectures: those whose GGUF table has a metadata writer
 * (fd_gguf_arch.write_kv: glm_moe_dsa as "glm-dsa", deepseek_v3 as
 * "deepseek2", llama (q/k permuted, llama3 rope_freqs.weight), qwen3,
 * qwen3_moe as "qwen3moe", minimax_m2 as "minimax-m2"); any other is
 * refused gguf_write_unsupported.
 * The file is written under a temporary name beside --dst and renamed into
 * place (destination_exists unless --force). */
#ifndef FD_CAPTURE_QUANTIZE_GGUF_H
#define FD_CAPTURE_QUANTIZE_GGUF_H
#include <stddef.h>
#include <stdint.h>
#include "format/json.h"
#include "util/err.h"

typedef struct fd_qg_opts {
    const char *src, *dst;          /* checkpoint directory, FILE.gguf */
    const char *type;               /* "bf16", "q8_0" or "q4_0" */
    const char *const *patterns;    /* --match substrings (none: every eligible tensor) */
    size_t npatterns;
    int force;
} fd_qg_opts;

/* Writes the file; *report = {format, type, architecture, tensors,
 * tensors_quantized, bf16, f32, f16, bytes}.  Refusals: bad_usage, gguf_write_unsupported,
 * checkpoint_mismatch (and the loader's), destination_exists, unwritable. */
int fd_quantize_gguf(const fd_qg_opts *o, jv **report, fd_err *e);

/* ggml's reference block quantizers of one block of 32 floats (the bytes
 * gguf.quants.quantize writes): Q8_0 = fp16 d + 32 int8 (34 bytes), Q4_0 =
 * fp16 d + 16 bytes of nibbles (18 bytes); d rounded to half by
 * engine/qformat.h's fd_f32_to_f16 (round to nearest even, numpy's astype). */
void fd_q8_0_block(const float *x, unsigned char *out);
void fd_q4_0_block(const float *x, unsigned char *out);
/* Q5_0 (22 bytes of 32) and Q4_K (144 bytes of 256): quantize_row_q5_0_ref /
 * quantize_row_q4_K_ref, what llama-quantize writes for Q4_K without an
 * imatrix (Q5_0 on rows not a multiple of 256) */
void fd_q5_0_block(const float *x, unsigned char *out);
void fd_q4_k_block(const float *x, unsigned char *out);

#endif
