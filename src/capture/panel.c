/* Token panels: the upstream loader (hf_capture.load_panel); the builder
 * that writes the same format is panel_build.c.  See panel.h and FORMAT.md §5. */
#include "panel.h"
#include "capture/panel_internal.h"
#include "tokenizer/tokenizer.h"
#include "format/digest.h"
#include "format/npy.h"
#include "format/sha.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    PANEL_JSON_MAX = 256u << 20, /* panel.json / panel.receipt.json */
    NPY_MAX = FD_PANEL_NPY_MAX,  /* one tokens or mask .npy, one build input */
};

static const char *const TOKEN_DESCRS[] = {"<i8", "<i4", NULL};
static const char *const MASK_DESCRS[] = {"<i8", "<i4", "|b1", "|u1", NULL};

/* ---- .npy ---------------------------------------------------------------- */

static size_t descr_itemsize(const char *d)
{
    size_t n = strlen(d);
    if (n < 3) return 0;
    return (size_t)strtoul(d + 2, NULL, 10);
}

int fd_panel_npy_any(const unsigned char *p, size_t n, const char *const *descrs, const char *what, int max_ndim,
                     const char **descr_out, uint64_t shape[4], int *ndim, const unsigned char **data, fd_err *e)
{
    char descr[16];
    size_t off = 0;
    if (fd_npy_parse(p, n, descr, shape, ndim, &off, e)) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "%s", e->msg);
        return fd_fail(e, "panel_invalid", "", "%s: %s", what, msg);
    }
    const char *match = NULL;
    for (size_t i = 0; descrs[i]; i++)
        if (!strcmp(descr, descrs[i])) match = descrs[i];
    if (!match) return fd_fail(e, "panel_invalid", "", "%s: dtype '%s' is not accepted here", what, descr);
    if (*ndim < 1 || *ndim > max_ndim)
        return fd_fail(e, "panel_invalid", "", "%s: a %d-D array where %s expected", what, *ndim,
                       max_ndim == 1 ? "1-D is" : "1-D or 2-D is");
    size_t item = descr_itemsize(match);
    uint64_t count = 1;
    for (int i = 0; i < *ndim; i++) {
        if (shape[i] && count > UINT64_MAX / shape[i])
            return fd_fail(e, "panel_invalid", "", "%s: the .npy shape overflows", what);
        count *= shape[i];
    }
    if (count > UINT64_MAX / item || count * item != (uint64_t)(n - off))
        return fd_fail(e, "panel_invalid", "", "%s: the .npy header promises %llu x %zu data bytes but the file holds %zu",
                       what, (unsigned long long)count, item, n - off);
    *descr_out = match;
    *data = p + off;
    return 0;
}

int fd_panel_npy_1d(const unsigned char *p, size_t n, const char *const *descrs, const char *what,
                    const char **descr_out, uint64_t *count, const unsigned char **data, fd_err *e)
{
    uint64_t shape[4];
    int ndim = 0;
    if (fd_panel_npy_any(p, n, descrs, what, 1, descr_out, shape, &ndim, data, e)) return -1;
    *count = shape[0];
    return 0;
}

/* Element i of a little-endian integer/bool array as int64. */
int64_t fd_panel_npy_elem(const char *descr, const unsigned char *data, size_t i)
{
    if (!strcmp(descr, "<i8")) { int64_t v; memcpy(&v, data + 8 * i, 8); return v; }
    if (!strcmp(descr, "<i4")) { int32_t v; memcpy(&v, data + 4 * i, 4); return v; }
    if (!strcmp(descr, "<i2")) { int16_t v; memcpy(&v, data + 2 * i, 2); return v; }
    if (!strcmp(descr, "|i1")) return (int8_t)data[i];
    if (!strcmp(descr, "<u8")) { uint64_t v; memcpy(&v, data + 8 * i, 8); return v > INT64_MAX ? -1 : (int64_t)v; }
    if (!strcmp(descr, "<u4")) { uint32_t v; memcpy(&v, data + 4 * i, 4); return v; }
    if (!strcmp(descr, "<u2")) { uint16_t v; memcpy(&v, data + 2 * i, 2); return v; }
    return data[i]; /* |u1, |b1 */
}

/* ---- loading ------------------------------------------------------------- */

typedef struct {
    const jv *w;
    const char *id;
} sel;

