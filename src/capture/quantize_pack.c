#include "capture/quantize_pack.h"
#include "engine/qformat.h"
#include "util/bf16.h"
#include <math.h>
#include <string.h>

static float bf16r(float v) { return fd_bf16_to_f32(fd_f32_to_bf16(v)); }

static float clampf(float v, float lo, float hi) { return v < lo ? lo : v > hi ? hi : v; }

void fd_qp_ct_int4(const float *x, uint64_t N, uint64_t K, uint64_t g, int32_t *packed, uint16_t *scale)
{
    uint64_t G = K / g, W = K / 8;
    memset(packed, 0, N * W * sizeof *packed);
    for (uint64_t n = 0; n < N; n++)
        for (uint64_t gi = 0; gi < G; gi++) {
            const float *r = x + n * K + gi * g;
            float amax = 0.0f;
            for (uint64_t j = 0; j < g; j++) amax = fmaxf(amax, fabsf(bf16r(r[j])));
            float s = bf16r(amax / 7.5f);
            if (s == 0.0f) s = 0.0078125f; /* torch.finfo(bfloat16).eps */
            scale[n * G + gi] = fd_f32_to_bf16(s);
            for (uint64_t j = 0; j < g; j++) {
                float q = clampf(rintf(bf16r(bf16r(r[j]) / s)), -8.0f, 7.0f);
                uint64_t k = gi * g + j;
                uint32_t f = (uint32_t)((int)q + 8);
                uint32_t *word = (uint32_t *)&packed[n * W + k / 8];
                *word |= f << (4 * (k % 8));
            }
        }
}

void fd_qp_gptq_int4(const float *x, uint64_t N, uint64_t K, uint64_t g, int32_t *qweight, int32_t *qzeros,
                     uint16_t *scales, int32_t *g_idx)
{
    uint64_t G = K / g;
    memset(qweight, 0, K / 8 * N * sizeof *qweight);
    for (uint64_t i = 0; i < G * (N / 8); i++) qzeros[i] = 0x77777777;
    for (uint64_t k = 0; k < K; k++) g_idx[k] = (int32_t)(k / g);
    for (uint64_t n = 0; n < N; n++)
        for (uint64_t gi = 0; gi < G; gi++) {
            const float *r = x + n * K + gi * g;
            float amax = 0.0f;
            for (uint64_t j = 0; j < g; j++) amax = fmaxf(amax, fabsf(r[j]));
            float s = amax > 0.0f ? 2.0f * amax / 15.0f : 2.0f / 15.0f;
            uint16_t sh = fd_f32_to_f16(s);
            float se = fd_f16_to_f32(sh);
            if (!(se > 0.0f) || isinf(se)) { sh = fd_f32_to_f16(2.0f / 15.0f); se = fd_f16_to_f32(sh); } /* fp16 range */
            scales[gi * N + n] = sh;
            for (uint64_t j = 0; j < g; j++) {
                uint64_t k = gi * g + j;
                uint32_t f = (uint32_t)clampf(rintf(r[j] / se) + 8.0f, 0.0f, 15.0f);
                uint32_t *word = (uint32_t *)&qweight[(k / 8) * N + n];
                *word |= f << (4 * (k % 8));
            }
        }
}

void fd_qp_mlx_int4(const float *x, uint64_t N, uint64_t K, uint64_t g, uint32_t *w, uint16_t *scales,
                    uint16_t *biases)
{
    uint64_t G = K / g, W = K / 8;
    memset(w, 0, N * W * sizeof *w);
    for (uint64_t n = 0; n < N; n++)
        for (uint64_t gi = 0; gi < G; gi++) {
            const float *r = x + n * K + gi * g;
            float mn = r[0], mx = r[0];
            for (uint64_t j = 1; j < g; j++) { mn = fminf(mn, r[j]); mx = fmaxf(mx, r[j]); }
            float s = mx > mn ? bf16r((mx - mn) / 15.0f) : 1.0f, b = bf16r(mn);
            if (!(s > 0.0f)) s = 1.0f;
            scales[n * G + gi] = fd_f32_to_bf16(s);
            biases[n * G + gi] = fd_f32_to_bf16(b);
            for (uint64_t j = 0; j < g; j++) {
                uint64_t k = gi * g + j;
                uint32_t f = (uint32_t)clampf(rintf((r[j] - b) / s), 0.0f, 15.0f);
                w[n * W + k / 8] |= f << (4 * (k % 8));
            }
        }
}
