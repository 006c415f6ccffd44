/* Register-only throughput of vdpbf16ps, 512-bit FMA, 256-bit FMA and
 * (where the CPU and the kernel allow) AMX tdpbf16ps on one core: the
 * rooflines for the GEMMs.  Each probe runs only where the CPU has its
 * instructions, so `cc -O2 bench/peak.c` builds on any x86-64 host. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
/* the thread's CPU time: on a shared host the time it was not scheduled does
 * not count (on a quiet one it is the wall time) */
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define R16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
__attribute__((target("avx512f,avx512bf16,avx512bw,avx512vl"),noinline)) float bf(long n, float z){ __m512 s=_mm512_set1_ps(z);
#define D(i) __m512 c##i = _mm512_set1_ps(i);
 R16(D)
 __m512bh a=(__m512bh)_mm512_set1_epi32(0x3f803f80), b=(__m512bh)_mm512_set1_epi32(0x3f803f80);
 for(long k=0;k<n;k++){
#define P(i) c##i=_mm512_dpbf16_ps(c##i,a,b);
 R16(P)
 __asm__ volatile("" : "+v"(a));
 }
#define S(i) s=_mm512_add_ps(s,c##i);
 R16(S)
 return _mm512_reduce_add_ps(s);}
__attribute__((target("avx512f"),noinline)) float fm(long n, float z){ __m512 s=_mm512_set1_ps(z);
 R16(D)
 __m512 a=_mm512_set1_ps(1.0f), b=_mm512_set1_ps(1.0f);
 for(long k=0;k<n;k++){
#define F(i) c##i=_mm512_fmadd_ps(a,b,c##i);
 R16(F)
 __asm__ volatile("" : "+v"(a));
 }
 R16(S)
 return _mm512_reduce_add_ps(s);}
/* 12 accumulators, not 16: with a and b that is 14 of AVX2's 16 ymm
 * registers (16 + 2 spilled three accumulators to the stack, and the
 * store-load chains held the probe at ~57 % of the real rate) */
#define R12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
__attribute__((target("avx2,fma"),noinline)) float fm256(long n, float z){ __m256 s=_mm256_set1_ps(z);
#define D8(i) __m256 c##i = _mm256_set1_ps(i);
 R12(D8)
 __m256 a=_mm256_set1_ps(1.0f), b=_mm256_set1_ps(1.0f);
 for(long k=0;k<n;k++){
#define F8(i) c##i=_mm256_fmadd_ps(a,b,c##i);
 R12(F8)
 __asm__ volatile("" : "+x"(a));
 }
#define S8(i) s=_mm256_add_ps(s,c##i);
 R12(S8)
 float o[8]; _mm256_storeu_ps(o,s); return o[0]+o[7];}
struct __attribute__((packed)) tcfg { unsigned char pal, start, res[14]; unsigned short colsb[16]; unsigned char rows[16]; };
__attribute__((target("amx-tile,amx-bf16"),noinline)) void amx(long n){
 struct tcfg c; memset(&c,0,sizeof c); c.pal=1; for(int t=0;t<8;t++){c.colsb[t]=64;c.rows[t]=16;}
 static char buf[1024] __attribute__((aligned(64)));
 _tile_loadconfig(&c); _tile_zero(0); _tile_zero(1); _tile_zero(2); _tile_zero(3);
 _tile_loadd(4,buf,64); _tile_loadd(5,buf,64); _tile_loadd(6,buf,64); _tile_loadd(7,buf,64);
 for(long k=0;k<n;k++){ _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7); }
 _tile_stored(0,buf,64); _tile_release();}
static int amx_ok(void){ FILE *f=fopen("/proc/cpuinfo","r"); char l[4096]; int ok=0; if(!f) return 0;
 while(fgets(l,sizeof l,f)) { if(strstr(l," amx_bf16")) ok=1; }
 fclose(f);
 return ok && syscall(SYS_arch_prctl,0x1023,18)==0; }
/* peak [probe [scale]]: every probe the CPU has, or only the one named
 * (vdpbf16ps, vfmadd512, vfmadd256, tdpbf16ps; "all" for every one), each
 * run scale times longer than the default ~40 ms (a sustained clock, not a
 * burst's); one line "name: G GFLOP/s" each */
int main(int argc, char **argv){ long n=20000000; double t; float r;
 const char *only = argc > 1 && strcmp(argv[1], "all") ? argv[1] : NULL;
 if (argc > 2 && atol(argv[2]) > 0) n *= atol(argv[2]);
#define WANT(name) (!only || !strcmp(only, name))
 if(WANT("vdpbf16ps") && __builtin_cpu_supports("avx512bf16")){ t=now(); r=bf(n,0.0f); t=now()-t; printf("vdpbf16ps: %.1f GFLOP/s (%g)\n", 16.0*64*n/t*1e-9, r); }
 if(WANT("vfmadd512") && __builtin_cpu_supports("avx512f")){ t=now(); r=fm(n,0.0f); t=now()-t; printf("vfmadd512: %.1f GFLOP/s (%g)\n", 16.0*32*n/t*1e-9, r); }
 if(WANT("vfmadd256") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")){ t=now(); r=fm256(n,0.0f); t=now()-t; printf("vfmadd256: %.1f GFLOP/s (%g)\n", 12.0*16*n/t*1e-9, r); }
 if(WANT("tdpbf16ps") && amx_ok()){ long m=2000000 * (n / 20000000); t=now(); amx(m); t=now()-t; printf("tdpbf16ps: %.1f GFLOP/s\n", 4.0*16384*m/t*1e-9); }}
