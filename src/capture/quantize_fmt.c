#include "capture/quantize_fmt.h"
#include "capture/model_dir.h"
#include "capture/quantize.h"
#include "capture/quantize_pack.h"
#include "engine/qformat.h"
#include "format/version.h"
#include "util/bf16.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { R_COPY, R_WEIGHT, R_SCALE, R_SCALE2, R_ZERO, R_GIDX, R_SHAPE, R_BIAS };

static int packed_kind(fd_qkind k) { return k == FD_Q_CT_PACK || k == FD_Q_GPTQ || k == FD_Q_MLX; }

typedef struct qf_ctx {
    const fd_qf_opts *o;
    const fd_model_dir *md;
    unsigned char **sel;        /* [shard][tensor index in st.t] */
    jv *config, *hfq;           /* rewritten config.json, hf_quant_config.json (nvfp4) */
} qf_ctx;

static int selected_by_default(fd_qkind k, const char *name)
{
    if (k == FD_Q_NVFP4) return strstr(name, "mlp.experts.") != NULL;
    return 1;
}

static int never_converted(fd_qkind k, const char *name)
{
    return !strcmp(name, "lm_head.weight") || (k == FD_Q_FP8_BLOCK && strstr(name, "indexer.weights_proj."));
}

/* Module name of a weight with digit runs as "*". */
static char *module_pattern(const char *weight)
{
    size_t n = strlen(weight) - 7; /* less ".weight" */
    fd_buf b = {0};
    for (size_t i = 0; i < n;) {
        if (weight[i] >= '0' && weight[i] <= '9') {
            fd_buf_putc(&b, '*');
            while (i < n && weight[i] >= '0' && weight[i] <= '9') i++;
        } else fd_buf_putc(&b, weight[i++]);
    }
    return fd_buf_cstr(&b);
}

/* ------------------------------------------------------------ arithmetic */

static int read_f32(const fd_md_shard *s, int fd, const fd_st_tensor *t, float **out, fd_err *e)
{
    uint64_t n = t->shape[0] * t->shape[1], bytes = t->end - t->start;
    unsigned char *raw = fd_xmalloc(bytes + 1);
    if (fd_qz_pread_all(fd, raw, (size_t)bytes, fd_md_data_offset(s, t))) {
        free(raw);
        return fd_fail(e, "unreadable", "", "%s: short read of %s", s->path, t->name);
    }
    float *x = fd_xmalloc(n * sizeof *x + 4);
    int bf = !strcmp(t->dtype, "BF16");
    for (uint64_t i = 0; i < n; i++) {
        if (bf) { uint16_t h; memcpy(&h, raw + 2 * i, 2); x[i] = fd_bf16_to_f32(h); }
        else memcpy(&x[i], raw + 4 * i, 4);
    }
    free(raw);
    for (uint64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) {
            free(x);
            return fd_fail(e, "non_finite", "", "%s: tensor %s holds a NaN or infinity", s->path, t->name);
        }
    *out = x;
    return 0;
}

/* compressed-tensors / GPTQ / MLX: every array of the encoding, then the role's. */
static void produce_packed(const fd_qf_opts *o, const float *x, uint64_t N, uint64_t K, int role, fd_buf *out)
{
    uint64_t g = (uint64_t)o->group, G = K / g;
    if (role == R_SHAPE) {
        int64_t sh[2] = {(int64_t)N, (int64_t)K};
        fd_buf_put(out, sh, sizeof sh);
        return;
    }
    if (o->kind == FD_Q_CT_PACK) {
        int32_t *p = fd_xmalloc(N * K / 2 + 4);
        uint16_t *s = fd_xmalloc(N * G * 2 + 2);
        fd_qp_ct_int4(x, N, K, g, p, s);
        if (role == R_WEIGHT) fd_buf_put(out, p, N * K / 2);
        else fd_buf_put(out, s, N * G * 2);
        free(p);
        free(s);
    } else if (o->kind == FD_Q_GPTQ) {
        int32_t *qw = fd_xmalloc(N * K / 2 + 4), *qz = fd_xmalloc(G * N / 2 + 4), *gi = fd_xmalloc(K * 4 + 4);
        uint16_t *s = fd_xmalloc(G * N * 2 + 2);
        fd_qp_gptq_int4(x, N, K, g, qw, qz, s, gi);
        if (role == R_WEIGHT) fd_buf_put(out, qw, N * K / 2);
        else if (role == R_ZERO) fd_buf_put(out, qz, G * N / 2);
        else if (role == R_GIDX) fd_buf_put(out, gi, K * 4);
        else fd_buf_put(out, s, G * N * 2);
        free(qw);
        free(qz);
        free(gi);
        free(s);
    } else {
        uint32_t *w = fd_xmalloc(N * K / 2 + 4);
        uint16_t *s = fd_xmalloc(N * G * 2 + 2), *b = fd_xmalloc(N * G * 2 + 2);
        fd_qp_mlx_int4(x, N, K, g, w, s, b);
        if (role == R_WEIGHT) fd_buf_put(out, w, N * K / 2);
        else if (role == R_SCALE) fd_buf_put(out, s, N * G * 2);
        else fd_buf_put(out, b, N * G * 2);
        free(w);
        free(s);
        free(b);
    }
}

