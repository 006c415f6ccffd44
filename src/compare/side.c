#include "side.h"
#include "format/safetensors.h"
#include "format/sha.h"
#include "format/validate.h"
#include "util/fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_ctx(const void *a, const void *b)
{
    const fd_ctx *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

int fd_side_open(const char *path, const char *label, int verify_tensors, int allow_partial, fd_side *s, fd_err *e)
{
    memset(s, 0, sizeof *s);
    fd_report r;
    fd_validate_opts o = {.verify_tensors = verify_tensors, .allow_partial = allow_partial};
    fd_validate_dataset(path, &o, &r);
    if (r.n_errors) {
        fd_fail(e, "seal_failed", "seal", "%s does not verify: [%s] %s (%s)", path, r.errors[0].code, r.errors[0].message,
                r.errors[0].rule);
        fd_report_free(&r);
        return -1;
    }
    s->manifest = r.manifest;
    r.manifest = NULL;
    fd_report_free(&r);
    s->root = fd_xstrdup(path);
    s->realroot = realpath(path, NULL);
    s->label = fd_xstrdup(label);
    const jv *m = s->manifest, *cap = jv_get(m, "capture"), *head = jv_get(m, "head");
    s->dataset_sha256 = jv_get_str(m, "dataset_sha256");
    s->capture_content_digest = jv_get_str(cap, "capture_content_digest");
    s->form = jv_get_str(cap, "form");
    s->lane = jv_get_str(jv_get(m, "runtime"), "lane");
    s->logit = s->form && !strcmp(s->form, "logit");
    s->role = jv_get_str(jv_get(m, "dataset"), "role");
    jv_get_i64(cap, "vocab_size", &s->vocab);
    jv_get_i64(cap, "hidden_width", &s->hidden);
    const jv *complete = jv_get(jv_get(m, "coverage"), "complete");
    s->complete = complete && complete->t == JV_BOOL && complete->u.b;
    char *cpath = fd_path_join(path, jv_get_str(cap, "manifest_file"));
    char *ppath = fd_path_join(path, jv_get_str(jv_get(m, "panel"), "panel_file"));
    s->capture_doc = jv_parse_file(cpath, e);
    s->panel_doc = s->capture_doc ? jv_parse_file(ppath, e) : NULL;
    free(cpath);
    free(ppath);
    if (!s->panel_doc) { fd_side_close(s); return -1; }
    const jv *recs = jv_get(s->capture_doc, "records"), *precs = jv_get(s->panel_doc, "records");
    s->n = recs && recs->t == JV_ARR ? recs->u.a.n : 0;
    s->ctx = fd_xcalloc(s->n + 1, sizeof *s->ctx);
    char capdir[1024];
    snprintf(capdir, sizeof capdir, "%s", jv_get_str(cap, "manifest_file"));
    char *slash = strrchr(capdir, '/');
    if (slash) *slash = 0; else capdir[0] = 0;
    for (size_t i = 0; i < s->n; i++) {
        fd_ctx *c = &s->ctx[i];
        c->rec = recs->u.a.v[i];
        jv_get_i64(c->rec, "index", &c->index);
        jv_get_i64(c->rec, "scored_rows", &c->rows);
        char rel[2048];
        snprintf(rel, sizeof rel, "%s%s%s", capdir, *capdir ? "/" : "", jv_get_str(c->rec, "file"));
        c->path = fd_path_join(path, rel);
        for (size_t j = 0; precs && precs->t == JV_ARR && j < precs->u.a.n; j++) {
            int64_t pi;
            if (!jv_get_i64(precs->u.a.v[j], "index", &pi) && pi == c->index) c->panel_rec = precs->u.a.v[j];
        }
    }
    qsort(s->ctx, s->n, sizeof *s->ctx, cmp_ctx);
    const char *hf = jv_get_str(head, "file");
    s->head_path = hf ? fd_path_join(path, hf) : NULL;
    s->head_key = jv_get_str(head, "tensor_key");
    s->head_content = jv_get_str(head, "tensor_content_sha256");
    return 0;
}

void fd_side_close(fd_side *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->ctx[i].path);
    free(s->ctx);
    jv_free(s->manifest);
    jv_free(s->capture_doc);
    jv_free(s->panel_doc);
    free(s->root);
    free(s->realroot);
    free(s->label);
    free(s->head_path);
    memset(s, 0, sizeof *s);
}

