/* fd_torch_softplus (Sleef exp + Sleef log1p on the vector path, libm on the
 * scalar tail; kernels/torch_ops.c) against the bit patterns torch 2.15 wrote
 * (tests/c/softplus_vectors.inc, tests/parity/softplus_vectors.py): the
 * gated delta net's decay g of qwen3_5 (docs/MODEL-QWEN35.md). */
#include "check.h"
#include "kernels/torch_ops.h"
#include "util/bf16.h"
#include <math.h>
#include <stdint.h>

#include "softplus_vectors.inc"

int test_softplus(void);
int test_softplus(void)
{
    int fails = 0;
    size_t vend = fd_torch_vec_end(TSP_N, 32);
    CHECK(vend == TSP_N - 24, "the vectors end with a 24-element scalar tail");
    for (size_t i = 0; i < TSP_N; i++) {
        float x = fd_bits_f32(tsp_x[i]);
        float y = i < vend ? fd_torch_softplus(x) : fd_torch_softplus_tail(x);
        CHECKF(fd_f32_bits(y) == tsp_y[i], "softplus(%a) element %zu: %08x, torch %08x", x, i, fd_f32_bits(y), tsp_y[i]);
    }
    CHECK(fd_torch_log1pf(0.0f) == 0.0f && isinf(fd_torch_log1pf(-1.0f)) && fd_torch_log1pf(-1.0f) < 0 && isinf(fd_torch_log1pf(2e38f)),
          "Sleef log1pf special cases");
    return fails;
}