/* The bytes of one output tensor derived from source tensor t. */
static int produce(const qf_ctx *c, const fd_md_shard *s, int fd, const fd_st_tensor *t, int role, fd_buf *out, fd_err *e)
{
    float *x = NULL;
    if (read_f32(s, fd, t, &x, e)) return -1;
    uint64_t N = t->shape[0], K = t->shape[1];
    const fd_qf_opts *o = c->o;
    if (packed_kind(o->kind)) produce_packed(o, x, N, K, role, out);
    else if (o->kind == FD_Q_FP8_BLOCK) {
        uint64_t rb = (N + (uint64_t)o->bm - 1) / (uint64_t)o->bm, kb = (K + (uint64_t)o->bn - 1) / (uint64_t)o->bn;
        uint8_t *q = fd_xmalloc(N * K + 1);
        float *si = fd_xmalloc(rb * kb * 4 + 4);
        fd_fp8_block_quantize(x, N, K, o->bm, o->bn, q, si);
        if (role == R_WEIGHT) fd_buf_put(out, q, N * K);
        else fd_buf_put(out, si, rb * kb * 4);
        free(q);
        free(si);
    } else {
        float s2 = fd_nvfp4_scale2(x, N * K);
        if (!(s2 > 0.0f)) {
            free(x);
            return fd_fail(e, "unsupported_shape", "", "%s: tensor %s is all zeros (NVFP4's per-tensor scale would be 0)",
                           s->path, t->name);
        }
        uint8_t *q = fd_xmalloc(N * K / 2 + 1), *sc = fd_xmalloc(N * K / FD_NVFP4_GROUP + 1);
        fd_nvfp4_quantize(x, N, K, s2, q, sc);
        if (role == R_WEIGHT) fd_buf_put(out, q, N * K / 2);
        else if (role == R_SCALE) fd_buf_put(out, sc, N * K / FD_NVFP4_GROUP);
        else fd_buf_put(out, &s2, 4);
        free(q);
        free(sc);
    }
    free(x);
    return 0;
}

/* ------------------------------------------------------------ files */

typedef struct otensor {
    fd_stm_tensor t;
    char *name;
    size_t src;      /* index into the shard's st.t */
    int role;
} otensor;

static void companion(otensor *o, const char *name, size_t blen, const char *suffix, size_t src, int role,
                      const char *dtype, int ndim, uint64_t d0, uint64_t d1)
{
    fd_buf b = {0};
    fd_buf_printf(&b, "%.*s.%s", (int)blen, name, suffix);
    *o = (otensor){.name = fd_buf_cstr(&b), .src = src, .role = role};
    o->t.dtype = dtype;
    o->t.ndim = ndim;
    o->t.shape[0] = d0;
    o->t.shape[1] = d1;
}

/* w: the weight's entry (renamed where the format renames it); returns how
 * many companions follow it. */
