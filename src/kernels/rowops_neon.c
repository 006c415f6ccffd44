/* The row operations (rowops.h) in NEON for aarch64 (issue 24.3): 8 lanes a
 * step, each lane the exact operation sequence of the portable loop (IEEE
 * fp32 under the default FPCR, bf16 rounding on the bit pattern as
 * util/bf16.h: NaN -> (u >> 16) | 0x40, else (u + 0x7fff + lsb) >> 16).
 * Each returns how many leading elements it did; rowops.c runs the rest. */
#include <stddef.h>
#include <stdint.h>

size_t fd_neon_round_bf16(const float *x, const float *bias, size_t n, uint16_t *out);
size_t fd_neon_bf16_add(uint16_t *x, const uint16_t *y, size_t n);
size_t fd_neon_bf16_axpy(float *acc, const uint16_t *y, float r, size_t n);
size_t fd_neon_bf16_square(const uint16_t *x, size_t n, float *t);
size_t fd_neon_bf16_scale_round(const uint16_t *x, float s, size_t n, uint16_t *y);
size_t fd_neon_bf16_weight_round(const float *w, size_t n, uint16_t *y);
size_t fd_neon_bf16_rescale(float *x, size_t n, float s);
size_t fd_neon_relu_fma_acc(float *acc, const float *row, float d, float w, size_t n);

#if defined(__aarch64__)
#include <arm_neon.h>
#define AI static inline __attribute__((always_inline))

AI uint16x4_t round4(float32x4_t v)
{
    uint32x4_t u = vreinterpretq_u32_f32(v), hi = vshrq_n_u32(u, 16);
    uint32x4_t nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7fffffffu)), vdupq_n_u32(0x7f800000u));
    uint32x4_t r = vshrq_n_u32(vaddq_u32(u, vaddq_u32(vdupq_n_u32(0x7fffu), vandq_u32(hi, vdupq_n_u32(1)))), 16);
    return vmovn_u32(vbslq_u32(nan, vorrq_u32(hi, vdupq_n_u32(0x40)), r));
}
AI uint16x8_t round8(float32x4_t a, float32x4_t b) { return vcombine_u16(round4(a), round4(b)); }
AI float32x4_t lo8(uint16x8_t h) { return vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16)); }
AI float32x4_t hi8(uint16x8_t h) { return vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(h), 16)); }
/* bf16(v) widened back to fp32 */
AI float32x4_t rnd_f32(float32x4_t v) { return vreinterpretq_f32_u32(vshll_n_u16(round4(v), 16)); }

size_t fd_neon_round_bf16(const float *x, const float *bias, size_t n, uint16_t *out)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        float32x4_t a = vld1q_f32(x + i), b = vld1q_f32(x + i + 4);
        if (bias) a = vaddq_f32(a, vld1q_f32(bias + i)), b = vaddq_f32(b, vld1q_f32(bias + i + 4));
        vst1q_u16(out + i, round8(a, b));
    }
    return i;
}

size_t fd_neon_bf16_add(uint16_t *x, const uint16_t *y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x8_t a = vld1q_u16(x + i), b = vld1q_u16(y + i);
        vst1q_u16(x + i, round8(vaddq_f32(lo8(a), lo8(b)), vaddq_f32(hi8(a), hi8(b))));
    }
    return i;
}

size_t fd_neon_bf16_axpy(float *acc, const uint16_t *y, float r, size_t n)
{
    size_t i = 0;
    const float32x4_t rv = vdupq_n_f32(r);
    for (; i + 8 <= n; i += 8) { /* a rounded product, then a rounded add */
        uint16x8_t h = vld1q_u16(y + i);
        vst1q_f32(acc + i, vaddq_f32(vld1q_f32(acc + i), vmulq_f32(lo8(h), rv)));
        vst1q_f32(acc + i + 4, vaddq_f32(vld1q_f32(acc + i + 4), vmulq_f32(hi8(h), rv)));
    }
    return i;
}

size_t fd_neon_bf16_square(const uint16_t *x, size_t n, float *t)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x8_t h = vld1q_u16(x + i);
        float32x4_t a = lo8(h), b = hi8(h);
        vst1q_f32(t + i, vmulq_f32(a, a));
        vst1q_f32(t + i + 4, vmulq_f32(b, b));
    }
    return i;
}

size_t fd_neon_bf16_scale_round(const uint16_t *x, float s, size_t n, uint16_t *y)
{
    size_t i = 0;
    const float32x4_t sv = vdupq_n_f32(s);
    for (; i + 8 <= n; i += 8) {
        uint16x8_t h = vld1q_u16(x + i);
        vst1q_u16(y + i, round8(vmulq_f32(lo8(h), sv), vmulq_f32(hi8(h), sv)));
    }
    return i;
}

size_t fd_neon_bf16_weight_round(const float *w, size_t n, uint16_t *y)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x8_t h = vld1q_u16(y + i);
        vst1q_u16(y + i, round8(vmulq_f32(vld1q_f32(w + i), lo8(h)), vmulq_f32(vld1q_f32(w + i + 4), hi8(h))));
    }
    return i;
}

size_t fd_neon_bf16_rescale(float *x, size_t n, float s)
{
    size_t i = 0;
    const float32x4_t sv = vdupq_n_f32(s);
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, rnd_f32(vmulq_f32(rnd_f32(vld1q_f32(x + i)), sv)));
    return i;
}

/* relu(v) = v > 0 ? v : +0 (NaN and -0 give +0), then one fused multiply-add */
size_t fd_neon_relu_fma_acc(float *acc, const float *row, float d, float w, size_t n)
{
    size_t i = 0;
    const float32x4_t dv = vdupq_n_f32(d), wv = vdupq_n_f32(w), z = vdupq_n_f32(0.0f);
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vmulq_f32(dv, vld1q_f32(row + i));
        v = vbslq_f32(vcgtq_f32(v, z), v, z);
        vst1q_f32(acc + i, vfmaq_f32(vld1q_f32(acc + i), wv, v));
    }
    return i;
}

#else /* not aarch64: nothing done here, the caller's loop does all */
size_t fd_neon_round_bf16(const float *x, const float *bias, size_t n, uint16_t *out) { (void)x; (void)bias; (void)n; (void)out; return 0; }
size_t fd_neon_bf16_add(uint16_t *x, const uint16_t *y, size_t n) { (void)x; (void)y; (void)n; return 0; }
size_t fd_neon_bf16_axpy(float *acc, const uint16_t *y, float r, size_t n) { (void)acc; (void)y; (void)r; (void)n; return 0; }
size_t fd_neon_bf16_square(const uint16_t *x, size_t n, float *t) { (void)x; (void)n; (void)t; return 0; }
size_t fd_neon_bf16_scale_round(const uint16_t *x, float s, size_t n, uint16_t *y) { (void)x; (void)s; (void)n; (void)y; return 0; }
size_t fd_neon_bf16_weight_round(const float *w, size_t n, uint16_t *y) { (void)w; (void)n; (void)y; return 0; }
size_t fd_neon_bf16_rescale(float *x, size_t n, float s) { (void)x; (void)n; (void)s; return 0; }
size_t fd_neon_relu_fma_acc(float *acc, const float *row, float d, float w, size_t n) { (void)acc; (void)row; (void)d; (void)w; (void)n; return 0; }
#endif
