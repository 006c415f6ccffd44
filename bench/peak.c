/* Register-only throughput of vdpbf16ps and 512-bit FMA on one core: the roofline for the replay GEMM. */
#include <immintrin.h>
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
#define R16(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
__attribute__((target("avx512f,avx512bf16,avx512bw,avx512vl"),noinline)) float bf(long n, __m512 s){
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
__attribute__((target("avx512f"),noinline)) float fm(long n, __m512 s){
 R16(D)
 __m512 a=_mm512_set1_ps(1.0f), b=_mm512_set1_ps(1.0f);
 for(long k=0;k<n;k++){
#define F(i) c##i=_mm512_fmadd_ps(a,b,c##i);
 R16(F)
 __asm__ volatile("" : "+v"(a));
 }
 R16(S)
 return _mm512_reduce_add_ps(s);}
int main(){ long n=20000000; double t=now(); float r=bf(n,_mm512_setzero_ps()); t=now()-t; printf("vdpbf16ps: %.1f GFLOP/s (%g)\n", 16.0*64*n/t*1e-9, r);
 t=now(); r=fm(n,_mm512_setzero_ps()); t=now()-t; printf("vfmadd512: %.1f GFLOP/s (%g)\n", 16.0*32*n/t*1e-9, r);}