static size_t plan_packed(fd_qkind k, uint64_t g, const fd_st_tensor *t, size_t i, size_t base, otensor *w)
{
    uint64_t N = t->shape[0], K = t->shape[1];
    if (k == FD_Q_CT_PACK) {
        free(w->name);
        companion(w, t->name, base, "weight_packed", i, R_WEIGHT, "I32", 2, N, K / 8);
        companion(w + 1, t->name, base, "weight_scale", i, R_SCALE, "BF16", 2, N, K / g);
        companion(w + 2, t->name, base, "weight_shape", i, R_SHAPE, "I64", 1, 2, 0);
        return 2;
    }
    if (k == FD_Q_GPTQ) {
        free(w->name);
        companion(w, t->name, base, "qweight", i, R_WEIGHT, "I32", 2, K / 8, N);
        companion(w + 1, t->name, base, "qzeros", i, R_ZERO, "I32", 2, K / g, N / 8);
        companion(w + 2, t->name, base, "scales", i, R_SCALE, "F16", 2, K / g, N);
        companion(w + 3, t->name, base, "g_idx", i, R_GIDX, "I32", 1, K, 0);
        return 3;
    }
    w->t.dtype = "U32";
    w->t.shape[1] = K / 8;
    companion(w + 1, t->name, base, "scales", i, R_SCALE, "BF16", 2, N, K / g);
    companion(w + 2, t->name, base, "biases", i, R_BIAS, "BF16", 2, N, K / g);
    return 2;
}

static size_t plan_shard(const qf_ctx *c, size_t si, otensor **out)
{
    const fd_md_shard *s = &c->md->shards[si];
    otensor *v = fd_xcalloc(4 * s->st.n + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < s->st.n; i++) {
        const fd_st_tensor *t = &s->st.t[i];
        otensor *w = &v[n++];
        w->name = fd_xstrdup(t->name);
        w->src = i;
        w->t.ndim = t->ndim;
        memcpy(w->t.shape, t->shape, sizeof w->t.shape);
        w->t.dtype = t->dtype;
        if (!c->sel[si][i]) continue;
        size_t base = strlen(t->name) - 7;
        w->role = R_WEIGHT;
        if (packed_kind(c->o->kind)) {
            n += plan_packed(c->o->kind, (uint64_t)c->o->group, t, i, base, w);
            continue;
        }
        if (c->o->kind == FD_Q_FP8_BLOCK) {
            w->t.dtype = "F8_E4M3";
            otensor *sc = &v[n++];
            fd_buf b = {0};
            fd_buf_printf(&b, "%.*s.weight_scale_inv", (int)base, t->name);
            *sc = (otensor){.name = fd_buf_cstr(&b), .src = i, .role = R_SCALE};
            sc->t.dtype = "F32";
            sc->t.ndim = 2;
            sc->t.shape[0] = (t->shape[0] + (uint64_t)c->o->bm - 1) / (uint64_t)c->o->bm;
            sc->t.shape[1] = (t->shape[1] + (uint64_t)c->o->bn - 1) / (uint64_t)c->o->bn;
        } else {
            w->t.dtype = "U8";
            w->t.shape[1] = t->shape[1] / 2;
            otensor *sc = &v[n++], *s2 = &v[n++];
            fd_buf b = {0}, b2 = {0};
            fd_buf_printf(&b, "%.*s.weight_scale", (int)base, t->name);
            fd_buf_printf(&b2, "%.*s.weight_scale_2", (int)base, t->name);
            *sc = (otensor){.name = fd_buf_cstr(&b), .src = i, .role = R_SCALE};
            sc->t.dtype = "F8_E4M3";
            sc->t.ndim = 2;
            sc->t.shape[0] = t->shape[0];
            sc->t.shape[1] = t->shape[1] / FD_NVFP4_GROUP;
            *s2 = (otensor){.name = fd_buf_cstr(&b2), .src = i, .role = R_SCALE2};
            s2->t.dtype = "F32";
            s2->t.ndim = 0;
        }
    }
    for (size_t i = 0; i < n; i++) v[i].t.name = v[i].name;
    *out = v;
    return n;
}