static int cmp_sel(const void *a, const void *b)
{
    return strcmp(((const sel *)a)->id, ((const sel *)b)->id);
}

static char *opt_text(const jv *obj, const char *key)
{
    const jv *v = jv_get(obj, key);
    if (!v || v->t == JV_NULL) return NULL;
    if (v->t == JV_STR) return fd_xstrndup(v->u.s.p, v->u.s.n);
    fd_buf b = {0};
    fd_err e;
    if (jv_dump(v, &JV_CANON, &b, &e)) { fd_buf_free(&b); return NULL; }
    return fd_buf_cstr(&b);
}

/* A window_id becomes a file name: no separators, no NUL, not . or .. */
static int safe_id(const jv *v)
{
    if (!v || v->t != JV_STR || v->u.s.n == 0 || v->u.s.n > 200 || strlen(v->u.s.p) != v->u.s.n) return 0;
    if (!strcmp(v->u.s.p, ".") || !strcmp(v->u.s.p, "..")) return 0;
    return strpbrk(v->u.s.p, "/\\") == NULL;
}

static int hex_field(const char *ppath, const jv *w, const char *key, const char *wid, char out[65], fd_err *e)
{
    const char *s = jv_get_str(w, key);
    if (!s) return fd_fail(e, "panel_invalid", "", "%s: window %s has no %s", ppath, wid, key);
    if (!fd_is_hex64(s))
        return fd_fail(e, "panel_invalid", "", "%s: window %s: %s is not 64 lowercase hex digits", ppath, wid, key);
    memcpy(out, s, 65);
    return 0;
}

char *fd_panel_basename(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--;
    size_t s = n;
    while (s > 0 && path[s - 1] != '/') s--;
    char *b = fd_xstrndup(path + s, n - s);
    if (!*b || !strcmp(b, ".") || !strcmp(b, "..")) { /* resolve "." and the like */
        char *rp = realpath(path, NULL);
        if (rp) {
            free(b);
            const char *slash = strrchr(rp, '/');
            b = fd_xstrdup(slash && slash[1] ? slash + 1 : rp);
            free(rp);
        }
    }
    return b;
}

/* Reads a whole file; missing_file / unreadable name the path. */
static int read_whole(const char *path, size_t max, fd_buf *out, fd_err *e)
{
    out->n = 0;
    return fd_read_file(path, max, out, e);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Locates the mask of one window as load_panel does; *path gets a fresh string. */
static int locate_mask(const char *arrays, const char *wid, size_t len, const char *want_sha, char **path,
                       fd_err *e)
{
    char name[512];
    snprintf(name, sizeof name, "%s.mask.npy", wid);
    char *p = fd_path_join(arrays, name);
    if (exists(p)) { *path = p; return 0; }
    free(p);
    snprintf(name, sizeof name, "causal-mask-%zu.npy", len);
    p = fd_path_join(arrays, name);
    if (exists(p)) { *path = p; return 0; }
    free(p);
    /* any arrays/causal-mask-*.npy whose sha matches (sorted, so the choice is stable) */
    DIR *d = opendir(arrays);
    char **names = NULL;
    size_t n = 0, cap = 0;
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t k = strlen(de->d_name);
            if (k < 16 || strncmp(de->d_name, "causal-mask-", 12) || strcmp(de->d_name + k - 4, ".npy")) continue;
            if (n == cap) { cap = cap ? cap * 2 : 8; names = fd_xrealloc(names, cap * sizeof *names); }
            names[n++] = fd_xstrdup(de->d_name);
        }
        closedir(d);
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of names */
        for (size_t j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char *t = names[j]; names[j] = names[j - 1]; names[j - 1] = t;
        }
    *path = NULL;
    for (size_t i = 0; i < n; i++) {
        char hex[65];
        fd_err ignore;
        char *c = fd_path_join(arrays, names[i]);
        if (!*path && fd_is_file(c) && !fd_sha256_file(c, hex, &ignore) && !strcmp(hex, want_sha)) *path = c;
        else free(c);
        free(names[i]);
    }
    free(names);
    if (*path) return 0;
    return fd_fail(e, "missing_file", "", "%s/%s.mask.npy: no mask for window %s (nor causal-mask-%zu.npy, "
                   "nor any causal-mask-*.npy with sha %s)", arrays, wid, wid, len, want_sha);
}

