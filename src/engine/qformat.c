/* FP8 e4m3 block and NVFP4 arithmetic; definitions in qformat.h. */
#include "engine/qformat.h"
#include "engine/qconfig.h"
#include "util/bf16.h"
#include <math.h>
#include <string.h>

float fd_e4m3_to_f32(uint8_t b)
{
    int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
    float v;
    if (e == 15 && m == 7) v = NAN;
    else if (e == 0) v = ldexpf((float)m, -9);
    else v = ldexpf((float)(8 + m), e - 10);
    return s ? -v : v;
}

uint8_t fd_f32_to_e4m3(float x)
{
    uint8_t sign = signbit(x) ? 0x80 : 0;
    float a = fabsf(x);
    if (isnan(a)) return (uint8_t)(sign | 0x7f);
    if (a < 0x1p-6f) /* subnormal range: quantum 2^-9, code = multiple of the quantum (8 -> 2^-6, normal) */
        return (uint8_t)(sign | (uint8_t)nearbyintf(a * 0x1p9f));
    if (a >= 480.0f) return (uint8_t)(sign | 0x7f); /* past the range: NaN, as torch (464..480 round there below) */
    int E;
    float y = frexpf(a, &E); /* a = y * 2^E, y in [0.5, 1) */
    E -= 1;                  /* a = (2y) * 2^E, 2y in [1, 2) */
    float m = nearbyintf((2.0f * y - 1.0f) * 8.0f);
    if (m == 8.0f) { m = 0.0f; E += 1; }
    int code = ((E + 7) << 3) | (int)m;
    if (code > 0x7e) code = 0x7f;
    return (uint8_t)(sign | code);
}

static const float E2M1[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, 0, -0.5f, -1, -1.5f, -2, -3, -4, -6};

float fd_e2m1_to_f32(uint8_t code) { return E2M1[code & 15]; }

/* ModelOpt _cast_fp4: ord = #{bounds < |x|} over 0.25 0.75 1.25 1.75 2.5 3.5 5,
 * plus one when |x| is exactly 0.75, 1.75 or 3.5 (ties go to the even code). */
