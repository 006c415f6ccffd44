/* GGUF views (engine/gguf_model.h): the rearrangements llama.cpp's converter
 * applies, undone row by row by fd_gguf_row_bf16 / fd_gguf_elem_bf16.
 *   - FD_GG_PERMUTE: LlamaModel.permute (reshape(n_head, 2, hd/2, K)
 *     .swapaxes(1, 2)) of q_proj / k_proj rows;
 *   - FD_GG_KV_B: DeepseekV2Model's kv_b_proj split (view(nh, dn+dv, r),
 *     k_b transposed to [nh, r, dn], v_b [nh, dv, r]) with k_b and v_b of
 *     different ggml types (F32 and Q8_0, as llama-quantize leaves a k_b
 *     whose rows are not whole K-quant blocks);
 *   - FD_GG_ROWS with row0: expert E of a stacked [E, rows, K] tensor;
 *   - FD_GG_CAT2: a projection split along its rows in two tensors
 *     (qwen4exp's index_qk_proj -> indexer.q_proj + k_proj) of different
 *     ggml types (Q8_0 and F32), concatenated back. */
#include "check.h"
#include "engine/gguf_model.h"
#include "format/ggml_quants.h"
#include "util/bf16.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static float val(uint64_t r, uint64_t c) { return (float)((int)(r * 37 + c * 11) % 61 - 30) * 0.25f; }

/* one Q8_0 block of 32 values v with scale d (f16 of d) and codes round(v/d) */
static void q8_block(const float *v, unsigned char *out)
{
    float amax = 0;
    for (int i = 0; i < 32; i++) amax = fabsf(v[i]) > amax ? fabsf(v[i]) : amax;
    float d = amax / 127.0f;
    _Float16 h = (_Float16)d;
    memcpy(out, &h, 2);
    float dd = (float)h;
    for (int i = 0; i < 32; i++) {
        float q = dd ? roundf(v[i] / dd) : 0;
        out[2 + i] = (unsigned char)(signed char)(q > 127 ? 127 : q < -127 ? -127 : q);
    }
}

static int permute(void)
{
    int fails = 0;
    enum { NH = 3, HD = 8, K = 4, N = NH * HD };
    float g[N * K];
    for (uint64_t h = 0; h < NH; h++) /* GGUF row (h, b, a) holds HF row (h, a, b) */
        for (uint64_t a = 0; a < 2; a++)
            for (uint64_t b = 0; b < HD / 2; b++)
                for (uint64_t c = 0; c < K; c++) g[(h * HD + b * 2 + a) * K + c] = val(h * HD + a * HD / 2 + b, c);
    fd_tensor t = {0};
    t.ndim = 2;
    t.lshape[0] = t.shape[0] = N;
    t.lshape[1] = t.shape[1] = K;
    t.qfmt = FD_Q_GGUF;
    t.gkind = FD_GG_PERMUTE;
    t.gtype = FD_GGML_F32;
    t.gp[0] = NH;
    t.data = g;
    uint16_t row[K];
    for (uint64_t r = 0; r < N; r++) {
        fd_gguf_row_bf16(&t, r, K, row);
        for (uint64_t c = 0; c < K; c++) {
            CHECKF(row[c] == fd_f32_to_bf16(val(r, c)), "permute row %llu col %llu", (unsigned long long)r,
                   (unsigned long long)c);
            CHECKF(fd_gguf_elem_bf16(&t, r * K + c) == row[c], "permute elem %llu,%llu", (unsigned long long)r,
                   (unsigned long long)c);
        }
    }
    return fails;
}

static int kv_b(void)
{
    int fails = 0;
    enum { NH = 2, DN = 3, DV = 2, R = 32 };
    float kb[NH * R * DN];
    unsigned char vb[NH * DV * 34];
    for (uint64_t h = 0; h < NH; h++) {
        for (uint64_t c = 0; c < R; c++)
            for (uint64_t j = 0; j < DN; j++) kb[(h * R + c) * DN + j] = val(h * (DN + DV) + j, c);
        for (uint64_t i = 0; i < DV; i++) {
            float v[R];
            for (uint64_t c = 0; c < R; c++) v[c] = val(h * (DN + DV) + DN + i, c);
            q8_block(v, vb + (h * DV + i) * 34);
        }
    }
    fd_tensor t = {0};
    t.ndim = 2;
    t.lshape[0] = t.shape[0] = NH * (DN + DV);
    t.lshape[1] = t.shape[1] = R;
    t.qfmt = FD_Q_GGUF;
    t.gkind = FD_GG_KV_B;
    t.gtype = FD_GGML_F32;
    t.gtype2 = FD_GGML_Q8_0;
    t.gp[0] = NH;
    t.gp[1] = DN;
    t.gp[2] = DV;
    t.data = kb;
    t.gdata2 = vb;
    uint16_t row[R];
    float ref[R];
    fd_err e;
    for (uint64_t r = 0; r < NH * (DN + DV); r++) {
        fd_gguf_row_bf16(&t, r, R, row);
        uint64_t h = r / (DN + DV), j = r % (DN + DV);
        if (j >= DN) fd_ggml_dequant_row_f32(FD_GGML_Q8_0, vb + (h * DV + j - DN) * 34, R, ref, &e);
        for (uint64_t c = 0; c < R; c++) {
            float want = j < DN ? val(r, c) : ref[c];
            CHECKF(row[c] == fd_f32_to_bf16(want), "kv_b row %llu col %llu", (unsigned long long)r, (unsigned long long)c);
        }
        CHECKF(fd_gguf_elem_bf16(&t, r * R + 5) == row[5], "kv_b elem row %llu", (unsigned long long)r);
    }
    return fails;
}