static int write_shard(const qf_ctx *c, size_t si, const char *path, fd_err *e)
{
    const fd_md_shard *s = &c->md->shards[si];
    otensor *ot;
    size_t n = plan_shard(c, si, &ot);
    fd_stm_tensor *tv = fd_xcalloc(n + 1, sizeof *tv);
    for (size_t i = 0; i < n; i++) tv[i] = ot[i].t;
    fd_stm_writer w;
    int rc = fd_stm_begin(&w, path, tv, n, e);
    free(tv);
    int in = rc ? -1 : open(s->path, O_RDONLY | O_CLOEXEC);
    if (!rc && in < 0) rc = fd_fail(e, "unreadable", "", "%s: %s", s->path, strerror(errno));
    for (size_t k = 0; k < n && !rc; k++) {
        const otensor *o = &ot[w.order[k]];
        const fd_st_tensor *t = &s->st.t[o->src];
        fd_buf b = {0};
        if (o->role != R_COPY) rc = produce(c, s, in, t, o->role, &b, e);
        else {
            uint64_t bytes = t->end - t->start;
            fd_buf_reserve(&b, (size_t)bytes + 1);
            if (fd_qz_pread_all(in, b.p, (size_t)bytes, fd_md_data_offset(s, t)))
                rc = fd_fail(e, "unreadable", "", "%s: short read", s->path);
            b.n = (size_t)bytes;
        }
        if (!rc) rc = fd_stm_put(&w, b.p, b.n, e);
        fd_buf_free(&b);
    }
    if (in >= 0) close(in);
    for (size_t i = 0; i < n; i++) free(ot[i].name);
    free(ot);
    if (rc) { fd_stm_abort(&w); return -1; }
    return fd_stm_finish(&w, e);
}

static int write_json(const char *path, const jv *doc, fd_err *e)
{
    fd_buf b = {0};
    int rc = jv_dump(doc, &FD_QZ_JSON_STYLE, &b, e);
    fd_buf_putc(&b, '\n');
    if (!rc) rc = fd_write_atomic(path, b.p, b.n, e);
    fd_buf_free(&b);
    return rc;
}

/* The index's weight_map gains every scale tensor (in its weight's shard);
 * metadata.total_size is recomputed as the sum of tensor bytes. */
static int rewrite_index(const qf_ctx *c, const char *from, const char *to, fd_err *e)
{
    jv *ix = jv_parse_file(from, e);
    if (!ix) return -1;
    jv *wm = jv_get(ix, "weight_map");
    int64_t total = 0;
    for (size_t si = 0; si < c->md->nshards; si++) {
        otensor *ot;
        size_t n = plan_shard(c, si, &ot);
        for (size_t i = 0; i < n; i++) {
            uint64_t el = 1;
            for (int d = 0; d < ot[i].t.ndim; d++) el *= ot[i].t.shape[d];
            total += (int64_t)(el * (uint64_t)fd_st_dtype_size(ot[i].t.dtype));
            const char *srcname = c->md->shards[si].st.t[ot[i].src].name;
            if (wm && wm->t == JV_OBJ && ot[i].role == R_WEIGHT && strcmp(ot[i].name, srcname)) jv_del(wm, srcname);
            if (wm && wm->t == JV_OBJ && ot[i].role != R_COPY && (ot[i].role != R_WEIGHT || strcmp(ot[i].name, srcname)))
                jv_set(wm, ot[i].name, jv_str(c->md->shards[si].name));
            free(ot[i].name);
        }
        free(ot);
    }
    jv *meta = jv_get(ix, "metadata");
    if (meta && meta->t == JV_OBJ && jv_get(meta, "total_size")) jv_set(meta, "total_size", jv_int(total));
    int rc = write_json(to, ix, e);
    jv_free(ix);
    return rc;
}

static int fill(void *vc, const char *tmp, fd_err *e)
{
    const qf_ctx *c = vc;
    const fd_model_dir *md = c->md;
    int rc = 0;
    for (size_t i = 0; !rc && i < md->others.n; i++) {
        const char *nm = md->others.v[i];
        char *from = fd_path_join(md->root, nm), *to = fd_path_join(tmp, nm);
        if (!strcmp(nm, "config.json")) rc = write_json(to, c->config, e);
        else if (!strcmp(nm, "model.safetensors.index.json")) rc = rewrite_index(c, from, to, e);
        else if (!strcmp(nm, "hf_quant_config.json")) rc = 0; /* replaced below */
        else rc = fd_md_copy_file(from, to, e);
        free(from);
        free(to);
    }
    if (!rc && c->hfq) {
        char *to = fd_path_join(tmp, "hf_quant_config.json");
        rc = write_json(to, c->hfq, e);
        free(to);
    }
    for (size_t i = 0; !rc && i < md->nshards; i++) {
        char *to = fd_path_join(tmp, md->shards[i].name);
        rc = write_shard(c, i, to, e);
        free(to);
    }
    return rc;
}

/* ------------------------------------------------------------ config */

