/* Row-wise dequantization of the ggml types, transcribed from the reference
 * decoder gguf.quants (gguf Python package): each element is computed with
 * the same float32 operations in the same order (numpy evaluates every
 * binary operation in float32 and rounds it; the build has
 * -ffp-contract=off and x86-64 evaluates float in float, so one C operation
 * is one numpy operation).  The layouts are ggml's block structs
 * (ggml-common.h), all little-endian. */
#include "ggml_quants.h"
#include "util/bf16.h"
#include <strings.h>

#include "ggml_tables.inc"

#define QK_K 256

static const fd_ggml_type TYPES[] = {
    {FD_GGML_F32, "F32", 1, 4, 1, 0},         {FD_GGML_F16, "F16", 1, 2, 1, 0},
    {FD_GGML_Q4_0, "Q4_0", 32, 18, 1, 1},     {FD_GGML_Q4_1, "Q4_1", 32, 20, 1, 1},
    {FD_GGML_Q5_0, "Q5_0", 32, 22, 1, 1},     {FD_GGML_Q5_1, "Q5_1", 32, 24, 1, 1},
    {FD_GGML_Q8_0, "Q8_0", 32, 34, 1, 1},     {FD_GGML_Q8_1, "Q8_1", 32, 40, 0, 1},
    {FD_GGML_Q2_K, "Q2_K", 256, 84, 1, 1},    {FD_GGML_Q3_K, "Q3_K", 256, 110, 1, 1},
    {FD_GGML_Q4_K, "Q4_K", 256, 144, 1, 1},   {FD_GGML_Q5_K, "Q5_K", 256, 176, 1, 1},
    {FD_GGML_Q6_K, "Q6_K", 256, 210, 1, 1},   {FD_GGML_Q8_K, "Q8_K", 256, 292, 0, 1},
    {FD_GGML_IQ2_XXS, "IQ2_XXS", 256, 66, 1, 1}, {FD_GGML_IQ2_XS, "IQ2_XS", 256, 74, 1, 1},
    {FD_GGML_IQ3_XXS, "IQ3_XXS", 256, 98, 1, 1}, {FD_GGML_IQ1_S, "IQ1_S", 256, 50, 1, 1},
    {FD_GGML_IQ4_NL, "IQ4_NL", 32, 18, 1, 1}, {FD_GGML_IQ3_S, "IQ3_S", 256, 110, 1, 1},
    {FD_GGML_IQ2_S, "IQ2_S", 256, 82, 1, 1},  {FD_GGML_IQ4_XS, "IQ4_XS", 256, 136, 1, 1},
    {FD_GGML_I8, "I8", 1, 1, 0, 0},           {FD_GGML_I16, "I16", 1, 2, 0, 0},
    {FD_GGML_I32, "I32", 1, 4, 0, 0},         {FD_GGML_I64, "I64", 1, 8, 0, 0},
    {FD_GGML_F64, "F64", 1, 8, 0, 0},         {FD_GGML_IQ1_M, "IQ1_M", 256, 56, 1, 1},
    {FD_GGML_BF16, "BF16", 1, 2, 1, 0},       {FD_GGML_TQ1_0, "TQ1_0", 256, 54, 1, 1},
    {FD_GGML_TQ2_0, "TQ2_0", 256, 66, 1, 1},  {FD_GGML_MXFP4, "MXFP4", 32, 17, 1, 1},
    {FD_GGML_NVFP4, "NVFP4", 64, 36, 1, 1},   {FD_GGML_Q1_0, "Q1_0", 128, 18, 0, 1},
};

const fd_ggml_type *fd_ggml_type_of(uint32_t id)
{
    for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++)
        if (TYPES[i].id == id) return &TYPES[i];
    return NULL;
}

const fd_ggml_type *fd_ggml_type_named(const char *name)
{
    for (size_t i = 0; i < sizeof TYPES / sizeof *TYPES; i++)
        if (!strcasecmp(TYPES[i].name, name)) return &TYPES[i];
    return NULL;
}

int fd_ggml_row_bytes(const fd_ggml_type *t, uint64_t n, uint64_t *bytes)
{
    if (!t || n % t->blck) return -1;
    unsigned __int128 b = (unsigned __int128)(n / t->blck) * t->tsize;
    if (b > UINT64_MAX) return -1;
    *bytes = (uint64_t)b;
    return 0;
}

/* ------------------------------------------------------------ primitives */

