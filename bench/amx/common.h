#pragma once
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include <sys/syscall.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18
typedef struct __attribute__((packed)) {
  uint8_t palette_id, start_row; uint8_t reserved[14];
  uint16_t colsb[16]; uint8_t rows[16];
} tilecfg_t;

static tilecfg_t g_cfg;
static int amx_init(void){
  if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) { perror("arch_prctl"); return -1; }
  memset(&g_cfg,0,sizeof g_cfg); g_cfg.palette_id=1;
  for(int t=0;t<3;t++){ g_cfg.colsb[t]=64; g_cfg.rows[t]=16; }
  return 0;
}
/* C[16][16] += A[16][32] * B, with Bv in VNNI layout: Bv[kp][2n+j] = b[2kp+j][n] */
static void amx_mm(float *C, const uint16_t *A, const uint16_t *Bv){
  _tile_loadconfig(&g_cfg);
  _tile_loadd(0, C, 64); _tile_loadd(1, A, 64); _tile_loadd(2, Bv, 64);
  _tile_dpbf16ps(0, 1, 2);
  _tile_stored(0, C, 64);
}
static inline float bf2f(uint16_t h){ uint32_t u=(uint32_t)h<<16; float f; memcpy(&f,&u,4); return f; }
static inline uint32_t f2u(float f){ uint32_t u; memcpy(&u,&f,4); return u; }
static inline float u2f(uint32_t u){ float f; memcpy(&f,&u,4); return f; }
static inline float daz(float f){ uint32_t u=f2u(f); if(((u>>23)&0xff)==0) return u2f(u&0x80000000u); return f; }

/* ---------- exact superaccumulator: fixed point, bit 0 = 2^-BIAS ---------- */
#define NL 11
#define BIAS 320
typedef struct { uint64_t l[NL]; int neg0; int nterms; int allnegzero; } sacc;
static inline void sa_clear(sacc *s){ memset(s,0,sizeof *s); s->allnegzero=1; }
static void sa_add(sacc *s, double d){ /* d must be exactly representable; finite */
  if (d==0){ if(!signbit(d)) s->allnegzero=0; return; }
  s->allnegzero=0;
  int e; double fr=frexp(fabs(d),&e); uint64_t m=(uint64_t)ldexp(fr,53); int sh=e-53+BIAS;
  if(sh<0){ /* must be exact */ m>>= -sh; sh=0; }
  int li=sh>>6, bi=sh&63;
  uint64_t lo=m<<bi, hi= bi? (m>>(64-bi)) : 0;
  if(!signbit(d)){
    unsigned __int128 c=0;
    c=(unsigned __int128)s->l[li]+lo; s->l[li]=(uint64_t)c; c>>=64;
    c+= (unsigned __int128)s->l[li+1]+hi; s->l[li+1]=(uint64_t)c; c>>=64;
    for(int i=li+2;i<NL && c;i++){ c+=s->l[i]; s->l[i]=(uint64_t)c; c>>=64; }
  } else {
    uint64_t b=0, x, y;
    x=s->l[li]; y=x-lo; b = x<lo; s->l[li]=y;
    x=s->l[li+1]; uint64_t t=hi+b; int b2 = (t<hi) || (x<t); s->l[li+1]=x-t; b=b2;
    for(int i=li+2;i<NL && b;i++){ x=s->l[i]; s->l[i]=x-1; b = (x==0); }
  }
}
/* round to fp32, RNE. ftz: 0 none(gradual),1 flush results with |r|<2^-126 after rounding (unbounded exp), 2 before rounding */
static float sa_round(const sacc *s0, int ftz){
  sacc s=*s0; int neg = (s.l[NL-1]>>63)&1;
  if(neg){ uint64_t c=1; for(int i=0;i<NL;i++){ uint64_t x=~s.l[i]; s.l[i]=x+c; c = (c && s.l[i]==0); } }
  int top=-1; for(int i=NL-1;i>=0;i--) if(s.l[i]){ top=i*64+63-__builtin_clzll(s.l[i]); break; }
  if(top<0) return s0->allnegzero? -0.0f: 0.0f;
  int E = top-BIAS;
  if(ftz==2 && E < -126) return neg?-0.0f:0.0f;
  int lsb = top-23; if(!ftz && lsb < -149+BIAS) lsb=-149+BIAS;
  #define BIT(p) ((p)<0?0:(int)((s.l[(p)>>6]>>((p)&63))&1))
  uint64_t mant=0; for(int p=top;p>=lsb;p--) mant=(mant<<1)|BIT(p);
  int rb = BIT(lsb-1); int st=0;
  for(int p=lsb-2;p>=0 && !st;p--){ if((p&63)==63 && s.l[p>>6]==0){ p-=63; continue;} st|=BIT(p); }
  if(rb && (st || (mant&1))) mant++;
  double r = ldexp((double)mant, lsb-BIAS);
  if(ftz && r < 0x1p-126) return neg?-0.0f:0.0f;
  if(r >= 0x1p128) return neg?-INFINITY:INFINITY;
  float f=(float)r; return neg?-f:f;
}
/* random bf16 */
static uint64_t rs=88172645463325252ULL;
static inline uint64_t rnd(void){ rs^=rs<<13; rs^=rs>>7; rs^=rs<<17; return rs; }
