#include "engine/weights_quant.h"
#include "engine/qformat.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the name quantization_config speaks of (the stored spelling, engine/weights.h qname) */
#define QN(t) ((t)->qname ? (t)->qname : (t)->name)

/* name with ".weight" replaced by suffix (NULL when name does not end so). */
static char *companion(const char *name, const char *suffix)
{
    size_t n = strlen(name);
    if (n < 7 || strcmp(name + n - 7, ".weight")) return NULL;
    fd_buf b = {0};
    fd_buf_printf(&b, "%.*s%s", (int)(n - 7), name, suffix);
    return fd_buf_cstr(&b);
}

static int is_scalar(const fd_tensor *t)
{
    return t->numel == 1 && (t->ndim == 0 || (t->ndim == 1 && t->shape[0] == 1));
}

static int bad(fd_buf *why, const char *fmt, const char *a, const char *b)
{
    fd_buf_printf(why, fmt, a, b);
    return -1;
}

/* Looks up a companion; NULL (and *why) when absent or not dtype. */
static const fd_tensor *need(const fd_weights *w, const char *wname, const char *suffix, const char *dtype, fd_buf *why)
{
    char *n = companion(wname, suffix);
    const fd_tensor *c = n ? fd_weights_get(w, n) : NULL;
    if (!c) bad(why, "%s is missing (the scale of %s)", n ? n : suffix, wname);
    else if (strcmp(c->dtype, dtype)) {
        fd_buf_printf(why, "%s is %s, expected %s", n, c->dtype, dtype);
        c = NULL;
    }
    free(n);
    return c;
}

int fd_wq_bind_fp8(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    const fd_qconfig *q = &w->q;
    if (t->shape[0] != want[0] || t->shape[1] != want[1]) {
        fd_buf_printf(why, "%s: F8_E4M3 [%llu,%llu] expected [%llu,%llu]", t->name, (unsigned long long)t->shape[0],
                      (unsigned long long)t->shape[1], (unsigned long long)want[0], (unsigned long long)want[1]);
        return -1;
    }
    const fd_tensor *s = fd_wq_block_scale(w, t->name, why); /* X.weight_scale_inv, or the release's X.scale */
    if (!s) return -1;
    int e8 = !strcmp(s->dtype, "F8_E8M0");
    if (e8 && !q->ue8m0)
        return bad(why, "%s is F8_E8M0 but quantization_config (%s) has no scale_fmt \"ue8m0\"", s->name, w->q.source);
    if (!e8 && strcmp(s->dtype, "F32")) return bad(why, "%s is %s, expected F32 or F8_E8M0", s->name, s->dtype);
    uint64_t r = (want[0] + (uint64_t)q->bm - 1) / (uint64_t)q->bm, c = (want[1] + (uint64_t)q->bn - 1) / (uint64_t)q->bn;
    if (s->ndim != 2 || s->shape[0] != r || s->shape[1] != c) {
        fd_buf_printf(why, "%s has the wrong shape: expected [%llu,%llu] (weight [%llu,%llu], weight_block_size [%d,%d])",
                      s->name, (unsigned long long)r, (unsigned long long)c, (unsigned long long)want[0],
                      (unsigned long long)want[1], q->bm, q->bn);
        return -1;
    }
    if (q->ue8m0) { /* by meaning: every scale a power of two (F32) or a finite E8M0 code */
        uint64_t n = r * c;
        uint8_t *v = fd_xmalloc(n * (e8 ? 1 : 4));
        fd_err re;
        int rc = fd_weights_read(w, s, v, n * (e8 ? 1 : 4), &re);
        uint64_t i = 0;
        for (; !rc && i < n; i++) {
            if (e8) { if (v[i] == 255) break; continue; }
            float f;
            memcpy(&f, v + i * 4, 4);
            int ex;
            if (!(f > 0.0f) || isinf(f) || frexpf(f, &ex) != 0.5f) break;
        }
        if (rc) fd_buf_printf(why, "%s", re.msg);
        else if (i < n) {
            float f = 0;
            if (!e8) memcpy(&f, v + i * 4, 4);
            if (e8) fd_buf_printf(why, "%s[%llu] is the E8M0 NaN code 255", s->name, (unsigned long long)i);
            else fd_buf_printf(why, "%s[%llu] = %.9g is not a power of two (scale_fmt ue8m0)", s->name, (unsigned long long)i, (double)f);
        }
        free(v);
        if (rc || i < n) return -1;
    }
    t->qfmt = FD_Q_FP8_BLOCK;
    t->scale = s;
    t->bm = q->bm;
    t->bn = q->bn;
    w->qbytes += t->nbytes + s->nbytes;
    return 1;
}

