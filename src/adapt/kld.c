#include "kld.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static int32_t rd_i32(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t s;
    memcpy(&s, &v, 4);
    return s;
}

static int header_v1(const unsigned char *p, size_t len, uint64_t file_size, int64_t expect_vocab, fd_kld_info *k,
                     fd_err *e);

/* The AesSedai fork writes "_logits_v2" and then its own fields: read as the
 * v1 layout, its 9th/10th bytes become part of n_ctx and every later field
 * is shifted, so the v1 reading fails in one of several ways (an absurd or
 * impossible geometry, a size mismatch, a short header).  Every such failure
 * of a "_logits_v2" file is kld_v2_unsupported; a file whose v1 reading is
 * fully consistent (n_ctx = 12918 mod 65536 and the exact size) stays v1. */
int fd_kld_header(const unsigned char *p, size_t len, uint64_t file_size, int64_t expect_vocab, fd_kld_info *k,
                  fd_err *e)
{
    int v2 = len >= 10 && !memcmp(p, "_logits_v2", 10);
    if (!header_v1(p, len, file_size, expect_vocab, k, e)) return 0;
    if (v2 && strcmp(e->code, "kld_vocab_mismatch")) {
        memset(k, 0, sizeof *k);
        return fd_fail(e, "kld_v2_unsupported", "KLD-1", "a \"_logits_v2\" file (the AesSedai fork's layout, not llama.cpp's) "
                       "is refused: its header does not read as a consistent llama.cpp file");
    }
    return -1;
}

static int header_v1(const unsigned char *p, size_t len, uint64_t file_size, int64_t expect_vocab, fd_kld_info *k,
                     fd_err *e)
{
    memset(k, 0, sizeof *k);
    if (len < 8 || memcmp(p, "_logits_", 8))
        return fd_fail(e, "bad_kld_magic", "KLD-1", "not a llama.cpp --kl-divergence-base file (the magic is not \"_logits_\")");
    if (len < FD_KLD_HEADER)
        return fd_fail(e, "kld_truncated", "KLD-2", "the file ends inside the 20-byte header (%zu bytes)", len);
    int32_t n_ctx = rd_i32(p + 8), n_vocab = rd_i32(p + 12), n_chunk = rd_i32(p + 16);
    if (n_ctx < 3 || n_vocab < 1 || n_chunk < 1) {
        return fd_fail(e, "bad_kld_header", "KLD-2", "header n_ctx %d, n_vocab %d, n_chunk %d: need n_ctx >= 3 (one scored row), "
                       "n_vocab >= 1, n_chunk >= 1", n_ctx, n_vocab, n_chunk);
    }
    k->n_ctx = n_ctx;
    k->n_vocab = n_vocab;
    k->n_chunk = n_chunk;
    k->first = n_ctx / 2;
    k->rows = n_ctx - 1 - k->first;
    k->nv = 2 * ((k->n_vocab + 1) / 2) + 4;
    /* 20 + 4*C*n + C*R*nv*2, every factor < 2^31: fits in 128 bits; check 64 */
    unsigned __int128 tok = (unsigned __int128)4 * (uint64_t)n_chunk * (uint64_t)n_ctx;
    unsigned __int128 body = (unsigned __int128)2 * (uint64_t)n_chunk * (uint64_t)k->rows * (uint64_t)k->nv;
    unsigned __int128 size = FD_KLD_HEADER + tok + body;
    if (size > (unsigned __int128)INT64_MAX)
        return fd_fail(e, "bad_kld_header", "KLD-2", "header n_ctx %d, n_vocab %d, n_chunk %d implies an impossible size", n_ctx,
                       n_vocab, n_chunk);
    k->size = (uint64_t)size;
    k->body = (uint64_t)(FD_KLD_HEADER + tok);
    if (file_size != k->size) {
        if (file_size < k->size)
            return fd_fail(e, "kld_truncated", "KLD-2", "the header (n_ctx %d, n_vocab %d, n_chunk %d) implies %llu bytes, the file "
                           "has %llu: truncated", n_ctx, n_vocab, n_chunk, (unsigned long long)k->size,
                           (unsigned long long)file_size);
        return fd_fail(e, "kld_size_mismatch", "KLD-2", "the header (n_ctx %d, n_vocab %d, n_chunk %d) implies %llu bytes, the file "
                       "has %llu: trailing bytes or a different layout", n_ctx, n_vocab, n_chunk,
                       (unsigned long long)k->size, (unsigned long long)file_size);
    }
    if (expect_vocab > 0 && expect_vocab != k->n_vocab)
        return fd_fail(e, "kld_vocab_mismatch", "KLD-3", "the file's n_vocab is %d, expected %lld", n_vocab, (long long)expect_vocab);
    return 0;
}

