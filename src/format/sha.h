/* SHA-256 (OpenSSL libcrypto), always lowercase hex.  File digests stream
 * through a fixed buffer so memory stays flat whatever the file size. */
#ifndef FD_SHA_H
#define FD_SHA_H
#include <stddef.h>
#include <stdint.h>
#include "../util/err.h"

typedef struct fd_sha fd_sha;
fd_sha *fd_sha_new(void);
void fd_sha_update(fd_sha *s, const void *p, size_t n);
void fd_sha_final_hex(fd_sha *s, char hex[65]); /* frees s */

void fd_sha256_hex(const void *p, size_t n, char hex[65]);
/* Hashes bytes [off, off+len) of a file; len = UINT64_MAX means to EOF. */
int fd_sha256_file_range(const char *path, uint64_t off, uint64_t len, char hex[65], fd_err *e);
int fd_sha256_file(const char *path, char hex[65], fd_err *e);
int fd_is_hex64(const char *s);

#endif