static jv *str_array(const fd_strv *s)
{
    jv *a = jv_arr();
    for (size_t i = 0; i < s->n; i++) jv_push(a, jv_str(s->v[i]));
    return a;
}

static jv *fp8_config(const fd_qf_opts *o, const fd_strv *excl)
{
    jv *q = jv_obj(), *bs = jv_arr();
    jv_push(bs, jv_int(o->bm));
    jv_push(bs, jv_int(o->bn));
    jv_set(q, "quant_method", jv_str("fp8"));
    jv_set(q, "fmt", jv_str("e4m3"));
    jv_set(q, "activation_scheme", jv_str("dynamic"));
    jv_set(q, "weight_block_size", bs);
    jv_set(q, "modules_to_not_convert", str_array(excl));
    return q;
}

static jv *producer(void)
{
    jv *p = jv_obj();
    jv_set(p, "name", jv_str("fidelity"));
    jv_set(p, "version", jv_str(FD_VERSION));
    return p;
}

static jv *nvfp4_config(const fd_strv *excl)
{
    jv *q = jv_obj(), *groups = jv_obj(), *g0 = jv_obj(), *w = jv_obj(), *targets = jv_arr();
    jv_set(w, "dynamic", jv_bool(0));
    jv_set(w, "num_bits", jv_int(4));
    jv_set(w, "type", jv_str("float"));
    jv_set(w, "group_size", jv_int(FD_NVFP4_GROUP));
    jv_set(g0, "weights", w);
    jv_set(g0, "input_activations", jv_null()); /* weight-only: no activation scales */
    jv_push(targets, jv_str("Linear"));
    jv_set(g0, "targets", targets);
    jv_set(groups, "group_0", g0);
    jv_set(q, "config_groups", groups);
    jv_set(q, "ignore", str_array(excl));
    jv_set(q, "quant_algo", jv_str("NVFP4"));
    jv_set(q, "producer", producer());
    jv_set(q, "quant_method", jv_str("modelopt"));
    return q;
}

static jv *nvfp4_hf_quant_config(const fd_strv *excl)
{
    jv *h = jv_obj(), *q = jv_obj();
    jv_set(q, "quant_algo", jv_str("NVFP4"));
    jv_set(q, "kv_cache_quant_algo", jv_null());
    jv_set(q, "group_size", jv_int(FD_NVFP4_GROUP));
    jv_set(q, "exclude_modules", str_array(excl));
    jv_set(h, "producer", producer());
    jv_set(h, "quantization", q);
    return h;
}

/* llm-compressor's W4A16 preset as compressed-tensors 0.20 saves it; the
 * Linears not selected are ignored, each kind by a "re:" pattern (layer
 * numbers as \d+), lm_head by name. */
static jv *ct_config(const fd_qf_opts *o, const fd_strv *excl)
{
    jv *q = jv_obj(), *groups = jv_obj(), *g0 = jv_obj(), *w = jv_obj(), *targets = jv_arr(), *ign = jv_arr();
    jv_set(w, "actorder", jv_null());
    jv_set(w, "block_structure", jv_null());
    jv_set(w, "dynamic", jv_bool(0));
    jv_set(w, "group_size", jv_int(o->group));
    jv_set(w, "num_bits", jv_int(4));
    jv_set(w, "observer", jv_str("minmax"));
    jv_set(w, "observer_kwargs", jv_obj());
    jv_set(w, "strategy", jv_str("group"));
    jv_set(w, "symmetric", jv_bool(1));
    jv_set(w, "type", jv_str("int"));
    jv_push(targets, jv_str("Linear"));
    jv_set(g0, "format", jv_str("pack-quantized"));
    jv_set(g0, "input_activations", jv_null());
    jv_set(g0, "output_activations", jv_null());
    jv_set(g0, "targets", targets);
    jv_set(g0, "weights", w);
    jv_set(groups, "group_0", g0);
    for (size_t i = 0; i < excl->n; i++) {
        const char *p = excl->v[i];
        if (!strchr(p, '*')) { jv_push(ign, jv_str(p)); continue; }
        fd_buf b = {0};
        fd_buf_printf(&b, "re:");
        for (; *p; p++)
            if (*p == '*') fd_buf_printf(&b, "\\d+");
            else if (*p == '.') fd_buf_printf(&b, "\\.");
            else fd_buf_putc(&b, *p);
        fd_buf_putc(&b, '$');
        char *re = fd_buf_cstr(&b);
        jv_push(ign, jv_str(re));
        free(re);
    }
    jv_set(q, "config_groups", groups);
    jv_set(q, "format", jv_str("pack-quantized"));
    jv_set(q, "global_compression_ratio", jv_null());
    jv_set(q, "ignore", ign);
    jv_set(q, "kv_cache_scheme", jv_null());
    jv_set(q, "quant_method", jv_str("compressed-tensors"));
    jv_set(q, "quantization_status", jv_str("compressed"));
    jv_set(q, "sparsity_config", jv_obj());
    jv_set(q, "transform_config", jv_null());
    jv_set(q, "version", jv_str("0.20.1"));
    return q;
}

