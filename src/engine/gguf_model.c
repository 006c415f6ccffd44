/* A GGUF model as an engine checkpoint (engine/gguf_model.h). */
#include "engine/gguf_model.h"
#include "engine/model.h"
#include "format/ggml_quants.h"
#include "format/sha.h"
#include "util/bf16.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ metadata */

static const fd_gguf_kv *meta(const fd_gguf_set *s, const char *arch, const char *key, char *full, size_t cap)
{
    snprintf(full, cap, "%s.%s", arch, key);
    return fd_gguf_get(&s->f[0], full);
}

static int cfg_int(const fd_gguf_set *s, const char *arch, const char *key, int64_t *out, int opt, fd_err *e)
{
    char k[160];
    const fd_gguf_kv *kv = meta(s, arch, key, k, sizeof k);
    if (!kv) return opt ? 1 : fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is missing", s->f[0].path, k);
    if (fd_gguf_get_int(&s->f[0], k, out) || *out < 0)
        return fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is %s, not a non-negative integer", s->f[0].path, k,
                       fd_gguf_vtype_name(kv->type));
    return 0;
}

void fd_gguf_kv_text_model(fd_gguf_kvw *w, const fd_glm_config *c, int64_t kv_heads)
{
    fd_gguf_kv_u32(w, "block_count", c->num_hidden_layers);
    fd_gguf_kv_u32(w, "context_length", c->max_position_embeddings);
    fd_gguf_kv_u32(w, "embedding_length", c->hidden_size);
    fd_gguf_kv_u32(w, "feed_forward_length", c->intermediate_size);
    fd_gguf_kv_u32(w, "attention.head_count", c->num_attention_heads);
    fd_gguf_kv_u32(w, "attention.head_count_kv", kv_heads);
    fd_gguf_kv_f32(w, "rope.freq_base", c->rope_theta);
    fd_gguf_kv_f32(w, "attention.layer_norm_rms_epsilon", c->rms_norm_eps);
}

int fd_gguf_cfg_rope_none(const fd_gguf_set *s, const char *arch, const char *why, fd_err *e)
{
    char k[160];
    snprintf(k, sizeof k, "%s.rope.scaling.type", arch);
    if (!fd_gguf_get(&s->f[0], k)) return 0;
    char *st = fd_gguf_get_str(&s->f[0], k);
    int rc = st && !strcmp(st, "none") ? 0
             : fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is %.40s: %s", s->f[0].path, k,
                       st ? st : "not a string", why);
    free(st);
    return rc;
}

jv *fd_gguf_cfg_fail(jv *d)
{
    jv_free(d);
    return NULL;
}

jv *fd_gguf_cfg_contradicts(jv *d, const fd_gguf_set *s, const char *arch, const char *key, int64_t got, int64_t want,
                            const char *why, fd_err *e)
{
    fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s.%s is %lld but %s gives %lld", s->f[0].path, arch, key,
            (long long)got, why, (long long)want);
    return fd_gguf_cfg_fail(d);
}

int fd_gguf_cfg_int(const fd_gguf_set *s, const char *arch, const char *key, int64_t *out, fd_err *e)
{
    return cfg_int(s, arch, key, out, 0, e);
}
int fd_gguf_cfg_int_opt(const fd_gguf_set *s, const char *arch, const char *key, int64_t *out, fd_err *e)
{
    return cfg_int(s, arch, key, out, 1, e);
}

static int cfg_num(const fd_gguf_set *s, const char *arch, const char *key, double *out, int opt, fd_err *e)
{
    char k[160];
    const fd_gguf_kv *kv = meta(s, arch, key, k, sizeof k);
    if (!kv) return opt ? 1 : fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is missing", s->f[0].path, k);
    if (kv->type == FD_GGUF_F32 || kv->type == FD_GGUF_F64) *out = kv->v.f;
    else return fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is %s, not a float", s->f[0].path, k,
                        fd_gguf_vtype_name(kv->type));
    return 0;
}

int fd_gguf_cfg_num(const fd_gguf_set *s, const char *arch, const char *key, double *out, fd_err *e)
{
    return cfg_num(s, arch, key, out, 0, e);
}
int fd_gguf_cfg_num_opt(const fd_gguf_set *s, const char *arch, const char *key, double *out, fd_err *e)
{
    return cfg_num(s, arch, key, out, 1, e);
}