static float row_float(const uint16_t *row, int i)
{
    float f;
    memcpy(&f, row + 2 * i, 4);
    return f;
}

int fd_kld_check_row(const fd_kld_info *k, const uint16_t *row, int *window, fd_err *e)
{
    /* llama.cpp's row buffer is a zero-initialised vector whose pad slot is
     * never written: a non-zero pad means n_vocab is one short of the writer's */
    if ((k->n_vocab & 1) && row[4 + k->n_vocab])
        return fd_fail(e, "bad_kld_row", "KLD-4", "the pad entry after %lld codes is %u, not 0: n_vocab does not match the "
                       "writer's (an odd n_vocab and n_vocab+1 share one row stride)", (long long)k->n_vocab, row[4 + k->n_vocab]);
    float scale = row_float(row, 0), minlp = row_float(row, 1);
    if (!isfinite(scale) || !isfinite(minlp) || scale < 0 || minlp > 0)
        return fd_fail(e, "bad_kld_row", "KLD-4", "a row header holds scale %g, min_log_prob %g (need finite, scale >= 0, "
                       "min_log_prob <= 0)", (double)scale, (double)minlp);
    /* M - max(min, M - W) is W up to the rounding of M - W: a few ulp of M */
    double range = (double)scale * 65535.0;
    if (range > 24.0 * (1 + 1e-3))
        return fd_fail(e, "bad_kld_row", "KLD-4", "a row spans %.6g nats: wider than the 24-nat window of any known writer", range);
    *window = range > 16.0 * (1 + 1e-3) ? 24 : 16;
    return 0;
}

void fd_kld_decode_row(const fd_kld_info *k, const uint16_t *row, float *out)
{
    float scale = row_float(row, 0), minlp = row_float(row, 1);
    const uint16_t *q = row + 4;
    for (int64_t i = 0; i < k->n_vocab; i++) {
        float t = scale * (float)q[i];   /* separate statements: never contracted */
        out[i] = t + minlp;
    }
}

/* llama.cpp's nearest_int: add 1.5*2^23 and keep the mantissa bits. */
static int nearest_int(float fval)
{
    float val = fval + 12582912.f;
    int32_t i;
    memcpy(&i, &val, 4);
    return (i & 0x007fffff) - 0x00400000;
}

int fd_kld_encode_row(int64_t n_vocab, const float *x, int window, uint16_t *row, fd_err *e)
{
    float maxl = x[0], minl = x[0];
    for (int64_t i = 0; i < n_vocab; i++)
        if (!isfinite(x[i])) return fd_fail(e, "non_finite", "KLD-5", "a logit is not finite (refused, never clamped)");
    for (int64_t i = 1; i < n_vocab; i++) {
        maxl = maxl < x[i] ? x[i] : maxl;   /* std::max(a, b) is a < b ? b : a */
        minl = x[i] < minl ? x[i] : minl;   /* std::min(a, b) is b < a ? b : a */
    }
    float floor_ = maxl - (float)window;
    minl = minl < floor_ ? floor_ : minl;
    double sum = 0.0;
    for (int64_t i = 0; i < n_vocab; i++) sum += (double)expf(x[i] - maxl);
    const float lse = (float)log(sum);
    const float d0 = minl - maxl;
    const float minlp = d0 - lse;
    const float scale = (maxl - minl) / 65535.f;
    memcpy(row, &scale, 4);
    memcpy(row + 2, &minlp, 4);
    uint16_t *q = row + 4;
    if (scale != 0) {
        const float inv = 1 / scale;
        for (int64_t i = 0; i < n_vocab; i++) {
            if (x[i] > minl) {
                float d = x[i] - minl;
                float s = inv * d;
                q[i] = (uint16_t)nearest_int(s);   /* int -> uint16 wraps as in C++ */
            } else q[i] = 0;
        }
    } else memset(q, 0, (size_t)n_vocab * 2);
    if (n_vocab & 1) q[n_vocab] = 0;
    return 0;
}

int fd_kld_check_buffer(const unsigned char *p, size_t len, int64_t expect_vocab, fd_kld_info *k, int *window, fd_err *e)
{
    if (fd_kld_header(p, len, len, expect_vocab, k, e)) return -1;
    for (int64_t i = 0; i < k->n_chunk * k->n_ctx; i++) {
        int32_t t = rd_i32(p + FD_KLD_HEADER + 4 * i);
        if (t < 0 || t >= k->n_vocab)
            return fd_fail(e, "bad_kld_tokens", "KLD-3", "token %lld is %d, outside the vocabulary [0, %lld)", (long long)i, t,
                           (long long)k->n_vocab);
    }
    *window = 16;
    uint16_t *row = fd_xmalloc((size_t)k->nv * 2);
    int rc = 0;
    for (int64_t r = 0; r < k->n_chunk * k->rows && !rc; r++) {
        memcpy(row, p + k->body + (uint64_t)r * (uint64_t)k->nv * 2, (size_t)k->nv * 2);
        int w;
        rc = fd_kld_check_row(k, row, &w, e);
        if (!rc && w > *window) *window = w;
    }
    free(row);
    return rc;
}

