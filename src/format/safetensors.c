#include "safetensors.h"
#include "../util/fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct { const char *name; int size; } DTYPES[] = {
    {"BOOL", 1}, {"U8", 1}, {"I8", 1}, {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2},
    {"F16", 2}, {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4}, {"F64", 8}, {"I64", 8}, {"U64", 8},
};

int fd_st_dtype_size(const char *dtype)
{
    for (size_t i = 0; i < sizeof DTYPES / sizeof *DTYPES; i++)
        if (!strcmp(DTYPES[i].name, dtype)) return DTYPES[i].size;
    return 0;
}

static int bad(fd_err *e, const char *fmt, const char *a)
{
    return fd_fail(e, "bad_tensor_file", "SEAL-1(d)", fmt, a);
}

static int cmp_start(const void *a, const void *b)
{
    const fd_st_tensor *x = a, *y = b; /* (start, end), as the safetensors library orders them */
    if (x->start != y->start) return (x->start > y->start) - (x->start < y->start);
    return (x->end > y->end) - (x->end < y->end);
}

static int u64_of(const jv *v, uint64_t *out)
{
    if (!v || v->t != JV_INT || v->u.i < 0) return -1;
    *out = (uint64_t)v->u.i;
    return 0;
}

int fd_st_parse_header(const char *hdr, size_t n, uint64_t data_size, fd_st_file *out, fd_err *e)
{
    memset(out, 0, sizeof *out);
    out->header = jv_parse(hdr, n, e);
    if (!out->header) {
        char why[sizeof e->msg];
        memcpy(why, e->msg, sizeof why);
        return bad(e, "unparseable safetensors header: %s", why);
    }
    const jv *h = out->header;
    if (h->t != JV_OBJ) { bad(e, "safetensors header is not an object%s", ""); fd_st_close(out); return -1; }
    out->t = fd_xcalloc(h->u.o.n + 1, sizeof *out->t);
    for (size_t i = 0; i < h->u.o.n; i++) {
        const char *name = h->u.o.m[i].k;
        const jv *d = h->u.o.m[i].v;
        if (!strcmp(name, "__metadata__")) {
            if (d->t != JV_OBJ) { bad(e, "__metadata__ is not an object%s", ""); fd_st_close(out); return -1; }
            for (size_t k = 0; k < d->u.o.n; k++)
                if (d->u.o.m[k].v->t != JV_STR) { bad(e, "__metadata__ value for '%s' is not a string", d->u.o.m[k].k); fd_st_close(out); return -1; }
            out->metadata = d;
            continue;
        }
        if (strlen(name) != h->u.o.m[i].klen) { bad(e, "tensor name with a NUL byte%s", ""); fd_st_close(out); return -1; }
        fd_st_tensor *t = &out->t[out->n];
        t->name = name;
        const char *dt = jv_get_str(d, "dtype");
        const jv *shape = jv_get(d, "shape"), *offs = jv_get(d, "data_offsets");
        int esz = dt ? fd_st_dtype_size(dt) : 0;
        if (d->t != JV_OBJ || !dt || !esz) { bad(e, "tensor '%s' has a missing or unknown dtype", name); fd_st_close(out); return -1; }
        snprintf(t->dtype, sizeof t->dtype, "%s", dt);
        if (!shape || shape->t != JV_ARR || shape->u.a.n > FD_ST_MAX_DIMS) { bad(e, "tensor '%s' has a bad shape", name); fd_st_close(out); return -1; }
        unsigned __int128 elems = 1;
        t->ndim = (int)shape->u.a.n;
        for (int k = 0; k < t->ndim; k++) {
            if (u64_of(shape->u.a.v[k], &t->shape[k])) { bad(e, "tensor '%s' has a bad shape", name); fd_st_close(out); return -1; }
            elems *= t->shape[k];
            if (elems > ((unsigned __int128)1 << 64)) { bad(e, "tensor '%s' shape overflows", name); fd_st_close(out); return -1; }
        }
        if (!offs || offs->t != JV_ARR || offs->u.a.n != 2 || u64_of(offs->u.a.v[0], &t->start) ||
            u64_of(offs->u.a.v[1], &t->end) || t->end < t->start) { bad(e, "tensor '%s' has bad data_offsets", name); fd_st_close(out); return -1; }
        if (elems * (unsigned)esz != (unsigned __int128)(t->end - t->start)) {
            bad(e, "tensor '%s': dtype x shape does not match its data_offsets (a dtype/shape lie)", name);
            fd_st_close(out);
            return -1;
        }
        out->n++;
    }
    qsort(out->t, out->n, sizeof *out->t, cmp_start);
    uint64_t at = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (out->t[i].start != at) {
            fd_st_close(out);
            return fd_fail(e, "bad_tensor_file", "SEAL-1(d)", "safetensors data offsets overlap or leave a gap at byte %llu",
                           (unsigned long long)at);
        }
        at = out->t[i].end;
    }
    if (at != data_size) {
        fd_st_close(out);
        return fd_fail(e, "bad_tensor_file", "SEAL-1(d)", "safetensors data region is %llu bytes but the tensors cover %llu",
                       (unsigned long long)data_size, (unsigned long long)at);
    }
    return 0;
}