double fd_gguf_f32_decimal(double v)
{
    float f = (float)v;
    char b[40];
    for (int p = 1; p <= 9; p++) {
        snprintf(b, sizeof b, "%.*g", p, (double)f);
        double d = strtod(b, NULL);
        if ((float)d == f) return d;
    }
    return (double)f;
}

int64_t fd_gguf_rows(const fd_gguf_set *s, const char *name)
{
    const fd_gguf_tensor *g = fd_gguf_set_find(s, name);
    return g && g->ndim == 2 ? (int64_t)g->ne[1] : 0;
}

int fd_gguf_is_model(const char *path)
{
    if (!fd_is_file(path)) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char m[4];
    ssize_t r = read(fd, m, 4);
    close(fd);
    return r == 4 && !memcmp(m, "GGUF", 4);
}

/* ------------------------------------------------------------ the views */

typedef struct build {
    const fd_gguf_set *s;
    const fd_gguf_stored *a;
    const fd_gguf_name *map;
    const fd_glm_config *c;
    fd_weights *w;
    unsigned char *used;     /* [s->nt] */
    fd_strv missing, misshaped;
} build;

/* Replaces %L by L and returns 1 when hf matches pattern p (with %L / %E
 * bound from hf's digits). */
int fd_gguf_name_match(const char *p, const char *hf, long long *L, long long *E)
{
    while (*p) {
        if (p[0] == '%' && (p[1] == 'L' || p[1] == 'E')) {
            if (!isdigit((unsigned char)*hf)) return 0;
            long long v = 0;
            int nd = 0;
            while (isdigit((unsigned char)*hf) && nd < 12) { v = v * 10 + (*hf++ - '0'); nd++; }
            if (p[1] == 'L') *L = v;
            else *E = v;
            p += 2;
            continue;
        }
        if (*p++ != *hf++) return 0;
    }
    return !*hf;
}

void fd_gguf_name_expand(const char *p, long long L, char *out, size_t cap)
{
    size_t n = 0;
    for (; *p && n + 24 < cap; p++) {
        if (p[0] == '%' && p[1] == 'L') { n += (size_t)snprintf(out + n, cap - n, "%lld", L); p++; }
        else out[n++] = *p;
    }
    out[n] = 0;
}

static const fd_gguf_tensor *find(build *b, const char *name)
{
    for (size_t i = 0; i < b->s->nt; i++)
        if (!strcmp(b->s->t[i]->name, name)) { b->used[i] = 1; return b->s->t[i]; }
    return NULL;
}

/* GGUF dims in HF order */
static void hf_shape(const fd_gguf_tensor *g, uint64_t *s)
{
    for (int d = 0; d < g->ndim; d++) s[d] = g->ne[g->ndim - 1 - d];
}

static void shape_txt(fd_buf *b, const fd_gguf_tensor *g)
{
    uint64_t s[4];
    hf_shape(g, s);
    fd_buf_printf(b, "%s %s [", g->name, fd_ggml_type_of(g->type)->name);
    for (int d = 0; d < g->ndim; d++) fd_buf_printf(b, "%s%llu", d ? "," : "", (unsigned long long)s[d]);
    fd_buf_putc(b, ']');
}

static void misshaped(build *b, const fd_tensor_spec *t, const fd_gguf_tensor *g, const char *why)
{
    fd_buf m = {0};
    fd_buf_printf(&m, "%s <- ", t->name);
    shape_txt(&m, g);
    fd_buf_printf(&m, ": %s", why);
    fd_strv_push(&b->misshaped, fd_buf_cstr(&m));
    fd_buf_free(&m);
}

/* an integer table spec (dtype "I64"): a GGUF I32 / I64 tensor of its shape, read in place (every entry
 * is then bounded by engine/weights.c's int_table, as a safetensors table) */
static void int_view(build *b, const fd_tensor_spec *t, const fd_gguf_tensor *g)
{
    uint64_t s[4];
    hf_shape(g, s);
    int i64 = g->type == FD_GGML_I64, ok = (i64 || g->type == FD_GGML_I32) && g->ndim == t->ndim;
    for (int d = 0; ok && d < t->ndim; d++) ok = s[d] == t->shape[d];
    if (!ok || g->nbytes != g->nelem * (i64 ? 8u : 4u)) { misshaped(b, t, g, "is not an I32 / I64 table of this shape"); return; }
    fd_weights *w = b->w;
    fd_tensor *v = &w->t[w->n];
    memset(v, 0, sizeof *v);
    fd_strv_push(&w->gnames, t->name);
    v->name = w->gnames.v[w->gnames.n - 1];
    v->file = b->s->f[g->file].path, v->shard = (size_t)g->file, v->ndim = t->ndim, v->numel = g->nelem;
    for (int d = 0; d < t->ndim; d++) v->shape[d] = v->lshape[d] = t->shape[d];
    snprintf(v->dtype, sizeof v->dtype, "%s", i64 ? "I64" : "I32");
    v->data = g->data, v->nbytes = g->nbytes, v->gtype = g->type, v->qfmt = FD_Q_NONE;
    w->n++;
}

