/* The gated MLP (SwiGLU) as transformers' LlamaMLP / Qwen3MLP compute it in
 * bf16: y = down(bf(bf(silu(gate(x))) * up(x))) (engine/ops/ops.h).  torch's
 * silu takes its vector path in blocks of 64 of the contiguous [rows, I]
 * gate output and the scalar (libm) path on the rest (kernels/torch_ops.h). */
#include "engine/ops/ops.h"
#include "kernels/torch_ops.h"
#include "kernels/rowops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

typedef struct glu_job {
    uint16_t *a;
    const uint16_t *b;
    size_t I, vend;
} glu_job;

static void glu_rows(void *ctx, size_t lo, size_t hi)
{
    const glu_job *j = ctx;
    size_t n = (hi - lo) * j->I, i0 = lo * j->I;
    float *v = fd_xmalloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++) v[i] = F(j->a[i0 + i]);
    size_t nv = i0 < j->vend ? (j->vend - i0 < n ? j->vend - i0 : n) : 0;
    fd_torch_silu_n(v, v, nv);
    for (size_t k = nv; k < n; k++) v[k] = fd_torch_silu_tail(v[k]);
    for (size_t i = 0; i < n; i++) v[i] = F(BF(v[i])) * F(j->b[i0 + i]);
    fd_round_bf16(v, NULL, n, j->a + i0);
    free(v);
}

int fd_op_mlp_swiglu(const fd_mm *m, const fd_weights *W, size_t H, size_t I, int bias, const char *prefix,
                     const uint16_t *x, size_t rows, uint16_t *y, fd_err *e)
{
    fd_lin g = {0}, u = {0}, d = {0};
    char nm[300];
    int rc = -1;
    uint16_t *a = NULL, *b = NULL;
    snprintf(nm, sizeof nm, "%sgate_proj", prefix);
    if (fd_lin_load(m, &g, W, e, I, H, rows, bias, nm)) goto out;
    snprintf(nm, sizeof nm, "%sup_proj", prefix);
    if (fd_lin_load(m, &u, W, e, I, H, rows, bias, nm)) goto out;
    snprintf(nm, sizeof nm, "%sdown_proj", prefix);
    if (fd_lin_load(m, &d, W, e, H, I, rows, bias, nm)) goto out;
    a = fd_xmalloc(rows * I * 2);
    b = fd_xmalloc(rows * I * 2);
    fd_lin_apply(m, &g, x, rows, a);
    fd_lin_apply(m, &u, x, rows, b);
    /* the silu run is the whole [rows, I] gate output: its vector part ends at vend */
    glu_job j = {a, b, I, fd_torch_vec_end(rows * I, 64)};
    fd_mm_range(m, rows, 16, glu_rows, &j);
    fd_lin_apply(m, &d, a, rows, y);
    rc = 0;
out:
    free(a); free(b);
    fd_lin_free(&g); fd_lin_free(&u); fd_lin_free(&d);
    return rc;
}
