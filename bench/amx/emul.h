/* Portable scalar emulation of one TDPBF16PS output element (found empirically on this Sapphire-Rapids-class host):
   E = sum of EVEN-indexed products (k=0,2,..,30) accumulated sequentially in fp32 (RNE, each step a single rounding),
   O = same for ODD-indexed products (k=1,3,..,31),
   result = fp32(C + fp32(E + O)).  DAZ on all inputs (bf16 and C), FTZ on every rounded result.
   bf16*bf16 products are exact in fp32 (16-bit significand) except for underflow, so use fmaf. */
#include <math.h>
#include <float.h>
static inline float ftzf(float x){ return fabsf(x) < FLT_MIN ? copysignf(0.0f, x) : x; }
static inline float bf16_to_f_daz(uint16_t h){ uint32_t u=(uint32_t)h<<16; if(((u>>23)&0xff)==0) u&=0x80000000u; float f; memcpy(&f,&u,4); return f; }
/* a: 32 bf16 (row of A), B: 32x16 bf16 row-major, column n; c: fp32 accumulator in */
static float fast_emul(const uint16_t *a, const uint16_t *B, int n, float c){
  float E=0.0f, O=0.0f;
  for(int kp=0;kp<16;kp++){
    E = ftzf(fmaf(bf16_to_f_daz(a[2*kp]),   bf16_to_f_daz(B[(2*kp)*16+n]),   E));
    O = ftzf(fmaf(bf16_to_f_daz(a[2*kp+1]), bf16_to_f_daz(B[(2*kp+1)*16+n]), O));
  }
  float cz = ftzf(c);  /* DAZ on C */
  return ftzf(cz + ftzf(E + O));
}
