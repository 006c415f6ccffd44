/* panel-binding's small checks, the tree walk, the .npy arrays and the
 * ustar digest (panel_binding_internal.h). */
#include "capture/panel_binding_internal.h"
#include "format/npy.h"
#include "format/sha.h"
#include "format/validate_util.h"
#include "util/fsio.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *pb_repr(const jv *v)
{
    return v ? py_repr(v) : fd_xstrdup("None");
}

/* ------------------------------------------------------------ small checks */

int pb_hex64(const jv *v, const char *label, const char **out, fd_err *e)
{
    *out = "";
    if (!v || v->t != JV_STR || !fd_is_hex64(v->u.s.p)) return perr(e, "%s must be a lowercase SHA-256 hex string", label);
    *out = v->u.s.p;
    return 0;
}

int pb_integer(const jv *v, const char *label, int64_t min, int64_t *out, fd_err *e)
{
    *out = 0;
    if (!v || v->t != JV_INT || v->u.i < min) return perr(e, "%s must be an integer >= %lld", label, (long long)min);
    *out = v->u.i;
    return 0;
}

void pb_canonical(const jv *v, int newline, fd_buf *b)
{
    fd_err e;
    jv_dump(v, &JV_CANON, b, &e);
    if (newline) fd_buf_putc(b, '\n');
}

void pb_sha_canonical(const jv *v, int newline, char hex[65])
{
    fd_buf b = {0};
    pb_canonical(v, newline, &b);
    fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
}

/* A strict JSON object file (duplicate keys keep the last value: see README). */
jv *pb_json_file(const char *path, const char *label, fd_buf *raw, fd_err *e)
{
    fd_err r;
    if (fd_read_file(path, JSON_MAX, raw, &r)) { perr(e, "cannot read strict JSON %s %s: %s", label, path, r.msg); return NULL; }
    jv *v = jv_parse(raw->p, raw->n, &r);
    if (!v) { perr(e, "cannot read strict JSON %s %s: %s", label, path, r.msg); return NULL; }
    if (v->t != JV_OBJ) { jv_free(v); perr(e, "%s must be a JSON object", label); return NULL; }
    return v;
}

/* The modern self-blank seal or the legacy field-absent one (canonical + "\n"). */
int pb_verify_seal(const jv *doc, const char *label, char declared[65], const char **mode, fd_err *e)
{
    const char *claimed;
    char lab[160], h[65];
    snprintf(lab, sizeof lab, "%s.receipt_sha256", label);
    if (pb_hex64(jv_get(doc, "receipt_sha256"), lab, &claimed, e)) return -1;
    snprintf(declared, 65, "%s", claimed);
    jv *m = jv_copy(doc);
    jv_set(m, "receipt_sha256", jv_str(""));
    pb_sha_canonical(m, 0, h);
    jv_free(m);
    if (!strcmp(h, claimed)) { *mode = "self-blank"; return 0; }
    m = jv_copy(doc);
    jv_del(m, "receipt_sha256");
    pb_sha_canonical(m, 1, h);
    jv_free(m);
    if (!strcmp(h, claimed)) { *mode = "legacy-field-absent"; return 0; }
    return perr(e, "%s receipt seal is neither modern self-blank nor legacy field-absent canonical JSON-with-newline", label);
}

static int is_repo(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || strchr(slash + 1, '/') || slash == s || !slash[1]) return 0;
    for (const char *p = s; *p; p++) {
        if (p == slash) continue;
        int alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (!alnum && ((p == s || p == slash + 1) || (*p != '.' && *p != '_' && *p != '-'))) return 0;
    }
    return 1;
}

static int is_rev40(const char *s)
{
    if (strlen(s) != 40) return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return 0;
    return 1;
}

int pb_pinned(const jv *repo, const jv *rev, const char *label, fd_err *e)
{
    if (!repo || repo->t != JV_STR || !is_repo(repo->u.s.p))
        return perr(e, "%s repository must have immutable owner/name form", label);
    if (!rev || rev->t != JV_STR || !is_rev40(rev->u.s.p))
        return perr(e, "%s revision must be a lowercase 40-hex commit", label);
    return 0;
}

/* PurePosixPath(value).as_posix() == value with no "", ".", ".." part. */
int pb_posix_canonical(const char *v, int allow_absolute)
{
    if (!*v || strchr(v, '\\') || strstr(v, "//")) return 0;
    const char *p = v;
    if (*p == '/') { if (!allow_absolute || !p[1]) return 0; p++; }
    size_t n = strlen(p);
    if (!n || p[n - 1] == '/') return 0;
    for (const char *s = p; *s;) {
        const char *t = strchr(s, '/');
        size_t k = t ? (size_t)(t - s) : strlen(s);
        if (!k || (k == 1 && s[0] == '.') || (k == 2 && s[0] == '.' && s[1] == '.')) return 0;
        s += k + (t ? 1 : 0);
    }
    return 1;
}

