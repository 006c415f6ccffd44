#include "engine/weights.h"
#include "engine/model.h"
#include "engine/weights_quant.h"
#include "format/gguf.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int cmp_tensor(const void *a, const void *b)
{
    return strcmp(((const fd_tensor *)a)->name, ((const fd_tensor *)b)->name);
}

static int shard_name_ok(const char *s)
{
    return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int map_shard(fd_wshard *s, int lazy, fd_err *e)
{
    if (fd_st_open(s->path, &s->st, e)) return -1;
    if (lazy) return 0;
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fd_fail(e, "unreadable", "", "%s: %s", s->path, strerror(errno));
    s->maplen = (size_t)s->st.file_size;
    s->map = mmap(NULL, s->maplen, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (s->map == MAP_FAILED) {
        int err = errno;
        s->map = NULL;
        if (err == ENOMEM)
            return fd_fail(e, "insufficient_memory", "",
                           "%s: mapping all %zu bytes: %s (the layer-outer schedule maps one layer at a time)", s->path,
                           s->maplen, strerror(err));
        return fd_fail(e, "unreadable", "", "%s: mmap: %s", s->path, strerror(err));
    }
    return 0;
}

static int open_files(const char *dir, fd_weights *w, jv **index, int lazy, fd_err *e)
{
    if (!fd_is_dir(dir)) return fd_fail(e, "missing_file", "", "%s: not a directory", dir);
    char *ip = fd_path_join(dir, "model.safetensors.index.json");
    fd_strv names = {0};
    int rc = 0;
    if (fd_is_file(ip)) {
        *index = jv_parse_file(ip, e);
        const jv *wm = *index ? jv_get(*index, "weight_map") : NULL;
        if (!*index) rc = -1;
        else if (!wm || wm->t != JV_OBJ)
            rc = fd_fail(e, "bad_tensor_file", "", "%s: no weight_map object", ip);
        for (size_t i = 0; !rc && i < wm->u.o.n; i++) {
            const jv *v = wm->u.o.m[i].v;
            if (v->t != JV_STR || !shard_name_ok(v->u.s.p) || memchr(v->u.s.p, 0, v->u.s.n))
                rc = fd_fail(e, "bad_tensor_file", "", "%s: weight_map entry %.200s does not name a file in the directory",
                             ip, wm->u.o.m[i].k);
            else if (fd_strv_find(&names, v->u.s.p) < 0) {
                fd_strv_push(&names, v->u.s.p);
                fd_strv_sort(&names);
            }
        }
        if (!rc && !names.n) rc = fd_fail(e, "bad_tensor_file", "", "%s: weight_map is empty", ip);
    } else {
        char *sp = fd_path_join(dir, "model.safetensors");
        if (fd_is_file(sp)) fd_strv_push(&names, "model.safetensors");
        else rc = fd_fail(e, "missing_file", "", "%s: neither model.safetensors nor model.safetensors.index.json", dir);
        free(sp);
    }
    free(ip);
    if (rc) { fd_strv_free(&names); return -1; }
    w->shards = fd_xcalloc(names.n, sizeof *w->shards);
    for (size_t i = 0; i < names.n && !rc; i++) {
        fd_wshard *s = &w->shards[i];
        s->name = fd_xstrdup(names.v[i]);
        s->path = fd_path_join(dir, s->name);
        w->nshards = i + 1;
        rc = map_shard(s, lazy, e);
    }
    fd_strv_free(&names);
    return rc;
}

/* compressed-tensors stores a Linear's packed weight as X.weight_packed (GPTQ
 * and AWQ as X.qweight): it
 * is looked up, checked and decoded as X.weight (its stored name kept in
 * sname for messages).  Both names present: bad_quantized_tensor. */
static int rename_packed(fd_weights *w, const char *SUF, fd_err *e)
{
    const size_t ls = strlen(SUF);
    for (size_t i = 0; i < w->n; i++) {
        fd_tensor *t = &w->t[i];
        size_t n = strlen(t->name);
        if (n <= ls || strcmp(t->name + n - ls, SUF)) continue;
        fd_buf nb = {0};
        fd_buf_printf(&nb, "%.*s.weight", (int)(n - ls), t->name); /* "X.weight" */
        fd_strv_push(&w->renamed, fd_buf_cstr(&nb));
        fd_buf_free(&nb);
    }
    /* fd_strv_push copies: point the tensors at the list's strings */
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++) {
        fd_tensor *t = &w->t[i];
        size_t n = strlen(t->name);
        if (n <= ls || strcmp(t->name + n - ls, SUF)) continue;
        t->name = w->renamed.v[k++];
    }
    qsort(w->t, w->n, sizeof *w->t, cmp_tensor);
    for (size_t i = 1; i < w->n; i++)
        if (!strcmp(w->t[i - 1].name, w->t[i].name))
            return fd_fail(e, "bad_quantized_tensor", "", "%s: both %.200s and %.200s are present (compressed-tensors "
                           "and GPTQ / AWQ store a packed Linear under its packed name only)", w->root, w->t[i - 1].sname, w->t[i].sname);
    return 0;
}

static int open_any(const char *dir, fd_weights *w, int lazy, fd_err *e)
{
    memset(w, 0, sizeof *w);
    w->root = fd_xstrdup(dir);
    w->lazy = lazy;
    jv *index = NULL;
    int rc = open_files(dir, w, &index, lazy, e);
    size_t total = 0;
    for (size_t i = 0; !rc && i < w->nshards; i++) total += w->shards[i].st.n;
    if (!rc) {
        w->t = fd_xcalloc(total + 1, sizeof *w->t);
        for (size_t i = 0; i < w->nshards; i++) {
            const fd_wshard *s = &w->shards[i];
            const unsigned char *base = s->map ? (const unsigned char *)s->map + 8 + s->st.header_len : NULL;
            for (size_t j = 0; j < s->st.n; j++) {
                const fd_st_tensor *st = &s->st.t[j];
                fd_tensor *t = &w->t[w->n++];
                t->name = t->sname = st->name;
                t->file = s->name;
                memcpy(t->dtype, st->dtype, sizeof t->dtype);
                t->ndim = st->ndim;
                t->numel = 1;
                for (int d = 0; d < st->ndim; d++) {
                    t->shape[d] = t->lshape[d] = st->shape[d];
                    t->numel *= st->shape[d];
                }
                t->nbytes = st->end - st->start;
                t->data = base ? base + st->start : NULL;
                t->shard = i;
                t->off = 8 + s->st.header_len + st->start;
            }
        }
        qsort(w->t, w->n, sizeof *w->t, cmp_tensor);
        for (size_t i = 1; i < w->n && !rc; i++)
            if (!strcmp(w->t[i - 1].name, w->t[i].name))
                rc = fd_fail(e, "bad_tensor_file", "", "%s: tensor %.200s appears in both %s and %s", dir, w->t[i].name,
                             w->t[i - 1].file, w->t[i].file);
    }
    if (!rc && index) {
        const jv *wm = jv_get(index, "weight_map");
        for (size_t i = 0; i < wm->u.o.n && !rc; i++) {
            const fd_tensor *t = fd_weights_get(w, wm->u.o.m[i].k);
            const char *want = wm->u.o.m[i].v->u.s.p;
            if (!t || strcmp(t->file, want))
                rc = fd_fail(e, "bad_tensor_file", "", "%s: the index maps %.200s to %s, which does not hold it", dir,
                             wm->u.o.m[i].k, want);
        }
    }
    jv_free(index);
    if (!rc) rc = fd_qconfig_load(dir, &w->q, e);
    if (!rc && w->q.mo_layers.n) rc = fd_wq_check_listed(w, dir, e);
    if (!rc && w->q.kind == FD_Q_CT_PACK) rc = rename_packed(w, ".weight_packed", e);
    if (!rc && (w->q.kind == FD_Q_GPTQ || w->q.kind == FD_Q_AWQ)) rc = rename_packed(w, ".qweight", e);
    for (size_t i = 0; !rc && i < w->n; i++) w->t[i].qname = w->t[i].name; /* before any architecture rename */
    if (rc) fd_weights_close(w);
    return rc;
}

int fd_weights_open(const char *dir, fd_weights *w, fd_err *e) { return open_any(dir, w, 0, e); }
int fd_weights_open_lazy(const char *dir, fd_weights *w, fd_err *e) { return open_any(dir, w, 1, e); }

static int has_prefix(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

uint64_t fd_weights_prefix_bytes(const fd_weights *w, const char *prefix)
{
    uint64_t b = 0;
    for (size_t i = 0; i < w->n; i++)
        if (has_prefix(w->t[i].name, prefix)) b += w->t[i].nbytes;
    return b;
}

typedef struct span { uint64_t lo, hi; } span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Writers put tensors in their own order (safetensors: by alignment, then
 * name; the F32 router biases come first), so a layer is a few runs of the
 * file, not one: each run of tensors closer than GAP is mapped on its own. */
#define GAP ((uint64_t)1 << 20)

int fd_weights_map_prefix(fd_weights *w, const char *prefix, fd_err *e)
{
    if (!w->lazy) return 0; /* everything is mapped already */
    uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    span *sp = fd_xmalloc((w->n + 1) * sizeof *sp);
    int rc = 0;
    for (size_t sh = 0; sh < w->nshards && !rc; sh++) {
        size_t k = 0;
        for (size_t i = 0; i < w->n; i++) {
            const fd_tensor *t = &w->t[i];
            if (t->shard == sh && !t->data && has_prefix(t->name, prefix)) sp[k++] = (span){t->off, t->off + t->nbytes};
        }
        qsort(sp, k, sizeof *sp, cmp_span);
        for (size_t r = 0; r < k && !rc;) {
            uint64_t lo = sp[r].lo, hi = sp[r].hi;
            size_t q = r + 1;
            while (q < k && sp[q].lo <= hi + GAP) { if (sp[q].hi > hi) hi = sp[q].hi; q++; }
            r = q;
            uint64_t a = lo / pg * pg, len = hi - a + (hi == a);
            int fd = open(w->shards[sh].path, O_RDONLY | O_CLOEXEC);
            if (fd < 0) { rc = fd_fail(e, "unreadable", "", "%s: %s", w->shards[sh].path, strerror(errno)); break; }
            void *m = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, (off_t)a);
            close(fd);
            if (m == MAP_FAILED) {
                rc = fd_fail(e, "insufficient_memory", "", "%s: mapping %llu bytes of %s: %s", w->shards[sh].path,
                             (unsigned long long)len, prefix, strerror(errno));
                break;
            }
            w->regions = fd_xrealloc(w->regions, (w->nregions + 1) * sizeof *w->regions);
            w->regions[w->nregions++] = (fd_wregion){m, (size_t)len};
            w->mapped_bytes += len;
            for (size_t i = 0; i < w->n; i++) {
                fd_tensor *t = &w->t[i];
                if (t->shard == sh && !t->data && has_prefix(t->name, prefix) && t->off >= a && t->off + t->nbytes <= a + len)
                    t->data = (const unsigned char *)m + (t->off - a);
            }
        }
    }
    free(sp);
    return rc;
}

void fd_weights_unmap(fd_weights *w)
{
    if (!w->lazy) return;
    for (size_t i = 0; i < w->nregions; i++) munmap(w->regions[i].map, w->regions[i].len);
    free(w->regions);
    w->regions = NULL;
    w->nregions = 0;
    w->mapped_bytes = 0;
    for (size_t i = 0; i < w->n; i++) w->t[i].data = NULL;
}

static void free_lists(fd_weights *w)
{
    fd_strv_free(&w->missing);
    fd_strv_free(&w->unexpected);
    fd_strv_free(&w->misshaped);
    fd_strv_free(&w->ignored);
    fd_strv_free(&w->badquant);
    free(w->fused);
    w->fused = NULL;
}

void fd_weights_close(fd_weights *w)
{
    fd_weights_unmap(w);
    for (size_t i = 0; i < w->nshards; i++) {
        fd_wshard *s = &w->shards[i];
        if (s->map) munmap(s->map, s->maplen);
        fd_st_close(&s->st);
        free(s->name);
        free(s->path);
    }
    free(w->shards);
    if (w->gguf) fd_gguf_set_close(w->gguf);
    free(w->gguf);
    jv_free(w->gcfg);
    fd_strv_free(&w->gnames);
    for (size_t i = 0; i < w->ngown; i++) free(w->gown[i]);
    free(w->gown);
    free(w->t);
    free(w->root);
    free_lists(w);
    fd_qconfig_free(&w->q);
    fd_strv_free(&w->renamed);
    memset(w, 0, sizeof *w);
}

/* ------------------------------------------------------------ the check */

typedef struct exp_t {
    char *name;
    int ndim, f32only;
    int64_t imax; /* > 0: an integer table (fd_tensor_spec) */
    uint64_t shape[FD_ST_MAX_DIMS];
} exp_t;

typedef struct expv {
    exp_t *v;
    size_t n, cap;
} expv;

__attribute__((format(printf, 7, 8)))
static void add(expv *x, int f32only, int ndim, uint64_t a, uint64_t b, uint64_t c, const char *fmt, ...)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 256;
        x->v = fd_xrealloc(x->v, x->cap * sizeof *x->v);
    }
    exp_t *t = &x->v[x->n++];
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    t->name = fd_xstrdup(buf);
    t->ndim = ndim;
    t->f32only = f32only;
    t->shape[0] = a;
    t->shape[1] = b;
    t->shape[2] = c;
}

