/* `fidelity quantize --format gguf` (capture/quantize_gguf.h). */
#include "capture/quantize_gguf.h"
#include "engine/config.h"
#include "engine/gguf_model.h"
#include "engine/model.h"
#include "engine/ops/ops.h"
#include "engine/qformat.h"
#include "engine/weights.h"
#include "format/ggml_quants.h"
#include "format/gguf.h"
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
#include <sys/stat.h>
#include <unistd.h>

#define ALIGN 32 /* general.alignment's default */

/* ------------------------------------------------------------ ggml's reference blocks */

void fd_q8_0_block(const float *x, unsigned char *out)
{
    float amax = 0;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127, id = d != 0 ? 1.0f / d : 0.0f;
    uint16_t h = fd_f32_to_f16(d);
    out[0] = (unsigned char)(h & 0xff), out[1] = (unsigned char)(h >> 8);
    for (int j = 0; j < 32; j++) out[2 + j] = (unsigned char)(int8_t)roundf(x[j] * id);
}

void fd_q4_0_block(const float *x, unsigned char *out)
{
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]), max = x[j]; /* the first of the largest */
    const float d = max / -8, id = d != 0 ? 1.0f / d : 0.0f;
    uint16_t h = fd_f32_to_f16(d);
    out[0] = (unsigned char)(h & 0xff), out[1] = (unsigned char)(h >> 8);
    unsigned char q[32];
    for (int j = 0; j < 32; j++) {
        int v = (int)truncf(x[j] * id + 8.5f);
        q[j] = (unsigned char)(v < 0 ? 0 : v > 15 ? 15 : v);
    }
    for (int j = 0; j < 16; j++) out[2 + j] = (unsigned char)(q[j] | (q[j + 16] << 4));
}

/* Q5_0 (llama-quantize's fallback of Q4_K on rows not a multiple of 256):
 * quantize_row_q5_0_ref, fp16 d, 4 bytes of fifth bits, 16 of nibbles. */
void fd_q5_0_block(const float *x, unsigned char *out)
{
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
    const float d = max / -16, id = d != 0 ? 1.0f / d : 0.0f;
    uint16_t h = fd_f32_to_f16(d);
    out[0] = (unsigned char)(h & 0xff), out[1] = (unsigned char)(h >> 8);
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        int a = (int8_t)(x[j] * id + 16.5f), b = (int8_t)(x[j + 16] * id + 16.5f);
        unsigned xa = (unsigned)(a < 31 ? a : 31), xb = (unsigned)(b < 31 ? b : 31);
        out[6 + j] = (unsigned char)((xa & 15) | ((xb & 15) << 4));
        qh |= ((xa & 16u) >> 4) << j;
        qh |= ((xb & 16u) >> 4) << (j + 16);
    }
    for (int k = 0; k < 4; k++) out[2 + k] = (unsigned char)(qh >> (8 * k));
}

