/* The dataset writer: assembles a complete sealed fidelity dataset in a
 * temporary directory beside the destination and renames it into place only
 * after the seal chain of FORMAT.md §3 has been written, so an interrupted
 * write never leaves a directory that looks sealed. */
#ifndef FD_WRITER_H
#define FD_WRITER_H
#include <stddef.h>
#include <stdint.h>
#include "json.h"

typedef struct fd_ds_identity {
    const char *dataset_id, *dataset_name, *role, *lane;  /* required */
    const char *run_name, *cold_run, *created_utc;        /* NULL: defaults / now */
    const char *author, *license, *repository;
    const char *weights_repository, *weights_revision, *codec;
    const jv *declared_bits;      /* NULL: 16 for root, else null */
    const jv *scope;              /* NULL: the native root scope */
    const char *panel_id, *panel_name, *panel_repository, *panel_revision;
    const jv *tokenizer;          /* NULL: a minimal tokenizer block */
    /* panel.panel_receipt_sha256 of the manifest and of panel/panel.json
     * (traceability only, PANEL-D2; a bound capture's receipt identity);
     * NULL: null.  panel_receipt_file: the manifest's panel.panel_receipt_file
     * (the caller writes those bytes under fd_dsw_staging); NULL: absent. */
    const char *panel_receipt_sha256, *panel_receipt_file;
    const char *checkpoint_identity_sha256, *config_sha256;
    const jv *checkpoint_files;   /* [{name,size,sha256}] or NULL */
    const jv *resolved_panel_binding; /* runtime capture_tool.resolved_panel_binding; NULL: null */
    const jv *stack_fingerprint;  /* NULL: this build's own fingerprint */
    const char *engine;           /* capture_tool.version text */
    const jv *extra_disclosures;  /* appended after the standard ones */
    const jv *generation_sanity_probe; /* the probe record (top-level key) or NULL;
                                          status "skipped" adds its caveat disclosure */
    const char *subset_detail;
    int64_t declared_records;     /* <=0: the number of windows added */
    /* A shard (docs/MPI.md): its records keep their panel-wide indices from
     * index_base on, and coverage.shard_of is this object (complete false,
     * declared_records the whole panel's).  NULL / 0: an ordinary dataset. */
    const jv *shard_of;
    int64_t index_base;
    int64_t hidden, vocab, context_length;
    int force;                    /* replace an existing destination */
    /* Logit form (adapters, docs/ADAPTERS.md).  form NULL means "hidden" and
     * every field below is then ignored: the hidden path writes what it
     * always wrote. */
    const char *form;             /* "hidden" | "logit" */
    const char *semantic_point;   /* logit: NULL = lm_head_output_before_sampling */
    const char *head_not_separable_reason;
    const jv *lossy_codec;        /* NULL: null */
    int dtype_lossy;              /* capture.dtype_lossless false */
    const jv *scoring_window;     /* NULL: every position from 0 */
    const jv *base_capture;       /* NULL: null */
    const jv *adapted_from;       /* interop.adapted_from; NULL: null */
    const char *interop_note, *runtime_source, *mechanism, *card_note;
    /* Adapters of either form (docs/ADAPTERS.md); zero keeps the capture path. */
    int lane_inferred;            /* runtime.lane_inferred */
    int head_unknown;             /* hidden head: quantized/bits null, source unknown (D-1) */
    /* A tied head (tie_word_embeddings): the checkpoint tensor shipped as
     * the head (the embedding, e.g. model.embed_tokens.weight); the head
     * block then says "tied_word_embeddings": true and "source_tensor".
     * NULL: an untied lm_head.weight (neither key is written). */
    const char *head_tied_to;
    int weights_quantized;        /* 0: from scope policy; 1: true; -1: false */
    const jv *determinism;        /* NULL: one cold capture; else copied, evidence set here */
    /* Write the compat/ kimi-k3 view before the seal (src/format/k3compat.h). */
    int emit_k3_compat;
} fd_ds_identity;

/* runtime.lane: the dataset schema's lane enum (the registry's), in order;
 * every writer and command refuses any other value before it writes. */
#define FD_LANES "sealed-ep8|streaming|local-mps|local-cuda-budget|other"
int fd_lane_valid(const char *lane);

typedef struct fd_ds_window {
    const int64_t *ids;
    size_t n_ids;
    const void *mask_npy;         /* the mask file bytes, copied verbatim */
    size_t mask_len;
    const char *window_id, *role, *domain, *document_id;
    size_t scored_rows;           /* rows of hidden state (prediction positions) */
    const char *allocation_stratum, *semantic_class, *source_cluster_id, *partition; /* NULL: null */
    int sentinel;
    double elapsed_seconds;
} fd_ds_window;

typedef struct fd_dsw fd_dsw;

fd_dsw *fd_dsw_begin(const char *out, const fd_ds_identity *id, fd_err *e);
/* hidden: scored_rows x hidden bf16 values, row-major. */
int fd_dsw_add_window(fd_dsw *w, const fd_ds_window *win, const uint16_t *hidden, fd_err *e);
/* Logit form: scored_rows x vocab fp32 values, row-major (tensor "logits"). */
int fd_dsw_add_window_logits(fd_dsw *w, const fd_ds_window *win, const float *logits, fd_err *e);
/* head: vocab x hidden bf16 values.  Required for hidden form; optional for
 * logit form (the head that produced the logits, when it is known). */
int fd_dsw_set_head(fd_dsw *w, const uint16_t *head, fd_err *e);
/* The same, row by row: row(ctx, r, out) writes row r's hidden bf16 values
 * (a quantized head decoded a block of rows at a time, never whole). */
typedef void (*fd_dsw_head_row_fn)(void *ctx, uint64_t r, uint16_t *out);
int fd_dsw_set_head_rows(fd_dsw *w, fd_dsw_head_row_fn row, void *ctx, fd_err *e);
/* Writes the seal chain and renames into place; frees w either way.
 * On success the sealed manifest is returned through *manifest if non-NULL. */
int fd_dsw_finish(fd_dsw *w, jv **manifest, fd_err *e);
void fd_dsw_abort(fd_dsw *w);
/* the staging directory the writer fills (renamed to OUT by fd_dsw_finish) */
const char *fd_dsw_staging(const fd_dsw *w);

/* The manifest's standard seal block (dsmanifest.seal_block); external_anchor
 * NULL means null. */
jv *fd_dataset_seal_block(const char *checksums_sha, const jv *external_anchor);

/* A YAML block rendering of a JSON value (the card's front matter). */
void fd_yaml_emit(const jv *v, fd_buf *out);

#endif