static int cmp_exp(const void *a, const void *b)
{
    return strcmp(((const exp_t *)a)->name, ((const exp_t *)b)->name);
}

static void add_spec(void *ctx, const fd_tensor_spec *t)
{
    expv *x = ctx;
    add(x, t->f32only, t->ndim > 3 ? 3 : t->ndim, 0, 0, 0, "%s", t->name);
    x->v[x->n - 1].imax = !strcmp(t->dtype, "I64") ? -1 : 0; /* bound: the config's n_routed_experts */
    x->v[x->n - 1].ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) x->v[x->n - 1].shape[d] = t->shape[d];
}

/* the architecture's one tensor list (engine/model.h) */
static void build_expected(const fd_glm_config *c, fd_weights *w, expv *x)
{
    c->arch->tensors(c, w, add_spec, x);
}

static void shape_str(fd_buf *b, int ndim, const uint64_t *s)
{
    fd_buf_putc(b, '[');
    for (int i = 0; i < ndim; i++) fd_buf_printf(b, "%s%llu", i ? "," : "", (unsigned long long)s[i]);
    fd_buf_putc(b, ']');
}

/* Layer index of "<prefix>layers.N." names (the architecture's prefix), else -1. */
static long long layer_of(const fd_arch *a, const char *name)
{
    char p[96];
    snprintf(p, sizeof p, "%slayers.", a->prefix);
    if (strncmp(name, p, strlen(p))) return -1;
    const char *s = name + strlen(p);
    long long v = 0;
    int nd = 0;
    while (*s >= '0' && *s <= '9' && nd < 12) { v = v * 10 + (*s++ - '0'); nd++; }
    return nd && *s == '.' ? v : -1;
}

