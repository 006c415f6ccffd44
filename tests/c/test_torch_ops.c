/* src/kernels/torch_ops.c against bit patterns torch 2.11 produced
 * (tests/c/torch_ops_vectors.inc, written by tests/parity/torch_ops_vectors.py):
 * sigmoid and silu (Sleef exp, vector blocks + libm tail), the masked
 * softmax row and LayerNorm (output, mean, rstd). */
#include "check.h"
#include "kernels/torch_ops.h"
#include "util/bf16.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "torch_ops_vectors.inc"

#define bits fd_f32_bits
#define flt fd_bits_f32

static int check_activations(void)
{
    int fails = 0;
    size_t vend = fd_torch_vec_end(TOV_ACT_N, 32);
    CHECK(vend == TOV_ACT_N - 24, "the vectors end with a 24-element scalar tail");
    for (size_t i = 0; i < TOV_ACT_N; i++) {
        float x = flt(tov_act_x[i]);
        float sg = i < vend ? fd_torch_sigmoid(x) : fd_torch_sigmoid_tail(x);
        float si = i < vend ? fd_torch_silu(x) : fd_torch_silu_tail(x);
        CHECKF(bits(sg) == tov_sigmoid[i], "sigmoid(%a) element %zu: %08x, torch %08x", x, i, bits(sg), tov_sigmoid[i]);
        CHECKF(bits(si) == tov_silu[i], "silu(%a) element %zu: %08x, torch %08x", x, i, bits(si), tov_silu[i]);
    }
    CHECK(fd_torch_expf(-104.5f) == 0.0f && isinf(fd_torch_expf(100.5f)) && fd_torch_expf(0.0f) == 1.0f,
          "Sleef expf range ends");
    return fails;
}

static int check_softmax(void)
{
    int fails = 0;
    size_t off = 0;
    for (size_t r = 0; r < TOV_SM_ROWS; r++) {
        size_t len = tov_sm_len[r], nk = tov_sm_nk[r];
        float row[512];
        for (size_t j = 0; j < len; j++) row[j] = fd_bf16_to_f32(tov_sm_score[off + j]);
        fd_torch_softmax_masked(row, tov_sm_keep + off, nk, len);
        size_t bad = 0;
        for (size_t j = 0; j < len; j++) bad += bits(row[j]) != tov_sm_p[off + j];
        CHECKF(bad == 0, "softmax row of %zu (%zu live): %zu elements differ from torch", len, nk, bad);
        off += len;
    }
    return fails;
}

static int check_layernorm(void)
{
    int fails = 0;
    size_t off = 0;
    for (size_t r = 0; r < TOV_LN_ROWS; r++) {
        size_t n = tov_ln_n[r], bad = 0;
        uint16_t y[1024];
        fd_torch_layernorm_bf16(tov_ln_x + off, n, tov_ln_gamma + off, tov_ln_beta + off, 1e-6f, y);
        for (size_t j = 0; j < n; j++) bad += y[j] != tov_ln_y[off + j];
        CHECKF(bad == 0, "layer_norm n=%zu: %zu elements differ from torch", n, bad);
        float mean, var;
        fd_torch_moments_bf16(tov_ln_x + off, n, &mean, &var);
        float rstd = 1.0f / sqrtf(var + 1e-6f);
        CHECKF(bits(mean) == tov_ln_mean[r], "layer_norm n=%zu mean %08x, torch %08x", n, bits(mean), tov_ln_mean[r]);
        CHECKF(bits(rstd) == tov_ln_rstd[r], "layer_norm n=%zu rstd %08x, torch %08x", n, bits(rstd), tov_ln_rstd[r]);
        off += n;
    }
    return fails;
}

/* fd_torch_sum (whose lanes' chains run 16 at a time where AVX-512 is
 * there) against its definition in terms of the per-lane row sums */
static int check_sum(void)
{
    int fails = 0;
    static float x[5000];
    uint64_t s = 99;
    for (size_t i = 0; i < 5000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5) * ldexpf(1.0f, (int)(s % 40) - 20);
    }
    static const size_t ns[] = {8, 9, 31, 32, 33, 63, 64, 100, 255, 256, 511, 512, 513, 1024, 1027, 2048, 2816, 4096, 5000};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        size_t n = ns[t], nv = n / 8;
        float want = 0.0f;
        for (size_t k = nv * 8; k < n; k++) want += x[k];
        for (size_t l = 0; l < 8; l++) want += fd_torch_row_sum(x + l, 8, nv);
        float got = fd_torch_sum(x, n);
        CHECKF(!memcmp(&got, &want, 4), "fd_torch_sum n=%zu: %a, definition %a", n, (double)got, (double)want);
    }
    return fails;
}

int test_torch_ops(void) { return check_activations() + check_softmax() + check_layernorm() + check_sum(); }