int fd_kld_open(const char *path, int64_t expect_vocab, fd_kld_reader *r, fd_err *e)
{
    memset(r, 0, sizeof *r);
    struct stat st;
    int fd = fd_open_regular(path, 0, &st, e);   /* a FIFO is refused, never waited on */
    if (fd < 0) return -1;
    if (!(r->f = fdopen(fd, "rb"))) {
        close(fd);
        return fd_fail(e, "unreadable", "", "%s: %s", path, strerror(errno));
    }
    r->path = fd_xstrdup(path);
    unsigned char h[FD_KLD_HEADER];
    size_t got = fread(h, 1, sizeof h, r->f);
    if (fd_kld_header(h, got, (uint64_t)st.st_size, expect_vocab, &r->k, e)) {
        fd_err_prefix(e, path);
        fd_kld_close(r);
        return -1;
    }
    /* header and size can agree on a geometry no machine can hold (a sparse
     * file): the token block, one chunk of codes and the adapter's decoded
     * chunk (4 bytes a code) must fit in half the physical memory */
    size_t nt = (size_t)(r->k.n_chunk * r->k.n_ctx);
    unsigned __int128 need = (unsigned __int128)nt * 4 + (unsigned __int128)(uint64_t)(r->k.rows * r->k.nv) * 6;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    unsigned __int128 limit = pages > 0 && psz > 0 ? (unsigned __int128)(uint64_t)pages * (uint64_t)psz / 2
                                                    : (unsigned __int128)1 << 32;
    if (need > limit || !(r->tokens = malloc(nt * 4 + 4)) ||
        !(r->chunk = malloc((size_t)(r->k.rows * r->k.nv) * 2))) {
        fd_fail(e, "kld_too_large", "KLD-2", "%s: the geometry n_ctx %lld, n_vocab %lld, n_chunk %lld needs %.3g GB of "
                "working memory; this machine allows %.3g GB (half its physical memory): refused", path,
                (long long)r->k.n_ctx, (long long)r->k.n_vocab, (long long)r->k.n_chunk, (double)need / 1e9,
                (double)limit / 1e9);
        fd_kld_close(r);
        return -1;
    }
    if (fread(r->tokens, 4, nt, r->f) != nt) {
        fd_fail(e, "kld_truncated", "KLD-2", "%s: short read in the token block", path);
        fd_kld_close(r);
        return -1;
    }
    for (size_t i = 0; i < nt; i++)
        if (r->tokens[i] < 0 || r->tokens[i] >= r->k.n_vocab) {
            fd_fail(e, "bad_kld_tokens", "KLD-3", "%s: token %zu is %d, outside the vocabulary [0, %lld)", path, i, r->tokens[i],
                    (long long)r->k.n_vocab);
            fd_kld_close(r);
            return -1;
        }
    return 0;
}

int fd_kld_read_chunk(fd_kld_reader *r, int64_t c, int *window, fd_err *e)
{
    size_t n = (size_t)(r->k.rows * r->k.nv);
    uint64_t off = r->k.body + (uint64_t)c * n * 2;
    if (c < 0 || c >= r->k.n_chunk) return fd_fail(e, "bad_usage", "", "%s: no chunk %lld", r->path, (long long)c);
    if (fseeko(r->f, (off_t)off, SEEK_SET) || fread(r->chunk, 2, n, r->f) != n)
        return fd_fail(e, "kld_truncated", "KLD-2", "%s: short read in chunk %lld (the file changed while read?)", r->path,
                       (long long)c);
    *window = 16;
    for (int64_t i = 0; i < r->k.rows; i++) {
        int w;
        if (fd_kld_check_row(&r->k, r->chunk + i * r->k.nv, &w, e)) {
            char where[160];
            snprintf(where, sizeof where, "%s: chunk %lld row %lld", r->path, (long long)c, (long long)i);
            fd_err_prefix(e, where);
            return -1;
        }
        if (w > *window) *window = w;
    }
    return 0;
}

void fd_kld_close(fd_kld_reader *r)
{
    if (r->f) fclose(r->f);
    free(r->path);
    free(r->tokens);
    free(r->chunk);
    memset(r, 0, sizeof *r);
}