static void list_first(fd_buf *b, const char *what, const fd_strv *s)
{
    if (!s->n) return;
    fd_buf_printf(b, "%s%zu %s (", b->n ? "; " : "", s->n, what);
    for (size_t i = 0; i < s->n && i < 5; i++) fd_buf_printf(b, "%s%s", i ? ", " : "", s->v[i]);
    fd_buf_puts(b, s->n > 5 ? ", ...)" : ")");
}

/* the architecture's other spellings of the trunk (engine/model.h renames):
 * in each stored name the first occurrence of every `from` piece (pairs in
 * order) is replaced by its `to`; one name in two spellings is refused */
static int rename_arch(fd_weights *w, const fd_arch *a, fd_err *e)
{
    if (!a->renames) return 0;
    int any = 0;
    for (size_t i = 0; i < w->n; i++) {
        fd_tensor *t = &w->t[i];
        fd_buf nb = {0};
        fd_buf_puts(&nb, t->name);
        int hit = 0;
        for (const char *const *r = a->renames; r[0]; r += 2) {
            /* a piece starting with '^' matches only at the start of the name */
            int anchored = r[0][0] == '^';
            const char *from = r[0] + anchored, *cur = fd_buf_cstr(&nb);
            const char *p = anchored ? (has_prefix(cur, from) ? cur : NULL) : strstr(cur, from);
            if (!p) continue;
            fd_buf o = {0};
            fd_buf_printf(&o, "%.*s%s%s", (int)(p - cur), cur, r[1], p + strlen(from));
            fd_buf_free(&nb);
            nb = o;
            hit = 1;
        }
        if (hit) {
            fd_strv_push(&w->renamed, fd_buf_cstr(&nb));
            t->name = w->renamed.v[w->renamed.n - 1];
            any = 1;
        }
        fd_buf_free(&nb);
    }
    if (!any) return 0;
    qsort(w->t, w->n, sizeof *w->t, cmp_tensor);
    for (size_t i = 1; i < w->n; i++)
        if (!strcmp(w->t[i - 1].name, w->t[i].name))
            return fd_fail(e, "checkpoint_mismatch", "", "%s: both %.200s and %.200s are present (two spellings of %.200s)",
                           w->root, w->t[i - 1].sname, w->t[i].sname, w->t[i].name);
    return 0;
}

