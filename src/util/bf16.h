/* bfloat16 <-> float conversion (round to nearest even, NaN kept quiet). */
#ifndef FD_BF16_H
#define FD_BF16_H
#include <stdint.h>
#include <string.h>

static inline uint16_t fd_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float fd_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The bits of an fp32 value and back (memcpy: no aliasing UB). */
static inline uint32_t fd_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float fd_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

#endif
