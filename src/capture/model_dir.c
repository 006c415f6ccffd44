#include "model_dir.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this code assumes a little-endian host"
#endif

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !memcmp(s + n - k, suffix, k);
}

int fd_md_open(const char *dir, fd_model_dir *md, fd_err *e)
{
    memset(md, 0, sizeof *md);
    DIR *d = opendir(dir);
    if (!d) return fd_fail(e, errno == ENOENT ? "missing_file" : "unreadable", "", "%s: %s", dir, strerror(errno));
    md->root = fd_xstrdup(dir);
    fd_strv shards = {0};
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..")) continue;
        if (ends_with(n, ".safetensors")) { fd_strv_push(&shards, n); continue; }
        char *p = fd_path_join(dir, n);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) fd_strv_push(&md->others, n);
        else fd_strv_push(&md->skipped, n);
        free(p);
    }
    closedir(d);
    fd_strv_sort(&shards);
    fd_strv_sort(&md->others);
    fd_strv_sort(&md->skipped);
    md->shards = fd_xcalloc(shards.n + 1, sizeof *md->shards);
    for (size_t i = 0; i < shards.n; i++) {
        fd_md_shard *s = &md->shards[i];
        s->name = fd_xstrdup(shards.v[i]);
        s->path = fd_path_join(dir, s->name);
        md->nshards = i + 1;
        if (fd_st_open(s->path, &s->st, e)) {
            fd_strv_free(&shards);
            fd_md_close(md);
            return -1;
        }
    }
    fd_strv_free(&shards);
    return 0;
}

void fd_md_close(fd_model_dir *md)
{
    for (size_t i = 0; i < md->nshards; i++) {
        fd_st_close(&md->shards[i].st);
        free(md->shards[i].name);
        free(md->shards[i].path);
    }
    free(md->shards);
    free(md->root);
    fd_strv_free(&md->others);
    fd_strv_free(&md->skipped);
    memset(md, 0, sizeof *md);
}

static int cmp_tensor_name(const void *a, const void *b)
{
    const fd_st_tensor *x = *(const fd_st_tensor *const *)a, *y = *(const fd_st_tensor *const *)b;
    return strcmp(x->name, y->name); /* UTF-8 byte order == code-point order */
}

const fd_st_tensor **fd_md_sorted_tensors(const fd_md_shard *s)
{
    const fd_st_tensor **v = fd_xcalloc(s->st.n + 1, sizeof *v);
    for (size_t i = 0; i < s->st.n; i++) v[i] = &s->st.t[i];
    qsort(v, s->st.n, sizeof *v, cmp_tensor_name);
    return v;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

int fd_md_copy_file(const char *src, const char *dst, fd_err *e)
{
    int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0) return fd_fail(e, errno == ENOENT ? "missing_file" : "unreadable", "", "%s: %s", src, strerror(errno));
    struct stat st;
    if (fstat(in, &st) || !S_ISREG(st.st_mode)) {
        close(in);
        return fd_fail(e, "unreadable", "", "%s: not a regular file", src);
    }
    int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (out < 0) {
        int rc = fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno));
        close(in);
        return rc;
    }
    enum { CHUNK = 1 << 20 };
    char *buf = fd_xmalloc(CHUNK);
    int rc = 0;
    for (;;) {
        ssize_t k = read(in, buf, CHUNK);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { rc = fd_fail(e, "unreadable", "", "%s: %s", src, strerror(errno)); break; }
        if (k == 0) break;
        if (write_all(out, buf, (size_t)k)) { rc = fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno)); break; }
    }
    free(buf);
    struct timespec times[2] = {st.st_atim, st.st_mtim};
    if (!rc && (fchmod(out, st.st_mode & 07777) || futimens(out, times) || fsync(out)))
        rc = fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno));
    if (close(out) && !rc) rc = fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno));
    close(in);
    if (rc) unlink(dst);
    return rc;
}

/* ----------------------------------------------------------------- writer */

/* The Rust crate's Dtype enum order (Ord is derived from it). */
static const char *const DTYPE_ORDER[] = {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16",
                                          "BF16", "I32", "U32", "F32", "F64", "I64", "U64"};

static int dtype_rank(const char *dt)
{
    for (size_t i = 0; i < sizeof DTYPE_ORDER / sizeof *DTYPE_ORDER; i++)
        if (!strcmp(DTYPE_ORDER[i], dt)) return (int)i;
    return -1;
}

typedef struct { int rank; const char *name; size_t idx; } layout_key;

static int cmp_layout(const void *a, const void *b)
{
    const layout_key *x = a, *y = b;
    if (x->rank != y->rank) return y->rank - x->rank; /* descending alignment */
    return strcmp(x->name, y->name);
}

static void put_json_str(const char *s, fd_buf *out)
{
    jv *v = jv_str(s);
    fd_err e;
    jv_dump(v, &JV_CANON, out, &e); /* strings cannot fail */
    jv_free(v);
}