static int bind_nvfp4(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    if (want[1] % FD_NVFP4_GROUP || t->shape[0] != want[0] || t->shape[1] * 2 != want[1]) {
        fd_buf_printf(why, "%s: U8 [%llu,%llu] expected packed [%llu,%llu] (input dim a multiple of 16)", t->name,
                      (unsigned long long)t->shape[0], (unsigned long long)t->shape[1], (unsigned long long)want[0],
                      (unsigned long long)want[1] / 2);
        return -1;
    }
    const fd_tensor *s = need(w, t->name, ".weight_scale", "F8_E4M3", why);
    if (!s) return -1;
    if (s->ndim != 2 || s->shape[0] != want[0] || s->shape[1] != want[1] / FD_NVFP4_GROUP) {
        fd_buf_printf(why, "%s has the wrong shape: expected [%llu,%llu] (one e4m3 scale per 16 inputs)", s->name,
                      (unsigned long long)want[0], (unsigned long long)(want[1] / FD_NVFP4_GROUP));
        return -1;
    }
    const fd_tensor *s2 = need(w, t->name, ".weight_scale_2", "F32", why);
    if (!s2) return -1;
    if (!is_scalar(s2)) return bad(why, "%s has the wrong shape: expected [] or [1] (per-tensor scale of %s)", s2->name, t->name);
    char *in = companion(t->name, ".input_scale");
    const fd_tensor *is = fd_weights_get(w, in);
    free(in);
    if (is && (strcmp(is->dtype, "F32") || !is_scalar(is)))
        return bad(why, "%s must be an F32 scalar (the activation scale of %s)", is->name, t->name);
    fd_err re;
    if (fd_weights_read(w, s2, &t->scale2, 4, &re)) return bad(why, "%s%s", re.msg, "");
    t->qfmt = FD_Q_NVFP4;
    t->scale = s;
    t->iscale = is;
    t->lshape[1] = want[1];
    w->qbytes += t->nbytes + s->nbytes + s2->nbytes + (is ? is->nbytes : 0);
    return 1;
}

static uint64_t cdiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
static const fd_tensor *pk_comp(const fd_weights *w, const fd_tensor *t, const char *suffix);

/* compressed-tensors pack-quantized: t is X.weight_packed (looked up as X.weight). */
static int bind_ct(fd_weights *w, fd_tensor *t, const fd_ct_scheme *cs, const uint64_t *want, fd_buf *why)
{
    const uint64_t N = want[0], K = want[1], b = (uint64_t)cs->bits;
    char ctx[96];
    snprintf(ctx, sizeof ctx, "int%d %s", cs->bits, cs->strategy == FD_CT_CHANNEL ? "channel" : cs->strategy == FD_CT_GROUP ? "group" : "block");
    if (t->ndim != 2 || t->shape[0] != N || t->shape[1] != cdiv(K * b, 32)) {
        fd_buf_printf(why, "%s: I32 packed shape expected [%llu,%llu] (weight [%llu,%llu], %s)", t->sname,
                      (unsigned long long)N, (unsigned long long)cdiv(K * b, 32), (unsigned long long)N,
                      (unsigned long long)K, ctx);
        return -1;
    }
    /* weight_shape: the logical shape, as the decompressor reads it */
    char *sn = companion(t->name, ".weight_shape");
    const fd_tensor *ws = fd_weights_get(w, sn);
    free(sn);
    if (!ws) return bad(why, "%s: its weight_shape is missing (%s)", t->sname, "compressed-tensors stores the logical shape");
    int64_t v[2] = {0, 0};
    int i64 = !strcmp(ws->dtype, "I64");
    if ((!i64 && strcmp(ws->dtype, "I32")) || ws->ndim != 1 || ws->shape[0] != 2)
        return bad(why, "%s must be an I64 or I32 tensor of 2 elements (the shape of %s)", ws->name, t->sname);
    fd_err re;
    if (i64) { if (fd_weights_read(w, ws, v, 16, &re)) return bad(why, "%s%s", re.msg, ""); }
    else {
        int32_t v32[2];
        if (fd_weights_read(w, ws, v32, 8, &re)) return bad(why, "%s%s", re.msg, "");
        v[0] = v32[0];
        v[1] = v32[1];
    }
    if (v[0] != (int64_t)N || v[1] != (int64_t)K) {
        fd_buf_printf(why, "%s holds [%lld,%lld], the model expects [%llu,%llu]", ws->name, (long long)v[0],
                      (long long)v[1], (unsigned long long)N, (unsigned long long)K);
        return -1;
    }
    uint64_t sr = N, sc = 1;
    if (cs->strategy == FD_CT_GROUP) {
        if (K % (uint64_t)cs->group) {
            fd_buf_printf(why, "%s: %llu inputs are not a whole number of groups of %d (compressed-tensors' "
                          "decompressor refuses a partial group)", t->sname, (unsigned long long)K, cs->group);
            return -1;
        }
        sc = K / (uint64_t)cs->group;
    } else if (cs->strategy == FD_CT_BLOCK) {
        sr = cdiv(N, (uint64_t)cs->bh);
        sc = cdiv(K, (uint64_t)cs->bw);
    }
    char *scn = companion(t->name, ".weight_scale");
    const fd_tensor *s = fd_weights_get(w, scn);
    free(scn);
    if (!s) return bad(why, "%s: its weight_scale is missing (%s)", t->sname, ctx);
    int sd = !strcmp(s->dtype, "BF16") ? 0 : !strcmp(s->dtype, "F16") ? 1 : !strcmp(s->dtype, "F32") ? 2 : -1;
    if (sd < 0 || s->ndim != 2 || s->shape[0] != sr || s->shape[1] != sc) {
        fd_buf_printf(why, "%s: %s expected BF16|F16|F32 [%llu,%llu] (%s)", s->name, s->dtype, (unsigned long long)sr,
                      (unsigned long long)sc, ctx);
        return -1;
    }
    const fd_tensor *z = NULL;
    if (!cs->sym) {
        char *zn = companion(t->name, ".weight_zero_point");
        z = fd_weights_get(w, zn);
        free(zn);
        if (!z) return bad(why, "%s: its weight_zero_point is missing (%s, asymmetric)", t->sname, ctx);
        if (strcmp(z->dtype, "I32") || z->ndim != 2 || z->shape[0] != cdiv(N * b, 32) || z->shape[1] != sc) {
            fd_buf_printf(why, "%s: %s expected I32 [%llu,%llu] (zero points packed along the outputs, %s)", z->name,
                          z->dtype, (unsigned long long)cdiv(N * b, 32), (unsigned long long)sc, ctx);
            return -1;
        }
    }
    t->qfmt = FD_Q_CT_PACK;
    t->ct = *cs;
    t->scale = s;
    t->zero = z;
    t->lshape[1] = K;
    w->qbytes += t->nbytes + s->nbytes + ws->nbytes + (z ? z->nbytes : 0);
    return 1;
}

