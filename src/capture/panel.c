/* Token panels: the upstream loader (hf_capture.load_panel) and a builder
 * that writes the same format.  See panel.h and FORMAT.md §5. */
#include "panel.h"
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
    NPY_MAX = 1024u << 20,       /* one tokens or mask .npy, one build input */
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

static int npy_any(const unsigned char *p, size_t n, const char *const *descrs, const char *what, int max_ndim,
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
    if (npy_any(p, n, descrs, what, 1, descr_out, shape, &ndim, data, e)) return -1;
    *count = shape[0];
    return 0;
}

/* Element i of a little-endian integer/bool array as int64. */
static int64_t npy_elem(const char *descr, const unsigned char *data, size_t i)
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

static char *basename_of(const char *path)
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
    for (size_t i = 0; i < out->n_ids; i++) out->ids[i] = npy_elem(descr, data, i);

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
    for (size_t i = 0; i + 1 < out->n_ids; i++) pred += npy_elem(descr, data, i) != 0 && npy_elem(descr, data, i + 1) != 0;

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
        char *base = basename_of(dir);
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

/* ---- building ------------------------------------------------------------ */

typedef struct {
    int64_t *ids;
    size_t n;
    size_t input;   /* index into the inputs */
    char *domain, *docid;   /* text mode; NULL otherwise */
} seq;

typedef struct {
    seq *v;
    size_t n, cap;
} seqv;

static void seq_push(seqv *s, int64_t *ids, size_t n, size_t input)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = fd_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = (seq){ids, n, input, NULL, NULL};
}

static int id_ok(int64_t v, int64_t vocab, const char *path, size_t row, size_t pos, fd_err *e)
{
    if (v >= 0 && v < vocab) return 0;
    return fd_fail(e, "token_out_of_range", "", "%s: token %lld (sequence %zu, position %zu) is outside [0, %lld)", path,
                   (long long)v, row, pos, (long long)vocab);
}

static int json_list(const jv *a, const char *path, size_t row, int64_t vocab, int64_t **ids, size_t *n, fd_err *e)
{
    *ids = fd_xmalloc((a->u.a.n ? a->u.a.n : 1) * sizeof **ids);
    *n = a->u.a.n;
    for (size_t i = 0; i < a->u.a.n; i++) {
        const jv *v = a->u.a.v[i];
        if (v->t == JV_BIGINT)
            return fd_fail(e, "token_out_of_range", "", "%s: token %.*s (sequence %zu, position %zu) is outside [0, %lld)",
                           path, (int)(v->u.s.n > 40 ? 40 : v->u.s.n), v->u.s.p, row, i, (long long)vocab);
        if (v->t != JV_INT)
            return fd_fail(e, "bad_input", "", "%s: sequence %zu position %zu is not an integer", path, row, i);
        (*ids)[i] = v->u.i;
        if (id_ok(v->u.i, vocab, path, row, i, e)) return -1;
    }
    return 0;
}