uint8_t fd_f32_to_e2m1(float x)
{
    static const float B[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    uint8_t sign = x < 0 ? 8 : 0;
    float a = fabsf(x);
    if (isnan(a)) return 7;
    uint8_t ord = 0;
    for (int i = 0; i < 7; i++) ord = (uint8_t)(ord + (B[i] < a));
    if (a == 0.75f || a == 1.75f || a == 3.5f) ord++;
    return (uint8_t)(sign | ord);
}

void fd_fp8_block_row_bf16(const uint8_t *w, const uint8_t *scale_inv, uint64_t K, uint64_t kb, int bm, int bn,
                           uint64_t row, uint16_t *out)
{
    const uint8_t *r = w + row * K;
    const uint8_t *srow = scale_inv + (row / (uint64_t)bm) * kb * 4;
    for (uint64_t j0 = 0; j0 < K; j0 += (uint64_t)bn) {
        float s;
        memcpy(&s, srow + (j0 / (uint64_t)bn) * 4, 4);
        uint64_t j1 = j0 + (uint64_t)bn < K ? j0 + (uint64_t)bn : K;
        for (uint64_t j = j0; j < j1; j++) out[j] = fd_f32_to_bf16(fd_e4m3_to_f32(r[j]) * s);
    }
}

void fd_mo_fp8_row_bf16(const uint8_t *w, float s_bf16, uint64_t K, uint64_t row, uint16_t *out)
{
    const uint8_t *r = w + row * K;
    for (uint64_t j = 0; j < K; j++) out[j] = fd_f32_to_bf16(fd_e4m3_to_f32(r[j]) * s_bf16);
}

float fd_e8m0_to_f32(uint8_t e) { return e == 255 ? NAN : ldexpf(1.0f, (int)e - 127); }

void fd_fp8_block_row_bf16_e8m0(const uint8_t *w, const uint8_t *scale_e8m0, uint64_t K, uint64_t kb, int bm, int bn,
                                uint64_t row, uint16_t *out)
{
    const uint8_t *r = w + row * K;
    const uint8_t *srow = scale_e8m0 + (row / (uint64_t)bm) * kb;
    for (uint64_t j0 = 0; j0 < K; j0 += (uint64_t)bn) {
        float s = fd_e8m0_to_f32(srow[j0 / (uint64_t)bn]);
        uint64_t j1 = j0 + (uint64_t)bn < K ? j0 + (uint64_t)bn : K;
        for (uint64_t j = j0; j < j1; j++) out[j] = fd_f32_to_bf16(fd_e4m3_to_f32(r[j]) * s);
    }
}

void fd_nvfp4_row_bf16(const uint8_t *w, const uint8_t *scale, float scale2, uint64_t K, uint64_t row, uint16_t *out)
{
    const uint8_t *r = w + row * (K / 2), *sr = scale + row * (K / FD_NVFP4_GROUP);
    for (uint64_t g = 0; g < K / FD_NVFP4_GROUP; g++) {
        float d = fd_e4m3_to_f32(sr[g]) * scale2;
        for (uint64_t j = g * FD_NVFP4_GROUP; j < (g + 1) * FD_NVFP4_GROUP; j += 2) {
            uint8_t b = r[j / 2];
            out[j] = fd_f32_to_bf16(fd_e2m1_to_f32(b & 15) * d);
            out[j + 1] = fd_f32_to_bf16(fd_e2m1_to_f32(b >> 4) * d);
        }
    }
}

void fd_fp8_block_quantize(const float *x, uint64_t N, uint64_t K, int bm, int bn, uint8_t *q, float *scale_inv)
{
    uint64_t kb = (K + (uint64_t)bn - 1) / (uint64_t)bn;
    for (uint64_t i0 = 0; i0 < N; i0 += (uint64_t)bm)
        for (uint64_t j0 = 0; j0 < K; j0 += (uint64_t)bn) {
            uint64_t i1 = i0 + (uint64_t)bm < N ? i0 + (uint64_t)bm : N, j1 = j0 + (uint64_t)bn < K ? j0 + (uint64_t)bn : K;
            float amax = 0.0f;
            for (uint64_t i = i0; i < i1; i++)
                for (uint64_t j = j0; j < j1; j++) {
                    float a = fabsf(x[i * K + j]);
                    if (a > amax) amax = a;
                }
            float s = amax > 0.0f ? FD_FP8_MAX / amax : 1.0f;
            for (uint64_t i = i0; i < i1; i++)
                for (uint64_t j = j0; j < j1; j++) {
                    float v = x[i * K + j] * s;
                    v = v < -FD_FP8_MAX ? -FD_FP8_MAX : v > FD_FP8_MAX ? FD_FP8_MAX : v;
                    q[i * K + j] = fd_f32_to_e4m3(v);
                }
            scale_inv[(i0 / (uint64_t)bm) * kb + j0 / (uint64_t)bn] = 1.0f / s;
        }
}

float fd_nvfp4_scale2(const float *x, uint64_t n)
{
    float amax = 0.0f;
    for (uint64_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        if (a > amax) amax = a;
    }
    return amax / (6.0f * 448.0f);
}

void fd_nvfp4_quantize(const float *x, uint64_t N, uint64_t K, float scale2, uint8_t *packed, uint8_t *scale)
{
    const float six_s2 = 6.0f * scale2;
    uint8_t code[FD_NVFP4_GROUP];
    for (uint64_t i = 0; i < N; i++)
        for (uint64_t g = 0; g < K / FD_NVFP4_GROUP; g++) {
            const float *xr = x + i * K + g * FD_NVFP4_GROUP;
            float amax = 0.0f;
            for (int j = 0; j < FD_NVFP4_GROUP; j++) {
                float a = fabsf(xr[j]);
                if (a > amax) amax = a;
            }
            float bs = amax / six_s2;
            if (bs == 0.0f) bs = 1.0f;
            uint8_t b8 = fd_f32_to_e4m3(bs);
            scale[i * (K / FD_NVFP4_GROUP) + g] = b8;
            float d = fd_e4m3_to_f32(b8) * scale2;
            for (int j = 0; j < FD_NVFP4_GROUP; j++) code[j] = fd_f32_to_e2m1(xr[j] / d);
            uint8_t *pr = packed + i * (K / 2) + g * (FD_NVFP4_GROUP / 2);
            for (int j = 0; j < FD_NVFP4_GROUP; j += 2) pr[j / 2] = (uint8_t)(code[j] | code[j + 1] << 4);
        }
}

uint16_t fd_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7fffffffu;
    if (x > 0x7f800000u) return (uint16_t)(sign | 0x7e00);
    if (x >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* >= 65520: rounds to infinity */
    if (x < 0x38800000u) {                                 /* below 2^-14: subnormal, quantum 2^-24 */
        float a;
        memcpy(&a, &x, 4);
        return (uint16_t)(sign | (uint16_t)nearbyintf(a * 0x1p24f)); /* 1024 is the smallest normal's code */
    }
    x += 0xfffu + ((x >> 13) & 1u);
    return (uint16_t)(sign | (uint16_t)((x - (112u << 23)) >> 13));
}

float fd_f16_to_f32(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(1024 + m), e - 25);
    return s ? -v : v;
}