/* ggml's nearest_int: the float plus 1.5 x 2^23, its low mantissa bits */
static int nearest(float f)
{
    float v = f + 12582912.f;
    int32_t i;
    memcpy(&i, &v, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

/* make_qkx2_quants(32, 15, x, w, L, &min, Laux, -1, 0.1, 20, false): a
 * 4-bit scale and min for 32 values, searched over 21 scales */
static float qkx2(const float *x, const float *w, uint8_t *L, float *the_min)
{
    float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
    for (int i = 1; i < 32; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(L, 0, 32);
        *the_min = -min;
        return 0.f;
    }
    float iscale = 15 / (max - min), scale = 1 / iscale, best = 0;
    for (int i = 0; i < 32; i++) {
        int l = nearest(iscale * (x[i] - min));
        L[i] = (uint8_t)(l < 0 ? 0 : l > 15 ? 15 : l);
        float diff = scale * L[i] + min - x[i];
        best += w[i] * (diff * diff);
    }
    uint8_t La[32];
    for (int is = 0; is <= 20; is++) {
        iscale = (-1.f + 0.1f * is + 15) / (max - min);
        float sl = 0, sl2 = 0, sxl = 0;
        for (int i = 0; i < 32; i++) {
            int l = nearest(iscale * (x[i] - min));
            l = l < 0 ? 0 : l > 15 ? 15 : l;
            La[i] = (uint8_t)l;
            sl += w[i] * l;
            sl2 += w[i] * l * l;
            sxl += w[i] * l * x[i];
        }
        float D = sum_w * sl2 - sl * sl;
        if (D > 0) {
            float ts = (sum_w * sxl - sum_x * sl) / D, tm = (sl2 * sum_x - sl * sxl) / D;
            if (tm > 0) tm = 0, ts = sxl / sl2;
            float err = 0;
            for (int i = 0; i < 32; i++) {
                float diff = ts * La[i] + tm - x[i];
                err += w[i] * (diff * diff);
            }
            if (err < best) memcpy(L, La, 32), best = err, scale = ts, min = tm;
        }
    }
    *the_min = -min;
    return scale;
}

/* Q4_K (quantize_row_q4_K_ref, llama-quantize's Q4_K without an imatrix):
 * 256 values as fp16 d, fp16 dmin, 12 bytes of 6-bit scales / mins, 128 of nibbles */
void fd_q4_k_block(const float *x, unsigned char *out)
{
    uint8_t L[256], *sc = out + 4;
    float w[32], mins[8], scales[8], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        float s2 = 0;
        for (int l = 0; l < 32; l++) s2 += x[32 * j + l] * x[32 * j + l];
        float av = sqrtf(s2 / 32);
        for (int l = 0; l < 32; l++) w[l] = av + fabsf(x[32 * j + l]);
        scales[j] = qkx2(x + 32 * j, w, L + 32 * j, &mins[j]);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    float inv_s = max_scale > 0 ? 63.f / max_scale : 0.f, inv_m = max_min > 0 ? 63.f / max_min : 0.f;
    memset(sc, 0, 12);
    for (int j = 0; j < 8; j++) {
        uint8_t ls = (uint8_t)nearest(inv_s * scales[j]), lm = (uint8_t)nearest(inv_m * mins[j]);
        ls = ls < 63 ? ls : 63, lm = lm < 63 ? lm : 63;
        if (j < 4) sc[j] = ls, sc[j + 4] = lm;
        else {
            sc[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
            sc[j - 4] |= (uint8_t)((ls >> 4) << 6);
            sc[j] |= (uint8_t)((lm >> 4) << 6);
        }
    }
    uint16_t hd = fd_f32_to_f16(max_scale / 63.f), hm = fd_f32_to_f16(max_min / 63.f);
    out[0] = (unsigned char)(hd & 0xff), out[1] = (unsigned char)(hd >> 8);
    out[2] = (unsigned char)(hm & 0xff), out[3] = (unsigned char)(hm >> 8);
    for (int j = 0; j < 8; j++) {
        int s = j < 4 ? sc[j] & 63 : (sc[j + 4] & 0xF) | ((sc[j - 4] >> 6) << 4);
        int m = j < 4 ? sc[j + 4] & 63 : (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
        const float d = fd_f16_to_f32(hd) * s;
        if (!d) continue;
        const float dm = fd_f16_to_f32(hm) * m;
        for (int i = 0; i < 32; i++) {
            int l = nearest((x[32 * j + i] + dm) / d);
            L[32 * j + i] = (uint8_t)(l < 0 ? 0 : l > 15 ? 15 : l);
        }
    }
    for (int j = 0; j < 256; j += 64)
        for (int l = 0; l < 32; l++) out[16 + j / 2 + l] = (unsigned char)(L[j + l] | (L[j + l + 32] << 4));
}

/* ------------------------------------------------------------ the tensor plan */

enum { SRC_ONE, SRC_EXPERTS, SRC_K_B, SRC_V_B, SRC_PERMUTE, SRC_AUX };

typedef struct gt {
    char name[128], hf[192];   /* GGUF name; the HF name --match reads */
    int ndim, src_kind;
    uint64_t ne[4];            /* GGUF order (ne[0] the row) */
    uint32_t type;
    uint64_t nbytes, off;
    const fd_tensor *src;      /* SRC_ONE, SRC_K_B, SRC_V_B */
    const fd_tensor **experts; /* SRC_EXPERTS, in expert order */
    size_t nexp;
    uint64_t heads;            /* SRC_PERMUTE: llama.cpp's q/k permute over this many heads */
    float *aux;                /* SRC_AUX: the values (owned) */
} gt;

typedef struct plan {
    const fd_qg_opts *o;
    const fd_glm_config *c;
    const fd_weights *w;
    const fd_gguf_arch *ga;
    uint32_t qtype;            /* FD_GGML_BF16, _Q8_0, _Q4_0 */
    gt *t;
    size_t n, cap;
    fd_err *e;
    int failed;
    fd_buf tokjson;            /* the checkpoint's tokenizer.json bytes, embedded; empty when none */
} plan;

static gt *add(plan *p, const char *name)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->t = fd_xrealloc(p->t, p->cap * sizeof *p->t);
    }
    gt *g = &p->t[p->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->name, sizeof g->name, "%s", name);
    return g;
}

/* The planned tensor named name, searched from the newest: a layer's expert
 * stacks are the last few entries while its experts arrive, so a model of
 * tens of thousands of expert tensors is not searched end to end each time. */
static gt *find(plan *p, const char *name)
{
    for (size_t i = p->n; i-- > 0;)
        if (!strcmp(p->t[i].name, name)) return &p->t[i];
    return NULL;
}

static void fail(plan *p, const char *code, const char *fmt, const char *a, const char *b)
{
    if (!p->failed) fd_fail(p->e, code, "", fmt, a, b);
    p->failed = 1;
}

/* One tensor of the architecture's list into the plan. */
static void plan_tensor(void *ctx, const fd_tensor_spec *s)
{
    plan *p = ctx;
    if (p->failed) return;
    const fd_tensor *t = fd_weights_get(p->w, s->name);
    if (!t) {
        if (!strcmp(s->name, "lm_head.weight") && p->c->tie_word_embeddings) return;
        return fail(p, "checkpoint_mismatch", "%s: tensor %s is missing", p->o->src, s->name);
    }
    const fd_gguf_name *m = p->ga->map;
    long long L = -1, E = -1;
    for (; m->hf && !fd_gguf_name_match(m->hf, s->name, &L, &E); m++) {}
    if (!m->hf) return fail(p, "gguf_write_unsupported", "%s: tensor %s has no GGUF name in the architecture's table",
                            p->o->src, s->name);
    char gn[128];
    fd_gguf_name_expand(m->gguf, L, gn, sizeof gn);
    if (m->kind == FD_GG_KV_B) {
        uint64_t nh = (uint64_t)p->c->num_attention_heads, dn = (uint64_t)p->c->qk_nope_head_dim,
                 dv = (uint64_t)p->c->v_head_dim, r = (uint64_t)p->c->kv_lora_rank;
        if (t->ndim != 2 || t->shape[0] != nh * (dn + dv) || t->shape[1] != r)
            return fail(p, "checkpoint_mismatch", "%s: %s is not [heads * (qk_nope + v), kv_lora_rank]", p->o->src, s->name);
        gt *k = add(p, gn);
        k->src_kind = SRC_K_B, k->src = t, k->ndim = 3, k->ne[0] = dn, k->ne[1] = r, k->ne[2] = nh;
        snprintf(k->hf, sizeof k->hf, "%s", s->name);
        fd_gguf_name_expand(m->gguf2, L, gn, sizeof gn);
        gt *v = add(p, gn);
        v->src_kind = SRC_V_B, v->src = t, v->ndim = 3, v->ne[0] = r, v->ne[1] = dv, v->ne[2] = nh;
        snprintf(v->hf, sizeof v->hf, "%s", s->name);
        return;
    }
    if (m->kind == FD_GG_PERMUTE) { /* LlamaModel.permute: rows of each head interleaved for llama.cpp's RoPE */
        uint64_t heads = (uint64_t)(strstr(s->name, "k_proj") ? p->c->num_key_value_heads : p->c->num_attention_heads);
        if (t->ndim != 2 || !heads || t->shape[0] % (2 * heads))
            return fail(p, "gguf_write_unsupported", "%s: %s is not a q/k weight the converter permutes", p->o->src, s->name);
        gt *g = add(p, gn);
        g->src_kind = SRC_PERMUTE, g->src = t, g->ndim = 2, g->ne[0] = t->shape[1], g->ne[1] = t->shape[0], g->heads = heads;
        snprintf(g->hf, sizeof g->hf, "%s", s->name);
        return;
    }
    if (m->kind != FD_GG_ROWS || t->ndim < 1 || t->ndim > 3)
        return fail(p, "gguf_write_unsupported", "%s: tensor %s needs a layout the GGUF writer does not have", p->o->src,
                    s->name);
    if (E >= 0) { /* a routed expert: one stacked [E, rows, cols] tensor, experts in order */
        gt *g = find(p, gn);
        if (!g) {
            g = add(p, gn);
            g->src_kind = SRC_EXPERTS, g->ndim = 3, g->ne[0] = t->shape[1], g->ne[1] = t->shape[0];
            snprintf(g->hf, sizeof g->hf, "%s", s->name);
        }
        if (t->ndim != 2 || (uint64_t)E != g->nexp || t->shape[1] != g->ne[0] || t->shape[0] != g->ne[1])
            return fail(p, "checkpoint_mismatch", "%s: expert tensor %s is out of order or shaped unlike expert 0",
                        p->o->src, s->name);
        g->experts = fd_xrealloc(g->experts, (g->nexp + 1) * sizeof *g->experts);
        g->experts[g->nexp++] = t;
        g->ne[2] = g->nexp;
        return;
    }
    gt *g = add(p, gn);
    g->src_kind = SRC_ONE, g->src = t, g->ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) g->ne[d] = t->shape[t->ndim - 1 - d];
    snprintf(g->hf, sizeof g->hf, "%s", s->name);
}

static int selected(const plan *p, const gt *g)
{
    if (!p->o->npatterns) return 1;
    for (size_t i = 0; i < p->o->npatterns; i++)
        if (strstr(g->hf, p->o->patterns[i])) return 1;
    return 0;
}

/* As convert_hf_to_gguf.py's prepare_tensors chooses: F32 for 1-D tensors,
 * names ending _norm.weight or not in .weight, the router ffn_gate_inp and
 * the DSA indexer.proj (and, ours, an F32 source: never rounded); else the
 * quantized type where --match selects, F16 when the row is not whole
 * blocks of 32 (the converter's QuantError fallback); else BF16. */
static void choose_types(plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        gt *g = &p->t[i];
        if (g->src_kind == SRC_AUX) { g->type = FD_GGML_F32, g->nbytes = g->ne[0] * sizeof(float); continue; }
        const fd_tensor *src = g->src ? g->src : g->experts[0];
        uint64_t rows = 1;
        for (int d = 1; d < g->ndim; d++) rows *= g->ne[d];
        size_t nl = strlen(g->name);
        int f32 = g->ndim == 1 || (nl >= 12 && !strcmp(g->name + nl - 12, "_norm.weight")) ||
                  nl < 7 || strcmp(g->name + nl - 7, ".weight") || strstr(g->name, "ffn_gate_inp") ||
                  strstr(g->name, "indexer.proj.") || !strcmp(src->dtype, "F32");
        int q = !f32 && p->qtype != FD_GGML_BF16 && selected(p, g);
        g->type = f32 ? FD_GGML_F32 : !q ? FD_GGML_BF16 : g->ne[0] % 32 ? FD_GGML_F16
                 : p->qtype == FD_GGML_Q4_K && g->ne[0] % 256 ? FD_GGML_Q5_0 : p->qtype; /* llama-quantize's fallbacks */
        uint64_t row = 0;
        fd_ggml_row_bytes(fd_ggml_type_of(g->type), g->ne[0], &row); /* whole blocks by the choice above */
        g->nbytes = row * rows;
    }
}

