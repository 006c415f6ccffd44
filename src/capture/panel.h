/* Token panels (FORMAT.md §5): the upstream input panel format
 * `quant-pipeline.glm53-token-panel.v1` (DIR/panel.json + the .npy files under DIR/arrays).
 *
 * fd_panel_load does what hf_capture.load_panel does: filter by role, sort by
 * window_id, keep the first N, and check every window's arrays (tokens file
 * sha, mask location + sha, mask length, max(id) < vocab) plus the compact
 * JSON token digest, equal window lengths and the declared prediction
 * positions.  Every failure is a refusal (fd_err code) naming the file.
 *
 * fd_panel_build writes a panel in the same format from token lists. */
#ifndef FD_PANEL_H
#define FD_PANEL_H
#include <stddef.h>
#include <stdint.h>
#include "format/json.h"
#include "format/writer.h"
#include "util/err.h"

#define FD_PANEL_SCHEMA "quant-pipeline.glm53-token-panel.v1"

typedef struct fd_panel_window {
    char *window_id, *role, *domain, *document_id; /* role/domain/document_id may be NULL (JSON null) */
    int64_t *ids;
    size_t n_ids;
    char tokens_file[4096];             /* path of the tokens .npy */
    char token_ids_sha256[65];          /* file sha of the tokens .npy (checked) */
    char token_ids_json_sha256[65];     /* sha256 of json.dumps(ids, separators=(",",":")) (checked) */
    unsigned char *mask_npy;            /* the mask .npy bytes, verbatim */
    size_t mask_len;
    char mask_file[4096];               /* the mask file that was used */
    char mask_sha256[65];               /* == attention_mask_sha256 (checked) */
    size_t prediction_positions;        /* count of mask[:-1] & mask[1:] (== declared) */
} fd_panel_window;

typedef struct fd_panel {
    char *dir;
    char *panel_id;                     /* declared, else "panel--" + basename(dir) */
    int panel_id_derived;
    char *name;                         /* declared name or NULL */
    int have_receipt;
    char panel_receipt_sha256[65];      /* file sha of panel.receipt.json when present */
    char *receipt_tokenizer_id;         /* panel.receipt.json tokenizer.id, if a string */
    const jv *doc;                      /* the parsed panel.json (owned) */
    size_t total_windows;               /* windows[] before filtering */
    fd_panel_window *w;                 /* the selected windows, in window_id order */
    size_t n;
    size_t context_length;              /* the common token length of the selected windows */
    int64_t vocab_size;                 /* the bound every id was checked against */
    char suite_token_hash_sha256[65];   /* "\n".join(token_ids_json_sha256) over w[] */
    char suite_token_hash_legacy[65];   /* "".join(...) */
} fd_panel;

/* role NULL or "" keeps every window; max_windows <= 0 keeps all;
 * vocab_size must be positive.  On failure *p is left empty (nothing to free). */
int fd_panel_load(const char *dir, const char *role, long max_windows, int64_t vocab_size, fd_panel *p,
                  fd_err *e);
void fd_panel_free(fd_panel *p);

/* Fills a dataset writer window from a loaded panel window (pointers borrow
 * from pw; scored_rows = prediction_positions). */
void fd_panel_ds_window(const fd_panel_window *pw, fd_ds_window *out);

/* Checks a .npy file's bytes: a 1-D C-order array of one of the listed
 * descrs (NULL-terminated), exactly the bytes its header promises.  On
 * success *descr_out (one of the list) and *count, *data get the element
 * count and the start of the little-endian data.  Errors name `what`. */
int fd_panel_npy_1d(const unsigned char *p, size_t n, const char *const *descrs, const char *what,
                    const char **descr_out, uint64_t *count, const unsigned char **data, fd_err *e);

/* ---- building a panel -------------------------------------------------- */

typedef struct fd_tokenizer fd_tokenizer;

typedef struct fd_panel_build_opts {
    const char *out;                    /* destination directory */
    int64_t vocab_size;                 /* > 0 (text mode: <= 0 takes the tokenizer's) */
    const char *role;                   /* default "final" */
    const char *domain;                 /* default "unspecified" */
    long context_length;                /* <= 0: the length of the first window, all equal */
    const char *panel_id;               /* default "panel--" + basename(out) */
    const char *name;                   /* default panel_id */
    int force;                          /* replace an existing destination */
    /* text mode (a tokenizer is given): INPUT is [DOMAIN=]PATH of a text
     * file, a .jsonl corpus (one string or {"text","domain"?,"id"?} per
     * line) or a .json list of those; each document is tokenized without
     * special tokens and cut into windows of prefix + (L - |prefix|) tokens,
     * prefix = the post-processor's leading special tokens (none with
     * no_prefix); tails are dropped; a sealed panel.receipt.json binds the
     * panel to the tokenizer and the sources. */
    const fd_tokenizer *tokenizer;
    const char *tokenizer_id;           /* default "local/tokenizer-<sha256[:16]>" */
    long max_windows;                   /* <= 0: every full window */
    int no_prefix;
    /* upstream layout (text mode only): each window's own arrays/<id>.mask.npy
     * and, instead of FD_PANEL_RECEIPT_SCHEMA, a sealed
     * malaiwah.token-panel-build-receipt.v1 receipt (tokenizer.files_sha256,
     * parameters, final_windows) that panel-binding, like the Python tool's
     * panel.resolve_panel, resolves.  The tokenizer is pinned by repository
     * (owner/name) and a lowercase 40-hex revision; tokenizer_file is the
     * path it was read from (its basename is the bound file's name). */
    int upstream_layout;
    const char *tokenizer_repository, *tokenizer_revision, *tokenizer_file;
} fd_panel_build_opts;

#define FD_PANEL_RECEIPT_SCHEMA "fidelity.panel-build-receipt.v1"
#define FD_PANEL_UPSTREAM_RECEIPT_SCHEMA "malaiwah.token-panel-build-receipt.v1"

/* Documents read from one text source (text mode). */
typedef struct fd_panel_doc {
    int64_t *ids;
    size_t n;
    char *domain, *document_id;         /* NULL: the source's domain / name */
    size_t input;
} fd_panel_doc;
typedef struct fd_panel_docs {
    fd_panel_doc *v;
    size_t n, cap;
} fd_panel_docs;
int fd_panel_text_docs(const fd_tokenizer *t, const char *path, const char *domain, size_t input, fd_panel_docs *out,
                       char sha[65], fd_err *e);
void fd_panel_docs_free(fd_panel_docs *d);
/* The ids the tokenizer's post-processor puts before a text (BOS, [gMASK]<sop>, ...). */
int fd_panel_template_prefix(const fd_tokenizer *t, int64_t **ids, size_t *n, fd_err *e);

typedef struct fd_panel_build_result {
    size_t windows, context_length, dropped_tails, dropped_tokens;
    char suite_token_hash_sha256[65];
} fd_panel_build_result;

/* inputs: JSON files (a list of int lists, or one int list) or .npy int
 * arrays (1-D: one window, 2-D: one window per row). */
int fd_panel_build(const fd_panel_build_opts *o, char *const *inputs, size_t n_inputs,
                   fd_panel_build_result *res, fd_err *e);

#endif