static float scale_at(const uint8_t *scale, int sdtype, uint64_t idx)
{
    if (sdtype == 2) {
        float f;
        memcpy(&f, scale + idx * 4, 4);
        return f;
    }
    uint16_t h;
    memcpy(&h, scale + idx * 2, 2);
    return sdtype == 1 ? fd_f16_to_f32(h) : fd_bf16_to_f32(h);
}

static float ct_scale(const fd_ct_row *c, uint64_t idx) { return scale_at(c->scale, c->sdtype, idx); }

static uint16_t in_dtype_bf16(float v, int sdtype)
{
    return sdtype == 1 ? fd_f32_to_bf16(fd_f16_to_f32(fd_f32_to_f16(v))) : fd_f32_to_bf16(v);
}

static uint32_t word_at(const uint8_t *p, uint64_t idx)
{
    uint32_t w;
    memcpy(&w, p + idx * 4, 4);
    return w;
}

/* field i (b bits) of a little-endian run of int32 words at stride `stride`
 * words (a column of a row-major tensor: stride = its columns), bits
 * [i*b, i*b+b) of the run; a field may straddle two words (b = 3). `add`
 * is added to every word first (int32 wrap: GPTQ v1 zero points). */
static int bit_field(const uint8_t *p, uint64_t first, uint64_t stride, uint64_t i, int b, uint32_t add)
{
    uint64_t bit = i * (uint64_t)b, w = bit / 32, sh = bit % 32;
    uint64_t v = (uint32_t)(word_at(p, first + w * stride) + add) >> sh;
    if (sh + (uint64_t)b > 32) v |= (uint64_t)(uint32_t)(word_at(p, first + (w + 1) * stride) + add) << (32 - sh);
    return (int)(v & ((1u << b) - 1u));
}