/* Row r of g (ne[0] values) as float32 from its source. */
static void source_row(const plan *p, const gt *g, uint64_t r, float *x)
{
    uint64_t n = g->ne[0];
    if (g->src_kind == SRC_AUX) {
        memcpy(x, g->aux, n * sizeof *x);
    } else if (g->src_kind == SRC_PERMUTE) { /* GGUF row h*hd + 2j + i is HF row h*hd + i*hd/2 + j */
        uint64_t hd = g->ne[1] / g->heads, h = r / hd, m = r % hd, hr = h * hd + (m % 2) * (hd / 2) + m / 2;
        for (uint64_t j = 0; j < n; j++) x[j] = fd_tensor_f32_at(g->src, hr * n + j);
    } else if (g->src_kind == SRC_ONE) {
        for (uint64_t j = 0; j < n; j++) x[j] = fd_tensor_f32_at(g->src, r * n + j);
    } else if (g->src_kind == SRC_EXPERTS) {
        const fd_tensor *t = g->experts[r / g->ne[1]];
        uint64_t rr = r % g->ne[1];
        for (uint64_t j = 0; j < n; j++) x[j] = fd_tensor_f32_at(t, rr * n + j);
    } else { /* kv_b_proj [nh*(dn+dv), rkv]: k_b [nh][rkv][dn] = rows h*(dn+dv)+j transposed, v_b [nh][dv][rkv] */
        uint64_t dn = (uint64_t)p->c->qk_nope_head_dim, dv = (uint64_t)p->c->v_head_dim, rk = (uint64_t)p->c->kv_lora_rank;
        if (g->src_kind == SRC_K_B) {
            uint64_t h = r / rk, ri = r % rk;
            for (uint64_t j = 0; j < n; j++) x[j] = fd_tensor_f32_at(g->src, (h * (dn + dv) + j) * rk + ri);
        } else {
            uint64_t h = r / dv, j = r % dv;
            for (uint64_t ri = 0; ri < n; ri++) x[ri] = fd_tensor_f32_at(g->src, (h * (dn + dv) + dn + j) * rk + ri);
        }
    }
}

