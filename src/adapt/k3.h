/* The kimi-k3 distribution-fidelity artifact (festr2/kimi-k3-distribution-
 * fidelity-1024x2048-v1 and its window-form predecessor; also the compat/
 * view this tool writes): the metadata of suite-manifest.json and of the
 * tensor directory's manifest.json, checked the way his comparator
 * (compare-kimi-k3-hidden-replay.py: record_index, validate_source_manifest)
 * and the Python adapter (dsadapt.adapt_k3) read them.  Untrusted input:
 * every field is type-checked, nothing is trusted for an offset or a size. */
#ifndef FD_ADAPT_K3_H
#define FD_ADAPT_K3_H
#include <stddef.h>
#include <stdint.h>
#include "format/json.h"

typedef struct fd_k3_ctx {
    int64_t index;
    /* suite row (pointers into the suite document) */
    const char *token_file, *token_sha, *window_id, *allocation_stratum, *semantic_class, *source_cluster_id,
        *partition, *domain, *document_id;
    int sentinel;
    int64_t num_tokens;          /* -1: not declared */
    /* tensor record (pointers into the tensor manifest) */
    const char *file, *file_sha; /* file_sha NULL: not declared */
} fd_k3_ctx;

typedef struct fd_k3 {
    int logit;                   /* tensor manifest is ref/ (live logits), key "logits" */
    const char *suite_hash, *semantic_point, *run_name;
    int64_t context_length, hidden_width; /* hidden_width -1: not declared */
    int64_t declared;            /* context_count, else the number of rows */
    fd_k3_ctx *ctx;              /* sorted by index, indices 0..n-1 */
    size_t n;
} fd_k3;

/* Checks and indexes the two documents (which must outlive *out). */
int fd_k3_parse(const jv *suite, const jv *tensors, int logit, fd_k3 *out, fd_err *e);
void fd_k3_free(fd_k3 *k);
/* A relative path that may climb (`..`) but is not absolute, a URL or empty. */
int fd_k3_relpath_ok(const char *p);

#endif