/* the architecture's renames (engine/model.h; weights.c rename_arch) applied: a
 * table in the logical spelling, a tensor list in save_pretrained's (kimi_linear) */
static void logical(const fd_arch *a, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s", name);
    for (const char *const *r = a->renames; r && r[0]; r += 2) {
        int anchored = r[0][0] == '^';
        const char *from = r[0] + anchored, *p = anchored ? (strncmp(out, from, strlen(from)) ? NULL : out) : strstr(out, from);
        char o[256];
        if (p && snprintf(o, sizeof o, "%.*s%s%s", (int)(p - out), out, r[1], p + strlen(from)) < (int)sizeof o)
            snprintf(out, cap, "%s", o);
    }
}

static void add_view(void *ctx, const fd_tensor_spec *t)
{
    build *b = ctx;
    const fd_gguf_name *m = NULL;
    long long L = -1, E = -1;
    char nm[256];
    logical(b->c->arch, t->name, nm, sizeof nm);
    for (int pass = 0; pass < 2 && (!m || !m->hf); pass++) /* the name as listed, then its logical spelling */
        for (m = b->map; m->hf; m++) {
            L = E = -1;
            if (fd_gguf_name_match(m->hf, pass ? nm : t->name, &L, &E)) break;
        }
    if (!m->hf) { /* the table does not know this tensor */
        fd_buf x = {0};
        fd_buf_printf(&x, "%s (no GGUF name in the architecture's table)", t->name);
        fd_strv_push(&b->missing, fd_buf_cstr(&x));
        fd_buf_free(&x);
        return;
    }
    char gn[128], gn2[128];
    fd_gguf_name_expand(m->gguf, L, gn, sizeof gn);
    const fd_gguf_tensor *g = find(b, gn), *g2 = NULL;
    if (m->kind == FD_GG_KV_B || m->kind == FD_GG_CAT2) {
        fd_gguf_name_expand(m->gguf2, L, gn2, sizeof gn2);
        g2 = find(b, gn2);
    }
    if (!g || ((m->kind == FD_GG_KV_B || m->kind == FD_GG_CAT2) && !g2)) {
        fd_buf x = {0};
        fd_buf_printf(&x, "%s (GGUF %s)", t->name, !g ? gn : gn2);
        fd_strv_push(&b->missing, fd_buf_cstr(&x));
        fd_buf_free(&x);
        return;
    }
    if (!strcmp(t->dtype, "I64")) { int_view(b, t, g); return; } /* an integer table (deepseek_v4's tid2eid) */
    const fd_ggml_type *gt = fd_ggml_type_of(g->type);
    if (!gt->decodes) { misshaped(b, t, g, "a ggml type with no reference decoder (gguf_unsupported_type)"); return; }
    if (g2 && !fd_ggml_type_of(g2->type)->decodes) {
        misshaped(b, t, g2, "a ggml type with no reference decoder (gguf_unsupported_type)");
        return;
    }
    fd_weights *w = b->w;
    fd_tensor *v = &w->t[w->n];
    memset(v, 0, sizeof *v);
    fd_strv_push(&w->gnames, t->name);
    v->name = w->gnames.v[w->gnames.n - 1];
    v->file = b->s->f[g->file].path;
    v->shard = (size_t)g->file;
    v->ndim = t->ndim;
    v->numel = 1;
    for (int d = 0; d < t->ndim; d++) { v->shape[d] = v->lshape[d] = t->shape[d]; v->numel *= t->shape[d]; }
    uint64_t s[4];
    hf_shape(g, s);
    uint64_t rows = t->ndim == 2 ? t->shape[0] : 1, K = t->shape[t->ndim - 1];
    int ok;
    if (FD_GG_IS_V(m->kind)) {
        const char *why = fd_gguf_vview(b->a, b->c, t, g, m->kind, v);
        if (why) { misshaped(b, t, g, why); return; }
        if (v->data) { /* a 1-D / conv view rebuilt as F32 */
            w->gown = fd_xrealloc(w->gown, (w->ngown + 1) * sizeof *w->gown);
            w->gown[w->ngown++] = (float *)v->data;
            w->n++;
            return;
        }
        rows = t->shape[0];
    } else if (m->kind == FD_GG_KV_B) {
        const fd_glm_config *c = b->c;
        uint64_t nh = (uint64_t)c->num_attention_heads, dn = (uint64_t)c->qk_nope_head_dim, dv = (uint64_t)c->v_head_dim,
                 r = (uint64_t)c->kv_lora_rank;
        uint64_t s2[4];
        hf_shape(g2, s2);
        ok = t->ndim == 2 && g->ndim == 3 && s[0] == nh && s[1] == r && s[2] == dn && g2->ndim == 3 && s2[0] == nh &&
             s2[1] == dv && s2[2] == r && t->shape[0] == nh * (dn + dv) && t->shape[1] == r;
        if (!ok) { misshaped(b, t, s[2] == dn ? g2 : g, "does not split this kv_b_proj (attn_k_b [heads, kv_lora_rank, qk_nope], attn_v_b [heads, v_head_dim, kv_lora_rank])"); return; }
        v->gkind = FD_GG_KV_B;
        v->gp[0] = nh; v->gp[1] = dn; v->gp[2] = dv;
        v->gdata2 = g2->data;
        v->gtype2 = g2->type;
    } else if (m->kind == FD_GG_RESHAPE) {
        uint64_t gq[FD_GGUF_MAX_DIMS], hq[5];
        int ng = 0, nh = 0;
        for (int d = 0; d < g->ndim; d++)
            if (s[d] != 1) gq[ng++] = s[d];
        for (int d = 0; d < t->ndim; d++)
            if (t->shape[d] != 1) hq[nh++] = t->shape[d];
        ok = ng == nh && g->nelem == v->numel && (g->type == FD_GGML_BF16 || g->type == FD_GGML_F32);
        for (int d = 0; ok && d < ng; d++) ok = gq[d] == hq[d];
        if (!ok) { misshaped(b, t, g, "is not this tensor reshaped (BF16 / F32, the same dims but size-1 ones)"); return; }
        v->gkind = FD_GG_ROWS;
        rows = g->nelem / g->ne[0];
    } else if (m->kind == FD_GG_CAT2) {
        uint64_t s2[4];
        hf_shape(g2, s2);
        ok = t->ndim == 2 && g->ndim == 2 && g2->ndim == 2 && s[1] == K && s2[1] == K && s[0] + s2[0] == t->shape[0];
        if (!ok) { misshaped(b, t, g->ndim == 2 && s[1] == K ? g2 : g, "the two parts are not this projection's rows (same columns, rows adding up)"); return; }
        v->gkind = FD_GG_CAT2;
        v->gp[0] = s[0];
        v->gdata2 = g2->data;
        v->gtype2 = g2->type;
    } else {
        /* the view's rows are whole GGUF rows: same row length, rows within the tensor */
        uint64_t grows = g->nelem / g->ne[0], first = E >= 0 ? (uint64_t)E * rows : 0;
        ok = g->ne[0] == K && (E < 0 || (g->ndim == 3 && s[1] == rows)) && first + rows <= grows &&
             (E >= 0 || g->nelem == v->numel);
        for (int d = 0; ok && E < 0 && d < t->ndim; d++) ok = d < g->ndim && s[d] == t->shape[d];
        if (ok && E < 0) ok = g->ndim == t->ndim;
        if (!ok) { misshaped(b, t, g, E >= 0 ? "is not this expert stack" : "has another shape"); return; }
        v->gkind = m->kind;
        v->grow0 = first;
        if (m->kind == FD_GG_PERMUTE) {
            uint64_t heads = (uint64_t)(strstr(t->name, "k_proj") ? b->c->num_key_value_heads : b->c->num_attention_heads);
            if (!heads || rows % (2 * heads)) { misshaped(b, t, g, "rows are not heads x even head_dim (the q/k permute)"); return; }
            v->gp[0] = heads;
        }
    }
    v->gtype = g->type;
    v->data = g->data;
    uint64_t rb = 0;
    fd_ggml_row_bytes(gt, g->ne[0], &rb);
    v->nbytes = m->kind == FD_GG_KV_B || m->kind == FD_GG_CAT2 ? g->nbytes + g2->nbytes : rb * rows;
    int plain = (g->type == FD_GGML_BF16 || g->type == FD_GGML_F32) && (m->kind == FD_GG_ROWS || m->kind == FD_GG_RESHAPE);
    if (FD_GG_IS_V(m->kind)) plain = 0;
    /* BF16/F32 whole rows are the bytes a safetensors checkpoint holds: read in place */
    if (plain) {
        snprintf(v->dtype, sizeof v->dtype, "%s", g->type == FD_GGML_BF16 ? "BF16" : "F32");
        v->data = g->data + v->grow0 * rb;
        v->qfmt = FD_Q_NONE;
    } else if (t->ndim != 2 || t->f32only) {
        misshaped(b, t, g, "only a Linear weight may be quantized or rearranged (read as stored otherwise)");
        return;
    } else {
        snprintf(v->dtype, sizeof v->dtype, "BF16");
        v->qfmt = FD_Q_GGUF;
    }
    w->n++;
}