/* An integer table (spec imax > 0): I64 or I32 of the expected shape (else
 * 1: listed misshaped), every entry in [0, imax) (else refused naming the
 * tensor, the entry and the bound); read whole, bounded by its shape. */
static int int_table(fd_weights *w, const fd_tensor *g, const exp_t *t, fd_err *e)
{
    int i64 = !strcmp(g->dtype, "I64"), i32 = !strcmp(g->dtype, "I32");
    int shape_ok = g->ndim == t->ndim;
    for (int d = 0; shape_ok && d < t->ndim; d++) shape_ok = g->shape[d] == t->shape[d];
    if (!shape_ok || !(i64 || i32)) {
        fd_buf b = {0};
        fd_buf_printf(&b, "%s: %s ", t->name, g->dtype);
        shape_str(&b, g->ndim, g->shape);
        fd_buf_puts(&b, " expected I64|I32 ");
        shape_str(&b, t->ndim, t->shape);
        fd_strv_push(&w->misshaped, fd_buf_cstr(&b));
        fd_buf_free(&b);
        return 1;
    }
    size_t es = i64 ? 8 : 4;
    if (g->nbytes != g->numel * es || g->nbytes > ((uint64_t)1 << 31))
        return fd_fail(e, "checkpoint_mismatch", "", "%s: %s: %s table of %llu bytes is not read (bound 2 GiB)", w->root,
                       t->name, g->dtype, (unsigned long long)g->nbytes);
    unsigned char *buf = fd_xmalloc((size_t)g->nbytes + 8);
    int rc = 0;
    if (g->data) memcpy(buf, g->data, (size_t)g->nbytes);
    else rc = fd_weights_read(w, g, buf, (size_t)g->nbytes, e);
    for (uint64_t i = 0; !rc && i < g->numel; i++) {
        int64_t v;
        if (i64) memcpy(&v, buf + 8 * i, 8);
        else { int32_t v32; memcpy(&v32, buf + 4 * i, 4); v = v32; }
        if (v < 0 || v >= t->imax)
            rc = fd_fail(e, "checkpoint_mismatch", "", "%s: %s entry %llu is %lld: every entry must be in [0, %lld)", w->root,
                         t->name, (unsigned long long)i, (long long)v, (long long)t->imax);
    }
    free(buf);
    return rc ? -1 : 0;
}

