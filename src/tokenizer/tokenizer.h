/* A Hugging Face tokenizer.json tokenizer: byte-level BPE with merges (the
 * GPT-2 / Llama-3 / Qwen / DeepSeek / GLM family), encode and decode with the
 * ids the `tokenizers` library gives.  Loading refuses, by name, every
 * component type it does not implement (code "tokenizer_unsupported").
 * A loaded tokenizer is immutable: concurrent encodes/decodes are safe.
 * Design and the choices made: docs/TOKENIZER.md. */
#ifndef FD_TOKENIZER_H
#define FD_TOKENIZER_H
#include <stddef.h>
#include <stdint.h>
#include "../util/err.h"

typedef struct fd_tokenizer fd_tokenizer;

/* path: a tokenizer.json file, or a directory containing tokenizer.json. */
fd_tokenizer *fd_tok_load(const char *path, fd_err *e);
void fd_tok_free(fd_tokenizer *t);
/* add_special: apply the post-processor template (BOS/EOS) like HF
 * encode(add_special_tokens=True).  Invalid UTF-8 is refused (code
 * "invalid_utf8", the message names the byte offset): HF takes a Python str,
 * which cannot hold it.  *ids is malloc'd; the caller frees it. */
int fd_tok_encode(const fd_tokenizer *t, const char *text, size_t len, int add_special,
                  int32_t **ids, size_t *n, fd_err *e);
/* Like HF decode(ids, skip_special_tokens): unknown ids are skipped, invalid
 * UTF-8 after byte-level decoding becomes U+FFFD per maximal subpart.
 * *text is malloc'd and NUL-terminated. */
int fd_tok_decode(const fd_tokenizer *t, const int32_t *ids, size_t n, int skip_special,
                  char **text, size_t *len, fd_err *e);
/* Like HF get_vocab_size(with_added_tokens=True). */
int64_t fd_tok_vocab_size(const fd_tokenizer *t);
/* sha256 (lowercase hex) of the tokenizer.json bytes. */
const char *fd_tok_sha256(const fd_tokenizer *t);
/* The normalizer applied to text before pre-tokenization (NFC or none);
 * exposed so tests can compare decode(encode(x)) with normalize(x). */
int fd_tok_normalize(const fd_tokenizer *t, const char *text, size_t len, char **out, size_t *out_len, fd_err *e);

#endif