static int read_input(const char *path, size_t index, int64_t vocab, seqv *out, char sha[65], fd_err *e)
{
    fd_buf b = {0};
    if (read_whole(path, NPY_MAX, &b, e)) { fd_buf_free(&b); return -1; }
    fd_sha256_hex(b.p, b.n, sha);
    int rc = 0;
    if (b.n >= 6 && !memcmp(b.p, "\x93NUMPY", 6)) {
        static const char *const IN_DESCRS[] = {"<i8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1", NULL};
        uint64_t shape[4];
        int ndim;
        const char *descr;
        const unsigned char *data;
        if (npy_any((const unsigned char *)b.p, b.n, IN_DESCRS, path, 2, &descr, shape, &ndim, &data, e)) {
            e->code[0] = 0;
            snprintf(e->code, sizeof e->code, "bad_input");
            rc = -1;
        } else {
            size_t rows = ndim == 1 ? 1 : (size_t)shape[0], cols = ndim == 1 ? (size_t)shape[0] : (size_t)shape[1];
            for (size_t r = 0; r < rows && !rc; r++) {
                int64_t *ids = fd_xmalloc((cols ? cols : 1) * sizeof *ids);
                for (size_t c = 0; c < cols && !rc; c++) {
                    size_t i = r * cols + c;
                    if (!strcmp(descr, "<u8")) { /* ids past INT64_MAX are out of range anyway */
                        uint64_t u;
                        memcpy(&u, data + 8 * i, 8);
                        if (u > INT64_MAX)
                            rc = fd_fail(e, "token_out_of_range", "", "%s: token %llu (sequence %zu, position %zu) is outside [0, %lld)",
                                         path, (unsigned long long)u, r, c, (long long)vocab);
                    }
                    if (!rc) { ids[c] = npy_elem(descr, data, i); rc = id_ok(ids[c], vocab, path, r, c, e); }
                }
                if (rc) free(ids);
                else seq_push(out, ids, cols, index);
            }
        }
    } else {
        jv *doc = jv_parse(b.p, b.n, e);
        if (!doc) {
            char msg[sizeof e->msg];
            snprintf(msg, sizeof msg, "%s", e->msg);
            rc = fd_fail(e, "bad_input", "", "%s: neither a .npy file nor JSON: %s", path, msg);
        } else if (doc->t != JV_ARR || doc->u.a.n == 0) {
            rc = fd_fail(e, "bad_input", "", "%s: not a non-empty JSON list of token ids or of token-id lists", path);
        } else if (doc->u.a.v[0]->t == JV_ARR) {
            for (size_t r = 0; r < doc->u.a.n && !rc; r++) {
                const jv *a = doc->u.a.v[r];
                int64_t *ids = NULL;
                size_t n = 0;
                if (a->t != JV_ARR) rc = fd_fail(e, "bad_input", "", "%s: item %zu is not a list of token ids", path, r);
                else rc = json_list(a, path, r, vocab, &ids, &n, e);
                if (rc) free(ids);
                else seq_push(out, ids, n, index);
            }
        } else {
            int64_t *ids = NULL;
            size_t n = 0;
            rc = json_list(doc, path, 0, vocab, &ids, &n, e);
            if (rc) free(ids);
            else seq_push(out, ids, n, index);
        }
        jv_free(doc);
    }
    fd_buf_free(&b);
    return rc;
}

static int write_file(const char *dir, const char *rel, const void *p, size_t n, char sha[65], fd_err *e)
{
    char *path = fd_path_join(dir, rel);
    int rc = fd_write_atomic(path, p, n, e);
    free(path);
    if (!rc && sha) fd_sha256_hex(p, n, sha);
    return rc;
}

static int role_ok(const char *r)
{
    if (!r || !*r || strlen(r) > 64 || r[0] == '.') return 0;
    for (const char *c = r; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '-' || *c == '.'))
            return 0;
    return 1;
}

/* panel.receipt.json of a text-mode build: what the windows were made
 * from (tokenizer bytes, sources, the cutting rule), bound to panel.json by
 * its sha, sealed by receipt_sha256 (sha256 of the canonical JSON with that
 * field ""). */