static int skipped(const fd_arch *a, const char *name)
{
    for (const char *const *s = a->skipped; s && *s; s++)
        if (has_prefix(name, *s)) return 1;
    return 0;
}

int fd_weights_check(fd_weights *w, const fd_glm_config *c, fd_err *e)
{
    free_lists(w);
    w->params = w->bias_elems = w->bytes = w->qbytes = 0;
    w->nquant = 0;
    w->fused = fd_xcalloc((size_t)c->num_hidden_layers + 1, 1);
    if (rename_arch(w, c->arch, e)) return -1;
    expv x = {0};
    build_expected(c, w, &x);
    for (size_t i = 0; i < x.n; i++)
        if (x.v[i].imax < 0) x.v[i].imax = c->n_routed_experts > 0 ? c->n_routed_experts : 1;
    qsort(x.v, x.n, sizeof *x.v, cmp_exp);
    w->nexpected = x.n;
    for (size_t i = 0; i < x.n; i++) {
        const exp_t *t = &x.v[i];
        fd_tensor *g = (fd_tensor *)fd_weights_get(w, t->name);
        if (!g) { fd_strv_push(&w->missing, t->name); continue; }
        if (t->imax) {
            int r = int_table(w, g, t, e);
            if (r < 0) { for (size_t k = 0; k < x.n; k++) free(x.v[k].name); free(x.v); return -1; }
            if (r > 0) continue;
            w->params += g->numel;
            w->bytes += g->nbytes;
            continue;
        }
        if (t->ndim == 2) {
            fd_buf why = {0};
            int q = fd_wq_bind(w, g, t->shape, &why);
            if (q < 0) fd_strv_push(&w->badquant, fd_buf_cstr(&why));
            fd_buf_free(&why);
            if (q) {
                if (q > 0) { w->params += g->lshape[0] * g->lshape[1]; w->bytes += g->nbytes; }
                continue;
            }
        }
        int shape_ok = g->ndim == t->ndim;
        for (int d = 0; shape_ok && d < t->ndim; d++) shape_ok = g->shape[d] == t->shape[d];
        int dtype_ok = !strcmp(g->dtype, "F32") || (!t->f32only && !strcmp(g->dtype, "BF16"));
        if (!shape_ok || !dtype_ok) {
            fd_buf b = {0};
            fd_buf_printf(&b, "%s: %s ", t->name, g->dtype);
            shape_str(&b, g->ndim, g->shape);
            fd_buf_printf(&b, " expected %s ", t->f32only ? "F32" : "BF16|F32");
            shape_str(&b, t->ndim, t->shape);
            fd_strv_push(&w->misshaped, fd_buf_cstr(&b));
            fd_buf_free(&b);
            continue;
        }
        if (t->f32only) w->bias_elems += g->numel;
        else w->params += g->numel;
        w->bytes += g->nbytes;
    }
    for (size_t i = 0; i < w->n; i++) {
        const char *name = w->t[i].name;
        exp_t key = {.name = (char *)name};
        if (bsearch(&key, x.v, x.n, sizeof *x.v, cmp_exp) || fd_wq_is_companion(w, name)) continue;
        if (c->tie_word_embeddings && !strcmp(name, "lm_head.weight")) continue;
        long long l = layer_of(c->arch, name);
        if (l >= c->num_hidden_layers || skipped(c->arch, name)) fd_strv_push(&w->ignored, name);
        else fd_strv_push(&w->unexpected, name);
    }
    for (size_t i = 0; i < x.n; i++) free(x.v[i].name);
    free(x.v);
    if (!w->missing.n && !w->unexpected.n && !w->misshaped.n && !w->badquant.n) return 0;
    fd_buf b = {0};
    if (w->badquant.n) {
        fd_fail(e, "bad_quantized_tensor", "", "%s: %s%s", w->root, w->badquant.v[0],
                w->badquant.n > 1 ? " (and more)" : "");
        return -1;
    }
    list_first(&b, "missing", &w->missing);
    list_first(&b, "unexpected", &w->unexpected);
    list_first(&b, "mis-shaped", &w->misshaped);
    fd_fail(e, "checkpoint_mismatch", "", "%s: %s", w->root, fd_buf_cstr(&b));
    fd_buf_free(&b);
    return -1;
}
