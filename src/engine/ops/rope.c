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
