/* checksums.txt: the sha256sum-compatible listing of every dataset file
 * except checksums.txt and fidelity-dataset.json (FORMAT.md §3). */
#ifndef FD_CHECKSUMS_H
#define FD_CHECKSUMS_H
#include "../util/err.h"
#include "../util/strv.h"

/* Every regular file under root as sorted relative paths, minus the two
 * root-level exclusions.  Refuses symlinks (symlink), credential-like names
 * (credential_in_tree) and other non-regular files. */
int fd_tree_files(const char *root, fd_strv *out, fd_err *e);

typedef struct fd_checksums {
    fd_strv paths;   /* sorted */
    fd_strv digests; /* digests.v[i] belongs to paths.v[i] */
} fd_checksums;

/* dsformat.parse_checksums: seal_failed on any malformed or hostile line. */
int fd_checksums_parse(const char *text, size_t n, fd_checksums *out, fd_err *e);
const char *fd_checksums_get(const fd_checksums *c, const char *path);
void fd_checksums_free(fd_checksums *c);

/* Hashes the tree and writes root/checksums.txt (via a temp name);
 * its own sha256 goes to hex. */
int fd_checksums_write(const char *root, char hex[65], fd_err *e);
/* dsformat.verify_checksums: unlisted_file, missing_file, tensor_mismatch
 * or seal_failed on the first failing class. */
int fd_checksums_verify(const char *root, int allow_partial, fd_err *e);
int fd_looks_like_credential(const char *relpath);

#endif