static int cmp_tensor(const void *a, const void *b)
{
    return strcmp(((const fd_tensor *)a)->name, ((const fd_tensor *)b)->name);
}

static void list(fd_buf *b, const char *what, const fd_strv *s)
{
    if (!s->n) return;
    fd_buf_printf(b, "%s%zu %s (", b->n ? "; " : "", s->n, what);
    for (size_t i = 0; i < s->n && i < 4; i++) fd_buf_printf(b, "%s%s", i ? ", " : "", s->v[i]);
    fd_buf_puts(b, s->n > 4 ? ", ...)" : ")");
}

/* blk.N. with N >= the trunk: llama.cpp's NextN (MTP) blocks, never loaded */
static int past_trunk(const char *name, int64_t L)
{
    if (strncmp(name, "blk.", 4)) return 0;
    char *end;
    long long v = strtoll(name + 4, &end, 10);
    return end != name + 4 && *end == '.' && v >= L;
}

/* bits per weight and the census (cmd_inspect_gguf.c's definition) */
static void census(fd_weights *w)
{
    const fd_gguf_set *s = w->gguf;
    uint64_t qe = 0, qb = 0, el[64] = {0};
    for (size_t i = 0; i < s->nt; i++) {
        const fd_ggml_type *gt = fd_ggml_type_of(s->t[i]->type);
        if (!gt->quantized) continue;
        qe += s->t[i]->nelem;
        qb += s->t[i]->nbytes;
        if (gt->id < 64) el[gt->id] += s->t[i]->nelem;
    }
    const fd_ggml_type *major = NULL;
    for (uint32_t id = 0; id < 64; id++) {
        const fd_ggml_type *gt = fd_ggml_type_of(id);
        if (!gt || !el[id]) continue;
        double bk = (double)gt->tsize / gt->blck, bm = major ? (double)major->tsize / major->blck : 0;
        if (!major || el[id] > el[major->id] || (el[id] == el[major->id] && bk > bm)) major = gt;
    }
    w->gnominal = major ? (double)major->tsize * 8.0 / major->blck : 0;
    w->geffective = qe ? (double)qb * 8.0 / (double)qe : 0;
    size_t n = 0;
    for (const char *p = major ? major->name : ""; *p && n + 1 < sizeof w->gmajor; p++)
        w->gmajor[n++] = (char)tolower((unsigned char)*p);
    w->gmajor[n] = 0;
}

