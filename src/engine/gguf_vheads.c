/* llama.cpp's linear-attention value-head reorder undone (FD_GG_V_*,
 * engine/gguf_model.h): convert_hf_to_gguf.py's _LinearAttentionVReorderBase
 * (qwen35, qwen35moe) stores the value heads tiled over the key heads
 * ([K0, K1, ..., K0, K1, ...]) where transformers groups them by key head
 * ([G0_v0..v(r-1), G1_v0..]): a pure permutation of rows (in_proj_qkv's
 * value rows, in_proj_z, in_proj_a / in_proj_b, conv1d's value channels,
 * A_log, dt_bias) or of out_proj's columns, undone index for index. */
#include "engine/gguf_model.h"
#include "engine/model.h"
#include "format/ggml_quants.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t fd_gguf_vidx(const uint64_t gp[4], uint64_t i)
{
    uint64_t nk = gp[0], r = gp[1], hd = gp[2], off = gp[3];
    if (i < off) return i;
    uint64_t x = i - off, g = x / (r * hd), j = (x / hd) % r, d = x % hd;
    return off + (j * nk + g) * hd + d;
}

/* dims without the size-1 ones (the converter's squeeze) */
static int squeeze(const uint64_t *s, int nd, uint64_t *out)
{
    int n = 0;
    for (int d = 0; d < nd; d++)
        if (s[d] != 1) out[n++] = s[d];
    return n;
}

const char *fd_gguf_vview(const fd_gguf_stored *a, const fd_glm_config *c, const fd_tensor_spec *t, const fd_gguf_tensor *g,
                          int kind, fd_tensor *v)
{
    uint64_t p[4] = {0, 0, 0, 0};
    if (a && a->vheads) a->vheads(c, p);
    if (!p[0] || !p[1] || !p[2]) return "a value-head reorder the architecture does not define";
    uint64_t gs[4], hs[5], gq[4], hq[5];
    for (int d = 0; d < g->ndim; d++) gs[d] = g->ne[g->ndim - 1 - d];
    for (int d = 0; d < t->ndim; d++) hs[d] = t->shape[d];
    int ng = squeeze(gs, g->ndim, gq), nh = squeeze(hs, t->ndim, hq);
    int same = ng == nh;
    for (int d = 0; same && d < ng; d++) same = gq[d] == hq[d];
    if (!same) return "has another shape";
    v->gp[0] = p[0];
    v->gp[1] = p[1];
    v->gp[2] = kind == FD_GG_V_ONE ? 1 : p[2];
    v->gp[3] = kind == FD_GG_V_QKV ? p[3] : 0;
    uint64_t n = kind == FD_GG_V_COLS ? hs[t->ndim - 1] : hs[0];
    if (n < v->gp[3] || n - v->gp[3] != p[0] * p[1] * v->gp[2])
        return "is not key heads x value heads per key head x head dim along the reordered dimension";
    v->gkind = kind;
    if (t->ndim == 2 && !t->f32only) /* a Linear: dequantized row by row (gguf_model.c) */
        return g->ndim == 2 ? NULL : "has another shape";
    if (kind == FD_GG_V_COLS) return "a column reorder of a tensor that is not a Linear weight";
    /* 1-D or conv: rebuilt whole as F32, rows in HF order (the values as the
     * ggml decoder gives them: an F32 tensor exactly) */
    uint64_t K = n ? v->numel / n : 0, rb = 0;
    const fd_ggml_type *gt = fd_ggml_type_of(g->type);
    if (g->ne[0] != (g->ndim == 1 ? n : K) || fd_ggml_row_bytes(gt, g->ne[0], &rb)) return "has another shape";
    uint64_t rowlen = g->ndim == 1 ? n : K, grows = g->ndim == 1 ? 1 : n;
    float *all = fd_xmalloc(rowlen * grows * 4 + 4), *out = fd_xmalloc(v->numel * 4 + 4);
    fd_err e;
    for (uint64_t r = 0; r < grows; r++)
        if (fd_ggml_dequant_row_f32(g->type, g->data + r * rb, rowlen, all + r * rowlen, &e)) {
            free(all);
            free(out);
            return "a row the ggml decoder refuses";
        }
    for (uint64_t i = 0; i < n; i++) /* HF row i <- GGUF row vidx(i) (1-D: element) */
        memcpy(out + i * K, all + fd_gguf_vidx(v->gp, i) * K, K * 4);
    free(all);
    snprintf(v->dtype, sizeof v->dtype, "F32");
    v->qfmt = FD_Q_NONE;
    v->data = out;
    v->nbytes = v->numel * 4;
    return NULL;
}