/* compressed-tensors int-/float-/naive-quantized: t is X.weight itself, I8 or
 * F8_E4M3 [N, K]; weight_scale [1] tensor, [N,1] channel, [N,K/g] group,
 * [ceil(N/bh),ceil(K/bw)] block; weight_zero_point I8 shaped as the scale
 * (asymmetric int). */
static int bind_ct_dense(fd_weights *w, fd_tensor *t, const fd_ct_scheme *cs, const uint64_t *want, fd_buf *why)
{
    const uint64_t N = want[0], K = want[1];
    const char *wd = cs->dense == FD_CT_DENSE_FP8 ? "F8_E4M3" : "I8";
    static const char *const ST[] = {"channel", "group", "block", "tensor"};
    char ctx[96];
    snprintf(ctx, sizeof ctx, "%s%d %s, unpacked", cs->dense == FD_CT_DENSE_FP8 ? "fp" : "int", cs->bits, ST[cs->strategy]);
    if (strcmp(t->dtype, wd) || t->ndim != 2 || t->shape[0] != N || t->shape[1] != K) {
        fd_buf_printf(why, "%s: %s expected %s [%llu,%llu] (%s)", t->name, t->dtype, wd, (unsigned long long)N,
                      (unsigned long long)K, ctx);
        return -1;
    }
    uint64_t sr = N, sc = 1;
    if (cs->strategy == FD_CT_TENSOR) sr = 1;
    else if (cs->strategy == FD_CT_GROUP) {
        if (K % (uint64_t)cs->group) {
            fd_buf_printf(why, "%s: %llu inputs are not a whole number of groups of %d (compressed-tensors' "
                          "decompressor refuses a partial group)", t->name, (unsigned long long)K, cs->group);
            return -1;
        }
        sc = K / (uint64_t)cs->group;
    } else if (cs->strategy == FD_CT_BLOCK) {
        sr = cdiv(N, (uint64_t)cs->bh);
        sc = cdiv(K, (uint64_t)cs->bw);
    }
    const fd_tensor *s = pk_comp(w, t, ".weight_scale");
    if (!s) return bad(why, "%s: its weight_scale is missing (%s)", t->name, ctx);
    int sd = !strcmp(s->dtype, "BF16") ? 0 : !strcmp(s->dtype, "F16") ? 1 : !strcmp(s->dtype, "F32") ? 2 : -1;
    int shape_ok = cs->strategy == FD_CT_TENSOR ? s->ndim == 1 && s->shape[0] == 1
                 : s->ndim == 2 && s->shape[0] == sr && s->shape[1] == sc;
    if (sd < 0 || !shape_ok) {
        if (cs->strategy == FD_CT_TENSOR) fd_buf_printf(why, "%s: %s expected BF16|F16|F32 [1] (%s)", s->name, s->dtype, ctx);
        else
            fd_buf_printf(why, "%s: %s expected BF16|F16|F32 [%llu,%llu] (%s)", s->name, s->dtype, (unsigned long long)sr,
                          (unsigned long long)sc, ctx);
        return -1;
    }
    const fd_tensor *z = NULL;
    if (!cs->sym) {
        z = pk_comp(w, t, ".weight_zero_point");
        if (!z) return bad(why, "%s: its weight_zero_point is missing (%s, asymmetric)", t->name, ctx);
        if (strcmp(z->dtype, "I8") || z->ndim != s->ndim || z->numel != s->numel || z->shape[0] != s->shape[0]) {
            fd_buf_printf(why, "%s: %s expected I8 shaped as %s (%s)", z->name, z->dtype, s->name, ctx);
            return -1;
        }
    }
    t->qfmt = FD_Q_CT_PACK;
    t->ct = *cs;
    t->scale = s;
    t->zero = z;
    w->qbytes += t->nbytes + s->nbytes + (z ? z->nbytes : 0);
    return 1;
}

/* nvfp4-pack-quantized / mxfp4-pack-quantized: t is X.weight_packed (looked up as X.weight), U8 [N, K/2];
 * weight_scale F8_E4M3 [N, K/16] (nvfp4, with weight_global_scale F32 [1]) or U8 [N, K/32] (mxfp4, E8M0
 * exponents: 255, an infinite scale, refused by meaning). */