static int write_receipt(const char *dir, const jv *doc, const char *pj, size_t pjn, size_t L, size_t np,
                         const int64_t *prefix, fd_err *e)
{
    jv *r = jv_obj();
    char pjs[65], seal[65];
    fd_sha256_hex(pj, pjn, pjs);
    jv_set(r, "schema", jv_str(FD_PANEL_RECEIPT_SCHEMA));
    jv_set(r, "panel_id", jv_copy(jv_get(doc, "panel_id")));
    jv_set(r, "panel_json_sha256", jv_str(pjs));
    jv_set(r, "suite_token_hash_sha256", jv_copy(jv_get(doc, "suite_token_hash_sha256")));
    jv_set(r, "tokenizer", jv_copy(jv_get(doc, "tokenizer")));
    jv *pre = jv_arr();
    for (size_t i = 0; i < np; i++) jv_push(pre, jv_int(prefix[i]));
    jv *cut = jv_obj();
    jv_set(cut, "context_length", jv_int((int64_t)L));
    jv_set(cut, "template_prefix_ids", pre);
    jv_set(cut, "rule", jv_str("each document is tokenized without special tokens and cut into consecutive "
                               "windows of template_prefix_ids + (context_length - len(prefix)) of its tokens; "
                               "a shorter tail is dropped; documents in input order"));
    jv_set(r, "windows", cut);
    jv_set(r, "sources", jv_copy(jv_get(jv_get(doc, "provenance"), "inputs")));
    jv_set(r, "contexts", jv_copy(jv_get(doc, "contexts")));
    jv_set(r, "receipt_sha256", jv_str(""));
    fd_buf b = {0};
    int rc = jv_seal(r, "receipt_sha256", seal, e);
    if (!rc) {
        jv_set(r, "receipt_sha256", jv_str(seal));
        rc = jv_dump(r, &JV_PRETTY, &b, e);
    }
    if (!rc) {
        fd_buf_putc(&b, '\n');
        rc = write_file(dir, "panel.receipt.json", b.p, b.n, NULL, e);
    }
    fd_buf_free(&b);
    jv_free(r);
    return rc;
}