/* the head: lm_head, or embed_tokens when tied; a quantized one (or F16) stays
 * a view its readers decode row by row (fd_tensor_row_bf16): the probe a block
 * of rows at a time, the dataset's head file as it is written */
static int head(fd_weights *w, const fd_glm_config *c, fd_err *e)
{
    char name[128];
    if (c->tie_word_embeddings) {
        fd_arch_prefix(c->arch, "embed_tokens", name, sizeof name - 8);
        strcat(name, "weight");
    } else snprintf(name, sizeof name, "lm_head.weight");
    fd_tensor *h = (fd_tensor *)fd_weights_get(w, name);
    if (!h || h->qfmt != FD_Q_GGUF) return 0;
    w->ghead_q = 1;
    w->ghead_type = h->gtype;
    (void)e;
    return 0;
}

static void count_spec(void *ctx, const fd_tensor_spec *t)
{
    (void)t;
    (*(size_t *)ctx)++;
}

static int open_views(const char *path, fd_glm_config *c, fd_weights *w, fd_err *e)
{
    fd_gguf_set *s = w->gguf;
    char *arch = fd_gguf_get_str(&s->f[0], "general.architecture");
    if (!arch) return fd_fail(e, "bad_gguf_config", "", "%s: no general.architecture string", path);
    const fd_arch *a = NULL;
    for (size_t i = 0; i < FD_N_ARCHS && !a; i++)
        for (const char *const *n = FD_ARCHS[i]->gguf ? FD_ARCHS[i]->gguf->names : NULL; n && *n && !a; n++)
            if (!strcmp(*n, arch)) a = FD_ARCHS[i];
    /* known to llama.cpp, not mappable onto the engine's tensors without changing the architecture */
    static const struct { const char *name, *why; } NOT[] = {
        {"qwen3next", "llama.cpp's converter (Qwen3NextModel) stores ssm_a = -exp(A_log) and the zero-centred norm "
                      "weights as 1 + w, and qwen3_next is not an engine architecture"},
        {"kimi-k3", "llama.cpp's converter folds -exp(A_log) and multiplies each *_res_norm into its *_res_proj: no "
                    "bit-exact inverse, and Kimi K3 is not an engine architecture"},
    };
    for (size_t i = 0; !a && i < sizeof NOT / sizeof *NOT; i++)
        if (!strcmp(arch, NOT[i].name)) {
            fd_fail(e, "unsupported_gguf_architecture", "", "%s: general.architecture %s is not captured from GGUF: %s", path,
                    arch, NOT[i].why);
            free(arch);
            return -1;
        }
    if (!a) {
        fd_buf names = {0};
        for (size_t i = 0; i < FD_N_ARCHS; i++)
            for (const char *const *n = FD_ARCHS[i]->gguf ? FD_ARCHS[i]->gguf->names : NULL; n && *n; n++)
                fd_buf_printf(&names, "%s%s", names.n ? ", " : "", *n);
        fd_fail(e, "unsupported_gguf_architecture", "", "%s: general.architecture %.64s has no GGUF name table (supported: "
                "%s)", path, arch, fd_buf_cstr(&names));
        fd_buf_free(&names);
        free(arch);
        return -1;
    }
    jv *doc = a->gguf->config(s, arch, e);
    free(arch);
    if (!doc) return -1;
    jv_set(doc, "model_type", jv_str(a->info.model_type));
    w->gcfg = doc;
    if (fd_glm_config_from_json(doc, c, e)) { fd_err_prefix(e, path); return -1; }
    size_t nviews = 0;
    c->arch->tensors(c, NULL, count_spec, &nviews);
    w->t = fd_xcalloc(nviews + 1, sizeof *w->t);
    w->gstored = a->gguf_stored ? a->gguf_stored->what : NULL;
    build b = {s, a->gguf_stored, a->gguf->map, c, w, fd_xcalloc(s->nt + 1, 1), {0}, {0}};
    c->arch->tensors(c, NULL, add_view, &b);
    int rc = 0;
    fd_strv unexpected = {0}, ignored = {0};
    for (size_t i = 0; i < s->nt; i++)
        for (const char *const *x = a->gguf->aux; x && *x && !b.used[i]; x++)
            if (!strcmp(s->t[i]->name, *x)) b.used[i] = 1; /* read by the config hook */
    for (size_t i = 0; i < s->nt; i++)
        if (!b.used[i]) fd_strv_push(past_trunk(s->t[i]->name, c->num_hidden_layers) ? &ignored : &unexpected, s->t[i]->name);
    if (b.missing.n || b.misshaped.n || unexpected.n) {
        fd_buf m = {0};
        list(&m, "missing", &b.missing);
        list(&m, "unexpected", &unexpected);
        list(&m, "mis-shaped", &b.misshaped);
        rc = fd_fail(e, "checkpoint_mismatch", "", "%s: %s", path, fd_buf_cstr(&m));
        fd_buf_free(&m);
    }
    fd_strv_free(&b.missing);
    fd_strv_free(&b.misshaped);
    fd_strv_free(&unexpected);
    fd_strv_free(&ignored);
    free(b.used);
    if (rc) return -1;
    qsort(w->t, w->n, sizeof *w->t, cmp_tensor);
    for (size_t i = 0; i < w->n; i++)
        if (w->t[i].qfmt == FD_Q_GGUF && fd_ggml_type_of(w->t[i].gtype)->quantized) w->q.kind = FD_Q_GGUF;
    snprintf(w->q.source, sizeof w->q.source, "gguf");
    census(w);
    return 0;
}