static int bind_ct_fp4(fd_weights *w, fd_tensor *t, const fd_ct_scheme *cs, const uint64_t *want, fd_buf *why)
{
    const uint64_t N = want[0], K = want[1], g = (uint64_t)cs->group;
    const int nv = cs->dense == FD_CT_NVFP4;
    const char *nm = nv ? "nvfp4" : "mxfp4";
    if (K % g || strcmp(t->dtype, "U8") || t->ndim != 2 || t->shape[0] != N || t->shape[1] * 2 != K) {
        fd_buf_printf(why, "%s: %s expected U8 [%llu,%llu] (weight [%llu,%llu], %s: inputs a multiple of %llu)", t->sname,
                      t->dtype, (unsigned long long)N, (unsigned long long)(K / 2), (unsigned long long)N,
                      (unsigned long long)K, nm, (unsigned long long)g);
        return -1;
    }
    const fd_tensor *s = pk_comp(w, t, ".weight_scale");
    if (!s) return bad(why, "%s: its weight_scale is missing (%s)", t->sname, nm);
    if (strcmp(s->dtype, nv ? "F8_E4M3" : "U8") || s->ndim != 2 || s->shape[0] != N || s->shape[1] != K / g) {
        fd_buf_printf(why, "%s: %s expected %s [%llu,%llu] (%s)", s->name, s->dtype, nv ? "F8_E4M3" : "U8",
                      (unsigned long long)N, (unsigned long long)(K / g), nm);
        return -1;
    }
    fd_err re;
    const fd_tensor *gs = NULL;
    if (nv) {
        gs = pk_comp(w, t, ".weight_global_scale");
        if (!gs) return bad(why, "%s: its weight_global_scale is missing (%s)", t->sname, nm);
        if (strcmp(gs->dtype, "F32") || !is_scalar(gs))
            return bad(why, "%s must be an F32 scalar (the global scale of %s)", gs->name, t->sname);
        if (fd_weights_read(w, gs, &t->scale2, 4, &re)) return bad(why, "%s%s", re.msg, "");
    } else {
        uint8_t *v = fd_xmalloc(s->nbytes);
        int rc = fd_weights_read(w, s, v, s->nbytes, &re);
        uint64_t i = 0;
        while (!rc && i < s->nbytes && v[i] != 255) i++;
        free(v);
        if (rc) return bad(why, "%s%s", re.msg, "");
        if (i < s->nbytes) {
            fd_buf_printf(why, "%s[%llu] is the E8M0 code 255 (an infinite scale)", s->name, (unsigned long long)i);
            return -1;
        }
    }
    t->qfmt = FD_Q_CT_PACK;
    t->ct = *cs;
    t->scale = s;
    t->zero = NULL;
    t->lshape[1] = K;
    w->qbytes += t->nbytes + s->nbytes + (gs ? gs->nbytes : 0);
    return 1;
}

static int bind_ct_any(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    int lin = fd_q_is_linear_weight(t->name), sch = lin ? fd_q_ct_scheme(&w->q, QN(t)) : -1;
    int packed = t->sname != t->name && strcmp(t->sname, t->name);
    int dense_dt = !strcmp(t->dtype, "I8") || !strcmp(t->dtype, "F8_E4M3");
    if (!packed && dense_dt) {
        if (!lin) return bad(why, "%s is %s but is not a Linear weight (only Linears are converted)", t->name, t->dtype);
        if (sch < 0)
            return bad(why, "%s is quantized but quantization_config (%s) leaves its module unconverted (ignore, or no "
                       "target matches)", t->name, w->q.source);
        if (!w->q.ct[sch].dense)
            return bad(why, "%s is %s but its config group is pack-quantized (a loader expects %s_packed)", t->name,
                       t->dtype);
        int rc = bind_ct_dense(w, t, &w->q.ct[sch], want, why);
        if (rc == 1) w->nquant++;
        return rc;
    }
    if (!packed) {
        if (sch < 0 && (!strcmp(t->dtype, "BF16") || !strcmp(t->dtype, "F32"))) return 0;
        if (sch < 0) return 0; /* another dtype: reported as mis-shaped */
        fd_buf_printf(why, "%s is %s but quantization_config (%s, compressed-tensors) converts it (a loader expects "
                      "%s%s and its scales)", t->name, t->dtype, w->q.source, t->name,
                      w->q.ct[sch].dense == FD_CT_DENSE_FP8 ? " in F8_E4M3" : w->q.ct[sch].dense == FD_CT_DENSE_INT ? " in I8"
                      : "_packed");
        return -1;
    }
    if (lin && sch >= 0 && (w->q.ct[sch].dense == FD_CT_NVFP4 || w->q.ct[sch].dense == FD_CT_MXFP4)) {
        int rc = bind_ct_fp4(w, t, &w->q.ct[sch], want, why);
        if (rc == 1) w->nquant++;
        return rc;
    }
    if (strcmp(t->dtype, "I32")) return bad(why, "%s is %s, expected I32 (packed int32 words)", t->sname, t->dtype);
    if (!lin) return bad(why, "%s is packed but %s is not a Linear weight (only Linears are converted)", t->sname, t->name);
    if (sch < 0)
        return bad(why, "%s is packed but quantization_config (%s) leaves its module unconverted (ignore, or no target "
                   "matches)", t->sname, w->q.source);
    if (w->q.ct[sch].dense)
        return bad(why, "%s is packed but its config group is an unpacked format (int-/float-/naive-quantized store "
                   "%s itself)", t->sname, t->name);
    int rc = bind_ct(w, t, &w->q.ct[sch], want, why);
    if (rc == 1) w->nquant++;
    return rc;
}

/* the companion X.<suffix> of a packed weight t (named X.weight) */
static const fd_tensor *pk_comp(const fd_weights *w, const fd_tensor *t, const char *suffix)
{
    char *n = companion(t->name, suffix);
    const fd_tensor *c = n ? fd_weights_get(w, n) : NULL;
    free(n);
    return c;
}