static void window_free(fd_panel_window *w)
{
    free(w->window_id);
    free(w->role);
    free(w->domain);
    free(w->document_id);
    free(w->ids);
    free(w->mask_npy);
}

void fd_panel_free(fd_panel *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) window_free(&p->w[i]);
    free(p->w);
    free(p->dir);
    free(p->panel_id);
    free(p->name);
    free(p->receipt_tokenizer_id);
    jv_free((jv *)p->doc);
    memset(p, 0, sizeof *p);
}

static int load_window(const char *ppath, const char *arrays, const jv *w, const char *wid, int64_t vocab,
                       fd_panel_window *out, fd_err *e)
{
    char tok_sha[65], mask_sha[65], json_sha[65];
    if (hex_field(ppath, w, "token_ids_sha256", wid, tok_sha, e) ||
        hex_field(ppath, w, "attention_mask_sha256", wid, mask_sha, e) ||
        hex_field(ppath, w, "token_ids_json_sha256", wid, json_sha, e))
        return -1;
    const jv *pp = jv_get(w, "prediction_positions");
    if (!pp || pp->t != JV_INT || pp->u.i < 0)
        return fd_fail(e, "panel_invalid", "", "%s: window %s has no non-negative integer prediction_positions", ppath, wid);
    const jv *nt = jv_get(w, "num_tokens");
    if (nt && nt->t != JV_NULL && (nt->t != JV_INT || nt->u.i < 0))
        return fd_fail(e, "panel_invalid", "", "%s: window %s: num_tokens is not a non-negative integer", ppath, wid);
    out->window_id = fd_xstrdup(wid);
    out->role = opt_text(w, "role");
    out->domain = opt_text(w, "domain");
    out->document_id = opt_text(w, "document_id");
    memcpy(out->token_ids_sha256, tok_sha, 65);
    memcpy(out->token_ids_json_sha256, json_sha, 65);

    /* tokens: file sha first, then the array */
    char name[512];
    snprintf(name, sizeof name, "%s.tokens.npy", wid);
    char *tpath = fd_path_join(arrays, name);
    snprintf(out->tokens_file, sizeof out->tokens_file, "%s", tpath);
    free(tpath);
    fd_buf b = {0};
    int rc = -1;
    if (read_whole(out->tokens_file, NPY_MAX, &b, e)) goto done;
    char hex[65];
    fd_sha256_hex(b.p, b.n, hex);
    if (strcmp(hex, tok_sha)) {
        fd_fail(e, "panel_digest_mismatch", "", "%s: file sha %s != token_ids_sha256 %s", out->tokens_file, hex, tok_sha);
        goto done;
    }
    const char *descr;
    uint64_t count;
    const unsigned char *data;
    if (fd_panel_npy_1d((const unsigned char *)b.p, b.n, TOKEN_DESCRS, out->tokens_file, &descr, &count, &data, e))
        goto done;
    if (count < 2) {
        fd_fail(e, "panel_invalid", "", "%s: %llu tokens; a window needs at least two", out->tokens_file,
                (unsigned long long)count);
        goto done;
    }
    if (nt && nt->t == JV_INT && (uint64_t)nt->u.i != count) {
        fd_fail(e, "panel_invalid", "", "%s: %llu tokens but panel.json declares num_tokens %lld", out->tokens_file,
                (unsigned long long)count, (long long)nt->u.i);
        goto done;
    }
    out->n_ids = (size_t)count;
    out->ids = fd_xmalloc(out->n_ids * sizeof *out->ids);
    for (size_t i = 0; i < out->n_ids; i++) out->ids[i] = fd_panel_npy_elem(descr, data, i);

    /* mask: locate, sha, array, length */
    char *mpath = NULL;
    if (locate_mask(arrays, wid, out->n_ids, mask_sha, &mpath, e)) goto done;
    snprintf(out->mask_file, sizeof out->mask_file, "%s", mpath);
    free(mpath);
    if (read_whole(out->mask_file, NPY_MAX, &b, e)) goto done;
    fd_sha256_hex(b.p, b.n, hex);
    if (strcmp(hex, mask_sha)) {
        fd_fail(e, "panel_digest_mismatch", "", "%s: file sha %s != attention_mask_sha256 %s of window %s",
                out->mask_file, hex, mask_sha, wid);
        goto done;
    }
    memcpy(out->mask_sha256, hex, 65);
    if (fd_panel_npy_1d((const unsigned char *)b.p, b.n, MASK_DESCRS, out->mask_file, &descr, &count, &data, e))
        goto done;
    if (count != out->n_ids) {
        fd_fail(e, "panel_invalid", "", "%s: mask length %llu != token length %zu of window %s", out->mask_file,
                (unsigned long long)count, out->n_ids, wid);
        goto done;
    }
    size_t pred = 0;
    for (size_t i = 0; i + 1 < out->n_ids; i++) pred += fd_panel_npy_elem(descr, data, i) != 0 && fd_panel_npy_elem(descr, data, i + 1) != 0;

    /* ids: max(id) < vocab (and no negative id) */
    for (size_t i = 0; i < out->n_ids; i++)
        if (out->ids[i] < 0 || out->ids[i] >= vocab) {
            fd_fail(e, "token_out_of_range", "", "%s: token %lld at position %zu is outside [0, %lld)",
                    out->tokens_file, (long long)out->ids[i], i, (long long)vocab);
            goto done;
        }
    fd_token_ids_sha256(out->ids, out->n_ids, 0, hex);
    if (strcmp(hex, json_sha)) {
        fd_fail(e, "panel_digest_mismatch", "", "%s: token_ids_json_sha256 %s does not recompute (got %s)",
                out->tokens_file, json_sha, hex);
        goto done;
    }
    if ((int64_t)pred != pp->u.i) {
        fd_fail(e, "panel_invalid", "", "%s: the mask gives %zu prediction positions but window %s declares %lld",
                out->mask_file, pred, wid, (long long)pp->u.i);
        goto done;
    }
    if (pred == 0) {
        fd_fail(e, "panel_invalid", "", "%s: window %s has no prediction positions", out->mask_file, wid);
        goto done;
    }
    out->prediction_positions = pred;
    out->mask_npy = (unsigned char *)b.p; /* verbatim bytes, handed over */
    out->mask_len = b.n;
    b = (fd_buf){0};
    rc = 0;
done:
    fd_buf_free(&b);
    return rc;
}

