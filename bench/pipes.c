/* bench/pipes.c: which AVX-512 instructions share the FMA pipes with
 * vfmadd / vdpbf16ps (one thread, register-only).  Each line runs 8
 * independent vfmadd231pd chains plus 4 (or 8) of another instruction per
 * iteration: where the time grows by ~half the 8 FMAs' time the instruction
 * takes FMA-pipe slots (vmulpd, vdpbf16ps on Zen 5), where it barely grows it
 * runs beside them (vscalefpd, vpermi2pd, vcvtqq2pd, shifts, vmaxpd).  The
 * KL pass's cost beside the bf16 GEMM follows from this (bench/README.md).
 * Build and run (any CPU with AVX512F/DQ/BF16):
 *   cc -O2 -mavx512f -mavx512dq -mavx512bf16 bench/pipes.c -o /tmp/pipes && taskset -c 1 /tmp/pipes */
#include <stdio.h>
#include <time.h>
#include <string.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
#define FMA8 "vfmadd231pd %%zmm0,%%zmm1,%%zmm2\n vfmadd231pd %%zmm0,%%zmm1,%%zmm3\n vfmadd231pd %%zmm0,%%zmm1,%%zmm4\n vfmadd231pd %%zmm0,%%zmm1,%%zmm5\n vfmadd231pd %%zmm0,%%zmm1,%%zmm6\n vfmadd231pd %%zmm0,%%zmm1,%%zmm7\n vfmadd231pd %%zmm0,%%zmm1,%%zmm8\n vfmadd231pd %%zmm0,%%zmm1,%%zmm9\n"
#define RUN(name, body) { double t0=now(); for (long i=0;i<N;i++) __asm__ volatile(body ::: "xmm0","xmm1","xmm2","xmm3","xmm4","xmm5","xmm6","xmm7","xmm8","xmm9","xmm10","xmm11","xmm12","xmm13","xmm14","xmm15","xmm16","xmm17","xmm18","xmm19","xmm20","xmm21","xmm22","xmm23","memory"); double t=now()-t0; printf("%-28s %.3f ns/iter \n", name, t/N*1e9);}
int main(void){
  long N=20000000;
  __asm__ volatile("vxorpd %%zmm0,%%zmm0,%%zmm0\n vxorpd %%zmm1,%%zmm1,%%zmm1\n vxorpd %%zmm10,%%zmm10,%%zmm10\n vxorpd %%zmm11,%%zmm11,%%zmm11":::"xmm0","xmm1","xmm10","xmm11");
  RUN("8 fma", FMA8)
  RUN("8 fma + 4 scalef", FMA8 "vscalefpd %%zmm10,%%zmm11,%%zmm12\n vscalefpd %%zmm10,%%zmm11,%%zmm13\n vscalefpd %%zmm10,%%zmm11,%%zmm14\n vscalefpd %%zmm10,%%zmm11,%%zmm15\n")
  RUN("8 fma + 4 permi2pd", FMA8 "vmovapd %%zmm10,%%zmm12\n vpermi2pd %%zmm10,%%zmm11,%%zmm12\n vmovapd %%zmm10,%%zmm13\n vpermi2pd %%zmm10,%%zmm11,%%zmm13\n vmovapd %%zmm10,%%zmm14\n vpermi2pd %%zmm10,%%zmm11,%%zmm14\n vmovapd %%zmm10,%%zmm15\n vpermi2pd %%zmm10,%%zmm11,%%zmm15\n")
  RUN("8 fma + 4 cvtps2pd", FMA8 "vcvtps2pd %%ymm10,%%zmm12\n vcvtps2pd %%ymm10,%%zmm13\n vcvtps2pd %%ymm10,%%zmm14\n vcvtps2pd %%ymm10,%%zmm15\n")
  RUN("8 fma + 4 maxpd", FMA8 "vmaxpd %%zmm10,%%zmm11,%%zmm12\n vmaxpd %%zmm10,%%zmm11,%%zmm13\n vmaxpd %%zmm10,%%zmm11,%%zmm14\n vmaxpd %%zmm10,%%zmm11,%%zmm15\n")
  RUN("8 fma + 4 addpd", FMA8 "vaddpd %%zmm10,%%zmm11,%%zmm12\n vaddpd %%zmm10,%%zmm11,%%zmm13\n vaddpd %%zmm10,%%zmm11,%%zmm14\n vaddpd %%zmm10,%%zmm11,%%zmm15\n")
  RUN("8 fma + 4 mulpd", FMA8 "vmulpd %%zmm10,%%zmm11,%%zmm12\n vmulpd %%zmm10,%%zmm11,%%zmm13\n vmulpd %%zmm10,%%zmm11,%%zmm14\n vmulpd %%zmm10,%%zmm11,%%zmm15\n")
  RUN("8 fma + 4 paddq", FMA8 "vpaddq %%zmm10,%%zmm11,%%zmm12\n vpaddq %%zmm10,%%zmm11,%%zmm13\n vpaddq %%zmm10,%%zmm11,%%zmm14\n vpaddq %%zmm10,%%zmm11,%%zmm15\n")
  RUN("8 fma + 4 psllq", FMA8 "vpsllq $52,%%zmm10,%%zmm12\n vpsllq $52,%%zmm10,%%zmm13\n vpsllq $52,%%zmm10,%%zmm14\n vpsllq $52,%%zmm10,%%zmm15\n")
  RUN("8 fma + 4 vmovapd", FMA8 "vmovapd %%zmm10,%%zmm12\n vmovapd %%zmm11,%%zmm13\n vmovapd %%zmm10,%%zmm14\n vmovapd %%zmm11,%%zmm15\n")
  RUN("8 fma + 8 addpd", FMA8 "vaddpd %%zmm10,%%zmm11,%%zmm12\n vaddpd %%zmm10,%%zmm11,%%zmm13\n vaddpd %%zmm10,%%zmm11,%%zmm14\n vaddpd %%zmm10,%%zmm11,%%zmm15\n vaddpd %%zmm10,%%zmm11,%%zmm16\n vaddpd %%zmm10,%%zmm11,%%zmm17\n vaddpd %%zmm10,%%zmm11,%%zmm18\n vaddpd %%zmm10,%%zmm11,%%zmm19\n")
  RUN("8 fma + 4 dpbf16", FMA8 "vdpbf16ps %%zmm10,%%zmm11,%%zmm12\n vdpbf16ps %%zmm10,%%zmm11,%%zmm13\n vdpbf16ps %%zmm10,%%zmm11,%%zmm14\n vdpbf16ps %%zmm10,%%zmm11,%%zmm15\n")
  RUN("8 fma + 4 cvtqq2pd", FMA8 "vcvtqq2pd %%zmm10,%%zmm12\n vcvtqq2pd %%zmm10,%%zmm13\n vcvtqq2pd %%zmm10,%%zmm14\n vcvtqq2pd %%zmm10,%%zmm15\n")
  RUN("8 fma + 4 psraq", FMA8 "vpsraq $4,%%zmm10,%%zmm12\n vpsraq $4,%%zmm10,%%zmm13\n vpsraq $4,%%zmm10,%%zmm14\n vpsraq $4,%%zmm10,%%zmm15\n")
  RUN("8 fma + 4 subpd", FMA8 "vsubpd %%zmm10,%%zmm11,%%zmm12\n vsubpd %%zmm10,%%zmm11,%%zmm13\n vsubpd %%zmm10,%%zmm11,%%zmm14\n vsubpd %%zmm10,%%zmm11,%%zmm15\n")
  RUN("8 fma + 4 roundscale", FMA8 "vrndscalepd $1,%%zmm10,%%zmm12\n vrndscalepd $1,%%zmm10,%%zmm13\n vrndscalepd $1,%%zmm10,%%zmm14\n vrndscalepd $1,%%zmm10,%%zmm15\n")
  RUN("8 fma again", FMA8)
  return 0;
}
