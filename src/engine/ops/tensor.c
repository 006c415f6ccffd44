/* Tensor access and the debug dump shared by every architecture (engine/ops/ops.h). */
#include "engine/ops/ops.h"
#include "engine/ops/kblocks.h"
#include "engine/weights_quant.h"
#include "kernels/torch_ops.h"
#include "kernels/gemm.h"
#include "kernels/rowops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

/* ------------------------------------------------------------ debug dump */

/* FIDELITY_FORWARD_DUMP=DIR: write intermediate arrays of the forward as raw
 * little-endian files DIR/<stage>[.L<layer>].<bf16|f32|u8> (row-major, no
 * header; shapes follow from config.json and S).  A file that already exists
 * is kept (fopen "wx"), so with several windows DIR holds the FIRST forward
 * call of the process.  Debug aid for tests/parity/layerwise.py; off when
 * the variable is unset or empty. */
void fd_op_dump(long long L, const char *stage, const char *ext, const void *p, size_t bytes)
{
    const char *dir = getenv("FIDELITY_FORWARD_DUMP");
    if (!dir || !*dir) return;
    char path[1024];
    if (L >= 0) snprintf(path, sizeof path, "%s/%s.L%lld.%s", dir, stage, L, ext);
    else snprintf(path, sizeof path, "%s/%s.%s", dir, stage, ext);
    FILE *f = fopen(path, "wbx");
    if (!f) return;
    fwrite(p, 1, bytes, f);
    fclose(f);
}

/* ------------------------------------------------------------ weights */

const fd_tensor *fd_op_vget(const fd_weights *w, fd_err *e, int ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                            const char *fmt, va_list ap)
{
    char name[512];
    vsnprintf(name, sizeof name, fmt, ap);
    const fd_tensor *t = fd_weights_get(w, name);
    if (!t) { fd_fail(e, "checkpoint_mismatch", "", "tensor %s is missing", name); return NULL; }
    uint64_t want[3] = {d0, d1, d2};
    int ok = ndim >= 1 && ndim <= 3 && t->ndim == ndim && (t->qfmt || !strcmp(t->dtype, "BF16") || !strcmp(t->dtype, "F32"));
    for (int i = 0; ok && i < ndim; i++) ok = t->lshape[i] == want[i];
    if (!ok) { fd_fail(e, "checkpoint_mismatch", "", "tensor %s has the wrong shape or dtype", name); return NULL; }
    if (!t->data && t->nbytes) { /* a lazy (layer-outer) open: a hook read outside the prefixes mapped for it */
        fd_fail(e, "unmapped_tensor", "", "tensor %s is not mapped at this step of the layer-outer schedule "
                "(an architecture hook reads outside its layer's prefix: a defect, please report it)", name);
        return NULL;
    }
    return t;
}

const fd_tensor *fd_op_get(const fd_weights *w, fd_err *e, int ndim, uint64_t d0, uint64_t d1, uint64_t d2,
                           const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const fd_tensor *t = fd_op_vget(w, e, ndim, d0, d1, d2, fmt, ap);
    va_end(ap);
    return t;
}

uint16_t *fd_op_embed(const fd_weights *w, const char *name, size_t V, size_t H, const int64_t *ids, size_t S,
                      fd_err *e)
{
    if (S < 1) { fd_fail(e, "bad_usage", "", "empty token sequence"); return NULL; }
    const fd_tensor *emb = fd_op_get(w, e, 2, V, H, 0, "%s", name);
    if (!emb) return NULL;
    for (size_t t = 0; t < S; t++)
        if (ids[t] < 0 || (uint64_t)ids[t] >= V) {
            fd_fail(e, "bad_token", "", "token id %lld at position %zu is outside the vocab (%zu)", (long long)ids[t], t, V);
            return NULL;
        }
    uint16_t *x = fd_xmalloc(S * H * 2);
    for (size_t t = 0; t < S; t++)
        for (size_t i = 0; i < H; i++) x[t * H + i] = fd_tensor_bf16_at(emb, (uint64_t)ids[t] * H + i);
    fd_op_dump(-1, "ids", "i64", ids, S * 8);
    fd_op_dump(-1, "embed", "bf16", x, S * H * 2);
    return x;
}

/* Element i of a BF16/F32 tensor as bf16 (an F32 weight is cast to the
 * bf16 load dtype with round to nearest even, as from_pretrained does). */
uint16_t fd_tensor_bf16_at(const fd_tensor *t, uint64_t i)
{
    const unsigned char *p = t->data;
    if (t->qfmt == FD_Q_GGUF) return fd_gguf_elem_bf16(t, i); /* a GGUF view: its block decoded */
    if (t->qfmt == FD_Q_MLX) return fd_mlx_tensor_elem_bf16(t, i); /* an MLX affine embedding row */
    if (!strcmp(t->dtype, "BF16")) { uint16_t v; memcpy(&v, p + 2 * i, 2); return v; }
    float f;
    memcpy(&f, p + 4 * i, 4);
    return BF(f);
}

float fd_tensor_f32_at(const fd_tensor *t, uint64_t i)
{
    const unsigned char *p = t->data;
    if (t->qfmt == FD_Q_GGUF) return F(fd_gguf_elem_bf16(t, i));
    if (t->qfmt == FD_Q_MLX) return F(fd_mlx_tensor_elem_bf16(t, i));
    if (!strcmp(t->dtype, "F32")) { float f; memcpy(&f, p + 4 * i, 4); return f; }
    uint16_t v;
    memcpy(&v, p + 2 * i, 2);
    return F(v);
}

uint16_t *fd_op_vec_bf16(const fd_tensor *t, uint64_t off, uint64_t n)
{
    uint16_t *v = fd_xmalloc(n * 2 + 2);
    for (uint64_t i = 0; i < n; i++) v[i] = fd_tensor_bf16_at(t, off + i);
    return v;
}


float *fd_op_vec_f32(const fd_tensor *t, size_t n)
{
    float *v = fd_xmalloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++) v[i] = fd_tensor_f32_at(t, i);
    return v;
}