static inline uint16_t u16le(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t u32le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* IEEE binary16 -> binary32, exact (numpy's float16.astype(float32)). */
static inline float f16(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        if (!m) return fd_bits_f32(s);
        return fd_bits_f32(fd_f32_bits((float)m * 0x1p-24f) | s); /* subnormal: m * 2^-24, exact */
    }
    if (e == 31) return fd_bits_f32(s | 0x7f800000u | m << 13);
    return fd_bits_f32(s | (e + 112) << 23 | m << 13);
}

/* ------------------------------------------------------- block decoders */

static void dq_f32(const uint8_t *b, float *y) { y[0] = fd_bits_f32(u32le(b)); }
static void dq_f16(const uint8_t *b, float *y) { y[0] = f16(u16le(b)); }
static void dq_bf16(const uint8_t *b, float *y) { y[0] = fd_bits_f32((uint32_t)u16le(b) << 16); }

static void dq_q4_0(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    for (int l = 0; l < 16; l++) {
        y[l] = d * (float)((b[2 + l] & 0xF) - 8);
        y[l + 16] = d * (float)((b[2 + l] >> 4) - 8);
    }
}

static void dq_q4_1(const uint8_t *b, float *y)
{
    float d = f16(u16le(b)), m = f16(u16le(b + 2));
    for (int l = 0; l < 16; l++) {
        y[l] = d * (float)(b[4 + l] & 0xF) + m;
        y[l + 16] = d * (float)(b[4 + l] >> 4) + m;
    }
}

static void dq_q5_0(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    uint32_t qh = u32le(b + 2);
    for (int i = 0; i < 32; i++) {
        int ql = (b[6 + i % 16] >> (4 * (i / 16))) & 0xF, h = (qh >> i) & 1;
        y[i] = d * (float)((ql | h << 4) - 16);
    }
}

static void dq_q5_1(const uint8_t *b, float *y)
{
    float d = f16(u16le(b)), m = f16(u16le(b + 2));
    uint32_t qh = u32le(b + 4);
    for (int i = 0; i < 32; i++) {
        int ql = (b[8 + i % 16] >> (4 * (i / 16))) & 0xF, h = (qh >> i) & 1;
        y[i] = d * (float)(ql | h << 4) + m;
    }
}

static void dq_q8_0(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    for (int i = 0; i < 32; i++) y[i] = (float)(int8_t)b[2 + i] * d;
}

static void dq_q2_k(const uint8_t *b, float *y)
{
    const uint8_t *sc = b, *qs = b + 16;
    float d = f16(u16le(b + 80)), dmin = f16(u16le(b + 82));
    for (int f = 0; f < QK_K; f++) {
        int j = f / 128, r = f % 128, s = r / 32, l = r % 32, sb = f / 16;
        float dl = d * (float)(sc[sb] & 0xF), ml = dmin * (float)(sc[sb] >> 4);
        y[f] = dl * (float)((qs[j * 32 + l] >> (2 * s)) & 3) - ml;
    }
}

static void dq_q3_k(const uint8_t *b, float *y)
{
    const uint8_t *hm = b, *qs = b + 32, *sc = b + 96;
    float d = f16(u16le(b + 108)), dl[16];
    for (int i = 0; i < 16; i++) {
        int lo = i < 8 ? sc[i] & 0xF : sc[i - 8] >> 4, hi = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
        dl[i] = d * (float)((lo | hi << 4) - 32);
    }
    for (int f = 0; f < QK_K; f++) {
        int j = f / 128, r = f % 128, s = r / 32, l = r % 32;
        int ql = (qs[j * 32 + l] >> (2 * s)) & 3, h = ((hm[l] >> (f / 32)) & 1) ^ 1;
        y[f] = dl[f / 16] * (float)(ql - (h << 2));
    }
}

/* Q4_K / Q5_K: eight 6-bit scales and mins packed in 12 bytes */
static void scale_min_k4(const uint8_t *s, int j, int *sc, int *mn)
{
    if (j < 4) {
        *sc = s[j] & 0x3F;
        *mn = s[4 + j] & 0x3F;
    } else {
        *sc = (s[8 + j - 4] & 0x0F) | ((s[j - 4] >> 2) & 0x30);
        *mn = (s[8 + j - 4] >> 4) | ((s[j] >> 2) & 0x30);
    }
}

static void dq_q4_k(const uint8_t *b, float *y)
{
    float d = f16(u16le(b)), dmin = f16(u16le(b + 2));
    const uint8_t *qs = b + 16;
    for (int sb = 0; sb < 8; sb++) {
        int sc, mn;
        scale_min_k4(b + 4, sb, &sc, &mn);
        float dl = d * (float)sc, dm = dmin * (float)mn;
        int c = sb / 2, h = sb % 2;
        for (int l = 0; l < 32; l++) y[sb * 32 + l] = dl * (float)((qs[c * 32 + l] >> (4 * h)) & 0xF) - dm;
    }
}

static void dq_q5_k(const uint8_t *b, float *y)
{
    float d = f16(u16le(b)), dmin = f16(u16le(b + 2));
    const uint8_t *qh = b + 16, *qs = b + 48;
    for (int sb = 0; sb < 8; sb++) {
        int sc, mn;
        scale_min_k4(b + 4, sb, &sc, &mn);
        float dl = d * (float)sc, dm = dmin * (float)mn;
        int c = sb / 2, h = sb % 2;
        for (int l = 0; l < 32; l++) {
            int q = ((qs[c * 32 + l] >> (4 * h)) & 0xF) | ((qh[l] >> sb) & 1) << 4;
            y[sb * 32 + l] = dl * (float)q - dm;
        }
    }
}

static void dq_q6_k(const uint8_t *b, float *y)
{
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    float d = f16(u16le(b + 208));
    for (int f = 0; f < QK_K; f++) {
        int j = f / 128, r = f % 128;
        int lo = (ql[j * 64 + r % 64] >> (4 * (r / 64))) & 0xF, hi = (qh[j * 32 + r % 32] >> (2 * (r / 32))) & 3;
        float ds = d * (float)sc[f / 16];
        y[f] = ds * (float)((int8_t)(lo | hi << 4) - 32);
    }
}

static void dq_tq1_0(const uint8_t *b, float *y)
{
    static const uint8_t POW3[5] = {1, 3, 9, 27, 81};
    const uint8_t *qs = b, *qh = b + 48;
    float d = f16(u16le(b + 52));
    for (int f = 0; f < QK_K; f++) {
        uint8_t v;
        if (f < 160) v = (uint8_t)(qs[f % 32] * POW3[f / 32]);
        else if (f < 240) v = (uint8_t)(qs[32 + (f - 160) % 16] * POW3[(f - 160) / 16]);
        else v = (uint8_t)(qh[(f - 240) % 4] * POW3[(f - 240) / 4]);
        y[f] = d * (float)(((uint16_t)v * 3 >> 8) - 1);
    }
}

static void dq_tq2_0(const uint8_t *b, float *y)
{
    float d = f16(u16le(b + 64));
    for (int f = 0; f < QK_K; f++) {
        int j = f / 128, r = f % 128, s = r / 32, l = r % 32;
        y[f] = d * (float)(((b[j * 32 + l] >> (2 * s)) & 3) - 1);
    }
}

static void dq_mxfp4(const uint8_t *b, float *y)
{
    uint32_t e = b[0];
    float d = fd_bits_f32(e < 2 ? 0x00200000u << e : (e - 1) << 23); /* ggml_e8m0_to_fp32_half */
    for (int f = 0; f < 32; f++) y[f] = d * (float)KVALUES_MXFP4[(b[1 + f % 16] >> (4 * (f / 16))) & 0xF];
}

/* 2^k for a normal float32 exponent k: what numpy's 2.0 ** k gives exactly */
static inline float pow2f(int k) { return fd_bits_f32((uint32_t)(127 + k) << 23); }

/* unsigned E4M3 (bias 7) times 0.5, 0x00 and 0x7f as zero, bit 7 ignored */
static float ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7F) return 0.0f;
    int ex = (x >> 3) & 0xF;
    float man = (float)(x & 7), raw;
    if (ex == 0) raw = man * 0x1p-9f;
    else raw = (1.0f + man / 8.0f) * pow2f(ex - 7);
    return raw * 0.5f;
}

