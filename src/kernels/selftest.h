#ifndef FD_KERNELS_SELFTEST_H
#define FD_KERNELS_SELFTEST_H
#include <stdint.h>
#include <stdio.h>
/* Runs every supported path against the canonical emulation; 0 if all agree. */
int fd_kernel_selftest(uint64_t products, uint64_t seed, FILE *out);
#endif
