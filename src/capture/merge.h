/* `fidelity merge`: the shards of one distributed capture (capture/shard.h)
 * assembled into the full dataset through the ordinary writer, so the
 * result is the dataset one process would have written: the same records,
 * tensors, tokens and masks in the same order, hence the same
 * capture_content_digest (docs/MPI.md).
 *
 * Each shard is verified first (seal chain and tensor digests).  Refusals:
 * not_a_shard (coverage.shard_of missing), shard_mismatch (the shards differ
 * in run identity: dataset id/name/role, lane, run name, checkpoint identity,
 * config, scope, panel, head, geometry, probe, disclosures),
 * incomplete_shards (not exactly the disjoint contiguous cover 0..N-1 of
 * the declared panel, or the assembled token digests do not recompute the
 * panel hash the shards name), unsupported_form (logit-form shards). */
#ifndef FD_CAPTURE_MERGE_H
#define FD_CAPTURE_MERGE_H
#include <stddef.h>
#include "format/json.h"

typedef struct fd_merge_opts {
    const char *const *shards;
    size_t n;
    const char *out;
    int force;
    const char *created_utc;   /* NULL: now */
} fd_merge_opts;

int fd_merge_shards(const fd_merge_opts *o, jv **manifest, fd_err *e);

#endif
