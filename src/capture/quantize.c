#include "quantize.h"
#include "format/digest.h"
#include "model_dir.h"
#include "util/bf16.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const jv_style FD_QZ_JSON_STYLE = {2, 1, ",", ": "};

int fd_qz_bits_ok(int bits)
{
    return bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
}

int fd_qz_class_ok(const char *c)
{
    for (size_t i = 0; i < FD_N_SCOPE_CLASSES; i++)
        if (!strcmp(FD_SCOPE_CLASSES[i], c)) return 1;
    return 0;
}

int64_t fd_qz_touched(jv *touched, const fd_st_tensor *t)
{
    jv *q = jv_obj(), *shape = jv_arr();
    int64_t n = (int64_t)(t->shape[0] * t->shape[1]);
    jv_push(shape, jv_int((int64_t)t->shape[0]));
    jv_push(shape, jv_int((int64_t)t->shape[1]));
    jv_set(q, "tensor", jv_str(t->name));
    jv_set(q, "shape", shape);
    jv_set(q, "elements", jv_int(n));
    jv_push(touched, q);
    return n;
}

int fd_qz_matches(const char *name, int ndim, const char *const *patterns, size_t npatterns)
{
    if (ndim != 2) return 0;
    for (size_t i = 0; i < npatterns; i++)
        if (strstr(name, patterns[i])) return 1;
    return 0;
}

/* ------------------------------------------------------------ arithmetic */

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, u;
    float f;
    if (exp == 0) {
        f = (float)man * 0x1p-24f; /* zero or subnormal: exact */
        memcpy(&u, &f, 4);
        u |= sign;
    } else if (exp == 31) u = sign | 0x7f800000u | man << 13;
    else u = sign | (exp + 112) << 23 | man << 13;
    memcpy(&f, &u, 4);
    return f;
}

static uint16_t f32_to_f16(float f) /* round to nearest even */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu)); /* quiet NaN */
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);                     /* >= 65520: inf */
    if (a < 0x38800000u) {                                                         /* < 2^-14: subnormal */
        float v;
        memcpy(&v, &a, 4);
        return (uint16_t)(sign | (uint16_t)nearbyintf(v * 0x1p24f));
    }
    a += 0xfffu + ((a >> 13) & 1u);
    return (uint16_t)(sign | (uint16_t)((a - 0x38000000u) >> 13));
}

void fd_qz_row_f32(float *w, size_t cols, int bits)
{
    const float levels = (float)((1 << (bits - 1)) - 1);
    const float floor_ = (float)1e-12; /* torch: clamp(min=1e-12) casts the double to the tensor dtype */
    float m = 0.0f;
    int nan = 0;
    for (size_t j = 0; j < cols; j++) {
        float a = fabsf(w[j]);
        if (isnan(a)) nan = 1;
        else if (a > m) m = a;
    }
    if (nan) m = NAN;
    float s = m < floor_ ? floor_ : m; /* NaN stays NaN, as with torch.clamp */
    s = s / levels;
    for (size_t j = 0; j < cols; j++) w[j] = nearbyintf(w[j] / s) * s;
}

int fd_qz_rows(const char *dtype, void *data, uint64_t rows, uint64_t cols, int bits, float *scratch, fd_err *e)
{
    unsigned char *p = data;
    int kind = !strcmp(dtype, "BF16") ? 1 : !strcmp(dtype, "F16") ? 2 : !strcmp(dtype, "F32") ? 3
             : !strcmp(dtype, "F64") ? 4 : 0;
    if (!kind) return fd_fail(e, "unsupported_dtype", "", "the toy quantizer handles BF16, F16, F32 and F64, not %s", dtype);
    size_t esz = kind <= 2 ? 2 : kind == 3 ? 4 : 8;
    for (uint64_t i = 0; i < rows; i++, p += cols * esz) {
        for (size_t j = 0; j < cols; j++) {
            const unsigned char *x = p + j * esz;
            if (kind == 1) { uint16_t h; memcpy(&h, x, 2); scratch[j] = fd_bf16_to_f32(h); }
            else if (kind == 2) { uint16_t h; memcpy(&h, x, 2); scratch[j] = f16_to_f32(h); }
            else if (kind == 3) memcpy(&scratch[j], x, 4);
            else { double d; memcpy(&d, x, 8); scratch[j] = (float)d; }
        }
        fd_qz_row_f32(scratch, (size_t)cols, bits);
        for (size_t j = 0; j < cols; j++) {
            unsigned char *x = p + j * esz;
            if (kind == 1) { uint16_t h = fd_f32_to_bf16(scratch[j]); memcpy(x, &h, 2); }
            else if (kind == 2) { uint16_t h = f32_to_f16(scratch[j]); memcpy(x, &h, 2); }
            else if (kind == 3) memcpy(x, &scratch[j], 4);
            else { double d = scratch[j]; memcpy(x, &d, 8); }
        }
    }
    return 0;
}