/* ------------------------------------------------------------ the file */

/* Header, metadata and tensor infos (offsets assigned), padded to ALIGN. */
static int header(plan *p, const char *arch, fd_buf *b)
{
    fd_buf m = {0};
    fd_gguf_kvw w = {&m, 0, NULL};
    fd_gguf_kv_str(&w, "general.architecture", arch);
    char by[96];
    snprintf(by, sizeof by, "%s/%s quantize --format gguf", FD_ENGINE_NAME, FD_VERSION);
    fd_gguf_kv_str(&w, "general.quantized_by", by);
    w.arch = arch;
    if (p->ga->write_kv(p->c, &w, p->e)) { fd_buf_free(&m); return -1; }
    w.arch = NULL;
    if (p->tokjson.n) fd_gguf_kv_str(&w, "tokenizer.huggingface.json", fd_buf_cstr(&p->tokjson));
    fd_buf_put(b, "GGUF", 4);
    fd_gguf_put_u32(b, 3);
    fd_gguf_put_u64(b, p->n);
    fd_gguf_put_u64(b, w.n);
    fd_buf_put(b, m.p, m.n);
    fd_buf_free(&m);
    uint64_t off = 0;
    for (size_t i = 0; i < p->n; i++) {
        gt *g = &p->t[i];
        g->off = off;
        fd_gguf_put_str(b, g->name);
        fd_gguf_put_u32(b, (uint32_t)g->ndim);
        for (int d = 0; d < g->ndim; d++) fd_gguf_put_u64(b, g->ne[d]);
        fd_gguf_put_u32(b, g->type);
        fd_gguf_put_u64(b, off);
        off += (g->nbytes + ALIGN - 1) / ALIGN * ALIGN;
    }
    while (b->n % ALIGN) fd_buf_putc(b, 0);
    return 0;
}

