/* splitmix64: a tiny deterministic generator for fixtures (the state is the
 * caller's, so there is no global state and runs are reproducible). */
#ifndef FD_RNG_H
#define FD_RNG_H
#include <stdint.h>

static inline uint64_t fd_rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static inline double fd_rng_unit(uint64_t *s)
{
    return (double)(fd_rng_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

#endif
