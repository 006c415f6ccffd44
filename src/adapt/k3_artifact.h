/* A kimi-k3 artifact on disk (docs/ADAPTERS.md, the k3 section): its
 * metadata files located the way dsadapt._k3_paths does, and everything the
 * adapter will seal checked against the bytes first: token files against
 * their digests and the suite hash, tensor files against their declared
 * sha256, key, dtype and shape, the head against file_sha256 and
 * raw_tensor_sha256. */
#ifndef FD_ADAPT_K3_ARTIFACT_H
#define FD_ADAPT_K3_ARTIFACT_H
#include "k3.h"

typedef struct fd_k3_window {
    int64_t *ids;
    size_t n_ids;
    char *tensor_path;
    char dtype[16];               /* BF16 (hidden or logits) or F32 (logits) */
    int64_t rows;
} fd_k3_window;

typedef struct fd_k3_artifact {
    jv *suite, *tensors, *top, *runtime, *validation, *head_manifest; /* absent optional files: NULL */
    const jv *checkpoint;        /* manifest.json checkpoint, else capture-runtime.json's */
    fd_k3 k;
    int logit, logit_bf16;
    fd_k3_window *win;           /* the first n_use contexts */
    size_t n_use;
    uint16_t *head;              /* BF16 [vocab, hidden] or NULL (logit form only) */
    int64_t vocab, hidden;
    char suite_sha[65], tensor_manifest_sha[65], top_sha[65];
} fd_k3_artifact;

/* head: an explicit head file (else the artifact's own lm-head); limit > 0
 * keeps the first `limit` contexts. */
int fd_k3_artifact_load(const char *root, const char *head, int64_t limit, fd_k3_artifact *a, fd_err *e);
void fd_k3_artifact_free(fd_k3_artifact *a);

#endif