/* The name of a weight's module inside its decoder layer ("mlp.experts.3.up_proj"), NULL outside the layers. */
static char *in_layer(const char *weight)
{
    const char *p = strstr(weight, "layers.");
    if (!p) return NULL;
    p += 7;
    while (*p >= '0' && *p <= '9') p++;
    return *p == '.' ? fd_xstrndup(p + 1, strlen(p + 1) - 7) : NULL;
}

/* GPTQModel's config for 4-bit sym, desc_act false, v1; modules_in_block_to_quantize
 * when some Linear of a layer is not selected. */
static jv *gptq_config(const fd_qf_opts *o, const fd_model_dir *md, unsigned char **sel)
{
    fd_strv in = {0}, out = {0};
    for (size_t si = 0; si < md->nshards; si++)
        for (size_t i = 0; i < md->shards[si].st.n; i++) {
            const fd_st_tensor *t = &md->shards[si].st.t[i];
            char *m = t->ndim == 2 && fd_q_is_linear_weight(t->name) ? in_layer(t->name) : NULL;
            fd_strv *v = sel[si][i] ? &in : &out;
            if (m && fd_strv_find(v, m) < 0) { fd_strv_push(v, m); fd_strv_sort(v); }
            free(m);
        }
    jv *q = jv_obj();
    jv_set(q, "bits", jv_int(4));
    jv_set(q, "checkpoint_format", jv_str("gptq"));
    jv_set(q, "damp_percent", jv_float(0.01));
    jv_set(q, "desc_act", jv_bool(0));
    jv_set(q, "group_size", jv_int(o->group));
    jv_set(q, "lm_head", jv_bool(0));
    if (out.n) {
        jv *l = jv_arr();
        jv_push(l, str_array(&in));
        jv_set(q, "modules_in_block_to_quantize", l);
    }
    jv_set(q, "pack_dtype", jv_str("int32"));
    jv_set(q, "quant_method", jv_str("gptq"));
    jv_set(q, "static_groups", jv_bool(0));
    jv_set(q, "sym", jv_bool(1));
    jv_set(q, "true_sequential", jv_bool(1));
    fd_strv_free(&in);
    fd_strv_free(&out);
    return q;
}

/* mlx-lm's config.json `quantization` (mirrored as quantization_config). */
static jv *mlx_config(const fd_qf_opts *o)
{
    jv *q = jv_obj();
    jv_set(q, "bits", jv_int(4));
    jv_set(q, "group_size", jv_int(o->group));
    jv_set(q, "mode", jv_str("affine"));
    return q;
}

static const char *format_name(fd_qkind k)
{
    return k == FD_Q_FP8_BLOCK ? "fp8-block" : k == FD_Q_NVFP4 ? "nvfp4" : k == FD_Q_CT_PACK ? "compressed-tensors"
           : k == FD_Q_GPTQ ? "gptq" : "mlx";
}

static const char *scheme_text(fd_qkind k)
{
    switch (k) {
    case FD_Q_FP8_BLOCK: return "FP8 e4m3 with one fp32 inverse scale per weight block (transformers Fp8Quantize)";
    case FD_Q_NVFP4: return "NVFP4: E2M1 values, one e4m3 scale per 16 inputs, one fp32 scale per tensor (ModelOpt "
                            "NVFP4QTensor), weight-only";
    case FD_Q_CT_PACK: return "compressed-tensors W4A16 pack-quantized: int4 symmetric per group, bf16 scale "
                              "absmax/7.5, round to nearest (no calibration)";
    case FD_Q_GPTQ: return "GPTQ 4-bit sym, desc_act false, v1 zero points: fp16 scale 2*absmax/15, zero 8, round to "
                           "nearest (no Hessian update)";
    default: return "MLX affine 4-bit: bf16 scale (max-min)/15 and bias min per group, round to nearest";
    }
}

