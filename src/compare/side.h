/* One side of a comparison: a verified dataset opened for replay.  Its
 * capture tensors are memory-mapped; nothing else of it is read twice. */
#ifndef FD_COMPARE_SIDE_H
#define FD_COMPARE_SIDE_H
#include <stddef.h>
#include <stdint.h>
#include "format/json.h"

typedef struct fd_ctx {
    int64_t index;
    int64_t rows;
    const jv *rec;          /* capture record */
    const jv *panel_rec;    /* panel record with the same index, or NULL */
    char *path;             /* the tensor file */
} fd_ctx;

typedef struct fd_side {
    char *root, *label, *realroot;
    jv *manifest, *capture_doc, *panel_doc;
    const char *dataset_sha256, *capture_content_digest, *form, *lane, *role;
    int64_t hidden, vocab;
    fd_ctx *ctx;            /* sorted by index */
    size_t n;
    int complete;
    char *head_path;        /* head/weight.safetensors */
    const char *head_key, *head_content;
    int logit;              /* capture.form == "logit": stored log-probs, no replay */
} fd_side;

/* Verifies (the seal gate) and loads a dataset; seal_failed (or the
 * verifier's first code) on any error. */
int fd_side_open(const char *path, const char *label, int verify_tensors, int allow_partial, fd_side *s, fd_err *e);
void fd_side_close(fd_side *s);
const fd_ctx *fd_side_find(const fd_side *s, int64_t index);

/* A tensor file read whole into private memory (never mmap: a file that
 * shrinks while read is a short read and a named refusal, never SIGBUS; a
 * file edited while read cannot change bytes already in memory). */
typedef struct fd_map {
    void *base;
    size_t len;
    const unsigned char *data;   /* BF16 / F32 little-endian, possibly unaligned */
} fd_map;
/* The BF16 [rows, hidden] payload of a hidden-state file. */
int fd_map_hidden(const char *path, const char *key, int64_t rows, int64_t hidden, fd_map *m, fd_err *e);
/* Any dtype: a logit-form side reads its F32 [rows, vocab] "logits". */
int fd_map_tensor(const char *path, const char *key, const char *dtype, int64_t rows, int64_t width, fd_map *m, fd_err *e);
/* A context's capture tensor read exactly once: the bytes are hashed as
 * they are read and must equal the sealed record's size_bytes and sha256
 * (tensor_mismatch: "changed since it was verified"), and only those bytes
 * are used (hash what is read, docs/COMPARE-IMPL.md). */
int fd_load_ctx(const fd_ctx *x, const char *key, const char *dtype, int64_t width, fd_map *m, fd_err *e);
/* Where a BF16 [vocab, hidden] head lies in its safetensors file: bytes
 * [*off, *off + *len) (refuses other dtypes, other shapes, a missing tensor). */
int fd_head_extent(const char *path, const char *key, int64_t vocab, int64_t hidden, uint64_t *off, uint64_t *len,
                   fd_err *e);
/* Reads that head into memory. */
int fd_read_head(const char *path, const char *key, int64_t vocab, int64_t hidden, uint16_t **out, fd_err *e);
void fd_unmap(fd_map *m);

#endif
