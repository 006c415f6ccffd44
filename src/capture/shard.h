/* Capture shards (docs/MPI.md): rank r of T writes the contiguous windows
 * [lo, hi) of the panel as the sealed dataset OUT.shard-r-of-T, whose
 * coverage.shard_of is {index r, total T, stride 1,
 * panel_suite_token_hash_sha256 of the WHOLE panel}.  A rerun reuses a shard
 * that verifies and belongs to the same run, and redoes the rest. */
#ifndef FD_CAPTURE_SHARD_H
#define FD_CAPTURE_SHARD_H
#include <stddef.h>
#include "format/json.h"

/* "OUT.shard-R-of-T" (caller frees). */
char *fd_shard_path(const char *out, size_t r, size_t total);
/* Removes the writer's leftovers "PATH.partial-*" of a rank that died. */
void fd_shard_clean_partials(const char *path);
/* The coverage.shard_of block. */
jv *fd_shard_of_block(size_t r, size_t total, const char *suite_hash);

/* What an existing shard must match to be reused. */
typedef struct fd_shard_expect {
    const jv *shard_of;
    int64_t first, count, declared;
    const char *dataset_id, *dataset_name, *role, *lane, *checkpoint_identity, *scope_digest;
} fd_shard_expect;

/* 0: PATH is absent.  1: it verifies (tensors included) and matches x;
 * *manifest receives its manifest.  -1: it exists but is not such a shard
 * (e says why). */
int fd_shard_reusable(const char *path, const fd_shard_expect *x, jv **manifest, fd_err *e);

#endif