void fd_gq_row_bf16(const fd_gq_row *c, uint64_t K, uint64_t n, uint16_t *out)
{
    static const int AWQ_POS[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    const uint32_t mask = (1u << c->bits) - 1u;
    const uint64_t zw = c->N * (uint64_t)c->bits / 32; /* qzeros words per row */
    const uint32_t add = !c->v1 ? 0u : c->bits == 2 ? 0x55555555u : c->bits == 4 ? 0x11111111u
                       : c->bits == 8 ? 0x01010101u : 0u; /* 3-bit: per field below */
    for (uint64_t k = 0; k < K; k++) {
        uint64_t g;
        int q, z;
        if (c->awq) {
            g = k / (uint64_t)c->group;
            int sh = AWQ_POS[n % 8] * 4;
            q = (int)((word_at(c->qweight, k * (c->N / 8) + n / 8) >> sh) & mask);
            z = (int)((word_at(c->qzeros, g * (c->N / 8) + n / 8) >> sh) & mask);
        } else {
            int32_t gi;
            memcpy(&gi, c->gidx + k * 4, 4);
            g = (uint64_t)gi; /* checked in [0, G) when the tensor was bound */
            q = bit_field(c->qweight, n, c->N, k, c->bits, 0);
            z = bit_field(c->qzeros, g * zw, 1, n, c->bits, add);
            if (c->v1 && c->bits == 3) z = (z + 1) & 7;
        }
        float v = (float)(q - z) * scale_at(c->scale, c->sdtype, g * c->N + n); /* exact: |q - z| <= 255 */
        out[k] = in_dtype_bf16(v, c->sdtype);
    }
}

/* element i (b bits) of a little-endian int32 word run, without the 2^(b-1) offset removed */
static int ct_field(const uint8_t *words, uint64_t i, int b)
{
    uint64_t bit = i * (uint64_t)b;
    uint32_t w;
    memcpy(&w, words + (bit / 32) * 4, 4);
    return (int)((w >> (bit % 32)) & ((1u << b) - 1u)); /* b in {4, 8}: a field never straddles words */
}

void fd_ct_row_bf16(const fd_ct_row *c, uint64_t K, uint64_t row, uint16_t *out)
{
    const uint8_t *r = c->dense ? c->packed + row * K : c->packed + row * c->pw * 4;
    const int off = c->dense ? 0 : 1 << (c->bits - 1);
    const uint64_t span = c->strategy == FD_CT_GROUP ? (uint64_t)c->group : c->strategy == FD_CT_BLOCK ? (uint64_t)c->bw : K;
    const uint64_t srow = c->strategy == FD_CT_BLOCK ? row / (uint64_t)c->bh : c->strategy == FD_CT_TENSOR ? 0 : row;
    for (uint64_t j0 = 0, g = 0; j0 < K; j0 += span, g++) {
        float s = ct_scale(c, srow * c->scols + g);
        int z = 0;
        if (c->zero && c->dense) z = (int8_t)c->zero[srow * c->scols + g]; /* unpacked I8, shaped as the scale */
        else if (c->zero) {
            uint64_t bit = row * (uint64_t)c->bits;
            uint32_t w;
            memcpy(&w, c->zero + ((bit / 32) * c->zcols + g) * 4, 4);
            z = (int)((w >> (bit % 32)) & ((1u << c->bits) - 1u)) - off;
        }
        uint64_t j1 = j0 + span < K ? j0 + span : K;
        for (uint64_t j = j0; j < j1; j++) {
            /* x_q.to(sdt) - z.to(sdt), exact (|d| <= 255, or an e4m3 value); times the scale */
            float d = c->dense == 2 ? fd_e4m3_to_f32(r[j]) : c->dense == 1 ? (float)((int8_t)r[j] - z)
                    : (float)(ct_field(r, j, c->bits) - off - z);
            out[j] = in_dtype_bf16(d * s, c->sdtype);
        }
    }
}

/* v rounded to the scales' dtype (0 BF16, 1 F16, 2 F32), as an fp32 value */
static float round_to(float v, int sdtype)
{
    return sdtype == 0 ? fd_bf16_to_f32(fd_f32_to_bf16(v)) : sdtype == 1 ? fd_f16_to_f32(fd_f32_to_f16(v)) : v;
}

uint16_t fd_mlx_elem_bf16(const fd_mlx_row *m, uint64_t K, uint64_t row, uint64_t col)
{
    const uint64_t words = K * (uint64_t)m->bits / 32, G = K / (uint64_t)m->group, g = col / (uint64_t)m->group;
    int q = bit_field(m->w, row * words, 1, col, m->bits, 0);
    float s = scale_at(m->scales, m->sdtype, row * G + g), b = scale_at(m->biases, m->sdtype, row * G + g);
    return fd_f32_to_bf16(round_to(round_to(s * (float)q, m->sdtype) + b, m->sdtype));
}

void fd_mlx_row_bf16(const fd_mlx_row *m, uint64_t K, uint64_t row, uint16_t *out)
{
    for (uint64_t j = 0; j < K; j++) out[j] = fd_mlx_elem_bf16(m, K, row, j);
}

static const float E2M1_SIGNED[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

void fd_ct_nvfp4_row_bf16(const uint8_t *packed, const uint8_t *scale_e4m3, float global_scale, uint64_t K,
                          uint64_t row, uint16_t *out)
{
    const uint8_t *r = packed + row * (K / 2), *sr = scale_e4m3 + row * (K / 16);
    for (uint64_t g = 0; g < K / 16; g++) {
        float d = fd_e4m3_to_f32(sr[g]) / global_scale; /* bf16 scale / fp32 global: fp32 */
        for (uint64_t j = g * 16; j < (g + 1) * 16; j += 2) {
            out[j] = fd_f32_to_bf16(E2M1_SIGNED[r[j / 2] & 15] * d);
            out[j + 1] = fd_f32_to_bf16(E2M1_SIGNED[r[j / 2] >> 4] * d);
        }
    }
}

void fd_ct_mxfp4_row_bf16(const uint8_t *packed, const uint8_t *scale_e8m0, uint64_t K, uint64_t row, uint16_t *out)
{
    const uint8_t *r = packed + row * (K / 2), *sr = scale_e8m0 + row * (K / 32);
    for (uint64_t g = 0; g < K / 32; g++) {
        float d = sr[g] == 255 ? INFINITY : ldexpf(1.0f, (int)sr[g] - 127);
        for (uint64_t j = g * 32; j < (g + 1) * 32; j += 2) {
            out[j] = fd_f32_to_bf16(E2M1_SIGNED[r[j / 2] & 15] * d);
            out[j + 1] = fd_f32_to_bf16(E2M1_SIGNED[r[j / 2] >> 4] * d);
        }
    }
}