static void dq_nvfp4(const uint8_t *b, float *y)
{
    for (int s = 0; s < 4; s++) {
        float d = ue4m3_half(b[s]);
        const uint8_t *qs = b + 4 + s * 8;
        for (int i = 0; i < 16; i++) y[s * 16 + i] = d * (float)KVALUES_NVFP4[i < 8 ? qs[i] & 0xF : qs[i - 8] >> 4];
    }
}

static void dq_iq2_xxs(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    for (int g = 0; g < 8; g++) {
        uint32_t a0 = u32le(b + 2 + 8 * g), a1 = u32le(b + 6 + 8 * g);
        float db = d * (0.5f + (float)(a1 >> 28)) * 0.25f;
        for (int k = 0; k < 4; k++) {
            const uint8_t *grid = GRID_IQ2XXS + 8 * ((a0 >> (8 * k)) & 0xFF);
            uint8_t sg = KSIGNS_IQ2XS[(a1 >> (7 * k)) & 0x7F];
            for (int i = 0; i < 8; i++) {
                float v = db * (float)grid[i];
                y[g * 32 + k * 8 + i] = (sg >> i) & 1 ? -v : v;
            }
        }
    }
}

static void dq_iq2_xs(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    for (int t = 0; t < 32; t++) {
        uint16_t v = u16le(b + 2 + 2 * t);
        int s = (b[66 + t / 4] >> (4 * ((t / 2) % 2))) & 0xF;
        float db = d * (0.5f + (float)s) * 0.25f;
        const uint8_t *grid = GRID_IQ2XS + 8 * (v & 511);
        uint8_t sg = KSIGNS_IQ2XS[v >> 9];
        for (int i = 0; i < 8; i++) {
            float x = db * (float)grid[i];
            y[t * 8 + i] = (sg >> i) & 1 ? -x : x;
        }
    }
}