/* GPTQ / AWQ: t is X.qweight (looked up as X.weight). */
static int bind_gq(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    const fd_ct_scheme *cs = &w->q.ct[0];
    const int awq = w->q.kind == FD_Q_AWQ;
    const uint64_t N = want[0], K = want[1], b = (uint64_t)cs->bits, pf = 32 / b;
    const uint64_t grp = cs->group < 0 ? K : (uint64_t)cs->group, G = (K + grp - 1) / grp;
    const char *fam = awq ? "awq" : "gptq";
    /* GPTQ: K*b and N*b whole words (3-bit: 32 inputs / outputs in 3 words) */
    if ((awq && N % pf) || (!awq && ((N * b) % 32 || (K * b) % 32)) || (awq && grp != K && K % grp)) {
        fd_buf_printf(why, "%s: a [%llu,%llu] Linear does not pack into whole int32 words (%s int%d)", t->sname,
                      (unsigned long long)N, (unsigned long long)K, fam, cs->bits);
        return -1;
    }
    uint64_t r = awq ? K : K * b / 32, c = awq ? N / pf : N, zc = awq ? N / pf : N * b / 32;
    if (strcmp(t->dtype, "I32") || t->ndim != 2 || t->shape[0] != r || t->shape[1] != c) {
        fd_buf_printf(why, "%s: %s expected I32 [%llu,%llu] (weight [%llu,%llu], %s int%d)", t->sname, t->dtype,
                      (unsigned long long)r, (unsigned long long)c, (unsigned long long)N, (unsigned long long)K, fam,
                      cs->bits);
        return -1;
    }
    const fd_tensor *z = pk_comp(w, t, ".qzeros"), *s = pk_comp(w, t, ".scales"), *gi = awq ? NULL : pk_comp(w, t, ".g_idx");
    if (!z || !s) return bad(why, "%s: its %s is missing", t->sname, !z ? "qzeros" : "scales");
    if (strcmp(z->dtype, "I32") || z->ndim != 2 || z->shape[0] != G || z->shape[1] != zc) {
        fd_buf_printf(why, "%s: %s expected I32 [%llu,%llu] (zero points of %llu groups)", z->name, z->dtype,
                      (unsigned long long)G, (unsigned long long)zc, (unsigned long long)G);
        return -1;
    }
    int sd = !strcmp(s->dtype, "BF16") ? 0 : !strcmp(s->dtype, "F16") ? 1 : !strcmp(s->dtype, "F32") ? 2 : -1;
    if (sd < 0 || s->ndim != 2 || s->shape[0] != G || s->shape[1] != N) {
        fd_buf_printf(why, "%s: %s expected F16|BF16|F32 [%llu,%llu]", s->name, s->dtype, (unsigned long long)G,
                      (unsigned long long)N);
        return -1;
    }
    if (!awq) {
        if (!gi) return bad(why, "%s: its g_idx is missing (%s)", t->sname, "the group of every input");
        if (strcmp(gi->dtype, "I32") || gi->ndim != 1 || gi->shape[0] != K) {
            fd_buf_printf(why, "%s: %s expected I32 [%llu]", gi->name, gi->dtype, (unsigned long long)K);
            return -1;
        }
        int32_t *v = fd_xmalloc(K * 4);
        fd_err re;
        int rc = fd_weights_read(w, gi, v, K * 4, &re);
        uint64_t k = 0;
        while (!rc && k < K && v[k] >= 0 && (uint64_t)v[k] < G) k++;
        if (rc) fd_buf_printf(why, "%s", re.msg);
        else if (k < K)
            fd_buf_printf(why, "%s[%llu] = %d is not a group in [0, %llu)", gi->name, (unsigned long long)k, v[k],
                          (unsigned long long)G);
        free(v);
        if (rc || k < K) return -1;
    }
    t->qfmt = w->q.kind;
    t->ct = *cs;
    t->ct.group = (int)grp;
    t->scale = s;
    t->zero = z;
    t->gidx = gi;
    t->lshape[0] = N;
    t->lshape[1] = K;
    w->qbytes += t->nbytes + s->nbytes + z->nbytes + (gi ? gi->nbytes : 0);
    return 1;
}

static int bind_gq_any(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    int lin = fd_q_is_linear_weight(t->name), conv = lin && !fd_q_excluded(&w->q, QN(t));
    if (t->sname == t->name) {
        if (!conv) return 0;
        fd_buf_printf(why, "%s is %s but quantization_config (%s, %s) converts it (a loader expects qweight, qzeros, "
                      "scales)", t->name, t->dtype, w->q.source, fd_q_format(w->q.kind));
        return -1;
    }
    if (!lin) return bad(why, "%s is packed but %s is not a Linear weight (only Linears are converted)", t->sname, t->name);
    if (!conv) return bad(why, "%s is packed but quantization_config (%s) leaves its module unconverted", t->sname, w->q.source);
    int rc = bind_gq(w, t, want, why);
    if (rc == 1) w->nquant++;
    return rc;
}

/* MLX affine: t is X.weight, U32 [N, K*b/32] with X.scales and X.biases
 * [N, K/g] (BF16 / F16 / F32, one dtype).  Quantized iff stored so (mlx-lm's
 * loader quantizes a module when X.scales exists); a Linear or the token
 * embedding only (nn.Linear / nn.Embedding are what mlx-lm quantizes). */