/* ------------------------------------------------------------ driver */

static int select_tensors(const fd_qf_opts *o, const fd_model_dir *md, unsigned char **sel, fd_strv *excl, jv *touched,
                          int64_t *nq, int64_t *nu, int64_t *elems, fd_err *e)
{
    for (size_t si = 0; si < md->nshards; si++) {
        const fd_md_shard *s = &md->shards[si];
        sel[si] = fd_xcalloc(s->st.n + 1, 1);
        const fd_st_tensor **sorted = fd_md_sorted_tensors(s);
        int rc = 0;
        for (size_t k = 0; k < s->st.n && !rc; k++) {
            const fd_st_tensor *t = sorted[k];
            int lin = t->ndim == 2 && fd_q_is_linear_weight(t->name);
            int want = lin && !never_converted(o->kind, t->name) &&
                       (o->npatterns ? fd_qz_matches(t->name, 2, o->patterns, o->npatterns)
                                     : selected_by_default(o->kind, t->name));
            if (!want) {
                (*nu)++;
                if (lin) {
                    char *p = module_pattern(t->name);
                    if (fd_strv_find(excl, p) < 0) { fd_strv_push(excl, p); fd_strv_sort(excl); }
                    free(p);
                }
                continue;
            }
            if (strcmp(t->dtype, "BF16") && strcmp(t->dtype, "F32"))
                rc = fd_fail(e, "unsupported_dtype", "", "%s: tensor %s is %s (BF16 or F32 sources only)", s->path,
                             t->name, t->dtype);
            else if (o->kind == FD_Q_NVFP4 && t->shape[1] % FD_NVFP4_GROUP)
                rc = fd_fail(e, "unsupported_shape", "", "%s: tensor %s has %llu inputs, not a multiple of 16 (NVFP4 "
                             "group)", s->path, t->name, (unsigned long long)t->shape[1]);
            else if (packed_kind(o->kind) && (t->shape[1] % (uint64_t)o->group || t->shape[1] % 8 ||
                                              (o->kind == FD_Q_GPTQ && t->shape[0] % 8)))
                rc = fd_fail(e, "unsupported_shape", "", "%s: tensor %s is %llux%llu: the inputs must be whole groups "
                             "of %d (and whole 8-value words%s)", s->path, t->name, (unsigned long long)t->shape[0],
                             (unsigned long long)t->shape[1], o->group, o->kind == FD_Q_GPTQ ? ", outputs too" : "");
            sel[si][t - s->st.t] = 1;
            (*nq)++;
            *elems += fd_qz_touched(touched, t);
        }
        free(sorted);
        if (rc) return -1;
    }
    return 0;
}

/* Every selected weight must stay converted under the written list. */
static int check_expressible(const fd_qf_opts *o, const fd_model_dir *md, unsigned char **sel, const fd_strv *excl,
                             fd_err *e)
{
    fd_qconfig q = {.kind = o->kind};
    q.exclude = *excl;
    for (size_t si = 0; si < md->nshards; si++)
        for (size_t i = 0; i < md->shards[si].st.n; i++)
            if (sel[si][i] && fd_q_excluded(&q, md->shards[si].st.t[i].name))
                return fd_fail(e, "unexpressible_selection", "", "%s would be left unconverted by the exclusion list "
                               "written for the Linears not selected (layer numbers read as \"*\"): select whole "
                               "module kinds with --match", md->shards[si].st.t[i].name);
    return 0;
}

/* compressed-tensors / GPTQ: the written config, parsed as capture parses it,
 * converts exactly the selected Linears (MLX: the tensors decide). */
