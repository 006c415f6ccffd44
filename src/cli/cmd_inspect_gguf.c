/* inspect-model FILE.gguf [--json]: a GGUF model (one file or a split set
 * from its first file): format, architecture, a metadata summary, every
 * tensor with its ggml type and shape, the census of types, and the bits
 * per weight.  Exit 0 ok, 3 refused.
 *
 * Bits per weight (docs/QUANT-FORMATS.md, "GGUF"): a type's nominal bits are
 * its block bytes x 8 / block elements (Q4_K: 144 x 8 / 256 = 4.5); the
 * file's nominal bits are those of its predominant quantized type (the one
 * holding the most quantized elements; ties go to the type with more bits per
 * weight, then to the lower type id); effective bits are the bytes of the
 * quantized tensors x 8 / their elements, and over all tensors the same
 * ratio with every tensor counted.
 *
 * The model line: which architecture reads the file (the fd_arch whose GGUF
 * table names general.architecture) and whether `capture --model` opens it
 * (engine/gguf_model.c: config from the metadata, every tensor mapped), or
 * the code and message a capture would refuse it with. */
#include "cli.h"
#include "engine/gguf_model.h"
#include "engine/model.h"
#include "format/ggml_quants.h"
#include "format/gguf.h"
#include "format/json.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* printable ASCII, the rest as \xNN, cut at max bytes */
static void summary_bytes(fd_buf *b, const uint8_t *s, uint64_t n, uint64_t max)
{
    for (uint64_t i = 0; i < n && i < max; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\') fd_buf_putc(b, (char)s[i]);
        else fd_buf_printf(b, "\\x%02x", s[i]);
    }
    if (n > max) fd_buf_printf(b, "...(%llu bytes)", (unsigned long long)n);
}

static void scalar_text(fd_buf *b, uint32_t type, const fd_gguf_kv *kv)
{
    switch (type) {
    case FD_GGUF_U8: case FD_GGUF_U16: case FD_GGUF_U32: case FD_GGUF_U64:
        fd_buf_printf(b, "%llu", (unsigned long long)kv->v.u);
        break;
    case FD_GGUF_I8: case FD_GGUF_I16: case FD_GGUF_I32: case FD_GGUF_I64:
        fd_buf_printf(b, "%lld", (long long)kv->v.i);
        break;
    case FD_GGUF_F32: case FD_GGUF_F64: fd_buf_printf(b, "%.9g", kv->v.f); break;
    case FD_GGUF_BOOL: fd_buf_puts(b, kv->v.u ? "true" : "false"); break;
    case FD_GGUF_STRING: summary_bytes(b, kv->str, kv->len, 120); break;
    }
}

static char *kv_summary(const fd_gguf_kv *kv)
{
    fd_buf b = {0};
    if (kv->type == FD_GGUF_ARRAY) {
        fd_buf_printf(&b, "[%s x %llu]", fd_gguf_vtype_name(kv->atype), (unsigned long long)kv->alen);
        if (kv->atype == FD_GGUF_STRING && kv->alen) {
            const uint8_t *s;
            uint64_t len;
            fd_gguf_arr_str(kv, 0, &s, &len);
            fd_buf_puts(&b, " first: ");
            summary_bytes(&b, s, len, 40);
        }
    } else scalar_text(&b, kv->type, kv);
    return fd_buf_cstr(&b);
}

typedef struct census {
    const fd_ggml_type *t;
    uint64_t tensors, elems, bytes;
} census;

/* the type census of a GGUF set and its bits per weight (docs/QUANT-FORMATS.md "GGUF") */
typedef struct gcensus {
    census cs[64];
    size_t ncs;
    uint64_t all_e, all_b, q_e, q_b;
    const census *major;
    double nominal, eff_q, eff_all;
} gcensus;

/* which architecture reads the file and whether capture opens it */
typedef struct gmodel {
    const char *mt; /* model_type, NULL: no architecture names general.architecture */
    int cap_rc;     /* 0: capture --model opens it; else the refusal in me */
    fd_err me;
} gmodel;

/* the model_type reading general.architecture arch, NULL when none */
static const char *model_type_of(const char *arch)
{
    for (size_t i = 0; arch && i < FD_N_ARCHS; i++)
        for (const char *const *n = FD_ARCHS[i]->gguf ? FD_ARCHS[i]->gguf->names : NULL; n && *n; n++)
            if (!strcmp(*n, arch)) return FD_ARCHS[i]->info.model_type;
    return NULL;
}

static void print_refused(const fd_err *e, int as_json)
{
    if (!as_json) { printf("REFUSED [%s]: %s\n", e->code, e->msg); return; }
    jv *o = jv_obj(), *r = jv_obj();
    jv_set(o, "ok", jv_bool(0));
    jv_set(r, "code", jv_str(e->code));
    jv_set(r, "message", jv_str(e->msg));
    jv_set(o, "refused", r);
    fd_buf b = {0};
    fd_err je;
    if (!jv_dump(o, &JV_PRETTY, &b, &je)) printf("%s\n", fd_buf_cstr(&b));
    fd_buf_free(&b);
    jv_free(o);
    fprintf(stderr, "REFUSED [%s]: %s\n", e->code, e->msg);
}