const fd_ctx *fd_side_find(const fd_side *s, int64_t index)
{
    fd_ctx key = {.index = index};
    return bsearch(&key, s->ctx, s->n, sizeof *s->ctx, cmp_ctx);
}

int fd_map_hidden(const char *path, const char *key, int64_t rows, int64_t hidden, fd_map *m, fd_err *e)
{
    return fd_map_tensor(path, key, "BF16", rows, hidden, m, e);
}

/* Reads the whole regular file (expect_size bytes when >= 0) into memory,
 * hashing while reading when hex is non-NULL, then checks the tensor. */
static int load_file(const char *path, int64_t expect_size, const char *key, const char *dtype, int64_t rows,
                     int64_t width, char hex[65], fd_map *m, fd_err *e)
{
    memset(m, 0, sizeof *m);
    if (!path) return fd_fail(e, "missing_file", "", "no tensor file is named (a null path in the manifest)");
    struct stat sb;
    int fd = fd_open_regular(path, 1, &sb, e);
    if (fd < 0) return -1;
    uint64_t size = (uint64_t)sb.st_size;
    int rc = 0;
    if (expect_size >= 0 && size != (uint64_t)expect_size)
        rc = fd_fail(e, "tensor_mismatch", "", "%s: %llu bytes where the sealed record says %lld: the file changed since it "
                     "was verified", path, (unsigned long long)size, (long long)expect_size);
    else if (size < 8 || size > (uint64_t)SIZE_MAX - 1)
        rc = fd_fail(e, "bad_tensor_file", "", "%s: file shorter than a safetensors header", path);
    unsigned char *buf = rc ? NULL : malloc((size_t)size + 1);
    if (!rc && !buf)
        rc = fd_fail(e, "out_of_memory", "", "%s: %llu bytes cannot be allocated", path, (unsigned long long)size);
    fd_sha *h = !rc && hex ? fd_sha_new() : NULL;
    uint64_t got = 0;
    while (!rc && got < size) {
        size_t want = size - got < ((size_t)64 << 20) ? (size_t)(size - got) : ((size_t)64 << 20);
        ssize_t k = pread(fd, buf + got, want, (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) rc = fd_fail(e, "unreadable", "", "%s: %s", path, strerror(errno));
        else if (k == 0)
            rc = fd_fail(e, "tensor_mismatch", "", "%s: ends at byte %llu of %llu while read: the file changed (shrank) "
                         "since it was verified", path, (unsigned long long)got, (unsigned long long)size);
        else {
            if (h) fd_sha_update(h, buf + got, (size_t)k);
            got += (uint64_t)k;
        }
    }
    char extra;
    if (!rc && pread(fd, &extra, 1, (off_t)size) > 0)
        rc = fd_fail(e, "tensor_mismatch", "", "%s: grew past %llu bytes while read: the file changed since it was verified",
                     path, (unsigned long long)size);
    close(fd);
    if (h) {
        char got_hex[65];
        fd_sha_final_hex(h, got_hex);
        if (!rc && strcmp(got_hex, hex))
            rc = fd_fail(e, "tensor_mismatch", "", "%s: the bytes read hash to %.16s..., the sealed record says %.16s...: the "
                         "file changed since it was verified", path, got_hex, hex);
    }
    fd_st_file st;
    memset(&st, 0, sizeof st);
    uint64_t n = 0;
    for (int i = 7; !rc && i >= 0; i--) n = n << 8 | buf[i];
    if (!rc && (n > FD_ST_MAX_HEADER || n > size - 8))
        rc = fd_fail(e, "bad_tensor_file", "SEAL-1(d)", "%s: header length %llu is larger than the file allows", path,
                     (unsigned long long)n);
    else if (!rc && fd_st_parse_header((const char *)buf + 8, (size_t)n, size - 8 - n, &st, e)) {
        fd_err_prefix(e, path);
        rc = -1;
    }
    const fd_st_tensor *t = rc ? NULL : fd_st_find(&st, key);
    if (!rc && (!t || strcmp(t->dtype, dtype) || t->ndim != 2 || (int64_t)t->shape[0] != rows ||
                (int64_t)t->shape[1] != width))
        rc = fd_fail(e, "bad_tensor_file", "", "%s: expected a %s [%lld, %lld] tensor '%s'", path, dtype, (long long)rows,
                     (long long)width, key);
    if (!rc) {
        m->base = buf;
        m->len = (size_t)size;
        m->data = buf + 8 + n + t->start;
        buf = NULL;
    }
    fd_st_close(&st);
    free(buf);
    return rc;
}

int fd_map_tensor(const char *path, const char *key, const char *dtype, int64_t rows, int64_t width, fd_map *m, fd_err *e)
{
    return load_file(path, -1, key, dtype, rows, width, NULL, m, e);
}

int fd_load_ctx(const fd_ctx *x, const char *key, const char *dtype, int64_t width, fd_map *m, fd_err *e)
{
    const char *sha = jv_get_str(x->rec, "sha256");
    int64_t size;
    if (!sha || !fd_is_hex64(sha) || jv_get_i64(x->rec, "size_bytes", &size) || size < 0)
        return fd_fail(e, "tensor_mismatch", "", "%s: the capture record has no sha256 / size_bytes to check the bytes against",
                       x->path);
    char hex[65];
    snprintf(hex, sizeof hex, "%s", sha);
    return load_file(x->path, size, key, dtype, x->rows, width, hex, m, e);
}

void fd_unmap(fd_map *m)
{
    free(m->base);
    memset(m, 0, sizeof *m);
}

int fd_head_extent(const char *path, const char *key, int64_t vocab, int64_t hidden, uint64_t *off, uint64_t *len,
                   fd_err *e)
{
    fd_st_file st;
    if (!path)
        return fd_fail(e, "missing_file", "HEAD", "the manifest names no head file (head.file is null): a hidden-form "
                       "side cannot be replayed or exported without its head");
    if (fd_st_open(path, &st, e)) return -1;
    const fd_st_tensor *t = fd_st_find(&st, key);
    if (!t) t = fd_st_find(&st, "lm_head.weight");
    if (!t) t = fd_st_find(&st, "weight");
    int rc = 0;
    if (!t) rc = fd_fail(e, "bad_tensor_file", "", "%s: no head tensor", path);
    else if (strcmp(t->dtype, "BF16"))
        rc = fd_fail(e, "unsupported_head_dtype", "", "%s: head dtype %s: only BF16 heads have a canonical replay path "
                     "(docs/NUMERICS.md); F16/F32 heads are refused rather than replayed through a lossy cast", path, t->dtype);
    else if (t->ndim != 2 || (int64_t)t->shape[0] != vocab || (int64_t)t->shape[1] != hidden)
        rc = fd_fail(e, "bad_tensor_file", "", "%s: head shape does not match vocab %lld x hidden %lld", path,
                     (long long)vocab, (long long)hidden);
    *off = rc ? 0 : 8 + st.header_len + t->start;
    *len = rc ? 0 : t->end - t->start;
    fd_st_close(&st);
    return rc ? -1 : 0;
}

int fd_read_head(const char *path, const char *key, int64_t vocab, int64_t hidden, uint16_t **out, fd_err *e)
{
    uint64_t off, len;
    if (fd_head_extent(path, key, vocab, hidden, &off, &len, e)) return -1;
    uint16_t *buf = fd_xmalloc((size_t)len);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;
    while (fd >= 0 && got < len) {
        ssize_t k = pread(fd, (char *)buf + got, (size_t)len - got, (off_t)(off + got));
        if (k <= 0) break;
        got += (size_t)k;
    }
    if (fd >= 0) close(fd);
    if (got != len) { free(buf); return fd_fail(e, "unreadable", "", "%s: short read of the head", path); }
    *out = buf;
    return 0;
}