int fd_st_open(const char *path, fd_st_file *out, fd_err *e)
{
    memset(out, 0, sizeof *out);
    if (!path) return fd_fail(e, "missing_file", "", "no safetensors file is named (a null path)");
    struct stat st;
    int fd = fd_open_regular(path, 0, &st, e);
    if (fd < 0) return -1;
    unsigned char len8[8];
    int rc = 0;
    char *hdr = NULL;
    if (st.st_size < 8 || pread(fd, len8, 8, 0) != 8)
        rc = fd_fail(e, "bad_tensor_file", "SEAL-1(d)", "%s: file shorter than a safetensors header", path);
    if (!rc) {
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--) n = n << 8 | len8[i];
        uint64_t size = (uint64_t)st.st_size;
        if (n > FD_ST_MAX_HEADER || n > size - 8)
            rc = fd_fail(e, "bad_tensor_file", "SEAL-1(d)", "%s: header length %llu is larger than the file allows",
                         path, (unsigned long long)n);
        else {
            hdr = fd_xmalloc((size_t)n + 1);
            if (pread(fd, hdr, (size_t)n, 8) != (ssize_t)n)
                rc = fd_fail(e, "bad_tensor_file", "SEAL-1(d)", "%s: truncated safetensors header", path);
            else if (fd_st_parse_header(hdr, (size_t)n, size - 8 - n, out, e)) {
                fd_err_prefix(e, path);
                rc = -1;
            } else {
                out->header_len = n;
                out->file_size = size;
            }
        }
    }
    free(hdr);
    close(fd);
    return rc;
}

const fd_st_tensor *fd_st_find(const fd_st_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->t[i].name, name)) return &f->t[i];
    return NULL;
}

void fd_st_close(fd_st_file *f)
{
    jv_free(f->header);
    free(f->t);
    memset(f, 0, sizeof *f);
}

/* ----------------------------------------------------------------- writer */

int fd_st_writer_begin(fd_st_writer *w, const char *path, const char *name, const char *dtype,
                       const uint64_t *shape, int ndim, const jv *metadata, fd_err *e)
{
    memset(w, 0, sizeof *w);
    int esz = fd_st_dtype_size(dtype);
    if (!esz) return fd_fail(e, "bad_tensor_file", "", "%s: unknown dtype %s", path, dtype);
    uint64_t elems = 1;
    jv *h = jv_obj(), *t = jv_obj(), *sh = jv_arr(), *off = jv_arr();
    for (int i = 0; i < ndim; i++) { elems *= shape[i]; jv_push(sh, jv_int((int64_t)shape[i])); }
    w->want = elems * (uint64_t)esz;
    jv_push(off, jv_int(0));
    jv_push(off, jv_int((int64_t)w->want));
    jv_set(t, "dtype", jv_str(dtype));
    jv_set(t, "shape", sh);
    jv_set(t, "data_offsets", off);
    jv_set(h, name, t);
    if (metadata) jv_set(h, "__metadata__", jv_copy(metadata));
    fd_buf hb = {0};
    int rc = jv_dump(h, &JV_CANON_ASCII, &hb, e);
    jv_free(h);
    if (rc) { fd_buf_free(&hb); return -1; }
    w->path = fd_xstrdup(path);
    fd_buf tmp = {0};
    fd_buf_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    w->tmp = fd_buf_cstr(&tmp);
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        rc = fd_fail(e, "unwritable", "", "%s: %s", w->tmp, strerror(errno));
        fd_buf_free(&hb);
        fd_st_writer_abort(w);
        return rc;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)hb.n >> (8 * i));
    w->content = fd_sha_new();
    w->file = fd_sha_new();
    fd_sha_update(w->file, len8, 8);
    fd_sha_update(w->file, hb.p, hb.n);
    if (fwrite(len8, 1, 8, w->f) != 8 || fwrite(hb.p, 1, hb.n, w->f) != hb.n) {
        rc = fd_fail(e, "unwritable", "", "%s: write failed", w->tmp);
        fd_st_writer_abort(w);
    }
    fd_buf_free(&hb);
    return rc;
}

int fd_st_writer_put(fd_st_writer *w, const void *p, size_t n, fd_err *e)
{
    if (w->have + n > w->want) return fd_fail(e, "unwritable", "", "%s: more tensor bytes than the shape allows", w->path);
    if (fwrite(p, 1, n, w->f) != n) return fd_fail(e, "unwritable", "", "%s: write failed", w->tmp);
    fd_sha_update(w->content, p, n);
    fd_sha_update(w->file, p, n);
    w->have += n;
    return 0;
}

int fd_st_writer_finish(fd_st_writer *w, char content_hex[65], char file_hex[65], fd_err *e)
{
    int rc = 0;
    if (w->have != w->want)
        rc = fd_fail(e, "unwritable", "", "%s: %llu tensor bytes written, %llu expected", w->path,
                     (unsigned long long)w->have, (unsigned long long)w->want);
    else if (fflush(w->f) || fsync(fileno(w->f)))
        rc = fd_fail(e, "unwritable", "", "%s: %s", w->tmp, strerror(errno));
    if (rc) { fd_st_writer_abort(w); return rc; }
    fclose(w->f);
    w->f = NULL;
    if (rename(w->tmp, w->path)) {
        rc = fd_fail(e, "unwritable", "", "%s: %s", w->path, strerror(errno));
        fd_st_writer_abort(w);
        return rc;
    }
    fd_sha_final_hex(w->content, content_hex);
    fd_sha_final_hex(w->file, file_hex);
    free(w->path);
    free(w->tmp);
    memset(w, 0, sizeof *w);
    return 0;
}

void fd_st_writer_abort(fd_st_writer *w)
{
    if (w->f) fclose(w->f);
    if (w->tmp) unlink(w->tmp);
    char scratch[65];
    if (w->content) fd_sha_final_hex(w->content, scratch);
    if (w->file) fd_sha_final_hex(w->file, scratch);
    free(w->path);
    free(w->tmp);
    memset(w, 0, sizeof *w);
}