static void take_census(const fd_gguf_set *sp, gcensus *g)
{
    const fd_gguf_set *s = sp;
    census *cs = g->cs;
    size_t ncs = 0;
    uint64_t all_e = 0, all_b = 0, q_e = 0, q_b = 0;
    for (size_t i = 0; i < s->nt; i++) {
        const fd_gguf_tensor *t = s->t[i];
        const fd_ggml_type *gt = fd_ggml_type_of(t->type);
        size_t k = 0;
        while (k < ncs && cs[k].t != gt) k++;
        if (k == ncs && ncs < sizeof g->cs / sizeof *g->cs) cs[ncs++] = (census){gt, 0, 0, 0};
        if (k < ncs) {
            cs[k].tensors++;
            cs[k].elems += t->nelem;
            cs[k].bytes += t->nbytes;
        }
        all_e += t->nelem;
        all_b += t->nbytes;
        if (gt->quantized) {
            q_e += t->nelem;
            q_b += t->nbytes;
        }
    }
    const census *major = NULL;
    for (size_t k = 0; k < ncs; k++) { /* most elements; ties: more bits per weight, then the lower type id */
        if (!cs[k].t->quantized) continue;
        double bk = (double)cs[k].t->tsize / cs[k].t->blck, bm = major ? (double)major->t->tsize / major->t->blck : 0;
        if (!major || cs[k].elems > major->elems ||
            (cs[k].elems == major->elems && (bk > bm || (bk == bm && cs[k].t->id < major->t->id))))
            major = &cs[k];
    }
    double nominal = major ? (double)major->t->tsize * 8.0 / major->t->blck : 0;
    double eff_q = q_e ? (double)q_b * 8.0 / (double)q_e : 0, eff_all = all_e ? (double)all_b * 8.0 / (double)all_e : 0;
    g->ncs = ncs;
    g->all_e = all_e;
    g->all_b = all_b;
    g->q_e = q_e;
    g->q_b = q_b;
    g->major = major;
    g->nominal = nominal;
    g->eff_q = eff_q;
    g->eff_all = eff_all;
}

static void print_json(const fd_gguf_set *sp, const char *arch, const gcensus *g, const gmodel *gm)
{
    const fd_gguf_set *s = sp;
    const fd_gguf_file *f0 = &s->f[0];
    const census *cs = g->cs, *major = g->major;
    size_t ncs = g->ncs;
    double nominal = g->nominal, eff_q = g->eff_q, eff_all = g->eff_all;
    uint64_t q_e = g->q_e, q_b = g->q_b, all_e = g->all_e, all_b = g->all_b;
    jv *o = jv_obj(), *md = jv_obj(), *ts = jv_arr(), *cj = jv_obj(), *files = jv_arr();
    jv_set(o, "format", jv_str("gguf"));
    jv_set(o, "version", jv_int(f0->version));
    for (size_t i = 0; i < s->n; i++) jv_push(files, jv_str(s->f[i].path));
    jv_set(o, "files", files);
    jv_set(o, "architecture", arch ? jv_str(arch) : jv_null());
    for (size_t i = 0; i < f0->nkv; i++) {
        char *v = kv_summary(&f0->kv[i]);
        jv *m = jv_obj();
        jv_set(m, "type", jv_str(fd_gguf_vtype_name(f0->kv[i].type)));
        jv_set(m, "value", jv_str(v));
        jv_set(md, f0->kv[i].key, m);
        free(v);
    }
    jv_set(o, "metadata", md);
    for (size_t i = 0; i < s->nt; i++) {
        const fd_gguf_tensor *t = s->t[i];
        jv *tj = jv_obj(), *ne = jv_arr();
        jv_set(tj, "name", jv_str(t->name));
        jv_set(tj, "type", jv_str(fd_ggml_type_of(t->type)->name));
        for (int k = 0; k < t->ndim; k++) jv_push(ne, jv_int((int64_t)t->ne[k]));
        jv_set(tj, "ne", ne);
        jv_set(tj, "elements", jv_int((int64_t)t->nelem));
        jv_set(tj, "bytes", jv_int((int64_t)t->nbytes));
        jv_set(tj, "file", jv_int(t->file));
        jv_set(tj, "offset", jv_int((int64_t)t->offset));
        jv_push(ts, tj);
    }
    jv_set(o, "tensors", ts);
    for (size_t k = 0; k < ncs; k++) {
        jv *c = jv_obj();
        jv_set(c, "tensors", jv_int((int64_t)cs[k].tensors));
        jv_set(c, "elements", jv_int((int64_t)cs[k].elems));
        jv_set(c, "bytes", jv_int((int64_t)cs[k].bytes));
        jv_set(c, "nominal_bits", jv_float((double)cs[k].t->tsize * 8.0 / cs[k].t->blck));
        jv_set(c, "quantized", jv_bool(cs[k].t->quantized));
        jv_set(cj, cs[k].t->name, c);
    }
    jv_set(o, "census", cj);
    jv *bp = jv_obj();
    jv_set(bp, "nominal_type", major ? jv_str(major->t->name) : jv_null());
    jv_set(bp, "nominal", jv_float(nominal));
    jv_set(bp, "effective_quantized", jv_float(eff_q));
    jv_set(bp, "effective_all", jv_float(eff_all));
    jv_set(bp, "quantized_elements", jv_int((int64_t)q_e));
    jv_set(bp, "quantized_bytes", jv_int((int64_t)q_b));
    jv_set(bp, "elements", jv_int((int64_t)all_e));
    jv_set(bp, "bytes", jv_int((int64_t)all_b));
    jv_set(o, "bits_per_weight", bp);
    jv *mo = jv_obj();
    jv_set(mo, "model_type", gm->mt ? jv_str(gm->mt) : jv_null());
    jv_set(mo, "capturable", jv_bool(!gm->cap_rc));
    if (gm->cap_rc) {
        jv_set(mo, "code", jv_str(gm->me.code));
        jv_set(mo, "message", jv_str(gm->me.msg));
    }
    jv_set(o, "model", mo);
    jv_set(o, "ok", jv_bool(1));
    fd_buf b = {0};
    fd_err je;
    if (!jv_dump(o, &JV_PRETTY, &b, &je)) printf("%s\n", fd_buf_cstr(&b));
    fd_buf_free(&b);
    jv_free(o);
}