static int write_data(const plan *p, FILE *f)
{
    static const unsigned char zero[ALIGN];
    for (size_t i = 0; i < p->n; i++) {
        const gt *g = &p->t[i];
        uint64_t rows = 1, n = g->ne[0];
        for (int d = 1; d < g->ndim; d++) rows *= g->ne[d];
        float *x = fd_xmalloc(n * sizeof *x + 4);
        unsigned char *out = fd_xmalloc(n * 4 + 4);
        size_t ob = 0;
        for (uint64_t r = 0; r < rows; r++) {
            source_row(p, g, r, x);
            if (g->type == FD_GGML_F32) memcpy(out, x, ob = n * 4);
            else if (g->type == FD_GGML_BF16 || g->type == FD_GGML_F16) {
                for (uint64_t j = 0; j < n; j++) {
                    uint16_t h = g->type == FD_GGML_BF16 ? fd_f32_to_bf16(x[j]) : fd_f32_to_f16(x[j]);
                    out[2 * j] = (unsigned char)(h & 0xff), out[2 * j + 1] = (unsigned char)(h >> 8);
                }
                ob = n * 2;
            } else {
                const fd_ggml_type *ty = fd_ggml_type_of(g->type); /* Q8_0 / Q4_0 / Q5_0: 32, Q4_K: 256 */
                void (*blk)(const float *, unsigned char *) = g->type == FD_GGML_Q8_0 ? fd_q8_0_block
                                                              : g->type == FD_GGML_Q4_0 ? fd_q4_0_block
                                                              : g->type == FD_GGML_Q5_0 ? fd_q5_0_block : fd_q4_k_block;
                for (uint64_t k = 0; k < n / ty->blck; k++) blk(x + ty->blck * k, out + ty->tsize * k);
                ob = n / ty->blck * ty->tsize;
            }
            if (fwrite(out, 1, ob, f) != ob) { free(x), free(out); return -1; }
        }
        free(x), free(out);
        size_t pad = (size_t)((ALIGN - g->nbytes % ALIGN) % ALIGN);
        if (pad && fwrite(zero, 1, pad, f) != pad) return -1;
    }
    return 0;
}

