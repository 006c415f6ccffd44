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
    size_t I, run, vend;
} glu_job;

/* the silu run is the whole [rows, I] output (run = rows * I) or one row
 * (run = I: the strided gate half of grouped_mm's gate_up output): its
 * vector path covers [0, vend) of each run, libm the rest */
static void glu_rows(void *ctx, size_t lo, size_t hi)
{
    const glu_job *j = ctx;
    size_t n = (hi - lo) * j->I, i0 = lo * j->I;
    float *v = fd_xmalloc(n * 4 + 4);
    for (size_t i = 0; i < n; i++) v[i] = F(j->a[i0 + i]);
    for (size_t i = 0; i < n;) {
        size_t r = (i0 + i) % j->run, len = j->run - r < n - i ? j->run - r : n - i;
        size_t nv = r < j->vend ? (j->vend - r < len ? j->vend - r : len) : 0;
        fd_torch_silu_n(v + i, v + i, nv);
        for (size_t k = i + nv; k < i + len; k++) v[k] = fd_torch_silu_tail(v[k]);
        i += len;
    }
    for (size_t i = 0; i < n; i++) v[i] = F(BF(v[i])) * F(j->b[i0 + i]);
    fd_round_bf16(v, NULL, n, j->a + i0);
    free(v);
}

void fd_op_glu(const fd_mm *m, uint16_t *a, const uint16_t *b, size_t rows, size_t I, int per_row)
{
    size_t run = per_row ? I : rows * I;
    glu_job j = {a, b, I, run, fd_torch_vec_end(run, 64)};
    fd_mm_range(m, rows, 16, glu_rows, &j);
}

void fd_op_swiglu(const fd_mm *m, const fd_lin *g, const fd_lin *u, const fd_lin *d, const uint16_t *x, size_t rows,
                  int per_row, uint16_t *y)
{
    size_t I = g->N;
    uint16_t *a = fd_xmalloc(rows * I * 2 + 2), *b = fd_xmalloc(rows * I * 2 + 2);
    fd_lin_apply(m, g, x, rows, a);
    fd_lin_apply(m, u, x, rows, b);
    fd_op_glu(m, a, b, rows, I, per_row);
    fd_lin_apply(m, d, a, rows, y);
    free(a);
    free(b);
}

int fd_op_mlp_swiglu(const fd_mm *m, const fd_weights *W, size_t H, size_t I, int bias, const char *prefix,
                     const uint16_t *x, size_t rows, uint16_t *y, fd_err *e)
{
    fd_lin g = {0}, u = {0}, d = {0};
    char nm[300];
    int rc = -1;
    snprintf(nm, sizeof nm, "%sgate_proj", prefix);
    if (fd_lin_load(m, &g, W, e, I, H, rows, bias, nm)) goto out;
    snprintf(nm, sizeof nm, "%sup_proj", prefix);
    if (fd_lin_load(m, &u, W, e, I, H, rows, bias, nm)) goto out;
    snprintf(nm, sizeof nm, "%sdown_proj", prefix);
    if (fd_lin_load(m, &d, W, e, H, I, rows, bias, nm)) goto out;
    fd_op_swiglu(m, &g, &u, &d, x, rows, 0, y); /* the silu run: the whole [rows, I] gate output */
    rc = 0;
out:
    fd_lin_free(&g); fd_lin_free(&u); fd_lin_free(&d);
    return rc;
}