static int bind_mlx(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    if (strcmp(t->dtype, "U32")) return 0; /* plain: checked as any bf16 tensor */
    const fd_ct_scheme *cs = &w->q.ct[0];
    const uint64_t N = want[0], K = want[1], b = (uint64_t)cs->bits, g = (uint64_t)cs->group;
    if (!fd_q_is_linear_weight(t->name) && strcmp(t->name, "model.embed_tokens.weight"))
        return bad(why, "%s is U32 (MLX quantized) but is not a Linear or the token embedding (%s)", t->name,
                   "what mlx-lm quantizes");
    if (K % g) {
        fd_buf_printf(why, "%s: %llu inputs are not a whole number of groups of %llu (mlx quantizes only such "
                      "modules)", t->name, (unsigned long long)K, (unsigned long long)g);
        return -1;
    }
    if (t->ndim != 2 || t->shape[0] != N || t->shape[1] != K * b / 32) {
        fd_buf_printf(why, "%s: U32 expected [%llu,%llu] (weight [%llu,%llu], MLX affine %d-bit)", t->name,
                      (unsigned long long)N, (unsigned long long)(K * b / 32), (unsigned long long)N,
                      (unsigned long long)K, cs->bits);
        return -1;
    }
    const fd_tensor *s = pk_comp(w, t, ".scales"), *bi = pk_comp(w, t, ".biases");
    if (!s || !bi) return bad(why, "%s: its %s is missing (MLX affine)", t->name, !s ? "scales" : "biases");
    for (int i = 0; i < 2; i++) {
        const fd_tensor *c = i ? bi : s;
        int ok = (!strcmp(c->dtype, "BF16") || !strcmp(c->dtype, "F16") || !strcmp(c->dtype, "F32")) &&
                 !strcmp(c->dtype, s->dtype) && c->ndim == 2 && c->shape[0] == N && c->shape[1] == K / g;
        if (!ok) {
            fd_buf_printf(why, "%s: %s expected BF16|F16|F32 [%llu,%llu] (scales and biases of one dtype, group %d)",
                          c->name, c->dtype, (unsigned long long)N, (unsigned long long)(K / g), cs->group);
            return -1;
        }
    }
    t->qfmt = FD_Q_MLX;
    t->ct = *cs;
    t->scale = s;
    t->zero = bi;
    t->lshape[0] = N;
    t->lshape[1] = K;
    w->qbytes += t->nbytes + s->nbytes + bi->nbytes;
    w->nquant++;
    return 1;
}

static fd_mlx_row mlx_row_of(const fd_tensor *t)
{
    const char *sd = t->scale->dtype;
    fd_mlx_row m = {t->data, t->scale->data, t->zero->data, !strcmp(sd, "BF16") ? 0 : !strcmp(sd, "F16") ? 1 : 2,
                    t->ct.bits, t->ct.group};
    return m;
}

uint16_t fd_mlx_tensor_elem_bf16(const fd_tensor *t, uint64_t i)
{
    fd_mlx_row m = mlx_row_of(t);
    return fd_mlx_elem_bf16(&m, t->lshape[1], i / t->lshape[1], i % t->lshape[1]);
}

/* ModelOpt per-tensor FP8 (a MIXED_PRECISION FP8 layer): F8_E4M3 [N, K], weight_scale an F32 scalar,
 * input_scale (static activation scale, not applied) an F32 scalar when present. */
static int bind_mo_fp8(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    if (t->ndim != 2 || t->shape[0] != want[0] || t->shape[1] != want[1]) {
        fd_buf_printf(why, "%s: F8_E4M3 expected [%llu,%llu] (ModelOpt FP8 layer)", t->name, (unsigned long long)want[0],
                      (unsigned long long)want[1]);
        return -1;
    }
    const fd_tensor *s = need(w, t->name, ".weight_scale", "F32", why);
    if (!s) return -1;
    if (!is_scalar(s)) return bad(why, "%s has the wrong shape: expected [] or [1] (per-tensor FP8 scale of %s)", s->name, t->name);
    char *in = companion(t->name, ".input_scale");
    const fd_tensor *is = fd_weights_get(w, in);
    free(in);
    if (is && (strcmp(is->dtype, "F32") || !is_scalar(is)))
        return bad(why, "%s must be an F32 scalar (the activation scale of %s)", is->name, t->name);
    fd_err re;
    float sc;
    if (fd_weights_read(w, s, &sc, 4, &re)) return bad(why, "%s%s", re.msg, "");
    t->qfmt = FD_Q_MO_FP8;
    t->scale = s;
    t->iscale = is;
    t->scale2 = fd_bf16_to_f32(fd_f32_to_bf16(sc)); /* FP8QTensor.dequantize: scale.to(bf16) */
    w->qbytes += t->nbytes + s->nbytes + (is ? is->nbytes : 0);
    return 1;
}

/* ModelOpt MIXED_PRECISION: each Linear as quantized_layers lists it (NVFP4: U8, FP8: F8_E4M3), an unlisted
 * or excluded one stays plain. */