int fd_panel_build(const fd_panel_build_opts *o, char *const *inputs, size_t n_inputs,
                   fd_panel_build_result *res, fd_err *e)
{
    memset(res, 0, sizeof *res);
    const char *role = o->role ? o->role : "final";
    const char *domain = o->domain ? o->domain : "unspecified";
    if (!o->out || !*o->out) return fd_fail(e, "bad_usage", "", "--out is required");
    if (o->vocab_size <= 0 && !o->tokenizer) return fd_fail(e, "bad_usage", "", "--vocab must be positive");
    if (!role_ok(role)) return fd_fail(e, "bad_usage", "", "role '%s' is not a file-name-safe word ([A-Za-z0-9._-])", role);
    if (o->context_length == 1 || o->context_length < 0)
        return fd_fail(e, "bad_usage", "", "--context-length must be at least 2");
    if (n_inputs == 0) return fd_fail(e, "bad_usage", "", "no INPUT files");
    struct stat st;
    if (lstat(o->out, &st) == 0 && !o->force)
        return fd_fail(e, "destination_exists", "", "%s already exists (pass --force to replace it)", o->out);

    seqv seqs = {0};
    char (*in_sha)[65] = fd_xcalloc(n_inputs, sizeof *in_sha);
    jv *doc = NULL;
    fd_buf tmp = {0}, old = {0}, pj = {0}, mb = {0}, tb = {0};
    char *base = NULL;
    int rc = 0;
    int64_t vocab = o->vocab_size, *prefix = NULL;
    size_t np = 0;
    const char **in_domain = fd_xcalloc(n_inputs + 1, sizeof *in_domain);
    char **in_path = fd_xcalloc(n_inputs + 1, sizeof *in_path);
    if (o->tokenizer) {
        if (vocab <= 0) vocab = fd_tok_vocab_size(o->tokenizer);
        if (o->context_length <= 0) { rc = fd_fail(e, "bad_usage", "", "text inputs need --context-length"); goto out; }
        if (!o->no_prefix && (rc = fd_panel_template_prefix(o->tokenizer, &prefix, &np, e))) goto out;
        if ((long)np + 1 >= o->context_length) {
            rc = fd_fail(e, "bad_usage", "", "--context-length %ld leaves no room after the %zu template token(s)",
                         o->context_length, np);
            goto out;
        }
    }
    for (size_t i = 0; i < n_inputs && !rc; i++) {
        if (!o->tokenizer) { rc = read_input(inputs[i], i, vocab, &seqs, in_sha[i], e); continue; }
        /* [DOMAIN=]PATH: an existing file name wins over the split */
        const char *eq = strchr(inputs[i], '='), *path = inputs[i];
        in_domain[i] = domain;
        if (eq && !fd_is_file(inputs[i])) {
            char *d = fd_xstrndup(inputs[i], (size_t)(eq - inputs[i]));
            if (!role_ok(d)) { rc = fd_fail(e, "bad_usage", "", "%s: domain '%s' is not a file-name-safe word", inputs[i], d); free(d); break; }
            in_path[i] = d; /* owns the domain string */
            in_domain[i] = d;
            path = eq + 1;
        }
        fd_panel_docs docs = {0};
        rc = fd_panel_text_docs(o->tokenizer, path, in_domain[i], i, &docs, in_sha[i], e);
        for (size_t k = 0; k < docs.n && !rc; k++) {
            for (size_t j = 0; j < docs.v[k].n && !rc; j++) rc = id_ok(docs.v[k].ids[j], vocab, path, k, j, e);
            if (rc) break;
            seq_push(&seqs, docs.v[k].ids, docs.v[k].n, i);
            seqs.v[seqs.n - 1].domain = docs.v[k].domain;
            seqs.v[seqs.n - 1].docid = docs.v[k].document_id;
            docs.v[k].ids = NULL;
            docs.v[k].domain = docs.v[k].document_id = NULL;
        }
        fd_panel_docs_free(&docs);
    }
    if (rc) goto out;

    /* windows: split to --context-length (tails dropped), else all equal */
    size_t L = o->context_length > 0 ? (size_t)o->context_length : (seqs.n ? seqs.v[0].n : 0);
    if (o->context_length <= 0) {
        for (size_t i = 0; i < seqs.n && !rc; i++)
            if (seqs.v[i].n != L)
                rc = fd_fail(e, "ragged_panel", "", "%s: a sequence of %zu tokens where the first has %zu; a ragged panel is "
                             "refused (pass --context-length to split into equal windows)", inputs[seqs.v[i].input],
                             seqs.v[i].n, L);
        if (!rc && L < 2) rc = fd_fail(e, "bad_input", "", "%s: windows of %zu tokens; a window needs at least two", inputs[0], L);
        if (rc) goto out;
    }
    size_t step = L - np; /* document tokens per window */
    size_t nwin = 0;
    for (size_t i = 0; i < seqs.n; i++) {
        nwin += seqs.v[i].n / step;
        if (seqs.v[i].n % step) { res->dropped_tails++; res->dropped_tokens += seqs.v[i].n % step; }
    }
    if (o->max_windows > 0 && nwin > (size_t)o->max_windows) nwin = (size_t)o->max_windows;
    if (nwin == 0) {
        rc = fd_fail(e, "bad_input", "", "no sequence holds a full window of %zu tokens", L);
        goto out;
    }
    int width = 4;
    for (size_t m = nwin - 1; m >= 10000; m /= 10) width++; /* keep byte order == build order */

    fd_buf_printf(&tmp, "%s.partial-%ld", o->out, (long)getpid());
    fd_rmtree(tmp.p);
    char *arrays = fd_path_join(tmp.p, "arrays");
    rc = fd_mkdirs(arrays, e);
    free(arrays);
    if (rc) goto out;

    /* the shared all-ones int64 causal mask */
    char mask_rel[64], mask_sha[65];
    snprintf(mask_rel, sizeof mask_rel, "arrays/causal-mask-%zu.npy", L);
    uint64_t shape[1] = {L};
    fd_npy_header(&mb, "<i8", shape, 1);
    for (size_t i = 0; i < L; i++) { int64_t one = 1; fd_buf_put(&mb, &one, 8); }
    if ((rc = write_file(tmp.p, mask_rel, mb.p, mb.n, mask_sha, e))) goto out;

    doc = jv_obj();
    jv *wins = jv_arr();
    jv_set(doc, "windows", wins);
    char **per = fd_xmalloc(nwin * sizeof *per);
    size_t w = 0;
    size_t *k_per_input = fd_xcalloc(n_inputs, sizeof *k_per_input);
    int64_t *wbuf = fd_xmalloc(L * sizeof *wbuf);
    if (np) memcpy(wbuf, prefix, np * sizeof *wbuf);
    for (size_t i = 0; i < seqs.n && !rc && w < nwin; i++) {
        for (size_t off = 0; off + step <= seqs.v[i].n && !rc && w < nwin; off += step, w++) {
            memcpy(wbuf + np, seqs.v[i].ids + off, step * sizeof *wbuf);
            const int64_t *ids = wbuf;
            char wid[128], rel[256], tok_sha[65], json_sha[65];
            if (snprintf(wid, sizeof wid, "%s-%0*zu", role, width, w) >= (int)sizeof wid) { /* role <= 64 chars */
                rc = fd_fail(e, "bad_usage", "", "window id too long");
                break;
            }
            snprintf(rel, sizeof rel, "arrays/%s.tokens.npy", wid);
            tb.n = 0;
            fd_npy_header(&tb, "<i8", shape, 1);
            fd_buf_put(&tb, ids, L * sizeof *ids); /* little-endian hosts only (x86-64, aarch64) */
            if ((rc = write_file(tmp.p, rel, tb.p, tb.n, tok_sha, e))) break;
            fd_token_ids_sha256(ids, L, 0, json_sha);
            fd_buf docid = {0};
            if (seqs.v[i].docid) fd_buf_puts(&docid, seqs.v[i].docid);
            else {
                char *ib = basename_of(inputs[seqs.v[i].input]);
                fd_buf_printf(&docid, "%s#%zu", ib, k_per_input[seqs.v[i].input]++);
                free(ib);
            }
            jv *win = jv_obj();
            jv_set(win, "window_id", jv_str(wid));
            jv_set(win, "role", jv_str(role));
            jv_set(win, "domain", jv_str(seqs.v[i].domain ? seqs.v[i].domain : domain));
            jv_set(win, "document_id", jv_strn(docid.p, docid.n));
            jv_set(win, "num_tokens", jv_int((int64_t)L));
            jv_set(win, "prediction_positions", jv_int((int64_t)L - 1));
            jv_set(win, "token_ids_sha256", jv_str(tok_sha));
            jv_set(win, "attention_mask_sha256", jv_str(mask_sha));
            jv_set(win, "token_ids_json_sha256", jv_str(json_sha));
            jv_push(wins, win);
            fd_buf_free(&docid);
            per[w] = (char *)jv_get_str(win, "token_ids_json_sha256"); /* owned by doc */
        }
    }
    free(k_per_input);
    free(wbuf);
    if (!rc) {
        char suite[65], legacy[65];
        fd_suite_token_hash(per, nwin, 0, suite);
        fd_suite_token_hash(per, nwin, 1, legacy);
        memcpy(res->suite_token_hash_sha256, suite, 65);
        base = basename_of(o->out);
        fd_buf pid = {0};
        if (o->panel_id) fd_buf_puts(&pid, o->panel_id);
        else fd_buf_printf(&pid, "panel--%s", base);
        fd_buf_cstr(&pid);
        jv_set(doc, "schema", jv_str(FD_PANEL_SCHEMA));
        jv_set(doc, "panel_id", jv_str(pid.p));
        jv_set(doc, "name", jv_str(o->name ? o->name : pid.p));
        fd_buf_free(&pid);
        jv_set(doc, "contexts", jv_int((int64_t)nwin));
        jv_set(doc, "context_length", jv_int((int64_t)L));
        jv_set(doc, "positions_per_context", jv_int((int64_t)L - 1));
        jv_set(doc, "suite_token_hash_sha256", jv_str(suite));
        jv_set(doc, "panel_token_sha256_legacy", jv_str(legacy));
        jv *tok = jv_obj();
        char tid[600];
        if (o->tokenizer) {
            if (o->tokenizer_id) snprintf(tid, sizeof tid, "%s", o->tokenizer_id);
            else snprintf(tid, sizeof tid, "local/tokenizer-%.16s", fd_tok_sha256(o->tokenizer));
            jv_set(tok, "id", jv_str(tid));
            jv_set(tok, "repository", jv_str(tid));
            jv_set(tok, "revision", jv_null());
            jv_set(tok, "vocab_size", jv_int(vocab));
            jv_set(tok, "add_special_tokens", jv_bool(np > 0));
            jv_set(tok, "chat_template_applied", jv_bool(0));
            jv_set(tok, "tokenizer_json_sha256", jv_str(fd_tok_sha256(o->tokenizer)));
        } else {
            jv_set(tok, "id", jv_null());
            jv_set(tok, "vocab_size", jv_int(vocab));
        }
        jv_set(doc, "tokenizer", tok);
        jv *prov = jv_obj(), *ins = jv_arr();
        jv_set(prov, "tool", jv_str("fidelity panel build"));
        for (size_t i = 0; i < n_inputs; i++) {
            jv *in = jv_obj();
            char *ib = basename_of(in_path[i] ? strchr(inputs[i], '=') + 1 : inputs[i]);
            jv_set(in, "name", jv_str(ib));
            free(ib);
            jv_set(in, "sha256", jv_str(in_sha[i]));
            if (o->tokenizer) jv_set(in, "domain", jv_str(in_domain[i]));
            jv_push(ins, in);
        }
        jv_set(prov, "inputs", ins);
        jv_set(doc, "provenance", prov);
        rc = jv_dump(doc, &JV_PRETTY, &pj, e);
        if (!rc) {
            fd_buf_putc(&pj, '\n');
            rc = write_file(tmp.p, "panel.json", pj.p, pj.n, NULL, e);
        }
        if (!rc && o->tokenizer) rc = write_receipt(tmp.p, doc, pj.p, pj.n, L, np, prefix, e);
    }
    free(per);
    if (rc) goto out;

    /* read it back the way a capture will, before it appears under the real name */
    fd_panel chk;
    if (fd_panel_load(tmp.p, NULL, 0, vocab, &chk, e)) {
        fd_err_prefix(e, "self-check of the written panel");
        rc = -1;
        goto out;
    }
    fd_panel_free(&chk);

    /* into place: an existing destination is moved aside first, then removed */
    if (lstat(o->out, &st) == 0) {
        fd_buf_printf(&old, "%s.old-%ld", o->out, (long)getpid());
        fd_rmtree(old.p);
        if (rename(o->out, old.p)) {
            rc = fd_fail(e, "unwritable", "", "%s: cannot move the existing destination aside: %s", o->out, strerror(errno));
            goto out;
        }
    }
    if (rename(tmp.p, o->out)) {
        rc = fd_fail(e, "unwritable", "", "%s: %s", o->out, strerror(errno));
        if (old.p) (void)rename(old.p, o->out);
        goto out;
    }
    if (old.p) fd_rmtree(old.p);
    res->windows = nwin;
    res->context_length = L;
out:
    if (rc && tmp.p) fd_rmtree(tmp.p);
    for (size_t i = 0; i < seqs.n; i++) { free(seqs.v[i].ids); free(seqs.v[i].domain); free(seqs.v[i].docid); }
    for (size_t i = 0; i < n_inputs; i++) free(in_path[i]);
    free(in_path);
    free(in_domain);
    free(prefix);
    free(seqs.v);
    free(in_sha);
    free(base);
    jv_free(doc);
    fd_buf_free(&tmp);
    fd_buf_free(&old);
    fd_buf_free(&pj);
    fd_buf_free(&mb);
    fd_buf_free(&tb);
    return rc;
}