int fd_panel_load(const char *dir, const char *role, long max_windows, int64_t vocab_size, fd_panel *p,
                  fd_err *e)
{
    memset(p, 0, sizeof *p);
    if (vocab_size <= 0) return fd_fail(e, "bad_usage", "", "the vocabulary size must be positive");
    char *ppath = fd_path_join(dir, "panel.json");
    fd_buf b = {0};
    int rc = read_whole(ppath, PANEL_JSON_MAX, &b, e);
    jv *doc = NULL;
    if (!rc) {
        doc = jv_parse(b.p, b.n, e);
        if (!doc) {
            char msg[sizeof e->msg];
            snprintf(msg, sizeof msg, "%s", e->msg);
            rc = fd_fail(e, "panel_invalid", "", "%s: not JSON: %s", ppath, msg);
        }
    }
    fd_buf_free(&b);
    if (rc) { free(ppath); return -1; }
    p->doc = doc;
    p->dir = fd_xstrdup(dir);
    p->vocab_size = vocab_size;
    sel *s = NULL;
    const char *schema = jv_get_str(doc, "schema");
    const jv *windows = jv_get(doc, "windows");
    if (doc->t != JV_OBJ) { rc = fd_fail(e, "panel_invalid", "", "%s: not a JSON object", ppath); goto out; }
    if (!schema || strcmp(schema, FD_PANEL_SCHEMA)) {
        rc = fd_fail(e, "panel_invalid", "", "%s: schema is %s%s%s, not %s", ppath, schema ? "'" : "",
                     schema ? schema : "absent", schema ? "'" : "", FD_PANEL_SCHEMA);
        goto out;
    }
    if (!windows || windows->t != JV_ARR) { rc = fd_fail(e, "panel_invalid", "", "%s: windows is not a list", ppath); goto out; }
    p->total_windows = windows->u.a.n;

    /* identities */
    const jv *pid = jv_get(doc, "panel_id");
    if (pid && pid->t == JV_STR && pid->u.s.n) p->panel_id = fd_xstrndup(pid->u.s.p, pid->u.s.n);
    else {
        char *base = fd_panel_basename(dir);
        fd_buf id = {0};
        fd_buf_printf(&id, "panel--%s", base);
        free(base);
        p->panel_id = fd_buf_cstr(&id);
        p->panel_id_derived = 1;
    }
    p->name = opt_text(doc, "name");
    char *rpath = fd_path_join(dir, "panel.receipt.json");
    if (exists(rpath)) {
        fd_buf r = {0};
        if (read_whole(rpath, PANEL_JSON_MAX, &r, e)) { fd_buf_free(&r); free(rpath); rc = -1; goto out; }
        fd_sha256_hex(r.p, r.n, p->panel_receipt_sha256);
        p->have_receipt = 1;
        fd_err ignore;
        jv *rd = jv_parse(r.p, r.n, &ignore); /* only for the tokenizer id fallback */
        const char *tid = rd ? jv_get_str(jv_get(rd, "tokenizer"), "id") : NULL;
        if (tid) p->receipt_tokenizer_id = fd_xstrdup(tid);
        jv_free(rd);
        fd_buf_free(&r);
    }
    free(rpath);

    /* 1. filter by role, sort by window_id, keep the first N */
    size_t n = windows->u.a.n, k = 0;
    s = fd_xmalloc((n ? n : 1) * sizeof *s);
    for (size_t i = 0; i < n; i++) {
        const jv *w = windows->u.a.v[i];
        if (w->t != JV_OBJ) { rc = fd_fail(e, "panel_invalid", "", "%s: windows[%zu] is not an object", ppath, i); goto out; }
        const jv *wid = jv_get(w, "window_id");
        if (!safe_id(wid)) {
            rc = fd_fail(e, "panel_invalid", "", "%s: windows[%zu] has no usable window_id (a non-empty file-name-safe string)",
                         ppath, i);
            goto out;
        }
        s[i] = (sel){w, wid->u.s.p};
    }
    qsort(s, n, sizeof *s, cmp_sel);
    for (size_t i = 1; i < n; i++)
        if (!strcmp(s[i].id, s[i - 1].id)) {
            rc = fd_fail(e, "panel_invalid", "", "%s: window_id %s appears twice", ppath, s[i].id);
            goto out;
        }
    for (size_t i = 0; i < n; i++) {
        if (role && *role) {
            const char *r = jv_get_str(s[i].w, "role");
            if (!r || strcmp(r, role)) continue;
        }
        s[k++] = s[i];
    }
    if (max_windows > 0 && (size_t)max_windows < k) k = (size_t)max_windows;
    if (k == 0) {
        rc = fd_fail(e, "panel_invalid", "", "%s: no windows%s%s%s", ppath, role && *role ? " with role '" : "",
                     role && *role ? role : "", role && *role ? "'" : "");
        goto out;
    }

    /* 2. each window's arrays */
    char *arrays = fd_path_join(dir, "arrays");
    p->w = fd_xcalloc(k, sizeof *p->w);
    for (size_t i = 0; i < k && !rc; i++) {
        rc = load_window(ppath, arrays, s[i].w, s[i].id, vocab_size, &p->w[i], e);
        p->n = i + 1;
        if (!rc && p->w[i].n_ids != p->w[0].n_ids)
            rc = fd_fail(e, "ragged_panel", "", "%s: window %s has %zu tokens but window %s has %zu; a ragged panel is refused",
                         p->w[i].tokens_file, p->w[i].window_id, p->w[i].n_ids, p->w[0].window_id, p->w[0].n_ids);
    }
    free(arrays);
    if (rc) goto out;
    p->context_length = p->w[0].n_ids;

    char **per = fd_xmalloc(k * sizeof *per);
    for (size_t i = 0; i < k; i++) per[i] = p->w[i].token_ids_json_sha256;
    fd_suite_token_hash(per, k, 0, p->suite_token_hash_sha256);
    fd_suite_token_hash(per, k, 1, p->suite_token_hash_legacy);
    free(per);
out:
    free(s);
    free(ppath);
    if (rc) fd_panel_free(p);
    return rc;
}

void fd_panel_ds_window(const fd_panel_window *pw, fd_ds_window *out)
{
    memset(out, 0, sizeof *out);
    out->ids = pw->ids;
    out->n_ids = pw->n_ids;
    out->mask_npy = pw->mask_npy;
    out->mask_len = pw->mask_len;
    out->window_id = pw->window_id;
    out->role = pw->role;
    out->domain = pw->domain;
    out->document_id = pw->document_id;
    out->scored_rows = pw->prediction_positions;
}