/* ------------------------------------------------------------ the driver */

int fd_qz_pread_all(int fd, void *buf, size_t n, uint64_t off)
{
    char *c = buf;
    while (n) {
        ssize_t k = pread(fd, c, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

/* Streams one shard from src into path, quantizing the tensors flagged. */
static int write_shard(const fd_md_shard *s, const unsigned char *quant, int bits, const char *path, fd_err *e)
{
    size_t n = s->st.n;
    fd_stm_tensor *tv = fd_xcalloc(n + 1, sizeof *tv);
    for (size_t i = 0; i < n; i++) {
        tv[i].name = s->st.t[i].name;
        tv[i].dtype = s->st.t[i].dtype;
        tv[i].ndim = s->st.t[i].ndim;
        memcpy(tv[i].shape, s->st.t[i].shape, sizeof tv[i].shape);
    }
    fd_stm_writer w;
    if (fd_stm_begin(&w, path, tv, n, e)) { free(tv); return -1; }
    free(tv);
    int in = open(s->path, O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        fd_stm_abort(&w);
        return fd_fail(e, "unreadable", "", "%s: %s", s->path, strerror(errno));
    }
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = NULL;
    float *scratch = NULL;
    size_t cap = 0, scap = 0;
    int rc = 0;
    for (size_t k = 0; k < n && !rc; k++) {
        const fd_st_tensor *t = &s->st.t[w.order[k]];
        uint64_t off = fd_md_data_offset(s, t), bytes = t->end - t->start;
        if (quant[w.order[k]]) {
            uint64_t rows = t->shape[0], cols = t->shape[1];
            size_t esz = (size_t)fd_st_dtype_size(t->dtype);
            if (cols > SIZE_MAX / 8) { rc = fd_fail(e, "bad_tensor_file", "", "%s: tensor '%s' rows are too long", s->path, t->name); break; }
            size_t rowb = (size_t)cols * esz;
            uint64_t per = rowb && rowb < CHUNK ? CHUNK / rowb : 1; /* whole rows per read */
            if (rowb * per > cap) { free(buf); cap = rowb * per; buf = fd_xmalloc(cap); }
            if (cols > scap) { free(scratch); scap = (size_t)cols; scratch = fd_xmalloc(scap * sizeof *scratch); }
            for (uint64_t i = 0; i < rows && !rc && rowb; i += per) {
                uint64_t nr = rows - i < per ? rows - i : per;
                size_t len = (size_t)(nr * rowb);
                if (fd_qz_pread_all(in, buf, len, off + i * rowb)) rc = fd_fail(e, "unreadable", "", "%s: short read", s->path);
                else if (!(rc = fd_qz_rows(t->dtype, buf, nr, cols, bits, scratch, e)))
                    rc = fd_stm_put(&w, buf, len, e);
            }
        } else {
            if (cap < CHUNK) { free(buf); cap = CHUNK; buf = fd_xmalloc(cap); }
            for (uint64_t done = 0; done < bytes && !rc;) {
                size_t k2 = bytes - done < cap ? (size_t)(bytes - done) : cap;
                if (fd_qz_pread_all(in, buf, k2, off + done)) rc = fd_fail(e, "unreadable", "", "%s: short read", s->path);
                else rc = fd_stm_put(&w, buf, k2, e);
                done += k2;
            }
        }
    }
    free(buf);
    free(scratch);
    close(in);
    if (rc) { fd_stm_abort(&w); return rc; }
    return fd_stm_finish(&w, e);
}

static char *strip_slashes(const char *p)
{
    char *s = fd_xstrdup(p);
    size_t n = strlen(s);
    while (n > 1 && s[n - 1] == '/') s[--n] = 0;
    return s;
}

/* dirname / basename of a path without trailing slashes. */
static void split_path(const char *p, char **dir, char **base)
{
    const char *slash = strrchr(p, '/');
    if (!slash) { *dir = fd_xstrdup("."); *base = fd_xstrdup(p); }
    else if (slash == p) { *dir = fd_xstrdup("/"); *base = fd_xstrdup(p + 1); }
    else { *dir = fd_xstrndup(p, (size_t)(slash - p)); *base = fd_xstrdup(slash + 1); }
}

static int path_exists(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0;
}

/* Refuses a destination that is the source or one of its ancestors: --force
 * would otherwise delete the checkpoint it is reading. */
static int check_overlap(const char *src, const char *dst, fd_err *e)
{
    char rs[PATH_MAX], rd[PATH_MAX];
    if (!realpath(src, rs) || !realpath(dst, rd)) return 0;
    size_t n = strlen(rd);
    if (!strcmp(rs, rd) || (!strncmp(rs, rd, n) && (rs[n] == '/' || !strcmp(rd, "/"))))
        return fd_fail(e, "destination_is_source", "", "--dst %s is the source directory %s or contains it", dst, src);
    return 0;
}

int fd_qz_stage_dir(const char *src_root, const char *dst_in, int force, fd_qz_fill_fn fill, void *ctx, fd_err *e)
{
    char *dst = strip_slashes(dst_in), *dir, *base;
    split_path(dst, &dir, &base);
    fd_buf tmp = {0}, old = {0};
    fd_buf_printf(&tmp, "%s/.%s.quantize-tmp.%ld", dir, base, (long)getpid());
    fd_buf_printf(&old, "%s/.%s.quantize-old.%ld", dir, base, (long)getpid());
    int rc = 0, made = 0;
    if (path_exists(dst) && !force)
        rc = fd_fail(e, "destination_exists", "", "--dst %s already exists (pass --force to replace it)", dst);
    else if (path_exists(dst))
        rc = check_overlap(src_root, dst, e);
    if (!rc && !*base) rc = fd_fail(e, "unwritable", "", "--dst %s names no directory", dst_in);
    if (!rc) rc = fd_mkdirs(dir, e);
    if (!rc) {
        if (mkdir(fd_buf_cstr(&tmp), 0755)) rc = fd_fail(e, "unwritable", "", "%s: %s", tmp.p, strerror(errno));
        else made = 1;
    }
    if (!rc) rc = fill(ctx, tmp.p, e);
    if (!rc) {
        int had = path_exists(dst);
        if (had && rename(dst, fd_buf_cstr(&old))) rc = fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno));
        else if (rename(tmp.p, dst)) {
            rc = fd_fail(e, "unwritable", "", "%s: %s", dst, strerror(errno));
            if (had) rename(old.p, dst);
        } else {
            made = 0;
            if (had && fd_rmtree(old.p)) fprintf(stderr, "fidelity quantize: warning: could not remove %s\n", old.p);
            int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dfd >= 0) { fsync(dfd); close(dfd); }
        }
    }
    if (made) fd_rmtree(tmp.p);
    fd_buf_free(&tmp);
    fd_buf_free(&old);
    free(dst);
    free(dir);
    free(base);
    return rc;
}