int fd_stm_header(const fd_stm_tensor *t, size_t n, size_t *order, uint64_t *size, fd_buf *out, fd_err *e)
{
    for (size_t i = 0; i < n; i++) {
        int esz = fd_st_dtype_size(t[i].dtype);
        if (!esz || dtype_rank(t[i].dtype) < 0)
            return fd_fail(e, "bad_tensor_file", "", "tensor '%s': unknown dtype %s", t[i].name, t[i].dtype);
        if (t[i].ndim < 0 || t[i].ndim > FD_ST_MAX_DIMS)
            return fd_fail(e, "bad_tensor_file", "", "tensor '%s': bad rank", t[i].name);
        if (!strcmp(t[i].name, "__metadata__"))
            return fd_fail(e, "bad_tensor_file", "", "a tensor may not be named __metadata__");
        unsigned __int128 bytes = (unsigned)esz;
        for (int k = 0; k < t[i].ndim; k++) bytes *= t[i].shape[k];
        if (bytes > (uint64_t)INT64_MAX) return fd_fail(e, "bad_tensor_file", "", "tensor '%s' is too large", t[i].name);
        size[i] = (uint64_t)bytes;
    }
    layout_key *keys = fd_xcalloc(n + 1, sizeof *keys);
    for (size_t i = 0; i < n; i++) keys[i] = (layout_key){dtype_rank(t[i].dtype), t[i].name, i};
    qsort(keys, n, sizeof *keys, cmp_layout);
    for (size_t i = 0; i < n; i++) order[i] = keys[i].idx;
    free(keys);
    for (size_t k = 1; k < n; k++)
        if (!strcmp(t[order[k]].name, t[order[k - 1]].name))
            return fd_fail(e, "bad_tensor_file", "", "duplicate tensor name '%s'", t[order[k]].name);
    size_t mark = out->n;
    fd_buf_putc(out, '{');
    uint64_t at = 0;
    for (size_t k = 0; k < n; k++) {
        const fd_stm_tensor *x = &t[order[k]];
        if (k) fd_buf_putc(out, ',');
        put_json_str(x->name, out);
        fd_buf_puts(out, ":{\"dtype\":");
        put_json_str(x->dtype, out);
        fd_buf_puts(out, ",\"shape\":[");
        for (int d = 0; d < x->ndim; d++) fd_buf_printf(out, "%s%llu", d ? "," : "", (unsigned long long)x->shape[d]);
        fd_buf_printf(out, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)at,
                      (unsigned long long)(at + size[order[k]]));
        at += size[order[k]];
    }
    fd_buf_putc(out, '}');
    while ((out->n - mark) % 8) fd_buf_putc(out, ' ');
    fd_buf_cstr(out);
    return 0;
}

int fd_stm_begin(fd_stm_writer *w, const char *path, const fd_stm_tensor *t, size_t n, fd_err *e)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->n = n;
    w->order = fd_xcalloc(n + 1, sizeof *w->order);
    w->size = fd_xcalloc(n + 1, sizeof *w->size);
    fd_buf hb = {0};
    if (fd_stm_header(t, n, w->order, w->size, &hb, e)) {
        fd_buf_free(&hb);
        fd_stm_abort(w);
        return -1;
    }
    w->path = fd_xstrdup(path);
    w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int rc = 0;
    if (w->fd < 0) rc = fd_fail(e, "unwritable", "", "%s: %s", path, strerror(errno));
    else {
        unsigned char len8[8];
        for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hb.n >> (8 * i));
        if (write_all(w->fd, len8, 8) || write_all(w->fd, hb.p, hb.n))
            rc = fd_fail(e, "unwritable", "", "%s: %s", path, strerror(errno));
    }
    fd_buf_free(&hb);
    if (rc) { fd_stm_abort(w); return rc; }
    while (w->cur < w->n && w->size[w->order[w->cur]] == 0) w->cur++;
    return 0;
}

int fd_stm_put(fd_stm_writer *w, const void *p, size_t len, fd_err *e)
{
    const char *c = p;
    while (len) {
        if (w->cur >= w->n) return fd_fail(e, "unwritable", "", "%s: more bytes than the tensors hold", w->path);
        uint64_t room = w->size[w->order[w->cur]] - w->have;
        size_t k = len < room ? len : (size_t)room;
        if (write_all(w->fd, c, k)) return fd_fail(e, "unwritable", "", "%s: %s", w->path, strerror(errno));
        c += k;
        len -= k;
        w->have += k;
        while (w->cur < w->n && w->have == w->size[w->order[w->cur]]) { w->cur++; w->have = 0; }
    }
    return 0;
}

int fd_stm_finish(fd_stm_writer *w, fd_err *e)
{
    int rc = 0;
    if (w->cur != w->n) rc = fd_fail(e, "unwritable", "", "%s: tensor data incomplete", w->path);
    else if (fsync(w->fd)) rc = fd_fail(e, "unwritable", "", "%s: %s", w->path, strerror(errno));
    else {
        int r = close(w->fd);
        w->fd = -1;
        if (r) rc = fd_fail(e, "unwritable", "", "%s: %s", w->path, strerror(errno));
    }
    if (rc) { fd_stm_abort(w); return rc; }
    free(w->path);
    free(w->order);
    free(w->size);
    memset(w, 0, sizeof *w);
    w->fd = -1;
    return 0;
}

void fd_stm_abort(fd_stm_writer *w)
{
    if (w->fd >= 0) {
        close(w->fd);
        if (w->path) unlink(w->path);
    }
    free(w->path);
    free(w->order);
    free(w->size);
    memset(w, 0, sizeof *w);
    w->fd = -1;
}