static int expert_rows(void)
{
    int fails = 0;
    enum { E = 3, ROWS = 2, K = 64 };
    unsigned char q[E * ROWS * 2 * 34];
    for (uint64_t r = 0; r < E * ROWS; r++)
        for (uint64_t b = 0; b < 2; b++) {
            float v[32];
            for (int i = 0; i < 32; i++) v[i] = val(r, b * 32 + (uint64_t)i);
            q8_block(v, q + (r * 2 + b) * 34);
        }
    fd_tensor t = {0};
    t.ndim = 2;
    t.lshape[0] = t.shape[0] = ROWS;
    t.lshape[1] = t.shape[1] = K;
    t.qfmt = FD_Q_GGUF;
    t.gkind = FD_GG_ROWS;
    t.gtype = FD_GGML_Q8_0;
    t.grow0 = 2 * ROWS; /* expert 2 */
    t.data = q;
    uint16_t row[K];
    float ref[K];
    fd_err e;
    for (uint64_t r = 0; r < ROWS; r++) {
        fd_gguf_row_bf16(&t, r, K, row);
        fd_ggml_dequant_row_f32(FD_GGML_Q8_0, q + (2 * ROWS + r) * 68, K, ref, &e);
        for (uint64_t c = 0; c < K; c++) {
            CHECKF(row[c] == fd_f32_to_bf16(ref[c]), "expert row %llu col %llu", (unsigned long long)r, (unsigned long long)c);
            CHECKF(fd_gguf_elem_bf16(&t, r * K + c) == row[c], "expert elem %llu,%llu", (unsigned long long)r,
                   (unsigned long long)c);
        }
    }
    return fails;
}

static int cat2(void)
{
    int fails = 0;
    enum { N1 = 3, N2 = 2, K = 64 };
    unsigned char q[N1 * 2 * 34];
    float f[N2 * K];
    for (uint64_t r = 0; r < N1; r++)
        for (uint64_t b = 0; b < 2; b++) {
            float v[32];
            for (int i = 0; i < 32; i++) v[i] = val(r, b * 32 + (uint64_t)i);
            q8_block(v, q + (r * 2 + b) * 34);
        }
    for (uint64_t r = 0; r < N2; r++)
        for (uint64_t c = 0; c < K; c++) f[r * K + c] = val(N1 + r, c) + 0.125f;
    fd_tensor t = {0};
    t.ndim = 2;
    t.lshape[0] = t.shape[0] = N1 + N2;
    t.lshape[1] = t.shape[1] = K;
    t.qfmt = FD_Q_GGUF;
    t.gkind = FD_GG_CAT2;
    t.gtype = FD_GGML_Q8_0;
    t.gtype2 = FD_GGML_F32;
    t.gp[0] = N1;
    t.data = q;
    t.gdata2 = (const unsigned char *)f;
    uint16_t row[K];
    float ref[K];
    fd_err e;
    for (uint64_t r = 0; r < N1 + N2; r++) {
        fd_gguf_row_bf16(&t, r, K, row);
        if (r < N1) fd_ggml_dequant_row_f32(FD_GGML_Q8_0, q + r * 68, K, ref, &e);
        for (uint64_t c = 0; c < K; c++) {
            float want = r < N1 ? ref[c] : f[(r - N1) * K + c];
            CHECKF(row[c] == fd_f32_to_bf16(want), "cat2 row %llu col %llu", (unsigned long long)r, (unsigned long long)c);
        }
        CHECKF(fd_gguf_elem_bf16(&t, r * K + 7) == row[7], "cat2 elem row %llu", (unsigned long long)r);
    }
    return fails;
}

int test_gguf_views(void) { return permute() + kv_b() + expert_rows() + cat2(); }
