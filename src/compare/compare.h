/* compare: the gate ladder of COMPARE.md §3, the replay, the statistics and
 * the sealed comparison receipt (one per candidate). */
#ifndef FD_COMPARE_H
#define FD_COMPARE_H

/* The largest replay work unit in positions (--chunk-positions): each unit
 * streams the whole head once, so larger units read it less; the last units
 * shrink so the threads finish together (src/compare/replay.c take_unit). */
#define FD_CMP_POSITION_BLOCK 512
#include <stddef.h>
#include "format/json.h"

typedef struct fd_cmp_opts {
    const char *reference, *out;
    const char **candidates;
    size_t ncand;
    const char *reference_label;
    const char **candidate_labels;   /* may hold NULLs */
    int self_compare, force_compute, allow_cross_lane, allow_partial, own_heads;
    int disclose_head_substitution, verify_tensors, progress, no_bootstrap, js;
    int force;                       /* replace an existing OUT (else destination_exists) */
    int emit_k3_compat;
    int csv;                         /* tokenwise.csv beside each receipt: one row per scored position */              /* kimi-k3 views + k3-summary.json (src/compare/k3summary.h) */
    const char *head;                /* with --disclose-head-substitution */
    int threads;
    size_t position_block, vocab_chunk; /* position_block 0: FD_CMP_POSITION_BLOCK */
    const char *kernel;              /* NULL: the default by CPU features; else a path name */
    const char *created_utc;         /* NULL: now (tests pin it) */
    const struct fd_dist *dist;      /* NULL: one process; else the records are
                                        sharded across its ranks (docs/MPI.md) and
                                        only rank 0 writes (the others return n = 0) */
} fd_cmp_opts;

typedef struct fd_cmp_result {
    char **receipt_paths;            /* per candidate */
    char **classes;                  /* "strict" / "advisory" */
    jv **receipts;
    size_t n;
} fd_cmp_result;

/* Refusals set e->code to the gate's code and e->rule to the gate name. */
int fd_compare(const fd_cmp_opts *o, fd_cmp_result *r, fd_err *e);
void fd_cmp_result_free(fd_cmp_result *r);

/* validate --receipt: schema, seal, SC-1/SC-2/SC-3, BIAS-001, BIAS-006.
 * Returns the number of findings; each is passed to cb. */
int fd_validate_receipt(const jv *receipt, void (*cb)(void *, const char *code, const char *rule, const char *msg),
                        void *ctx);
/* The receipt schema compiled once, for callers that validate many receipts
 * (fd_validate_receipt compiles it per call). */
typedef struct fd_receipt_schema fd_receipt_schema;
fd_receipt_schema *fd_receipt_schema_new(fd_err *e);
void fd_receipt_schema_free(fd_receipt_schema *rs);
/* fd_validate_receipt with a compiled schema (NULL: compile one for this call). */
int fd_validate_receipt_with(const fd_receipt_schema *rs, const jv *receipt,
                             void (*cb)(void *, const char *code, const char *rule, const char *msg), void *ctx);

#endif