static int model_open(const char *path, fd_glm_config *c, fd_weights *w, int with_head, fd_err *e)
{
    memset(w, 0, sizeof *w);
    memset(c, 0, sizeof *c);
    w->root = fd_xstrdup(path);
    w->gguf = fd_xcalloc(1, sizeof *w->gguf);
    int rc = fd_gguf_set_open(path, w->gguf, e);
    if (rc) { free(w->gguf); w->gguf = NULL; }
    if (!rc) rc = open_views(path, c, w, e);
    if (!rc) rc = fd_weights_check(w, c, e);
    for (size_t i = 0; !rc && i < w->n; i++) /* the check's counters, for the GGUF views */
        if (w->t[i].qfmt == FD_Q_GGUF && fd_ggml_type_of(w->t[i].gtype)->quantized) {
            w->nquant++;
            w->qbytes += w->t[i].nbytes;
        }
    if (!rc && with_head) rc = head(w, c, e);
    if (rc) {
        fd_weights_close(w);
        fd_glm_config_free(c);
        memset(c, 0, sizeof *c);
    }
    return rc;
}

int fd_gguf_model_open(const char *path, fd_glm_config *c, fd_weights *w, fd_err *e)
{
    return model_open(path, c, w, 1, e);
}

int fd_gguf_model_probe(const char *path, fd_err *e)
{
    fd_glm_config c;
    fd_weights w;
    if (model_open(path, &c, &w, 0, e)) return -1;
    fd_weights_close(&w);
    fd_glm_config_free(&c);
    return 0;
}

