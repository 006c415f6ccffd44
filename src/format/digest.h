/* The frozen digest preimages of FORMAT.md §3 that are not plain file
 * hashes: token ids, the suite aggregate, capture_content_digest and the
 * scope digest string. */
#ifndef FD_DIGEST_H
#define FD_DIGEST_H
#include <stddef.h>
#include <stdint.h>
#include "json.h"

/* sha256(json.dumps(ids, separators=(",",":"))) and the legacy ", " form. */
void fd_token_ids_sha256(const int64_t *ids, size_t n, int legacy, char hex[65]);
/* "\n".join(hex) (normative) or "".join(hex) (legacy). */
void fd_suite_token_hash(char *const *per_record, size_t n, int legacy, char hex[65]);
/* sha256("\n".join("%d:%s" % (index, tensor_content_sha256))) over records
 * sorted by index; digest_mismatch on a duplicate or a missing digest. */
int fd_capture_content_digest(const jv *records, char hex[65], fd_err *e);
/* registry_lib scope digest string of a scope block (appended to out). */
int fd_scope_digest(const jv *scope, fd_buf *out, fd_err *e);
/* The nine tensor classes of dsmanifest.NATIVE_TENSOR_CLASSES, in order. */
#define FD_N_SCOPE_CLASSES 9
extern const char *const FD_SCOPE_CLASSES[FD_N_SCOPE_CLASSES];
/* A scope block (no digest): every class native bf16@16, except
 * quantized_class (if not NULL) as quantized FORMAT@BITS with policy mixed. */
jv *fd_scope_block(const char *quantized_class, const char *format, int64_t bits);
/* The native root scope block, with its scope_digest. */
jv *fd_native_scope(void);

#endif