static void dq_iq2_s(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *sc = b + 74;
    for (int t = 0; t < 32; t++) {
        int s = (sc[t / 4] >> (4 * ((t / 2) % 2))) & 0xF;
        float db = d * (0.5f + (float)s) * 0.25f;
        int idx = qs[t] | ((qh[t / 4] >> (2 * (t % 4))) & 3) << 8;
        const uint8_t *grid = GRID_IQ2S + 8 * idx;
        for (int i = 0; i < 8; i++) {
            float x = db * (float)grid[i];
            y[t * 8 + i] = (signs[t] >> i) & 1 ? -x : x;
        }
    }
}

static void dq_iq3_xxs(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    const uint8_t *qs = b + 2;
    for (int g = 0; g < 8; g++) {
        uint32_t aux = u32le(b + 66 + 4 * g);
        float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
        for (int k = 0; k < 4; k++) {
            uint8_t sg = KSIGNS_IQ2XS[(aux >> (7 * k)) & 0x7F];
            for (int j = 0; j < 8; j++) {
                float x = db * (float)GRID_IQ3XXS[4 * qs[8 * g + 2 * k + j / 4] + j % 4];
                y[g * 32 + k * 8 + j] = (sg >> j) & 1 ? -x : x;
            }
        }
    }
}

static void dq_iq3_s(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *sc = b + 106;
    for (int t = 0; t < 64; t++) {
        int g = t / 8, s = (sc[g / 2] >> (4 * (g % 2))) & 0xF;
        float db = d * (float)(1 + 2 * s);
        int idx = qs[t] | ((qh[t / 8] >> (t % 8)) & 1) << 8;
        for (int i = 0; i < 4; i++) {
            int e = t * 4 + i;
            float x = db * (float)GRID_IQ3S[4 * idx + i];
            y[e] = (signs[e / 8] >> (e % 8)) & 1 ? -x : x;
        }
    }
}

static void dq_iq1_s(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    const uint8_t *qs = b + 2;
    for (int g = 0; g < 8; g++) {
        uint16_t h = u16le(b + 34 + 2 * g);
        float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
        float delta = (h & 0x8000) ? -IQ1_DELTA : IQ1_DELTA;
        for (int k = 0; k < 4; k++) {
            int idx = qs[4 * g + k] | ((h >> (3 * k)) & 7) << 8;
            for (int i = 0; i < 8; i++) y[g * 32 + k * 8 + i] = dl * ((float)GRID_IQ1S[8 * idx + i] + delta);
        }
    }
}

static void dq_iq1_m(const uint8_t *b, float *y)
{
    const uint8_t *qs = b, *qh = b + 32;
    uint16_t sc[4];
    for (int i = 0; i < 4; i++) sc[i] = u16le(b + 48 + 2 * i);
    uint16_t dbits = (uint16_t)((sc[0] & 0xF000) >> 12 | (sc[1] & 0xF000) >> 8 | (sc[2] & 0xF000) >> 4 | (sc[3] & 0xF000));
    float d = f16(dbits);
    for (int t = 0; t < 32; t++) {
        int si = t / 2, s = (sc[si / 4] >> (3 * (si % 4))) & 7;
        float dl = d * (float)(2 * s + 1);
        int h = qh[t / 2] >> (4 * (t % 2));
        int idx = qs[t] | (h & 7) << 8;
        float delta = (h & 8) ? -IQ1_DELTA : IQ1_DELTA;
        for (int i = 0; i < 8; i++) y[t * 8 + i] = dl * ((float)GRID_IQ1S[8 * idx + i] + delta);
    }
}

