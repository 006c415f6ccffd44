/* The spin-wait hint of the worker pool (util/pool.c): the one CPU
 * instruction outside the vector kernels, kept in the fence with them
 * (tests/check_fences.sh). */
#ifndef FD_KERNELS_RELAX_H
#define FD_KERNELS_RELAX_H

static inline void fd_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#endif
