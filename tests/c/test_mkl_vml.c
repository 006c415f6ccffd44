/* src/kernels/mkl_vml.c against bit patterns torch 2.11 produced
 * (tests/c/mkl_vml_vectors.inc, written by tests/parity/mkl_vml_vectors.py):
 * torch.exp = MKL vsExp (Z0 kernel: fd_mkl_expf), torch.sqrt = MKL vsSqrt;
 * torch.log = MKL vsLn, torch.exp and torch.sqrt (EX kernels: fd_mkl_expf_ex,
 * fd_mkl_sqrtf_ex) against torch 2.15 (tests/c/vsln_vectors.inc, tests/parity/vsln_vectors.py;
 * NaN payloads and signs included); and, on an AVX-512 host,
 * fd_rsqrt14 against the VRSQRT14SS instruction on every input of [1, 4)
 * (2^24 values; both exponent parities of the reduction) and a sweep of all
 * binades. */
#include "check.h"
#include "util/bf16.h"
#include "kernels/mkl_vml.h"
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "mkl_vml_vectors.inc"
#include "vsln_vectors.inc"

#define bits fd_f32_bits
#define flt fd_bits_f32

#if defined(__x86_64__)
__attribute__((target("avx512f"))) static float hw_rsqrt14(float x)
{
    __m128 v = _mm_set_ss(x);
    return _mm_cvtss_f32(_mm_rsqrt14_ss(v, v));
}
#endif

static int check_rsqrt14_hw(void)
{
    int fails = 0;
#if defined(__x86_64__)
    if (!__builtin_cpu_supports("avx512f")) return 0; /* no instruction to compare with */
    size_t bad = 0;
    for (uint32_t u = 0x3f800000u; u < 0x40800000u; u++) bad += bits(hw_rsqrt14(flt(u))) != bits(fd_rsqrt14(flt(u)));
    for (uint32_t u = 1; u < 0x7f800000u; u += 4099) bad += bits(hw_rsqrt14(flt(u))) != bits(fd_rsqrt14(flt(u)));
    CHECKF(bad == 0, "fd_rsqrt14: %zu inputs differ from VRSQRT14SS", bad);
#endif
    return fails;
}

int test_mkl_vml(void)
{
    int fails = 0;
    size_t be = 0, bs = 0;
    for (size_t i = 0; i < MKV_EXP_N; i++) be += bits(fd_mkl_expf(flt(mkv_exp_x[i]))) != mkv_exp_y[i];
    CHECKF(be == 0, "fd_mkl_expf: %zu of %d differ from torch 2.11's torch.exp", be, MKV_EXP_N);
    for (size_t i = 0; i < MKV_SQRT_N; i++) bs += bits(fd_mkl_sqrtf(flt(mkv_sqrt_x[i]))) != mkv_sqrt_y[i];
    CHECKF(bs == 0, "fd_mkl_sqrtf: %zu of %d differ from torch 2.11's torch.sqrt", bs, MKV_SQRT_N);
    size_t bl = 0;
    for (size_t i = 0; i < MKV_LN_N; i++) bl += bits(fd_mkl_logf(flt(mkv_ln_x[i]))) != mkv_ln_y[i];
    CHECKF(bl == 0, "fd_mkl_logf: %zu of %d differ from torch.log", bl, MKV_LN_N);
    size_t bx = 0;
    for (size_t i = 0; i < MKV_EX_N; i++) bx += bits(fd_mkl_expf_ex(flt(mkv_ex_x[i]))) != mkv_ex_y[i];
    CHECKF(bx == 0, "fd_mkl_expf_ex: %zu of %d differ from torch 2.15's torch.exp", bx, MKV_EX_N);
    size_t bq = 0;
    for (size_t i = 0; i < MKV_SQ_N; i++) bq += bits(fd_mkl_sqrtf_ex(flt(mkv_sq_x[i]))) != mkv_sq_y[i];
    CHECKF(bq == 0, "fd_mkl_sqrtf_ex: %zu of %d differ from torch 2.15's torch.sqrt", bq, MKV_SQ_N);
    fails += check_rsqrt14_hw();
    return fails;
}