static void dq_iq4_nl(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    for (int f = 0; f < 32; f++) y[f] = d * (float)KVALUES_IQ4NL[(b[2 + f % 16] >> (4 * (f / 16))) & 0xF];
}

static void dq_iq4_xs(const uint8_t *b, float *y)
{
    float d = f16(u16le(b));
    uint16_t sh = u16le(b + 2);
    const uint8_t *sl = b + 4, *qs = b + 8;
    for (int j = 0; j < 8; j++) {
        int lo = (sl[j / 2] >> (4 * (j % 2))) & 0xF, hi = (sh >> (2 * j)) & 3;
        float dl = d * (float)((int8_t)(lo | hi << 4) - 32);
        for (int i = 0; i < 32; i++) {
            int q = i < 16 ? qs[j * 16 + i] & 0xF : qs[j * 16 + i - 16] >> 4;
            y[j * 32 + i] = dl * (float)KVALUES_IQ4NL[q];
        }
    }
}

typedef void (*dq_fn)(const uint8_t *, float *);

static dq_fn decoder(uint32_t id)
{
    switch (id) {
    case FD_GGML_F32: return dq_f32;
    case FD_GGML_F16: return dq_f16;
    case FD_GGML_BF16: return dq_bf16;
    case FD_GGML_Q4_0: return dq_q4_0;
    case FD_GGML_Q4_1: return dq_q4_1;
    case FD_GGML_Q5_0: return dq_q5_0;
    case FD_GGML_Q5_1: return dq_q5_1;
    case FD_GGML_Q8_0: return dq_q8_0;
    case FD_GGML_Q2_K: return dq_q2_k;
    case FD_GGML_Q3_K: return dq_q3_k;
    case FD_GGML_Q4_K: return dq_q4_k;
    case FD_GGML_Q5_K: return dq_q5_k;
    case FD_GGML_Q6_K: return dq_q6_k;
    case FD_GGML_TQ1_0: return dq_tq1_0;
    case FD_GGML_TQ2_0: return dq_tq2_0;
    case FD_GGML_MXFP4: return dq_mxfp4;
    case FD_GGML_NVFP4: return dq_nvfp4;
    case FD_GGML_IQ2_XXS: return dq_iq2_xxs;
    case FD_GGML_IQ2_XS: return dq_iq2_xs;
    case FD_GGML_IQ2_S: return dq_iq2_s;
    case FD_GGML_IQ3_XXS: return dq_iq3_xxs;
    case FD_GGML_IQ3_S: return dq_iq3_s;
    case FD_GGML_IQ1_S: return dq_iq1_s;
    case FD_GGML_IQ1_M: return dq_iq1_m;
    case FD_GGML_IQ4_NL: return dq_iq4_nl;
    case FD_GGML_IQ4_XS: return dq_iq4_xs;
    default: return NULL;
    }
}

static dq_fn check(uint32_t id, uint64_t n, const fd_ggml_type **tp, fd_err *e)
{
    const fd_ggml_type *t = fd_ggml_type_of(id);
    if (!t) return fd_fail(e, "gguf_unknown_type", "", "ggml type %u is not a type ggml defines", id), NULL;
    dq_fn fn = decoder(id);
    if (!fn || !t->decodes)
        return fd_fail(e, "gguf_unsupported_type", "", "ggml type %s has no reference decoder to dequantize with", t->name), NULL;
    if (n % t->blck)
        return fd_fail(e, "bad_gguf", "", "a row of %llu elements is not a whole number of %s blocks of %u",
                       (unsigned long long)n, t->name, t->blck), NULL;
    *tp = t;
    return fn;
}

int fd_ggml_dequant_row_f32(uint32_t id, const void *src, uint64_t n, float *dst, fd_err *e)
{
    const fd_ggml_type *t;
    dq_fn fn = check(id, n, &t, e);
    if (!fn) return -1;
    const uint8_t *p = src;
    for (uint64_t i = 0; i < n; i += t->blck, p += t->tsize) fn(p, dst + i);
    return 0;
}

int fd_ggml_dequant_row_bf16(uint32_t id, const void *src, uint64_t n, uint16_t *dst, fd_err *e)
{
    const fd_ggml_type *t;
    dq_fn fn = check(id, n, &t, e);
    if (!fn) return -1;
    const uint8_t *p = src;
    float tmp[QK_K];
    for (uint64_t i = 0; i < n; i += t->blck, p += t->tsize) {
        fn(p, tmp);
        for (uint32_t k = 0; k < t->blck; k++) dst[i + k] = fd_f32_to_bf16(tmp[k]);
    }
    return 0;
}