static int write_file(plan *p, const char *arch, fd_err *e)
{
    fd_buf h = {0};
    if (header(p, arch, &h)) { fd_buf_free(&h); return -1; }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", p->o->dst, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) { fd_buf_free(&h); return fd_fail(e, "unwritable", "", "%s: %s", tmp, strerror(errno)); }
    FILE *f = fdopen(fd, "wb");
    if (!f) { fd_buf_free(&h); close(fd); unlink(tmp); return fd_fail(e, "unwritable", "", "%s: %s", tmp, strerror(errno)); }
    int bad = fwrite(h.p, 1, h.n, f) != h.n || write_data(p, f) || fflush(f) || fsync(fileno(f));
    fd_buf_free(&h);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, p->o->dst)) {
        int err = errno;
        unlink(tmp);
        return fd_fail(e, "unwritable", "", "%s: %s", p->o->dst, strerror(err));
    }
    return 0;
}

/* ------------------------------------------------------------ the command */

static jv *report_of(const plan *p, const char *arch, uint64_t bytes)
{
    size_t nq = 0, nb = 0, nf = 0, nh = 0;
    for (size_t i = 0; i < p->n; i++) {
        uint32_t t = p->t[i].type;
        nq += t == FD_GGML_Q8_0 || t == FD_GGML_Q4_0 || t == FD_GGML_Q5_0 || t == FD_GGML_Q4_K, nb += t == FD_GGML_BF16, nf += t == FD_GGML_F32, nh += t == FD_GGML_F16;
    }
    jv *r = jv_obj();
    jv_set(r, "format", jv_str("gguf"));
    jv_set(r, "type", jv_str(p->o->type));
    jv_set(r, "architecture", jv_str(arch));
    jv_set(r, "tensors", jv_int((int64_t)p->n));
    jv_set(r, "tensors_quantized", jv_int((int64_t)nq));
    jv_set(r, "bf16", jv_int((int64_t)nb));
    jv_set(r, "f32", jv_int((int64_t)nf));
    jv_set(r, "f16", jv_int((int64_t)nh));
    jv_set(r, "bytes", jv_int((int64_t)bytes));
    return r;
}