/* ------------------------------------------------------------ decoding */

/* element col of GGUF row r of a tensor of type id, rows of n elements */
static float elem(uint32_t id, const unsigned char *base, uint64_t n, uint64_t r, uint64_t col)
{
    const fd_ggml_type *gt = fd_ggml_type_of(id);
    uint64_t rb = 0;
    fd_ggml_row_bytes(gt, n, &rb);
    uint64_t blk = col / gt->blck;
    float v[256];
    fd_err e;
    fd_ggml_dequant_row_f32(id, base + r * rb + blk * gt->tsize, gt->blck, v, &e);
    return v[col % gt->blck];
}

/* HF row -> GGUF row of a ROWS / PERMUTE view */
static uint64_t src_row(const fd_tensor *t, uint64_t row)
{
    if (FD_GG_IS_V(t->gkind) && t->gkind != FD_GG_V_COLS) return fd_gguf_vidx(t->gp, row);
    if (t->gkind != FD_GG_PERMUTE) return t->grow0 + row;
    uint64_t hd = t->lshape[0] / t->gp[0], h = row / hd, k = row % hd, half = hd / 2;
    return t->grow0 + h * hd + 2 * (k % half) + k / half;
}

void fd_gguf_row_bf16(const fd_tensor *t, uint64_t row, uint64_t K, uint16_t *out)
{
    fd_err e;
    if (t->gkind == FD_GG_KV_B) {
        uint64_t dn = t->gp[1], dv = t->gp[2], h = row / (dn + dv), j = row % (dn + dv);
        if (j < dn) /* kv_b[h, j, :] = attn_k_b[h, :, j] */
            for (uint64_t k = 0; k < K; k++) out[k] = fd_f32_to_bf16(elem(t->gtype, t->data, dn, h * K + k, j));
        else {
            uint64_t rb = 0;
            fd_ggml_row_bytes(fd_ggml_type_of(t->gtype2), K, &rb);
            fd_ggml_dequant_row_bf16(t->gtype2, t->gdata2 + (h * dv + (j - dn)) * rb, K, out, &e);
        }
        return;
    }
    uint64_t rb = 0;
    if (t->gkind == FD_GG_CAT2 && row >= t->gp[0]) { /* the second part, in its own type */
        fd_ggml_row_bytes(fd_ggml_type_of(t->gtype2), K, &rb);
        fd_ggml_dequant_row_bf16(t->gtype2, t->gdata2 + (row - t->gp[0]) * rb, K, out, &e);
        return;
    }
    fd_ggml_row_bytes(fd_ggml_type_of(t->gtype), K, &rb);
    if (t->gkind == FD_GG_V_COLS) { /* the row as stored, then its columns back in HF order */
        uint16_t *r = fd_xmalloc(K * 2 + 2);
        fd_ggml_dequant_row_bf16(t->gtype, (const unsigned char *)t->data + row * rb, K, r, &e);
        for (uint64_t k = 0; k < K; k++) out[k] = r[fd_gguf_vidx(t->gp, k)];
        free(r);
        return;
    }
    fd_ggml_dequant_row_bf16(t->gtype, (const unsigned char *)t->data + src_row(t, row) * rb, K, out, &e);
}