static int check_written(const fd_qf_opts *o, const fd_model_dir *md, unsigned char **sel, const jv *qc, fd_err *e)
{
    if (o->kind == FD_Q_MLX) return 0;
    fd_qconfig q;
    memset(&q, 0, sizeof q);
    if (fd_qconfig_parse(qc, "the written quantization_config", &q, e)) return -1;
    int rc = 0;
    for (size_t si = 0; si < md->nshards && !rc; si++)
        for (size_t i = 0; i < md->shards[si].st.n && !rc; i++) {
            const char *nm = md->shards[si].st.t[i].name;
            if (md->shards[si].st.t[i].ndim != 2 || !fd_q_is_linear_weight(nm)) continue;
            if (!sel[si][i] != !!fd_q_excluded(&q, nm))
                rc = fd_fail(e, "unexpressible_selection", "", "%s would be %s by the written quantization_config "
                             "(%s): select whole module kinds with --match", nm, sel[si][i] ? "left unconverted"
                             : "converted", o->kind == FD_Q_GPTQ ? "modules_in_block_to_quantize names the modules "
                             "inside a layer, the same in every layer" : "ignore lists the others by kind");
        }
    fd_qconfig_free(&q);
    return rc;
}

int fd_quantize_fmt(const fd_qf_opts *o, jv **report, fd_err *e)
{
    *report = NULL;
    fd_model_dir md;
    if (fd_md_open(o->src, &md, e)) return -1;
    if (!md.nshards) {
        fd_md_close(&md);
        return fd_fail(e, "no_safetensors", "", "no *.safetensors in %s", o->src);
    }
    qf_ctx c = {.o = o, .md = &md};
    c.sel = fd_xcalloc(md.nshards, sizeof *c.sel);
    fd_strv excl = {0};
    jv *touched = jv_arr(), *pats = jv_arr();
    for (size_t i = 0; i < o->npatterns; i++) jv_push(pats, jv_str(o->patterns[i]));
    int64_t nq = 0, nu = 0, elems = 0;
    char *cp = fd_path_join(md.root, "config.json");
    int rc = 0;
    if (fd_strv_find(&md.others, "config.json") < 0)
        rc = fd_fail(e, "missing_file", "", "%s: no config.json", o->src);
    else if (!(c.config = jv_parse_file(cp, e))) rc = -1;
    else if (c.config->t != JV_OBJ) rc = fd_fail(e, "bad_config", "", "%s: not a JSON object", cp);
    else if (jv_get(c.config, "quantization_config") || jv_get(c.config, "quantization") ||
             fd_strv_find(&md.others, "hf_quant_config.json") >= 0)
        rc = fd_fail(e, "already_quantized", "", "%s: the checkpoint already has a quantization_config", o->src);
    if (!rc) rc = select_tensors(o, &md, c.sel, &excl, touched, &nq, &nu, &elems, e);
    if (!rc && !nq) rc = fd_fail(e, "nothing_matched", "", "no BF16/F32 Linear weight of %s is selected", o->src);
    if (!rc && !packed_kind(o->kind)) rc = check_expressible(o, &md, c.sel, &excl, e);
    jv *qc = NULL;
    if (!rc) {
        qc = o->kind == FD_Q_FP8_BLOCK ? fp8_config(o, &excl) : o->kind == FD_Q_NVFP4 ? nvfp4_config(&excl)
             : o->kind == FD_Q_CT_PACK ? ct_config(o, &excl) : o->kind == FD_Q_GPTQ ? gptq_config(o, &md, c.sel)
             : mlx_config(o);
        jv_set(c.config, "quantization_config", jv_copy(qc));
        if (o->kind == FD_Q_MLX) jv_set(c.config, "quantization", jv_copy(qc));
        if (o->kind == FD_Q_NVFP4) c.hfq = nvfp4_hf_quant_config(&excl);
        if (packed_kind(o->kind)) rc = check_written(o, &md, c.sel, qc, e);
    }
    jv *r = jv_obj();
    jv_set(r, "format", jv_str(format_name(o->kind)));
    jv_set(r, "patterns", pats);
    jv_set(r, "scheme", jv_str(scheme_text(o->kind)));
    jv_set(r, "tensors_quantized", jv_int(nq));
    jv_set(r, "tensors_untouched", jv_int(nu));
    jv_set(r, "elements_quantized", jv_int(elems));
    jv_set(r, "quantization_config", qc ? qc : jv_null());
    jv_set(r, "quantized", touched);
    *report = r;
    if (!rc && !o->dry_run) rc = fd_qz_stage_dir(md.root, o->dst, o->force, fill, &c, e);
    for (size_t si = 0; si < md.nshards; si++) free(c.sel[si]);
    free(c.sel);
    fd_strv_free(&excl);
    jv_free(c.config);
    jv_free(c.hfq);
    free(cp);
    fd_md_close(&md);
    return rc;
}
