/* GGUF (llama.cpp's model file, versions 2 and 3, little-endian): a
 * validating header reader over a read-only memory map.  Every count,
 * length, dimension and offset is bounded by the bytes the file has before
 * anything is allocated; tensor data is never copied (a tensor's `data`
 * points into the map).  Split sets (NAME-00001-of-0000N.gguf) are opened
 * from their first file, the others found beside it and each header checked.
 *
 * Refusals: bad_gguf (any structural lie: magic, version, counts, string or
 * array lengths, types of metadata values, dims, alignment, offsets, overlap,
 * truncation), gguf_unknown_type (a tensor type id ggml does not define),
 * gguf_split_set (a split file missing, mis-numbered or from another set),
 * unreadable / missing_file (not a regular file, cannot be opened). */
#ifndef FD_GGUF_H
#define FD_GGUF_H
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

enum {
    FD_GGUF_U8 = 0, FD_GGUF_I8 = 1, FD_GGUF_U16 = 2, FD_GGUF_I16 = 3, FD_GGUF_U32 = 4, FD_GGUF_I32 = 5,
    FD_GGUF_F32 = 6, FD_GGUF_BOOL = 7, FD_GGUF_STRING = 8, FD_GGUF_ARRAY = 9, FD_GGUF_U64 = 10,
    FD_GGUF_I64 = 11, FD_GGUF_F64 = 12,
};
#define FD_GGUF_MAX_DIMS 4
#define FD_GGUF_MAX_NAME 64 /* ggml's GGML_MAX_NAME, the terminating NUL included */

typedef struct fd_gguf_kv {
    char *key;               /* NUL-terminated copy */
    uint32_t type;           /* FD_GGUF_* */
    union { uint64_t u; int64_t i; double f; } v; /* scalars: integers widened, floats as double, bool 0/1 */
    const uint8_t *str;      /* STRING: bytes in the map (not NUL-terminated) */
    uint64_t len;            /* STRING: byte length */
    uint32_t atype;          /* ARRAY: element type (never ARRAY: nested arrays are refused) */
    uint64_t alen;           /* ARRAY: element count */
    const uint8_t *adata;    /* ARRAY: first element in the map */
    uint64_t abytes;         /* ARRAY: bytes of the elements */
} fd_gguf_kv;

typedef struct fd_gguf_tensor {
    char name[FD_GGUF_MAX_NAME];
    uint32_t type;           /* ggml type id (format/ggml_quants.h) */
    int ndim;
    uint64_t ne[FD_GGUF_MAX_DIMS]; /* ggml order: ne[0] is the row length (innermost) */
    uint64_t nelem, nbytes;
    uint64_t offset;         /* within the data section */
    const uint8_t *data;     /* in the map */
    int file;                /* index in its set (0 for a lone file) */
} fd_gguf_tensor;

typedef struct fd_gguf_file {
    char *path;
    const uint8_t *map;
    uint64_t size;
    int mapped;              /* map is ours to munmap */
    uint32_t version;
    uint64_t alignment, data_off;
    fd_gguf_kv *kv;
    size_t nkv;
    fd_gguf_tensor *t;       /* in file order */
    size_t nt;
} fd_gguf_file;

/* Parses and validates a whole file's bytes p[0..n) (a map, or a fuzz
 * input); out points into p.  On failure out is empty. */
int fd_gguf_parse(const uint8_t *p, uint64_t n, fd_gguf_file *out, fd_err *e);
int fd_gguf_open(const char *path, fd_gguf_file *out, fd_err *e);
void fd_gguf_close(fd_gguf_file *f);
const fd_gguf_kv *fd_gguf_get(const fd_gguf_file *f, const char *key);
/* An integer-typed value (any of the eight integer types) in range of
 * int64; -1 when missing or not an integer. */
int fd_gguf_get_int(const fd_gguf_file *f, const char *key, int64_t *out);
/* A STRING value as a fresh NUL-terminated string (NULL if missing, not a
 * string, or holding a NUL byte). */
char *fd_gguf_get_str(const fd_gguf_file *f, const char *key);
/* Element i of an ARRAY of STRING (walks the array: O(i)). */
int fd_gguf_arr_str(const fd_gguf_kv *kv, uint64_t i, const uint8_t **s, uint64_t *len);
const char *fd_gguf_vtype_name(uint32_t type);
/* Bytes of one fixed-size value type, 0 for STRING/ARRAY/unknown. */
int fd_gguf_vtype_size(uint32_t type);

/* A model: one file, or every file of a split set, tensors across the set. */
typedef struct fd_gguf_set {
    fd_gguf_file *f;
    size_t n;
    fd_gguf_tensor **t;      /* every tensor of the set, sorted by name */
    size_t nt;
} fd_gguf_set;

int fd_gguf_set_open(const char *first, fd_gguf_set *s, fd_err *e);
void fd_gguf_set_close(fd_gguf_set *s);
const fd_gguf_tensor *fd_gguf_set_find(const fd_gguf_set *s, const char *name);

/* Writing GGUF metadata (format/gguf_write.c; `quantize --format gguf`):
 * key/value records appended to b in GGUF v3 little-endian encoding, n
 * counting them; keys are "<arch>.<key>" (arch NULL: the key as given). */
struct fd_buf;
typedef struct fd_gguf_kvw {
    struct fd_buf *b;
    uint64_t n;
    const char *arch;
} fd_gguf_kvw;
void fd_gguf_kv_u32(fd_gguf_kvw *w, const char *key, int64_t v);
void fd_gguf_kv_f32(fd_gguf_kvw *w, const char *key, double v);
void fd_gguf_kv_bool(fd_gguf_kvw *w, const char *key, int v);
void fd_gguf_kv_str(fd_gguf_kvw *w, const char *key, const char *v);
void fd_gguf_kv_bools(fd_gguf_kvw *w, const char *key, const unsigned char *v, uint64_t n);
/* Little-endian u32 / u64 and a GGUF string (u64 length + bytes). */
void fd_gguf_put_u32(struct fd_buf *b, uint32_t v);
void fd_gguf_put_u64(struct fd_buf *b, uint64_t v);
void fd_gguf_put_str(struct fd_buf *b, const char *s);

#endif