const char *pb_basename_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* ------------------------------------------------------------ the tree */

int pb_walk(const char *root, const char *rel, int depth, ptree *t, fd_err *e)
{
    if (depth > MAX_DEPTH) return perr(e, "panel tree deeper than %d levels", MAX_DEPTH);
    char *dir = rel ? fd_path_join(root, rel) : fd_xstrdup(root);
    DIR *d = opendir(dir);
    if (!d) { perr(e, "cannot read panel directory %s: %s", dir, strerror(errno)); free(dir); return -1; }
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *r = rel ? fd_path_join(rel, de->d_name) : fd_xstrdup(de->d_name);
        char *full = fd_path_join(root, r);
        struct stat st;
        if (lstat(full, &st)) rc = perr(e, "cannot stat %s: %s", full, strerror(errno));
        else if (S_ISLNK(st.st_mode)) rc = perr(e, "panel contains symlink %s", full);
        else if (S_ISDIR(st.st_mode)) rc = pb_walk(root, r, depth + 1, t, e);
        else if (!S_ISREG(st.st_mode)) rc = perr(e, "panel contains non-regular entry %s", full);
        else if (t->n >= MAX_FILES) rc = perr(e, "panel tree has more than %d files", MAX_FILES);
        else {
            if (t->n == t->cap) { t->cap = t->cap ? 2 * t->cap : 64; t->f = fd_xrealloc(t->f, t->cap * sizeof *t->f); }
            pfile *f = &t->f[t->n];
            fd_err he;
            if (fd_sha256_file(full, f->sha, &he)) rc = perr(e, "cannot read %s: %s", full, he.msg);
            else { f->rel = r; r = NULL; f->size = (uint64_t)st.st_size; t->n++; }
        }
        free(r);
        free(full);
    }
    closedir(d);
    free(dir);
    return rc;
}

int pb_cmp_pfile(const void *a, const void *b) { return strcmp(((const pfile *)a)->rel, ((const pfile *)b)->rel); }

const pfile *pb_tree_get(const ptree *t, const char *rel)
{
    pfile key = {.rel = (char *)rel};
    return bsearch(&key, t->f, t->n, sizeof *t->f, pb_cmp_pfile);
}

void pb_tree_free(ptree *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->f[i].rel);
    free(t->f);
}

/* ------------------------------------------------------------ arrays */

int pb_npy_read(const char *root, const char *rel, npyv *v, fd_err *e)
{
    memset(v, 0, sizeof *v);
    char *path = fd_path_join(root, rel);
    fd_err r;
    int rc = fd_read_file(path, NPY_MAX, &v->raw, &r);
    if (rc) { perr(e, "cannot read panel array %s: %s", path, r.msg); free(path); return -1; }
    char descr[16];
    if (fd_npy_parse((const unsigned char *)v->raw.p, v->raw.n, descr, v->shape, &v->ndim, &v->off, &r)) {
        perr(e, "invalid .npy header in %s: %s", path, r.msg);
        free(path);
        return -1;
    }
    if (v->ndim < 1) { perr(e, "%s must be a non-empty C-order array", path); free(path); return -1; }
    size_t dl = strlen(descr);
    if (dl != 3 || !strchr("<>=|", descr[0]) || !strchr("iub", descr[1]) || !strchr("1248", descr[2])) {
        perr(e, "unsupported dtype '%s' in %s", descr, path);
        free(path);
        return -1;
    }
    v->endian = descr[0];
    v->kind = descr[1];
    v->width = descr[2] - '0';
    uint64_t need = (uint64_t)v->width;
    for (int i = 0; i < v->ndim; i++) {
        if (v->shape[i] && need > UINT64_MAX / v->shape[i]) { need = UINT64_MAX; break; }
        need *= v->shape[i];
    }
    if (v->off > v->raw.n || v->raw.n - v->off != need) {
        perr(e, "%s .npy payload size disagrees with dtype/shape", path);
        free(path);
        return -1;
    }
    v->count = v->ndim == 1 ? v->shape[0] : 0;
    free(path);
    return 0;
}