static void print_text(const fd_gguf_set *sp, const char *arch, const gcensus *g, const gmodel *gm)
{
    const fd_gguf_set *s = sp;
    const fd_gguf_file *f0 = &s->f[0];
    const census *cs = g->cs, *major = g->major;
    size_t ncs = g->ncs;
    double nominal = g->nominal, eff_q = g->eff_q, eff_all = g->eff_all;
    printf("format gguf v%u, %zu file(s), %zu tensors, %zu metadata keys\n", f0->version, s->n, s->nt, f0->nkv);
    printf("architecture %s\n", arch ? arch : "(none)");
    for (size_t i = 0; i < f0->nkv; i++) {
        char *v = kv_summary(&f0->kv[i]);
        printf("meta %s (%s) = %s\n", f0->kv[i].key, fd_gguf_vtype_name(f0->kv[i].type), v);
        free(v);
    }
    for (size_t i = 0; i < s->nt; i++) {
        const fd_gguf_tensor *t = s->t[i];
        printf("tensor %s %s ne [", t->name, fd_ggml_type_of(t->type)->name);
        for (int k = 0; k < t->ndim; k++) printf("%s%llu", k ? ", " : "", (unsigned long long)t->ne[k]);
        printf("] %llu bytes (file %d)\n", (unsigned long long)t->nbytes, t->file + 1);
    }
    for (size_t k = 0; k < ncs; k++)
        printf("census %s: %llu tensors, %llu elements, %llu bytes, %.4g nominal bits%s\n", cs[k].t->name,
               (unsigned long long)cs[k].tensors, (unsigned long long)cs[k].elems, (unsigned long long)cs[k].bytes,
               (double)cs[k].t->tsize * 8.0 / cs[k].t->blck, cs[k].t->quantized ? "" : " (not quantized)");
    printf("bits per weight: nominal %.4g (%s), effective %.4f over the quantized tensors, %.4f over all\n", nominal,
           major ? major->t->name : "no quantized tensor", eff_q, eff_all);
    if (gm->mt) printf("model general.architecture %s is read as model_type %s\n", arch, gm->mt);
    else printf("model general.architecture %s has no GGUF name table\n", arch ? arch : "(none)");
    if (gm->cap_rc) printf("capture would be refused (%s): %s\n", gm->me.code, gm->me.msg);
    else printf("capture --model reads it (every tensor mapped, config from the metadata)\n");
    printf("OK\n");
}

int fd_inspect_gguf(const char *path, int as_json)
{
    fd_err e;
    fd_err_clear(&e);
    fd_gguf_set s;
    if (fd_gguf_set_open(path, &s, &e)) {
        print_refused(&e, as_json);
        return FD_EXIT_REFUSED;
    }
    char *arch = fd_gguf_get_str(&s.f[0], "general.architecture");
    gcensus g;
    memset(&g, 0, sizeof g);
    take_census(&s, &g);
    gmodel gm = {.mt = model_type_of(arch)};
    fd_err_clear(&gm.me);
    gm.cap_rc = fd_gguf_model_probe(path, &gm.me); /* capture's open, without decoding a quantized head */
    if (as_json) print_json(&s, arch, &g, &gm);
    else print_text(&s, arch, &g, &gm);
    free(arch);
    fd_gguf_set_close(&s);
    return FD_EXIT_OK;
}
