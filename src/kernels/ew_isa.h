/* The element-wise kernels' (rowops.c, torch_ops.c) choice of vector build,
 * by CPU features only (issue 24.4): AVX-512F first, then AVX2 + FMA, then
 * the one-lane loops, all the same bits.  A bench build may compile with
 * -DFD_EW_NO_AVX512 (and -DFD_EW_NO_AVX2) to run what an AVX2-only (or
 * older) CPU runs (bench/rowops_isa.sh).  x86-64 only. */
#ifndef FD_KERNELS_EW_ISA_H
#define FD_KERNELS_EW_ISA_H
#if defined(__x86_64__)
#ifdef FD_EW_NO_AVX512
#define HAVE_512 0
#else
#define HAVE_512 __builtin_cpu_supports("avx512f")
#endif
#ifdef FD_EW_NO_AVX2
#define HAVE_256 0
#else
#define HAVE_256 (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
#endif
#endif
#endif