int64_t pb_npy_at(const npyv *v, uint64_t i, int *overflow)
{
    const unsigned char *p = (const unsigned char *)v->raw.p + v->off + i * (uint64_t)v->width;
    uint64_t u = 0;
    for (int k = 0; k < v->width; k++) {
        int idx = v->endian == '>' ? k : v->width - 1 - k;
        u = u << 8 | p[idx];
    }
    if (v->kind == 'b') return u != 0;
    if (v->kind == 'i' && v->width < 8 && (u >> (8 * v->width - 1)) & 1) return (int64_t)(u | (~(uint64_t)0 << (8 * v->width)));
    if (v->kind == 'u' && u > INT64_MAX) { *overflow = 1; return INT64_MAX; }
    return (int64_t)u;
}

/* ------------------------------------------------------------ the archive */

static void octal(unsigned char *dst, size_t digits, uint64_t v)
{
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%0*llo", (int)(digits - 1), (unsigned long long)v);
    memcpy(dst, tmp, digits - 1);
    dst[digits - 1] = 0;
}

/* tarfile USTAR_FORMAT stream ("w|") of the manifest: header per file
 * (mode 0644, uid/gid/mtime 0, empty owner names), data padded to 512, two
 * zero blocks, padded to a multiple of 10240. */
int pb_ustar_digest(const char *root, const ptree *t, char hex[65], uint64_t *bytes, fd_err *e)
{
    fd_sha *s = fd_sha_new();
    uint64_t total = 0;
    static const unsigned char zero[512];
    unsigned char *buf = fd_xmalloc(1 << 20);
    int rc = 0;
    for (size_t i = 0; i < t->n && !rc; i++) {
        const pfile *f = &t->f[i];
        unsigned char h[512];
        memset(h, 0, sizeof h);
        size_t nl = strlen(f->rel);
        const char *name = f->rel, *prefix = "";
        char pre[160] = "";
        if (nl > 100) { /* _posix_split_name: the longest prefix (<= 155) at a "/" leaving a name <= 100 */
            const char *cut = NULL;
            for (const char *p = f->rel; (p = strchr(p, '/')); p++)
                if ((size_t)(p - f->rel) <= 155 && strlen(p + 1) <= 100 && p + 1 != f->rel + nl) { cut = p; break; }
            if (!cut) { rc = perr(e, "panel path too long for a ustar archive: %s", f->rel); break; }
            memcpy(pre, f->rel, (size_t)(cut - f->rel));
            pre[cut - f->rel] = 0;
            prefix = pre;
            name = cut + 1;
        }
        memcpy(h, name, strlen(name));
        octal(h + 100, 8, 0644);
        octal(h + 108, 8, 0);
        octal(h + 116, 8, 0);
        octal(h + 124, 12, f->size);
        octal(h + 136, 12, 0);
        memset(h + 148, ' ', 8);
        h[156] = '0';
        memcpy(h + 257, "ustar\0" "00", 8);
        /* devmajor/devminor: NUL for a regular file (tarfile >= 3.9) */
        memcpy(h + 345, prefix, strlen(prefix));
        unsigned sum = 0;
        for (int k = 0; k < 512; k++) sum += h[k];
        char cs[8];
        snprintf(cs, sizeof cs, "%06o", sum);
        memcpy(h + 148, cs, 6);
        h[154] = 0;
        fd_sha_update(s, h, 512);
        total += 512;
        char *path = fd_path_join(root, f->rel);
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) { rc = perr(e, "cannot read %s: %s", path, strerror(errno)); free(path); break; }
        fd_sha *fs = fd_sha_new();
        uint64_t got = 0;
        for (;;) {
            ssize_t r = read(fd, buf, 1 << 20);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) { if (r < 0) rc = perr(e, "cannot read %s: %s", path, strerror(errno)); break; }
            fd_sha_update(s, buf, (size_t)r);
            fd_sha_update(fs, buf, (size_t)r);
            got += (uint64_t)r;
        }
        close(fd);
        char now[65];
        fd_sha_final_hex(fs, now);
        if (!rc && (got != f->size || strcmp(now, f->sha))) rc = perr(e, "panel file changed while archiving: %s", f->rel);
        free(path);
        total += got;
        if (got % 512) { fd_sha_update(s, zero, 512 - got % 512); total += 512 - got % 512; }
    }
    free(buf);
    if (rc) { char tmp[65]; fd_sha_final_hex(s, tmp); return -1; }
    fd_sha_update(s, zero, 512);
    fd_sha_update(s, zero, 512);
    total += 1024;
    while (total % 10240) { fd_sha_update(s, zero, 512); total += 512; }
    fd_sha_final_hex(s, hex);
    *bytes = total;
    return 0;
}
