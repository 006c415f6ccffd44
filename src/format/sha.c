#include "sha.h"
#include "util/fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct fd_sha { EVP_MD_CTX *ctx; };

fd_sha *fd_sha_new(void)
{
    fd_sha *s = malloc(sizeof *s);
    if (!s || !(s->ctx = EVP_MD_CTX_new()) || EVP_DigestInit_ex(s->ctx, EVP_sha256(), NULL) != 1) {
        fprintf(stderr, "fidelity: OpenSSL SHA-256 initialisation failed\n");
        abort();
    }
    return s;
}

void fd_sha_update(fd_sha *s, const void *p, size_t n)
{
    if (n) EVP_DigestUpdate(s->ctx, p, n);
}

void fd_sha_final_hex(fd_sha *s, char hex[65])
{
    unsigned char md[32];
    unsigned int len = 0;
    EVP_DigestFinal_ex(s->ctx, md, &len);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", md[i]);
    EVP_MD_CTX_free(s->ctx);
    free(s);
}

void fd_sha256_hex(const void *p, size_t n, char hex[65])
{
    fd_sha *s = fd_sha_new();
    fd_sha_update(s, p, n);
    fd_sha_final_hex(s, hex);
}

int fd_sha256_file_range(const char *path, uint64_t off, uint64_t len, char hex[65], fd_err *e)
{
    int fd = fd_open_regular(path, 0, NULL, e);   /* a FIFO or /dev/zero is refused, never read */
    if (fd < 0) return -1;
    enum { CHUNK = 1 << 20 };
    char *buf = malloc(CHUNK);
    if (!buf) { close(fd); return fd_fail(e, "unreadable", "", "%s: out of memory", path); }
    fd_sha *s = fd_sha_new();
    uint64_t left = len, pos = off;
    int rc = 0;
    while (left) {
        size_t want = left < CHUNK ? (size_t)left : CHUNK;
        ssize_t k = pread(fd, buf, want, (off_t)pos);
        if (k < 0) { if (errno == EINTR) continue; rc = fd_fail(e, "unreadable", "", "%s: %s", path, strerror(errno)); break; }
        if (k == 0) {
            if (len != UINT64_MAX) rc = fd_fail(e, "tensor_mismatch", "", "%s: file ends before byte %llu", path,
                                                (unsigned long long)(off + len));
            break;
        }
        fd_sha_update(s, buf, (size_t)k);
        pos += (uint64_t)k;
        if (len != UINT64_MAX) left -= (uint64_t)k;
    }
    fd_sha_final_hex(s, hex);
    free(buf);
    close(fd);
    return rc;
}

int fd_sha256_file(const char *path, char hex[65], fd_err *e)
{
    return fd_sha256_file_range(path, 0, UINT64_MAX, hex, e);
}

int fd_is_hex64(const char *s)
{
    if (!s || strlen(s) != 64) return 0;
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}
