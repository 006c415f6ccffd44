/* The parts of `panel-binding` (panel_binding.h) shared by its three
 * units: panel_binding_util.c (small checks, the tree walk, the .npy arrays,
 * the ustar digest), panel_binding_tok.c (the artifact contract and the
 * tokenizer files) and panel_binding.c (fd_resolve_panel).  Internal: every
 * refusal carries code panel_unresolvable (perr). */
#ifndef FD_CAPTURE_PANEL_BINDING_INTERNAL_H
#define FD_CAPTURE_PANEL_BINDING_INTERNAL_H
#include "capture/panel_binding.h"
#include "util/buf.h"
#include "util/strv.h"
#include <stddef.h>
#include <stdint.h>


#define PANEL_SCHEMA "quant-pipeline.glm53-token-panel.v1"
#define BUILD_RECEIPT_SCHEMA "malaiwah.token-panel-build-receipt.v1"
#define ARTIFACT_RECEIPT_SCHEMA "quant-pipeline.glm53-token-panel-receipt.v1"
#define TOKENIZER_RECEIPT_SCHEMA "quant-pipeline.glm53-tokenizer-receipt.v1"
#define ARCHIVE_ALGORITHM "sha256(ustar: sorted regular files; mode=0644; uid=gid=mtime=0)"
#define REFERENCE_SUBDIR ".reference"
#define JSON_MAX ((size_t)256 << 20)
#define NPY_MAX ((size_t)1 << 30)
#define EQUIV_MAX ((size_t)64 << 20)
#define MAX_FILES 1000000
#define MAX_DEPTH 64

/* every refusal of this file carries one code */
#define perr(e, ...) fd_fail((e), "panel_unresolvable", "", __VA_ARGS__)

typedef struct pfile {
    char *rel;
    uint64_t size;
    char sha[65];
} pfile;

typedef struct ptree {
    pfile *f;
    size_t n, cap;
} ptree;

typedef struct artifact {
    char *rel;
    int64_t size;
    char sha[65];
} artifact;

typedef struct tokfile {
    char *name;
    int64_t size;  /* -1: only a digest is listed */
    char sha[65];
} tokfile;

typedef struct tokbind {
    const char *repository, *revision; /* borrowed from the documents */
    int64_t vocab, max_exclusive;
    tokfile *files;
    size_t n_files;
    int verified;
    jv *equivalences;     /* the records of the files admitted through a .reference copy (not byte for
                           * for byte), in file order: panel.py's tokenizer_equivalences(); NULL: none */
    char identity[65];
    jv *receipt;  /* NULL: null */
} tokbind;

typedef struct npyv {
    fd_buf raw;
    char endian, kind;
    int width;
    uint64_t count;   /* 1-D length; 0 with ndim != 1 */
    int ndim;
    uint64_t shape[4];
    size_t off;
} npyv;

/* small checks (panel_binding_util.c) */
char *pb_repr(const jv *v);
int pb_hex64(const jv *v, const char *label, const char **out, fd_err *e);
int pb_integer(const jv *v, const char *label, int64_t min, int64_t *out, fd_err *e);
void pb_canonical(const jv *v, int newline, fd_buf *b);
void pb_sha_canonical(const jv *v, int newline, char hex[65]);
jv *pb_json_file(const char *path, const char *label, fd_buf *raw, fd_err *e);
int pb_verify_seal(const jv *doc, const char *label, char declared[65], const char **mode, fd_err *e);
int pb_pinned(const jv *repo, const jv *rev, const char *label, fd_err *e);
int pb_posix_canonical(const char *v, int allow_absolute);
const char *pb_basename_of(const char *p);
/* the tree: every regular file under the root with its size and SHA-256, sorted by path */
int pb_walk(const char *root, const char *rel, int depth, ptree *t, fd_err *e);
int pb_cmp_pfile(const void *a, const void *b);
const pfile *pb_tree_get(const ptree *t, const char *rel);
void pb_tree_free(ptree *t);
/* a 1-D .npy array (bounded by NPY_MAX) and its element i as int64 */
int pb_npy_read(const char *root, const char *rel, npyv *v, fd_err *e);
int64_t pb_npy_at(const npyv *v, uint64_t i, int *overflow);
/* the deterministic ustar archive digest of the tree (ARCHIVE_ALGORITHM) */
int pb_ustar_digest(const char *root, const ptree *t, char hex[65], uint64_t *bytes, fd_err *e);
/* the artifact contract of an artifact receipt, the tokenizer binding (panel_binding_tok.c) */
int pb_artifact_contract(const jv *receipt, artifact **out, size_t *n_out, fd_err *e);
void pb_artifacts_free(artifact *a, size_t n);
int pb_tokenizer_binding(const char *panel_root, const jv *receipt, const char *tok_root, tokbind *tb,
                         jv **tok_receipt_doc, fd_err *e);
void pb_tokfiles_free(tokfile *t, size_t n);

#endif