static int bind_mo_mixed(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    static const char *const ALG[] = {"", "NVFP4", "FP8"};
    int f8 = !strcmp(t->dtype, "F8_E4M3"), u8 = !strcmp(t->dtype, "U8");
    int lin = fd_q_is_linear_weight(t->name), algo = lin ? fd_q_mo_algo(&w->q, QN(t)) : 0;
    int conv = algo && !fd_q_excluded(&w->q, QN(t));
    if (!f8 && !u8) {
        if (!conv) return 0;
        fd_buf_printf(why, "%s is %s but %s's quantized_layers lists its module as %s", t->name, t->dtype, w->q.source,
                      ALG[algo]);
        return -1;
    }
    if (!lin) return bad(why, "%s is %s but is not a Linear weight (only Linears are converted)", t->name, t->dtype);
    if (!algo) {
        fd_buf_printf(why, "%s is quantized (%s) but %s's quantized_layers (MIXED_PRECISION) does not list its module",
                      t->name, t->dtype, w->q.source);
        return -1;
    }
    if (!conv) return bad(why, "%s is quantized but %s excludes its module (exclude_modules / ignore)", t->name, w->q.source);
    if ((algo == FD_MO_FP8) != f8) {
        fd_buf_printf(why, "%s is %s but %s's quantized_layers lists its module as %s (%s weights)", t->name, t->dtype,
                      w->q.source, ALG[algo], algo == FD_MO_FP8 ? "F8_E4M3" : "U8");
        return -1;
    }
    int rc = f8 ? bind_mo_fp8(w, t, want, why) : bind_nvfp4(w, t, want, why);
    if (rc == 1) w->nquant++;
    return rc;
}

int fd_wq_check_listed(const fd_weights *w, const char *dir, fd_err *e)
{
    for (size_t i = 0; i < w->q.mo_layers.n; i++) {
        fd_buf b = {0};
        fd_buf_printf(&b, "%s.weight", w->q.mo_layers.v[i]);
        const fd_tensor *t = fd_weights_get(w, fd_buf_cstr(&b));
        fd_buf_free(&b);
        if (!t)
            return fd_fail(e, "unsupported_quantization", "", "%s: quantized_layers lists %.200s, which the checkpoint "
                           "(%s) does not hold (no %.200s.weight)", w->q.source, w->q.mo_layers.v[i], dir,
                           w->q.mo_layers.v[i]);
    }
    return 0;
}

int fd_wq_bind(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    if (w->q.kind == FD_Q_NVFP4 && w->q.mo_layers.n) return bind_mo_mixed(w, t, want, why);
    if (w->q.kind == FD_Q_MLX) return bind_mlx(w, t, want, why);
    if (w->q.kind == FD_Q_CT_PACK) return bind_ct_any(w, t, want, why);
    if (w->q.kind == FD_Q_GPTQ || w->q.kind == FD_Q_AWQ) return bind_gq_any(w, t, want, why);
    if (w->q.kind == FD_Q_FP8_BLOCK && w->q.expert_fp4) return fd_wq_bind_release(w, t, want, why);
    int f8 = !strcmp(t->dtype, "F8_E4M3"), u8 = !strcmp(t->dtype, "U8");
    if (w->q.kind == FD_Q_GGUF || w->gguf) return 0; /* GGUF views are bound when the file is opened (gguf_model.c) */
    int lin = fd_q_is_linear_weight(t->name), excl = w->q.kind != FD_Q_NONE && fd_q_excluded(&w->q, QN(t));
    /* a head stored under another name (deepseek_v4's head.weight): transformers renames it to lm_head
     * before its quantizer decides, so the lm_head exclusions apply to it too; and a stored name that is
     * no Linear by name (capture/quantize_fmt.c's rule) was never offered for conversion */
    if (!excl && w->q.kind != FD_Q_NONE && t->qname && strcmp(t->qname, t->name) && !strcmp(t->name, "lm_head.weight"))
        excl = fd_q_excluded(&w->q, t->name) || !fd_q_is_linear_weight(t->qname);
    if (!f8 && !u8) {
        if (w->q.kind == FD_Q_NONE || !lin || excl) return 0;
        fd_buf_printf(why, "%s is %s but quantization_config (%s) converts it (a loader expects a quantized weight and "
                      "its scales)", t->name, t->dtype, w->q.source);
        return -1;
    }
    if (w->q.kind == FD_Q_NONE) return 0; /* a plain dtype mismatch: reported as mis-shaped */
    if ((f8 && w->q.kind != FD_Q_FP8_BLOCK) || (u8 && w->q.kind != FD_Q_NVFP4)) {
        fd_buf_printf(why, "%s is %s but quantization_config (%s) declares %s", t->name, t->dtype, w->q.source,
                      w->q.kind == FD_Q_FP8_BLOCK ? "fp8 (F8_E4M3 weights)" : "modelopt NVFP4 (U8 weights)");
        return -1;
    }
    if (!lin) return bad(why, "%s is %s but is not a Linear weight (only Linears are converted)", t->name, t->dtype);
    if (excl) return bad(why, "%s is quantized but quantization_config (%s) leaves its module unconverted", t->name, w->q.source);
    int rc = f8 ? fd_wq_bind_fp8(w, t, want, why) : bind_nvfp4(w, t, want, why);
    if (rc == 1) w->nquant++;
    return rc;
}

