/* safetensors: a validating header reader (any lie about sizes, offsets,
 * dtypes or shapes is a bad_tensor_file refusal, never a crash) and a
 * streaming single-file writer whose header is byte-identical to Python's
 * json.dumps(header, separators=(",",":"), sort_keys=True): compact, sorted,
 * ASCII-escaped, unpadded. */
#ifndef FD_SAFETENSORS_H
#define FD_SAFETENSORS_H
#include <stdint.h>
#include <stdio.h>
#include "json.h"
#include "sha.h"

#define FD_ST_MAX_DIMS 8
#define FD_ST_MAX_HEADER (100u << 20)

typedef struct fd_st_tensor {
    const char *name;        /* points into the parsed header */
    char dtype[16];
    int ndim;
    uint64_t shape[FD_ST_MAX_DIMS];
    uint64_t start, end;     /* offsets within the data region */
} fd_st_tensor;

typedef struct fd_st_file {
    uint64_t header_len, file_size;
    jv *header;
    const jv *metadata;      /* __metadata__ or NULL */
    fd_st_tensor *t;         /* sorted by start offset */
    size_t n;
} fd_st_file;

int fd_st_dtype_size(const char *dtype); /* bytes per element, 0 if unknown */
/* Validates a header blob against a data region of data_size bytes. */
int fd_st_parse_header(const char *hdr, size_t n, uint64_t data_size, fd_st_file *out, fd_err *e);
int fd_st_open(const char *path, fd_st_file *out, fd_err *e);
const fd_st_tensor *fd_st_find(const fd_st_file *f, const char *name);
void fd_st_close(fd_st_file *f);

/* Streaming writer of one tensor; content/payload/file digests computed on
 * the fly.  Written to a temporary name and renamed by fd_st_writer_finish. */
typedef struct fd_st_writer {
    FILE *f;
    char *path, *tmp;
    uint64_t want, have;
    fd_sha *content, *file;
} fd_st_writer;

int fd_st_writer_begin(fd_st_writer *w, const char *path, const char *name, const char *dtype,
                       const uint64_t *shape, int ndim, const jv *metadata, fd_err *e);
int fd_st_writer_put(fd_st_writer *w, const void *p, size_t n, fd_err *e);
/* content_hex == payload digest for a single-tensor file. */
int fd_st_writer_finish(fd_st_writer *w, char content_hex[65], char file_hex[65], fd_err *e);
void fd_st_writer_abort(fd_st_writer *w);

#endif