int fd_quantize_gguf(const fd_qg_opts *o, jv **report, fd_err *e)
{
    *report = NULL;
    uint32_t qt = !strcmp(o->type, "bf16") ? FD_GGML_BF16 : !strcmp(o->type, "q8_0") ? FD_GGML_Q8_0
                  : !strcmp(o->type, "q4_0") ? FD_GGML_Q4_0 : !strcmp(o->type, "q4_k") ? FD_GGML_Q4_K : 0;
    if (!qt) return fd_fail(e, "bad_usage", "", "--type must be bf16, q8_0, q4_0 or q4_k (not %s)", o->type);
    if (!o->force && access(o->dst, F_OK) == 0) return fd_fail(e, "destination_exists", "", "%s exists (--force replaces it)", o->dst);
    fd_glm_config c;
    memset(&c, 0, sizeof c);
    fd_weights w;
    memset(&w, 0, sizeof w);
    if (fd_glm_config_load(o->src, &c, e)) return -1;
    int rc = -1, opened = 0;
    const fd_gguf_arch *ga = c.arch->gguf;
    if (!ga || !ga->write_kv) {
        fd_fail(e, "gguf_write_unsupported", "", "%s: model_type %s has no GGUF writer (glm_moe_dsa, deepseek_v3, llama, "
                "qwen3, qwen3_moe, minimax_m2 have one; docs/QUANT-FORMATS.md \"Writing a GGUF\")", o->src, c.arch->info.model_type);
        goto out;
    }
    if (fd_weights_open(o->src, &w, e) || (opened = 1, fd_weights_check(&w, &c, e))) goto out;
    if (w.q.kind != FD_Q_NONE) {
        fd_fail(e, "gguf_write_unsupported", "", "%s: a quantized checkpoint; the GGUF writer reads a bf16 one", o->src);
        goto out;
    }
    plan p = {.o = o, .c = &c, .w = &w, .ga = ga, .qtype = qt, .e = e};
    char *tj = fd_path_join(o->src, "tokenizer.json");
    if (fd_is_file(tj) && fd_read_file(tj, (size_t)256 << 20, &p.tokjson, e)) p.failed = 1;
    free(tj);
    if (!p.failed && p.tokjson.n && memchr(p.tokjson.p, 0, p.tokjson.n)) {
        fd_fail(e, "bad_tokenizer", "", "%s/tokenizer.json holds a NUL byte", o->src);
        p.failed = 1;
    }
    if (!p.failed) c.arch->tensors(&c, &w, plan_tensor, &p);
    for (const char *const *a = ga->aux; !p.failed && a && *a; a++) { /* tensors the config hook reads (rope_freqs) */
        float *v = NULL;
        uint64_t n = 0;
        if (ga->write_aux && ga->write_aux(&c, *a, &v, &n, e)) p.failed = 1;
        else if (v) {
            gt *g = add(&p, *a);
            g->src_kind = SRC_AUX, g->aux = v, g->ndim = 1, g->ne[0] = n;
            snprintf(g->hf, sizeof g->hf, "%s", *a);
        }
    }
    if (!p.failed) {
        choose_types(&p);
        if (!write_file(&p, ga->names[0], e)) {
            struct stat st;
            *report = report_of(&p, ga->names[0], stat(o->dst, &st) ? 0 : (uint64_t)st.st_size);
            rc = 0;
        }
    }
    for (size_t i = 0; i < p.n; i++) free(p.t[i].experts), free(p.t[i].aux);
    free(p.t);
    fd_buf_free(&p.tokjson);
out:
    if (opened) fd_weights_close(&w);
    fd_glm_config_free(&c);
    return rc;
}