int fd_wq_is_companion(const fd_weights *w, const char *name)
{
    static const struct { const char *suffix; fd_qkind k; } C[] = {
        {".weight_scale_inv", FD_Q_FP8_BLOCK}, {".scale", FD_Q_FP8_BLOCK}, {".weight_scale_inv", FD_Q_FP4_E8},
        {".scale", FD_Q_FP4_E8}, {".weight_scale_2", FD_Q_NVFP4},
        {".weight_scale", FD_Q_NVFP4}, {".input_scale", FD_Q_NVFP4}, {".weight_scale", FD_Q_MO_FP8},
        {".input_scale", FD_Q_MO_FP8},
        {".weight_scale", FD_Q_CT_PACK}, {".weight_shape", FD_Q_CT_PACK}, {".weight_zero_point", FD_Q_CT_PACK},
        {".input_scale", FD_Q_CT_PACK}, {".input_zero_point", FD_Q_CT_PACK}, {".weight_global_scale", FD_Q_CT_PACK},
        {".input_global_scale", FD_Q_CT_PACK},
        {".qzeros", FD_Q_GPTQ}, {".scales", FD_Q_GPTQ}, {".g_idx", FD_Q_GPTQ}, {".qzeros", FD_Q_AWQ},
        {".scales", FD_Q_AWQ}, {".scales", FD_Q_MLX}, {".biases", FD_Q_MLX}};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
        size_t l = strlen(C[i].suffix);
        if (n <= l || strcmp(name + n - l, C[i].suffix)) continue;
        fd_buf b = {0};
        fd_buf_printf(&b, "%.*s.weight", (int)(n - l), name);
        const fd_tensor *t = fd_weights_get(w, fd_buf_cstr(&b));
        fd_buf_free(&b);
        if (!t || t->qfmt != C[i].k) continue;
        if (C[i].k == FD_Q_CT_PACK && !strcmp(C[i].suffix, ".weight_shape") && t->ct.dense) continue;
        if (C[i].k == FD_Q_CT_PACK && (!strcmp(C[i].suffix, ".input_scale") || !strcmp(C[i].suffix, ".input_zero_point")
                                       || !strcmp(C[i].suffix, ".input_global_scale")))
            return t->ct.acts; /* static activation scales: declared, not applied */
        if (C[i].k == FD_Q_CT_PACK && !strcmp(C[i].suffix, ".weight_global_scale")) return t->ct.dense == FD_CT_NVFP4;
        return C[i].k != FD_Q_CT_PACK || strcmp(C[i].suffix, ".weight_zero_point") || t->zero;
    }
    return 0;
}

void fd_tensor_row_bf16(const fd_tensor *t, uint64_t row, uint64_t K, uint16_t *out)
{
    const unsigned char *p = t->data;
    if (t->qfmt == FD_Q_FP8_BLOCK && !strcmp(t->scale->dtype, "F8_E8M0"))
        fd_fp8_block_row_bf16_e8m0(p, t->scale->data, K, t->scale->shape[1], t->bm, t->bn, row, out);
    else if (t->qfmt == FD_Q_FP8_BLOCK)
        fd_fp8_block_row_bf16(p, t->scale->data, K, t->scale->shape[1], t->bm, t->bn, row, out);
    else if (t->qfmt == FD_Q_FP4_E8) fd_ct_mxfp4_row_bf16(p, t->scale->data, K, row, out);
    else if (t->qfmt == FD_Q_NVFP4)
        fd_nvfp4_row_bf16(p, t->scale->data, t->scale2, K, row, out);
    else if (t->qfmt == FD_Q_MO_FP8)
        fd_mo_fp8_row_bf16(p, t->scale2, K, row, out);
    else if (t->qfmt == FD_Q_GGUF)
        fd_gguf_row_bf16(t, row, K, out);
    else if (t->qfmt == FD_Q_MLX) {
        fd_mlx_row m = mlx_row_of(t);
        fd_mlx_row_bf16(&m, K, row, out);
    }
    else if (t->qfmt == FD_Q_GPTQ || t->qfmt == FD_Q_AWQ) {
        const char *sd = t->scale->dtype;
        fd_gq_row c = {p, t->zero->data, t->scale->data, t->gidx ? t->gidx->data : NULL, t->lshape[0],
                       !strcmp(sd, "BF16") ? 0 : !strcmp(sd, "F16") ? 1 : 2, t->ct.bits, t->ct.group, t->ct.v1,
                       t->qfmt == FD_Q_AWQ};
        fd_gq_row_bf16(&c, K, row, out);
    } else if (t->qfmt == FD_Q_CT_PACK && t->ct.dense == FD_CT_NVFP4)
        fd_ct_nvfp4_row_bf16(p, t->scale->data, t->scale2, K, row, out);
    else if (t->qfmt == FD_Q_CT_PACK && t->ct.dense == FD_CT_MXFP4)
        fd_ct_mxfp4_row_bf16(p, t->scale->data, K, row, out);
    else if (t->qfmt == FD_Q_CT_PACK) {
        const char *sd = t->scale->dtype;
        fd_ct_row c = {p, t->scale->data, t->zero ? t->zero->data : NULL, t->shape[1],
                       t->scale->ndim == 2 ? t->scale->shape[1] : 1, t->zero && t->zero->ndim == 2 ? t->zero->shape[1] : 0,
                       !strcmp(sd, "BF16") ? 0 : !strcmp(sd, "F16") ? 1 : 2, t->ct.bits, t->ct.strategy, t->ct.group,
                       t->ct.bh, t->ct.bw, t->ct.dense};
        fd_ct_row_bf16(&c, K, row, out);
    }
    else if (!strcmp(t->dtype, "BF16"))
        memcpy(out, p + row * K * 2, K * 2);
    else
        for (uint64_t k = 0; k < K; k++) {
            float f;
            memcpy(&f, p + (row * K + k) * 4, 4);
            out[k] = fd_f32_to_bf16(f);
        }
}
