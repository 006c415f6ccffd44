/* The llama.cpp `--kl-divergence-base` file (".kld"), byte for byte as
 * tools/perplexity/perplexity.cpp writes it (docs/ADAPTERS.md cites the
 * lines): magic "_logits_", int32 n_ctx, int32 n_vocab, int32 n_chunk, the
 * n_chunk*n_ctx int32 tokens, then per chunk R = n_ctx-1-n_ctx/2 rows of
 * nv = 2*ceil(n_vocab/2)+4 uint16: float scale, float min_log_prob, n_vocab
 * codes, one zero pad when n_vocab is odd.  Little-endian hosts only. */
#ifndef FD_ADAPT_KLD_H
#define FD_ADAPT_KLD_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "util/err.h"

#define FD_KLD_HEADER 20

typedef struct fd_kld_info {
    int64_t n_ctx, n_vocab, n_chunk;
    int64_t rows;            /* per chunk: n_ctx - 1 - n_ctx/2 */
    int64_t first;           /* first scored position: n_ctx/2 */
    int64_t nv;              /* row stride in uint16 */
    uint64_t size;           /* the exact file size the header implies */
    uint64_t body;           /* offset of the first row */
} fd_kld_info;

/* Parses and checks the 20-byte header against the actual file size
 * (codes: bad_kld_magic, kld_v2_unsupported, bad_kld_header, kld_truncated,
 * kld_size_mismatch).  expect_vocab > 0 adds kld_vocab_mismatch. */
int fd_kld_header(const unsigned char *p, size_t len, uint64_t file_size, int64_t expect_vocab, fd_kld_info *k,
                  fd_err *e);
/* Checks one row (scale/min finite, scale >= 0, window <= 24 nats,
 * min_log_prob <= 0) and returns its floor window (16 or 24) via *window. */
int fd_kld_check_row(const fd_kld_info *k, const uint16_t *row, int *window, fd_err *e);
/* log p[i] = scale*q[i] + min_log_prob, two float roundings (no FMA), as the
 * llama.cpp reader computes it. */
void fd_kld_decode_row(const fd_kld_info *k, const uint16_t *row, float *out);
/* Encodes one row of fp32 logits exactly as llama.cpp's log_softmax()
 * writer does, with the floor at max - window (16 upstream, 24 ik_llama).
 * Refuses non-finite logits. */
int fd_kld_encode_row(int64_t n_vocab, const float *logits, int window, uint16_t *row, fd_err *e);

/* Whole-buffer check (the fuzz entry point): header, size, token range,
 * every row.  *window receives the widest floor seen. */
int fd_kld_check_buffer(const unsigned char *p, size_t len, int64_t expect_vocab, fd_kld_info *k, int *window,
                        fd_err *e);

/* Streaming reader over a file. */
typedef struct fd_kld_reader {
    FILE *f;
    char *path;
    fd_kld_info k;
    int32_t *tokens;         /* n_chunk * n_ctx */
    uint16_t *chunk;         /* rows * nv of the last chunk read */
} fd_kld_reader;
int fd_kld_open(const char *path, int64_t expect_vocab, fd_kld_reader *r, fd_err *e);
/* Reads chunk c (in order or not) into r->chunk and checks its rows. */
int fd_kld_read_chunk(fd_kld_reader *r, int64_t c, int *window, fd_err *e);
void fd_kld_close(fd_kld_reader *r);

#endif
