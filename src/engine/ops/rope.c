/* RoPE (default rope_type): bf16 cos/sin tables, the interleaved rotation stored de-interleaved (engine/ops/ops.h). */
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

void fd_rope_init(fd_rope *R, size_t S, size_t d, double theta)
{
    R->half = d / 2;
    R->c = fd_xmalloc(S * R->half * 2 + 2);
    R->s = fd_xmalloc(S * R->half * 2 + 2);
    for (size_t i = 0; i < R->half; i++) {
        float ex = (float)(2 * i) / (float)d;
        float inv = 1.0f / powf((float)theta, ex);
        for (size_t p = 0; p < S; p++) {
            float a = (float)p * inv;
            R->c[p * R->half + i] = BF(cosf(a));
            R->s[p * R->half + i] = BF(sinf(a));
        }
    }
}

void fd_rope_init_freqs(fd_rope *R, size_t S, size_t d, const float *inv_freq, double attention_scaling)
{
    R->half = d / 2;
    R->c = fd_xmalloc(S * R->half * 2 + 2);
    R->s = fd_xmalloc(S * R->half * 2 + 2);
    float sc = (float)attention_scaling; /* torch: fp32 tensor * Python float */
    for (size_t i = 0; i < R->half; i++)
        for (size_t p = 0; p < S; p++) {
            float a = (float)p * inv_freq[i];
            R->c[p * R->half + i] = BF(cosf(a) * sc);
            R->s[p * R->half + i] = BF(sinf(a) * sc);
        }
}

/* transformers' _compute_yarn_parameters (modeling_rope_utils.py): the
 * Python-float steps in double, the tensor steps in fp32, one rounding each */
void fd_rope_yarn_inv_freq(float *inv, size_t d, double base, double factor, double beta_fast, double beta_slow,
                           double orig_max_pos, int truncate)
{
    const double pi = 3.141592653589793;
    double dim = (double)d;
    double low = (dim * log(orig_max_pos / (beta_fast * 2 * pi))) / (2 * log(base));
    double high = (dim * log(orig_max_pos / (beta_slow * 2 * pi))) / (2 * log(base));
    if (truncate) { low = floor(low); high = ceil(high); }
    if (low < 0) low = 0;
    if (high > dim - 1) high = dim - 1;
    if (low == high) high += 0.001;
    float fmin = (float)low, span = (float)(high - low), ff = (float)factor;
    for (size_t i = 0; i < d / 2; i++) {
        float pos = powf((float)base, (float)(2 * i) / (float)d);
        float extra = 1.0f / pos, inter = 1.0f / (ff * pos);
        float ramp = ((float)i - fmin) / span;
        if (ramp < 0.0f) ramp = 0.0f;
        if (ramp > 1.0f) ramp = 1.0f;
        float ef = 1.0f - ramp;
        float a = inter * (1.0f - ef), b = extra * ef;
        inv[i] = a + b;
    }
}

/* rotate_half RoPE (transformers' apply_rotary_pos_emb): out = x*cos +
 * rotate_half(x)*sin, each product rounded to bf16, on the non-interleaved
 * layout (halves [0, h) and [h, 2h)). */
void fd_rope_rot_half(uint16_t *z, const fd_rope *R, size_t p)
{
    size_t h = R->half;
    uint16_t tmp[1024];
    uint16_t *o = 2 * h <= 1024 ? tmp : fd_xmalloc(2 * h * 2);
    const uint16_t *c = R->c + p * h, *s = R->s + p * h;
    for (size_t i = 0; i < h; i++) {
        float ci = F(c[i]), si = F(s[i]), x1 = F(z[i]), x2 = F(z[h + i]);
        o[i] = BF(F(BF(x1 * ci)) - F(BF(x2 * si)));
        o[h + i] = BF(F(BF(x2 * ci)) + F(BF(x1 * si)));
    }
    memcpy(z, o, 2 * h * 2);
    if (o != tmp) free(o);
}

typedef struct rope_heads_job {
    uint16_t *q, *k;
    const fd_rope *R;
    size_t nq, nk, d;
} rope_heads_job;

static void rope_heads_rows(void *ctx, size_t lo, size_t hi)
{
    const rope_heads_job *j = ctx;
    for (size_t t = lo; t < hi; t++) {
        for (size_t h = 0; h < j->nq; h++) fd_rope_rot_half(j->q + (t * j->nq + h) * j->d, j->R, t);
        for (size_t h = 0; h < j->nk; h++) fd_rope_rot_half(j->k + (t * j->nk + h) * j->d, j->R, t);
    }
}

void fd_op_rope_heads(const fd_mm *m, uint16_t *q, size_t nq, uint16_t *k, size_t nk, size_t d, const fd_rope *R, size_t S)
{
    rope_heads_job j = {q, k, R, nq, k ? nk : 0, d};
    fd_mm_range(m, S, 32, rope_heads_rows, &j);
}

/* Interleaved rotation of z[0..d) at position p, stored de-interleaved. */
void fd_rope_rot(uint16_t *z, const fd_rope *R, size_t p)
{
    size_t h = R->half;
    uint16_t tmp[1024];
    uint16_t *o = 2 * h <= 1024 ? tmp : fd_xmalloc(2 * h * 2);
    const uint16_t *c = R->c + p * h, *s = R->s + p * h;
    for (size_t i = 0; i < h; i++) {
        float ci = F(c[i]), si = F(s[i]), e0 = F(z[2 * i]), o1 = F(z[2 * i + 1]);
        o[i] = BF(F(BF(e0 * ci)) - F(BF(o1 * si)));
        o[h + i] = BF(F(BF(o1 * ci)) + F(BF(e0 * si)));
    }
    memcpy(z, o, 2 * h * 2);
    if (o != tmp) free(o);
}

void fd_rope_free(fd_rope *R)
{
    free(R->c);
    free(R->s);
    R->c = R->s = NULL;
}

/* ------------------------------------------------------------ transformers' rotate_half RoPE
 * (Llama / Qwen families: modeling_rope_utils.py, apply_rotary_pos_emb). */

/* inv_freq[i] = 1 / theta^(fp32(2i) / fp32(d)), all fp32 as torch computes it
 * (`base ** (arange(0, d, 2).float() / d)` then `1.0 / that`). */
void fd_rope_inv_default(float *inv, size_t d, double theta)
{
    for (size_t i = 0; i < d / 2; i++) inv[i] = 1.0f / powf((float)theta, (float)(2 * i) / (float)d);
}

/* _compute_llama3_parameters on the default inv_freq, every step an fp32
 * tensor op with its Python scalar cast to fp32 (measured: `s / t` is
 * t.reciprocal() * s, `t / s` a true division). */
void fd_rope_inv_llama3(float *inv, size_t d, double factor, double low_ff, double high_ff, double old_ctx)
{
    float f = (float)factor, lo = (float)low_ff, old = (float)old_ctx;
    float low_wl = (float)(old_ctx / low_ff), high_wl = (float)(old_ctx / high_ff), den = (float)(high_ff - low_ff);
    float two_pi = (float)(2.0 * 3.141592653589793);
    for (size_t i = 0; i < d / 2; i++) {
        float v = inv[i];
        float wl = (1.0f / v) * two_pi;
        float ll = wl > low_wl ? v / f : v;
        float sf = ((1.0f / wl) * old - lo) / den;
        float sm = (1.0f - sf) * ll / f + sf * ll;
        int medium = !(wl < high_wl) && !(wl > low_wl);
        inv[i] = medium ? sm : ll;
    }
}
