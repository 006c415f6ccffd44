#include "gguf.h"
#include "ggml_quants.h"
#include "util/buf.h"
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_KEY 65535u
#define GGUF_MAX_ALIGNMENT (1u << 30)

static const struct { const char *name; int size; } VTYPES[] = {
    {"u8", 1}, {"i8", 1}, {"u16", 2}, {"i16", 2}, {"u32", 4}, {"i32", 4}, {"f32", 4},
    {"bool", 1}, {"string", 0}, {"array", 0}, {"u64", 8}, {"i64", 8}, {"f64", 8},
};

const char *fd_gguf_vtype_name(uint32_t type)
{
    return type < sizeof VTYPES / sizeof *VTYPES ? VTYPES[type].name : "?";
}

int fd_gguf_vtype_size(uint32_t type)
{
    return type < sizeof VTYPES / sizeof *VTYPES ? VTYPES[type].size : 0;
}

/* ---------------------------------------------------------------- cursor */

typedef struct cur {
    const uint8_t *p;
    uint64_t n, at;
    fd_err *e;
} cur;

static uint64_t rd(const uint8_t *p, int k)
{
    uint64_t v = 0;
    for (int i = k - 1; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static int need(cur *c, uint64_t k, const char *what)
{
    if (k > c->n - c->at)
        return fd_fail(c->e, "bad_gguf", "", "%s at byte %llu needs %llu bytes but the file has %llu left", what,
                       (unsigned long long)c->at, (unsigned long long)k, (unsigned long long)(c->n - c->at));
    return 0;
}

static int get(cur *c, int k, uint64_t *v, const char *what)
{
    if (need(c, (uint64_t)k, what)) return -1;
    *v = rd(c->p + c->at, k);
    c->at += (uint64_t)k;
    return 0;
}

/* a gguf string: u64 length then the bytes, bounded by the file */
static int get_str(cur *c, const uint8_t **s, uint64_t *len, const char *what)
{
    if (get(c, 8, len, what) || need(c, *len, what)) return -1;
    *s = c->p + c->at;
    c->at += *len;
    return 0;
}

/* ------------------------------------------------------------- metadata */

static int scalar(cur *c, uint32_t type, fd_gguf_kv *kv, const char *key)
{
    int k = fd_gguf_vtype_size(type);
    uint64_t u;
    if (get(c, k, &u, key)) return -1;
    switch (type) {
    case FD_GGUF_U8: case FD_GGUF_U16: case FD_GGUF_U32: case FD_GGUF_U64: kv->v.u = u; break;
    case FD_GGUF_I8: kv->v.i = (int8_t)u; break;
    case FD_GGUF_I16: kv->v.i = (int16_t)u; break;
    case FD_GGUF_I32: kv->v.i = (int32_t)u; break;
    case FD_GGUF_I64: kv->v.i = (int64_t)u; break;
    case FD_GGUF_F32: { uint32_t b = (uint32_t)u; float f; memcpy(&f, &b, 4); kv->v.f = f; break; }
    case FD_GGUF_F64: { double f; memcpy(&f, &u, 8); kv->v.f = f; break; }
    case FD_GGUF_BOOL:
        if (u > 1) return fd_fail(c->e, "bad_gguf", "", "metadata '%s': a bool of value %llu", key, (unsigned long long)u);
        kv->v.u = u;
        break;
    }
    return 0;
}

static int value(cur *c, fd_gguf_kv *kv)
{
    fd_err *e = c->e;
    const char *key = kv->key;
    if (kv->type == FD_GGUF_STRING) return get_str(c, &kv->str, &kv->len, key);
    if (kv->type != FD_GGUF_ARRAY) {
        if (!fd_gguf_vtype_size(kv->type))
            return fd_fail(e, "bad_gguf", "", "metadata '%s' has value type %u, which GGUF does not define", key, kv->type);
        return scalar(c, kv->type, kv, key);
    }
    uint64_t at, n;
    if (get(c, 4, &at, key) || get(c, 8, &n, key)) return -1;
    kv->atype = (uint32_t)at;
    kv->alen = n;
    kv->adata = c->p + c->at;
    if (at == FD_GGUF_ARRAY) return fd_fail(e, "bad_gguf", "", "metadata '%s' is an array of arrays (not supported)", key);
    if (at == FD_GGUF_STRING) {
        if (n > (c->n - c->at) / 8)
            return fd_fail(e, "bad_gguf", "", "metadata '%s' claims %llu strings, more than the file can hold", key,
                           (unsigned long long)n);
        uint64_t start = c->at;
        for (uint64_t i = 0; i < n; i++) {
            const uint8_t *s;
            uint64_t len;
            if (get_str(c, &s, &len, key)) return -1;
        }
        kv->abytes = c->at - start;
        return 0;
    }
    int sz = fd_gguf_vtype_size((uint32_t)at);
    if (!sz) return fd_fail(e, "bad_gguf", "", "metadata '%s' is an array of value type %llu, which GGUF does not define",
                            key, (unsigned long long)at);
    if (n > (c->n - c->at) / (uint64_t)sz)
        return fd_fail(e, "bad_gguf", "", "metadata '%s' claims %llu elements of %s, more than the file can hold", key,
                       (unsigned long long)n, fd_gguf_vtype_name((uint32_t)at));
    kv->abytes = n * (uint64_t)sz;
    if (at == FD_GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++)
            if (kv->adata[i] > 1) return fd_fail(e, "bad_gguf", "", "metadata '%s': element %llu is a bool of value %u", key,
                                                 (unsigned long long)i, kv->adata[i]);
    c->at += kv->abytes;
    return 0;
}

static int cmp_kv(const void *a, const void *b)
{
    return strcmp((*(const fd_gguf_kv *const *)a)->key, (*(const fd_gguf_kv *const *)b)->key);
}

static int cmp_tname(const void *a, const void *b)
{
    return strcmp((*(const fd_gguf_tensor *const *)a)->name, (*(const fd_gguf_tensor *const *)b)->name);
}

static int cmp_toff(const void *a, const void *b)
{
    const fd_gguf_tensor *x = *(const fd_gguf_tensor *const *)a, *y = *(const fd_gguf_tensor *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

/* -------------------------------------------------------------- tensors */

static int tensor_info(cur *c, fd_gguf_tensor *t, size_t idx)
{
    fd_err *e = c->e;
    const uint8_t *s;
    uint64_t len, nd, ty;
    if (get_str(c, &s, &len, "tensor name")) return -1;
    if (len == 0 || len >= FD_GGUF_MAX_NAME || memchr(s, 0, len))
        return fd_fail(e, "bad_gguf", "", "tensor %zu: a name of %llu bytes (1 to %d, no NUL)", idx,
                       (unsigned long long)len, FD_GGUF_MAX_NAME - 1);
    memcpy(t->name, s, len);
    t->name[len] = 0;
    if (get(c, 4, &nd, t->name)) return -1;
    if (nd < 1 || nd > FD_GGUF_MAX_DIMS)
        return fd_fail(e, "bad_gguf", "", "tensor '%s' has %llu dimensions (1 to %d)", t->name, (unsigned long long)nd,
                       FD_GGUF_MAX_DIMS);
    t->ndim = (int)nd;
    unsigned __int128 elems = 1;
    for (int k = 0; k < t->ndim; k++) {
        if (get(c, 8, &t->ne[k], t->name)) return -1;
        elems *= t->ne[k];
        if (t->ne[k] > INT64_MAX || elems > INT64_MAX)
            return fd_fail(e, "bad_gguf", "", "tensor '%s': its shape overflows", t->name);
    }
    for (int k = t->ndim; k < FD_GGUF_MAX_DIMS; k++) t->ne[k] = 1;
    t->nelem = (uint64_t)elems;
    if (get(c, 4, &ty, t->name)) return -1;
    t->type = (uint32_t)ty;
    const fd_ggml_type *gt = fd_ggml_type_of(t->type);
    if (!gt) return fd_fail(e, "gguf_unknown_type", "", "tensor '%s' has ggml type %u, which ggml does not define", t->name, t->type);
    uint64_t row;
    if (fd_ggml_row_bytes(gt, t->ne[0], &row))
        return fd_fail(e, "bad_gguf", "", "tensor '%s': a row of %llu elements is not a whole number of %s blocks of %u",
                       t->name, (unsigned long long)t->ne[0], gt->name, gt->blck);
    unsigned __int128 bytes = (unsigned __int128)row * (t->ne[0] ? t->nelem / t->ne[0] : 0);
    if (bytes > INT64_MAX) return fd_fail(e, "bad_gguf", "", "tensor '%s': its byte size overflows", t->name);
    t->nbytes = (uint64_t)bytes;
    return get(c, 8, &t->offset, t->name);
}

/* ---------------------------------------------------------------- parse */

void fd_gguf_close(fd_gguf_file *f)
{
    for (size_t i = 0; i < f->nkv; i++) free(f->kv[i].key);
    free(f->kv);
    free(f->t);
    if (f->mapped && f->map) munmap((void *)f->map, (size_t)f->size);
    free(f->path);
    memset(f, 0, sizeof *f);
}

static int parse(const uint8_t *p, uint64_t n, fd_gguf_file *out, fd_err *e)
{
    cur c = {p, n, 0, e};
    uint64_t magic = 0, ver = 0, nt = 0, nkv = 0;
    if (n < 24) return fd_fail(e, "bad_gguf", "", "%llu bytes is shorter than a GGUF header", (unsigned long long)n);
    get(&c, 4, &magic, "magic");
    if (magic != 0x46554747u) return fd_fail(e, "bad_gguf", "", "not a GGUF file (magic is not 'GGUF')");
    get(&c, 4, &ver, "version");
    if (ver != 2 && ver != 3) {
        if (ver && !(ver & 0xFFFF)) return fd_fail(e, "bad_gguf", "", "a big-endian GGUF file (only little-endian is read)");
        return fd_fail(e, "bad_gguf", "", "GGUF version %llu (versions 2 and 3 are read)", (unsigned long long)ver);
    }
    out->version = (uint32_t)ver;
    get(&c, 8, &nt, "tensor count");
    get(&c, 8, &nkv, "metadata count");
    uint64_t rem = n - c.at;
    /* the smallest KV is 14 bytes (key length, 1-byte key, type, 1-byte value), the smallest tensor info 33 */
    if (nkv > rem / 14 || nt > rem / 33 || nkv * 14 + nt * 33 > rem)
        return fd_fail(e, "bad_gguf", "", "%llu metadata entries and %llu tensors cannot fit in the %llu bytes after the header",
                       (unsigned long long)nkv, (unsigned long long)nt, (unsigned long long)rem);
    out->kv = fd_xcalloc((size_t)nkv + 1, sizeof *out->kv);
    out->t = fd_xcalloc((size_t)nt + 1, sizeof *out->t);
    for (uint64_t i = 0; i < nkv; i++) {
        fd_gguf_kv *kv = &out->kv[i];
        const uint8_t *s;
        uint64_t len, ty;
        if (get_str(&c, &s, &len, "metadata key")) return -1;
        if (len == 0 || len > GGUF_MAX_KEY || memchr(s, 0, len))
            return fd_fail(e, "bad_gguf", "", "metadata entry %llu: a key of %llu bytes (1 to %u, no NUL)",
                           (unsigned long long)i, (unsigned long long)len, GGUF_MAX_KEY);
        kv->key = fd_xmalloc((size_t)len + 1);
        memcpy(kv->key, s, len);
        kv->key[len] = 0;
        out->nkv++;
        if (get(&c, 4, &ty, kv->key)) return -1;
        kv->type = (uint32_t)ty;
        if (value(&c, kv)) return -1;
    }
    if (nkv > 1) {
        fd_gguf_kv **ix = fd_xmalloc((size_t)nkv * sizeof *ix);
        for (size_t i = 0; i < nkv; i++) ix[i] = &out->kv[i];
        qsort(ix, (size_t)nkv, sizeof *ix, cmp_kv);
        for (size_t i = 1; i < nkv; i++)
            if (!strcmp(ix[i - 1]->key, ix[i]->key)) {
                fd_fail(e, "bad_gguf", "", "metadata key '%s' appears twice", ix[i]->key);
                free(ix);
                return -1;
            }
        free(ix);
    }
    out->alignment = GGUF_DEFAULT_ALIGNMENT;
    const fd_gguf_kv *al = fd_gguf_get(out, "general.alignment");
    if (al) {
        if (al->type != FD_GGUF_U32 || al->v.u == 0 || (al->v.u & (al->v.u - 1)) || al->v.u > GGUF_MAX_ALIGNMENT)
            return fd_fail(e, "bad_gguf", "", "general.alignment must be a u32 power of two up to 2^30 (it is a %s of %llu)",
                           fd_gguf_vtype_name(al->type), (unsigned long long)al->v.u);
        out->alignment = al->v.u;
    }
    for (uint64_t i = 0; i < nt; i++) {
        if (tensor_info(&c, &out->t[i], (size_t)i)) return -1;
        out->nt++;
    }
    uint64_t a = out->alignment, pad = (a - c.at % a) % a;
    out->data_off = c.at + pad;
    if (nt && pad > n - c.at)
        return fd_fail(e, "bad_gguf", "", "the data section (byte %llu, aligned to %llu) starts past the end of the file",
                       (unsigned long long)out->data_off, (unsigned long long)a);
    if (!nt) return 0;
    uint64_t room = n - out->data_off;
    fd_gguf_tensor **ix = fd_xmalloc((size_t)nt * sizeof *ix);
    int rc = 0;
    for (size_t i = 0; i < nt && !rc; i++) {
        fd_gguf_tensor *t = &out->t[i];
        ix[i] = t;
        if (t->offset % a)
            rc = fd_fail(e, "bad_gguf", "", "tensor '%s': data offset %llu is not a multiple of the alignment %llu", t->name,
                         (unsigned long long)t->offset, (unsigned long long)a);
        else if (t->offset > room || t->nbytes > room - t->offset)
            rc = fd_fail(e, "bad_gguf", "", "tensor '%s': %llu bytes at data offset %llu run past the end of the file "
                         "(the data section holds %llu bytes)", t->name, (unsigned long long)t->nbytes,
                         (unsigned long long)t->offset, (unsigned long long)room);
        else t->data = p + out->data_off + t->offset;
    }
    if (!rc) {
        qsort(ix, (size_t)nt, sizeof *ix, cmp_toff);
        for (size_t i = 1; i < nt && !rc; i++)
            if (ix[i - 1]->offset + ix[i - 1]->nbytes > ix[i]->offset)
                rc = fd_fail(e, "bad_gguf", "", "tensors '%s' and '%s' overlap in the data section", ix[i - 1]->name,
                             ix[i]->name);
    }
    if (!rc) {
        qsort(ix, (size_t)nt, sizeof *ix, cmp_tname);
        for (size_t i = 1; i < nt && !rc; i++)
            if (!strcmp(ix[i - 1]->name, ix[i]->name))
                rc = fd_fail(e, "bad_gguf", "", "tensor name '%s' appears twice", ix[i]->name);
    }
    free(ix);
    return rc;
}

int fd_gguf_parse(const uint8_t *p, uint64_t n, fd_gguf_file *out, fd_err *e)
{
    memset(out, 0, sizeof *out);
    out->map = p;
    out->size = n;
    if (parse(p, n, out, e)) {
        fd_gguf_close(out);
        return -1;
    }
    return 0;
}

int fd_gguf_open(const char *path, fd_gguf_file *out, fd_err *e)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fd_fail(e, errno == ENOENT ? "missing_file" : "unreadable", "", "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fd_fail(e, "unreadable", "", "%s: not a regular file", path);
    }
    uint64_t n = (uint64_t)st.st_size;
    if (n < 24) {
        close(fd);
        return fd_fail(e, "bad_gguf", "", "%s: %llu bytes is shorter than a GGUF header", path, (unsigned long long)n);
    }
    void *m = mmap(NULL, (size_t)n, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    close(fd);
    if (m == MAP_FAILED) return fd_fail(e, "unreadable", "", "%s: mmap: %s", path, strerror(err));
    if (fd_gguf_parse(m, n, out, e)) {
        munmap(m, (size_t)n);
        fd_err_prefix(e, path);
        return -1;
    }
    out->mapped = 1;
    out->path = fd_xstrdup(path);
    return 0;
}

const fd_gguf_kv *fd_gguf_get(const fd_gguf_file *f, const char *key)
{
    for (size_t i = 0; i < f->nkv; i++)
        if (!strcmp(f->kv[i].key, key)) return &f->kv[i];
    return NULL;
}

int fd_gguf_get_int(const fd_gguf_file *f, const char *key, int64_t *out)
{
    const fd_gguf_kv *kv = fd_gguf_get(f, key);
    if (!kv) return -1;
    switch (kv->type) {
    case FD_GGUF_U8: case FD_GGUF_U16: case FD_GGUF_U32: case FD_GGUF_U64:
        if (kv->v.u > INT64_MAX) return -1;
        *out = (int64_t)kv->v.u;
        return 0;
    case FD_GGUF_I8: case FD_GGUF_I16: case FD_GGUF_I32: case FD_GGUF_I64:
        *out = kv->v.i;
        return 0;
    default:
        return -1;
    }
}

char *fd_gguf_get_str(const fd_gguf_file *f, const char *key)
{
    const fd_gguf_kv *kv = fd_gguf_get(f, key);
    if (!kv || kv->type != FD_GGUF_STRING || memchr(kv->str, 0, kv->len)) return NULL;
    char *s = fd_xmalloc((size_t)kv->len + 1);
    memcpy(s, kv->str, kv->len);
    s[kv->len] = 0;
    return s;
}

int fd_gguf_arr_str(const fd_gguf_kv *kv, uint64_t i, const uint8_t **s, uint64_t *len)
{
    if (kv->type != FD_GGUF_ARRAY || kv->atype != FD_GGUF_STRING || i >= kv->alen) return -1;
    const uint8_t *p = kv->adata; /* validated by the parse: every length is in bounds */
    for (uint64_t k = 0;; k++) {
        uint64_t l = rd(p, 8);
        if (k == i) {
            *s = p + 8;
            *len = l;
            return 0;
        }
        p += 8 + l;
    }
}

/* ------------------------------------------------------------ split sets */

/* NAME-00001-of-0000N.gguf: *no and *count from the name, *stem_len the
 * length of NAME (the path up to the dash); 0 when the name is not so */
static int split_name(const char *path, size_t *stem_len, int *no, int *count)
{
    size_t n = strlen(path);
    const char *tail = "-00000-of-00000.gguf"; /* 20 characters */
    if (n <= 20) return 0;
    const char *s = path + n - 20;
    for (int i = 0; i < 20; i++) {
        if (tail[i] == '0') { if (s[i] < '0' || s[i] > '9') return 0; }
        else if (s[i] != tail[i]) return 0;
    }
    if (s[-1] == '/') return 0;
    *no = atoi(s + 1);
    *count = atoi(s + 10);
    *stem_len = n - 20;
    return 1;
}

static int split_fail(fd_err *e, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int split_fail(fd_err *e, const char *path, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return fd_fail(e, "gguf_split_set", "", "%s: %s", path, why);
}

void fd_gguf_set_close(fd_gguf_set *s)
{
    for (size_t i = 0; i < s->n; i++) fd_gguf_close(&s->f[i]);
    free(s->f);
    free(s->t);
    memset(s, 0, sizeof *s);
}

int fd_gguf_set_open(const char *first, fd_gguf_set *s, fd_err *e)
{
    memset(s, 0, sizeof *s);
    size_t stem = 0;
    int no = 0, count = 0, named = split_name(first, &stem, &no, &count);
    if (named && no != 1)
        return split_fail(e, first, "file %d of a split set of %d: pass the first (-00001-of-...)", no, count);
    fd_gguf_file f0;
    if (fd_gguf_open(first, &f0, e)) return -1;
    int64_t scount = 1, sno = 0, stensors = -1;
    int has_count = !fd_gguf_get_int(&f0, "split.count", &scount);
    int has_no = !fd_gguf_get_int(&f0, "split.no", &sno);
    int has_tc = !fd_gguf_get_int(&f0, "split.tensors.count", &stensors);
    int rc = 0;
    if ((fd_gguf_get(&f0, "split.count") && !has_count) || (fd_gguf_get(&f0, "split.no") && !has_no) ||
        (fd_gguf_get(&f0, "split.tensors.count") && !has_tc))
        rc = split_fail(e, first, "split.count, split.no and split.tensors.count must be integers");
    else if (scount < 1 || scount > 99999)
        rc = split_fail(e, first, "split.count is %lld", (long long)scount);
    else if (named && count != scount && (has_count || count != 1))
        rc = split_fail(e, first, "the name says %d files but split.count says %lld", count, (long long)scount);
    else if (!named && scount > 1)
        rc = split_fail(e, first, "split.count is %lld but the name is not NAME-00001-of-%05lld.gguf", (long long)scount, (long long)scount);
    else if (has_no && sno != 0)
        rc = split_fail(e, first, "the first file of the set has split.no %lld (expected 0)", (long long)sno);
    else if (scount > 1 && !has_no)
        rc = split_fail(e, first, "split.no is missing");
    if (rc) {
        fd_gguf_close(&f0);
        return rc;
    }
    s->f = fd_xcalloc((size_t)scount, sizeof *s->f);
    s->f[0] = f0;
    s->n = 1;
    char *arch0 = fd_gguf_get_str(&f0, "general.architecture");
    fd_buf path = {0};
    for (int64_t i = 1; i < scount && !rc; i++) {
        path.n = 0;
        fd_buf_put(&path, first, stem);
        fd_buf_printf(&path, "-%05lld-of-%05lld.gguf", (long long)(i + 1), (long long)scount);
        fd_gguf_file *f = &s->f[i];
        if (fd_gguf_open(fd_buf_cstr(&path), f, e)) {
            if (!strcmp(e->code, "missing_file"))
                rc = split_fail(e, path.p, "file %lld of the set of %lld is missing", (long long)(i + 1), (long long)scount);
            else rc = -1;
            break;
        }
        s->n++;
        int64_t c2 = -1, n2 = -1, t2 = -1;
        char *arch = fd_gguf_get_str(f, "general.architecture");
        if (fd_gguf_get_int(f, "split.count", &c2) || c2 != scount)
            rc = split_fail(e, path.p, "split.count is %lld, the first file says %lld", (long long)c2, (long long)scount);
        else if (fd_gguf_get_int(f, "split.no", &n2) || n2 != i)
            rc = split_fail(e, path.p, "split.no is %lld, its name says %lld", (long long)n2, (long long)i);
        else if (has_tc && (fd_gguf_get_int(f, "split.tensors.count", &t2) || t2 != stensors))
            rc = split_fail(e, path.p, "split.tensors.count is %lld, the first file says %lld", (long long)t2, (long long)stensors);
        else if (!has_tc && fd_gguf_get(f, "split.tensors.count"))
            rc = split_fail(e, path.p, "split.tensors.count is here but not in the first file");
        else if (arch && (!arch0 || strcmp(arch, arch0)))
            rc = split_fail(e, path.p, "general.architecture '%s' differs from the first file's (%s)", arch, arch0 ? arch0 : "none");
        free(arch);
    }
    free(arch0);
    fd_buf_free(&path);
    if (!rc) {
        size_t nt = 0;
        for (size_t i = 0; i < s->n; i++) nt += s->f[i].nt;
        if (has_tc && (int64_t)nt != stensors)
            rc = split_fail(e, first, "the set holds %zu tensors but split.tensors.count says %lld", nt, (long long)stensors);
        s->t = fd_xmalloc((nt + 1) * sizeof *s->t);
        for (size_t i = 0; i < s->n; i++)
            for (size_t k = 0; k < s->f[i].nt; k++) {
                s->f[i].t[k].file = (int)i;
                s->t[s->nt++] = &s->f[i].t[k];
            }
        qsort(s->t, s->nt, sizeof *s->t, cmp_tname);
        for (size_t i = 1; i < s->nt && !rc; i++)
            if (!strcmp(s->t[i - 1]->name, s->t[i]->name))
                rc = split_fail(e, first, "tensor '%s' is in files %d and %d of the set", s->t[i]->name,
                                s->t[i - 1]->file + 1, s->t[i]->file + 1);
    }
    if (rc) fd_gguf_set_close(s);
    return rc;
}

const fd_gguf_tensor *fd_gguf_set_find(const fd_gguf_set *s, const char *name)
{
    size_t lo = 0, hi = s->nt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(s->t[mid]->name, name);
        if (!c) return s->t[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}