typedef struct rtn_fill {
    const fd_model_dir *md;
    unsigned char *const *quant;
    int bits;
} rtn_fill;

static int fill_rtn(void *ctx, const char *tmp, fd_err *e)
{
    const rtn_fill *f = ctx;
    const fd_model_dir *md = f->md;
    int rc = 0;
    for (size_t i = 0; !rc && i < md->others.n; i++) {
        char *from = fd_path_join(md->root, md->others.v[i]), *to = fd_path_join(tmp, md->others.v[i]);
        rc = fd_md_copy_file(from, to, e);
        free(from);
        free(to);
    }
    for (size_t i = 0; !rc && i < md->nshards; i++) {
        char *to = fd_path_join(tmp, md->shards[i].name);
        rc = write_shard(&md->shards[i], f->quant[i], f->bits, to, e);
        free(to);
    }
    return rc;
}

int fd_quantize(const fd_qz_opts *o, jv **report, fd_err *e)
{
    *report = NULL;
    if (!fd_qz_bits_ok(o->bits)) return fd_fail(e, "usage", "", "--bits must be one of 2, 3, 4, 5, 6, 8");
    fd_model_dir md;
    if (fd_md_open(o->src, &md, e)) return -1;
    if (!md.nshards) {
        fd_md_close(&md);
        return fd_fail(e, "no_safetensors", "", "no *.safetensors in %s", o->src);
    }
    jv *r = jv_obj(), *pats = jv_arr(), *touched = jv_arr();
    for (size_t i = 0; i < o->npatterns; i++) jv_push(pats, jv_str(o->patterns[i]));
    int64_t nq = 0, nu = 0, elems = 0;
    unsigned char **quant = fd_xcalloc(md.nshards, sizeof *quant);
    int rc = 0;
    for (size_t si = 0; si < md.nshards; si++) {
        const fd_md_shard *s = &md.shards[si];
        quant[si] = fd_xcalloc(s->st.n + 1, 1);
        const fd_st_tensor **sorted = fd_md_sorted_tensors(s);
        for (size_t k = 0; k < s->st.n; k++) {
            const fd_st_tensor *t = sorted[k];
            if (!fd_qz_matches(t->name, t->ndim, o->patterns, o->npatterns)) { nu++; continue; }
            if (strcmp(t->dtype, "BF16") && strcmp(t->dtype, "F16") && strcmp(t->dtype, "F32") && strcmp(t->dtype, "F64") && !rc)
                rc = fd_fail(e, "unsupported_dtype", "", "%s: tensor '%s' matches --match but is %s (the toy quantizer handles BF16, F16, F32, F64)",
                             s->path, t->name, t->dtype);
            quant[si][t - s->st.t] = 1;
            nq++;
            elems += fd_qz_touched(touched, t);
        }
        free(sorted);
    }
    jv_set(r, "bits", jv_int(o->bits));
    jv_set(r, "patterns", pats);
    jv_set(r, "scheme", jv_str(FD_QZ_SCHEME));
    jv_set(r, "tensors_quantized", jv_int(nq));
    jv_set(r, "tensors_untouched", jv_int(nu));
    jv_set(r, "elements_quantized", jv_int(elems));
    jv_set(r, "quantized", touched);
    *report = r;
    if (!rc && !nq) {
        fd_buf p = {0};
        jv_dump(pats, &JV_DEFAULT, &p, e);
        rc = fd_fail(e, "nothing_matched", "",
                     "no 2-D tensor name contains any of --match %s -- a 'candidate' identical to its reference "
                     "would compare to exactly 0.0 and read as a reproduction", fd_buf_cstr(&p));
        fd_buf_free(&p);
    }
    rtn_fill f = {&md, quant, o->bits};
    if (!rc && !o->dry_run) rc = fd_qz_stage_dir(md.root, o->dst, o->force, fill_rtn, &f, e);
    for (size_t si = 0; si < md.nshards; si++) free(quant[si]);
    free(quant);
    fd_md_close(&md);
    return rc;
}

jv *fd_qz_summary(const jv *report)
{
    jv *s = jv_copy(report);
    jv_del(s, "quantized");
    return s;
}

jv *fd_qz_scope_doc(const jv *report, const char *tensor_class)
{
    int64_t bits = 0;
    jv_get_i64(report, "bits", &bits);
    jv *d = fd_scope_block(tensor_class, bits == 8 ? "int8" : bits == 4 ? "int4" : "unknown", bits);
    jv_set(d, "_scheme", jv_copy(jv_get(report, "scheme")));
    jv_set(d, "_match_patterns", jv_copy(jv_get(report, "patterns")));
    jv_set(d, "_tensors_quantized", jv_copy(jv_get(report, "tensors_quantized")));
    jv_set(d, "_elements_quantized", jv_copy(jv_get(report, "elements_quantized")));
    return d;
}
