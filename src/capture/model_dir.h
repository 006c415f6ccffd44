/* A Hugging Face model directory: its *.safetensors shards (parsed with the
 * validating reader) and its other files, plus a multi-tensor safetensors
 * writer whose files are byte-identical to the Python `safetensors`
 * library's serialize()/save_file() (checked against safetensors 0.8 by
 * tests/py/test_quantize.py):
 *
 *   - tensors are laid out ordered by dtype, widest-aligned first (the Rust
 *     crate's Dtype enum order, descending: U64 I64 F64 F32 U32 I32 BF16 F16
 *     U16 I16 F8_E4M3 F8_E5M2 I8 U8 BOOL), ties by name (byte order);
 *   - the header is serde_json's compact dump of the tensors in that same
 *     order, each as {"dtype":..,"shape":[..],"data_offsets":[a,b]} (field
 *     order dtype, shape, data_offsets), strings escaped as json.dumps with
 *     ensure_ascii=False does (non-ASCII stays raw UTF-8);
 *   - the header is padded with spaces to a multiple of 8 bytes;
 *   - no __metadata__ (the toy quantizer's save_file drops it, FORMAT §7). */
#ifndef FD_MODEL_DIR_H
#define FD_MODEL_DIR_H
#include <stddef.h>
#include <stdint.h>
#include "format/safetensors.h"
#include "util/strv.h"

typedef struct fd_md_shard {
    char *name;          /* file name inside the directory */
    char *path;          /* full path */
    fd_st_file st;       /* parsed header; st.t sorted by data offset */
} fd_md_shard;

typedef struct fd_model_dir {
    char *root;
    fd_md_shard *shards; /* every *.safetensors entry, sorted by name (byte order) */
    size_t nshards;
    fd_strv others;      /* every other entry that is a regular file (symlinks followed), sorted */
    fd_strv skipped;     /* entries that are neither: subdirectories etc. (not copied) */
} fd_model_dir;

/* Lists and parses the directory.  A shard that fails validation is a
 * bad_tensor_file refusal naming it; a missing directory is missing_file. */
int fd_md_open(const char *dir, fd_model_dir *md, fd_err *e);
void fd_md_close(fd_model_dir *md);
/* Tensor names of one shard sorted by code point (Python sorted()). */
const fd_st_tensor **fd_md_sorted_tensors(const fd_md_shard *s);
/* Absolute offset of a tensor's first byte in its shard file. */
static inline uint64_t fd_md_data_offset(const fd_md_shard *s, const fd_st_tensor *t)
{
    return 8 + s->st.header_len + t->start;
}

/* Byte-for-byte copy (following a symlinked source), keeping the permission
 * bits and the access/modification times, like shutil.copy2. */
int fd_md_copy_file(const char *src, const char *dst, fd_err *e);

/* ------------------------------------------------ multi-tensor writer */

typedef struct fd_stm_tensor {
    const char *name;
    const char *dtype;
    int ndim;
    uint64_t shape[FD_ST_MAX_DIMS];
} fd_stm_tensor;

typedef struct fd_stm_writer {
    int fd;
    char *path;
    size_t n;
    size_t *order;       /* order[k]: index (into the caller's array) of the k-th tensor on disk */
    uint64_t *size;      /* byte size of each tensor, in the caller's indexing */
    size_t cur;          /* position in order[] being written */
    uint64_t have;       /* bytes of order[cur] written so far */
} fd_stm_writer;

/* Computes the layout and writes length + header.  The caller then writes
 * every tensor's bytes with fd_stm_put in the order given by w->order. */
int fd_stm_begin(fd_stm_writer *w, const char *path, const fd_stm_tensor *t, size_t n, fd_err *e);
int fd_stm_put(fd_stm_writer *w, const void *p, size_t len, fd_err *e);
/* Checks every byte arrived, fsyncs and closes. */
int fd_stm_finish(fd_stm_writer *w, fd_err *e);
void fd_stm_abort(fd_stm_writer *w); /* closes and unlinks */
/* The header bytes alone (padded), for tests and the layout. */
int fd_stm_header(const fd_stm_tensor *t, size_t n, size_t *order, uint64_t *size, fd_buf *out, fd_err *e);

#endif
