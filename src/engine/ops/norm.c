/* RMSNorm, LayerNorm, silu and the residual add, in torch's CPU order (engine/ops/ops.h). */
#include "engine/ops/ops.h"
#include "engine/ops/kblocks.h"
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

typedef struct norm_job {
    const uint16_t *x, *w;
    size_t n;
    float eps;
    uint16_t *y;
} norm_job;

static void rmsnorm_rows(void *ctx, size_t lo, size_t hi)
{
    const norm_job *j = ctx;
    size_t n = j->n;
    float *t = fd_xmalloc(n * 4 + 4), *w = fd_xmalloc(n * 4 + 4);
    for (size_t k = 0; k < n; k++) w[k] = F(j->w[k]);
    for (size_t r = lo; r < hi; r++) {
        const uint16_t *xr = j->x + r * n;
        uint16_t *yr = j->y + r * n;
        fd_bf16_square(xr, n, t);
        float ss = fd_torch_sum(t, n); /* x.pow(2).mean(-1): torch's cascade order */
        float rs = 1.0f / sqrtf(ss / (float)n + j->eps);
        fd_bf16_scale_round(xr, rs, n, yr);                /* bf(x * rstd) */
        fd_bf16_weight_round(w, n, yr);                    /* bf(w * that) */
    }
    free(t);
    free(w);
}

/* RMSNorm (§3.1) of rows x rows of n, in place allowed (x may equal y);
 * rows spread over m's threads (m NULL: the caller's thread). */
void fd_op_rmsnorm_mm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const uint16_t *w, float eps, uint16_t *y)
{
    norm_job j = {x, w, n, eps, y};
    fd_mm_range(m, rows, 16, rmsnorm_rows, &j);
}

/* LayerNorm (indexer k_norm), torch's CPU kernel (torch_ops.h). */
void fd_op_layernorm_bf16(uint16_t *x, size_t rows, size_t n, const uint16_t *w, const uint16_t *b, float eps)
{
    for (size_t r = 0; r < rows; r++) fd_torch_layernorm_bf16(x + r * n, n, w, b, eps, x + r * n);
}


void fd_op_rmsnorm(const uint16_t *x, size_t rows, size_t n, const uint16_t *w, float eps, uint16_t *y)
{
    fd_op_rmsnorm_mm(NULL, x, rows, n, w, eps, y);
}
void fd_op_layernorm(uint16_t *x, size_t rows, size_t n, const float *w, const float *b, float eps)
{
    /* the weights arrive widened from bf16, so narrowing them back is exact */
    uint16_t *wb = fd_xmalloc(n * 2 + 2), *bb = fd_xmalloc(n * 2 + 2);
    for (size_t i = 0; i < n; i++) { wb[i] = BF(w[i]); bb[i] = BF(b[i]); }
    fd_op_layernorm_bf16(x, rows, n, wb, bb, eps);
    free(wb);
    free(bb);
}
/* torch's vector-path silu (kernels/torch_ops.h); per element, so a row's
 * scalar tail is not told apart here (glm5_next's shapes have none) */
float fd_op_silu(float a) { return fd_torch_silu(a); }
/* x = bf16(x + y) element-wise (the residual adds), on m's threads. */
typedef struct add_job {
    uint16_t *x;
    const uint16_t *y;
} add_job;

static void add_range(void *ctx, size_t lo, size_t hi)
{
    const add_job *j = ctx;
    fd_bf16_add(j->x + lo, j->y + lo, hi - lo);
}

void fd_op_residual_add(const fd_mm *m, uint16_t *x, const uint16_t *y, size_t n)
{
    add_job j = {x, y};
    fd_mm_range(n >= 1u << 16 ? m : NULL, n, 1u << 15, add_range, &j);
}


/* Zero-centred RMSNorm (Qwen3_5RMSNorm): y = bf(fp32(x) * rsqrt(mean(x^2) + eps) * (1 + fp32(w))),
 * one rounding at the end (the weight is applied in fp32, unlike Llama's). */
static void rmsnorm_zc_rows(void *ctx, size_t lo, size_t hi)
{
    const norm_job *j = ctx;
    size_t n = j->n;
    float *t = fd_xmalloc(n * 4 + 4), *w = fd_xmalloc(n * 4 + 4);
    for (size_t k = 0; k < n; k++) w[k] = 1.0f + F(j->w[k]); /* 1.0 + weight.float(): an fp32 add */
    for (size_t r = lo; r < hi; r++) {
        const uint16_t *xr = j->x + r * n;
        uint16_t *yr = j->y + r * n;
        fd_bf16_square(xr, n, t);
        float ss = fd_torch_sum(t, n);
        float rs = 1.0f / sqrtf(ss / (float)n + j->eps);
        for (size_t k = 0; k < n; k++) yr[k] = BF(F(xr[k]) * rs * w[k]);
    }
    free(t);
    free(w);
}

void fd_op_rmsnorm_zc_mm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const uint16_t *w, float eps, uint16_t *y)
{
    norm_job j = {x, w, n, eps, y};
    fd_mm_range(m, rows, 16, rmsnorm_zc_rows, &j);
}

/* The same norm with the multiplier m given (fp32): y = bf(fp32(x) * rsqrt(mean(x^2) + eps) * m);
 * m = 1 + fp32(w) is fd_op_rmsnorm_zc_mm bit for bit. */
typedef struct mul_job {
    const uint16_t *x;
    const float *m;
    size_t n;
    float eps;
    uint16_t *y;
} mul_job;

static void rmsnorm_mul_rows(void *ctx, size_t lo, size_t hi)
{
    const mul_job *j = ctx;
    size_t n = j->n;
    float *t = fd_xmalloc(n * 4 + 4);
    for (size_t r = lo; r < hi; r++) {
        const uint16_t *xr = j->x + r * n;
        uint16_t *yr = j->y + r * n;
        fd_bf16_square(xr, n, t);
        float ss = fd_torch_sum(t, n);
        float rs = 1.0f / sqrtf(ss / (float)n + j->eps);
        for (size_t k = 0; k < n; k++) yr[k] = BF(F(xr[k]) * rs * j->m[k]);
    }
    free(t);
}

void fd_op_rmsnorm_mul_mm(const fd_mm *m, const uint16_t *x, size_t rows, size_t n, const float *mul, float eps, uint16_t *y)
{
    mul_job j = {x, mul, n, eps, y};
    fd_mm_range(m, rows, 16, rmsnorm_mul_rows, &j);
}
