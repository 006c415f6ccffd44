/* torch 2.11 CPU reductions and elementwise kernel paths (reduce.h;
 * docs/MODEL-GLM5-NEXT.md §6). */
#include "engine/ops/reduce.h"
#include "kernels/torch_ops.h"
#include <math.h>

float fd_op_multi_row_sum(const float *x, size_t stride, size_t size) { return fd_torch_multi_row_sum(x, stride, size); }
float fd_op_row_sum(const float *x, size_t stride, size_t size) { return fd_torch_row_sum(x, stride, size); }
float fd_op_sum_aten(const float *x, size_t n) { return fd_torch_sum(x, n); }

float fd_op_sum_outer(const float *x, size_t stride, size_t size, size_t col, size_t ncols)
{
    size_t full = ncols >= 8 ? ncols / 32 * 32 : ncols / 4 * 4;
    return col < full ? fd_op_multi_row_sum(x, stride, size) : fd_op_row_sum(x, stride, size);
}

int fd_op_torch_vec(size_t i, size_t n, size_t block)
{
    enum { GRAIN = 32768, THREADS = 2 };
    size_t b0 = 0, len = n;
    if (n >= GRAIN) {
        size_t nt = (n + GRAIN - 1) / GRAIN < THREADS ? (n + GRAIN - 1) / GRAIN : THREADS, chunk = (n + nt - 1) / nt;
        b0 = i / chunk * chunk;
        len = n - b0 < chunk ? n - b0 : chunk;
    }
    return i - b0 < len - len % block;
}

float fd_op_sigmoid_at(float x, size_t i, size_t n)
{
    return fd_op_torch_vec(i, n, 32) ? fd_torch_sigmoid(x) : fd_torch_sigmoid_tail(x);
}

void fd_op_swap_pairs16(uint16_t *v, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2) { uint16_t t = v[i]; v[i] = v[i + 1]; v[i + 1] = t; }
}

/* compiled for an FMA target too (fmaf one instruction, not a libm call);
 * the same bits either way */
#define CHAIN32_BODY                                                      \
    float s = 0.0f;                                                       \
    for (size_t k = 0; k < n; k++) s = fmaf(a[k * as], b[k * bs], s);    \
    return s;
static float chain32_any(const float *a, size_t as, const float *b, size_t bs, size_t n) { CHAIN32_BODY }
#if defined(__x86_64__)
__attribute__((target("fma"))) static float chain32_fma(const float *a, size_t as, const float *b, size_t bs, size_t n)
{
    CHAIN32_BODY
}
#endif

float fd_op_chain32(const float *a, size_t as, const float *b, size_t bs, size_t n)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("fma")) return chain32_fma(a, as, b, bs, n);
#endif
    return chain32_any(a, as, b, bs, n);
}