uint16_t fd_gguf_elem_bf16(const fd_tensor *t, uint64_t i)
{
    uint64_t K = t->lshape[t->ndim - 1], row = i / K, col = i % K;
    if (t->gkind == FD_GG_KV_B || t->gkind == FD_GG_CAT2) {
        uint16_t *r = fd_xmalloc(K * 2);
        fd_gguf_row_bf16(t, row, K, r);
        uint16_t v = r[col];
        free(r);
        return v;
    }
    if (t->gkind == FD_GG_V_COLS) return fd_f32_to_bf16(elem(t->gtype, t->data, K, row, fd_gguf_vidx(t->gp, col)));
    return fd_f32_to_bf16(elem(t->gtype, t->data, K, src_row(t, row), col));
}

/* ------------------------------------------------------------ identity */

void fd_gguf_tokenizer_identity(const fd_weights *w, int64_t vocab, char *out, size_t cap)
{
    const fd_gguf_file *f = &w->gguf->f[0];
    const fd_gguf_kv *hj = fd_gguf_get(f, "tokenizer.huggingface.json");
    if (hj && hj->type == FD_GGUF_STRING) { /* the tokenizer.json bytes: the identity a checkpoint directory has */
        char th[65];
        fd_sha256_hex(hj->str, (size_t)hj->len, th);
        snprintf(out, cap, "local/tokenizer-%.16s", th);
        return;
    }
    const fd_gguf_kv **k = fd_xcalloc(f->nkv + 1, sizeof *k);
    size_t n = 0;
    for (size_t i = 0; i < f->nkv; i++)
        if (!strncmp(f->kv[i].key, "tokenizer.", 10)) k[n++] = &f->kv[i];
    for (size_t i = 1; i < n; i++) /* key order (insertion sort: a handful of keys) */
        for (size_t j = i; j > 0 && strcmp(k[j - 1]->key, k[j]->key) > 0; j--) {
            const fd_gguf_kv *x = k[j]; k[j] = k[j - 1]; k[j - 1] = x;
        }
    fd_sha *h = fd_sha_new();
    for (size_t i = 0; i < n; i++) {
        const fd_gguf_kv *kv = k[i];
        unsigned char ty[4] = {(unsigned char)kv->type, (unsigned char)(kv->type >> 8), (unsigned char)(kv->type >> 16),
                               (unsigned char)(kv->type >> 24)};
        fd_sha_update(h, kv->key, strlen(kv->key) + 1);
        fd_sha_update(h, ty, 4);
        if (kv->type == FD_GGUF_STRING) fd_sha_update(h, kv->str, kv->len);
        else if (kv->type == FD_GGUF_ARRAY) {
            unsigned char at[4] = {(unsigned char)kv->atype, 0, 0, 0};
            fd_sha_update(h, at, 4);
            fd_sha_update(h, kv->adata, kv->abytes);
        } else {
            unsigned char v[8];
            int sz = fd_gguf_vtype_size(kv->type);
            for (int b = 0; b < 8; b++) v[b] = (unsigned char)(kv->v.u >> (8 * b));
            if (kv->type == FD_GGUF_F32 || kv->type == FD_GGUF_F64) { double d = kv->v.f; memcpy(v, &d, 8); sz = 8; }
            fd_sha_update(h, v, (size_t)sz);
        }
    }
    char d[65];
    fd_sha_final_hex(h, d);
    free(k);
    if (n) snprintf(out, cap, "local/gguf-tokenizer-%.16s", d);
    else snprintf(out, cap, "local/no-tokenizer-vocab-%lld", (long long)vocab);
}

int fd_gguf_identity(const fd_weights *w, jv **files, char config_sha[65], fd_err *e)
{
    *files = jv_arr();
    for (size_t i = 0; i < w->gguf->n; i++) {
        const fd_gguf_file *f = &w->gguf->f[i];
        char h[65];
        if (fd_sha256_file(f->path, h, e)) { jv_free(*files); *files = NULL; return -1; }
        const char *base = strrchr(f->path, '/');
        jv *o = jv_obj();
        jv_set(o, "name", jv_str(base ? base + 1 : f->path));
        jv_set(o, "sha256", jv_str(h));
        jv_set(o, "size", jv_int((int64_t)f->size));
        jv_push(*files, o);
    }
    fd_buf b = {0};
    if (jv_dump(w->gcfg, &JV_CANON, &b, e)) { fd_buf_free(&b); jv_free(*files); *files = NULL; return -1; }
    fd_sha256_hex(b.p, b.n, config_sha);
    fd_buf_free(&b);
    return 0;
}
