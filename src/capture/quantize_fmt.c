#include "capture/quantize_fmt.h"
#include "capture/model_dir.h"
#include "capture/quantize.h"
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

enum { R_COPY, R_WEIGHT, R_SCALE, R_SCALE2 };

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

/* The bytes of one output tensor derived from source tensor t. */
static int produce(const qf_ctx *c, const fd_md_shard *s, int fd, const fd_st_tensor *t, int role, fd_buf *out, fd_err *e)
{
    float *x = NULL;
    if (read_f32(s, fd, t, &x, e)) return -1;
    uint64_t N = t->shape[0], K = t->shape[1];
    const fd_qf_opts *o = c->o;
    if (o->kind == FD_Q_FP8_BLOCK) {
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

static size_t plan_shard(const qf_ctx *c, size_t si, otensor **out)
{
    const fd_md_shard *s = &c->md->shards[si];
    otensor *v = fd_xcalloc(3 * s->st.n + 1, sizeof *v);
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
            if (wm && wm->t == JV_OBJ && ot[i].role != R_COPY && ot[i].role != R_WEIGHT)
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
    else if (jv_get(c.config, "quantization_config") || fd_strv_find(&md.others, "hf_quant_config.json") >= 0)
        rc = fd_fail(e, "already_quantized", "", "%s: the checkpoint already has a quantization_config", o->src);
    if (!rc) rc = select_tensors(o, &md, c.sel, &excl, touched, &nq, &nu, &elems, e);
    if (!rc && !nq) rc = fd_fail(e, "nothing_matched", "", "no BF16/F32 Linear weight of %s is selected", o->src);
    if (!rc) rc = check_expressible(o, &md, c.sel, &excl, e);
    jv *qc = NULL;
    if (!rc) {
        qc = o->kind == FD_Q_FP8_BLOCK ? fp8_config(o, &excl) : nvfp4_config(&excl);
        jv_set(c.config, "quantization_config", jv_copy(qc));
        if (o->kind == FD_Q_NVFP4) c.hfq = nvfp4_hf_quant_config(&excl);
    }
    jv *r = jv_obj();
    jv_set(r, "format", jv_str(o->kind == FD_Q_FP8_BLOCK ? "fp8-block" : "nvfp4"));
    jv_set(r, "patterns", pats);
    jv_set(r, "scheme", jv_str(o->kind == FD_Q_FP8_BLOCK
                                   ? "FP8 e4m3 with one fp32 inverse scale per weight block (transformers Fp8Quantize)"
                                   : "NVFP4: E2M1 values, one e4m3 scale per 16 inputs, one fp32 scale per tensor "
                                     "(ModelOpt NVFP4QTensor), weight-only"));
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
