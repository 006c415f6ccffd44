// Test hypotheses for TDPBF16PS per-output numerics.
#include "common.h"
#define NH 3
static const char *hn[NH]={"L1exact ftz-after-round","L1exact ftz-before-round","L1 fast fmaf emul"};
static long skipped=0;
#include "emul.h"
static int ctr=0, cw=0, pz=0, psub=0, cc=0, cwc=0, sparse=0;
static uint16_t gen(int center,int w){
  uint64_t r=rnd(); uint16_t sg=(r&1)<<15; uint16_t man=(r>>1)&0x7f; r>>=8;
  if((int)(r%1000) < pz) return sg; r/=1000;
  if((int)(r%1000) < psub) return sg | (man?man:1); r/=1000;
  int e=center + (int)(r%(2*w+1)) - w; if(e<1)e=1; if(e>254)e=254;
  return sg | (e<<7) | man;
}
static float genc(void){
  uint64_t r=rnd(); uint32_t sg=(uint32_t)(r&1)<<31; uint32_t man=(r>>1)&0x7fffff; r>>=24;
  if(r%1000 < (uint64_t)pz) return u2f(sg); r/=1000;
  if(r%1000 < (uint64_t)psub) return u2f(sg|man); r/=1000;
  int e=cc + (int)(r%(2*cwc+1)) - cwc; if(e<1)e=1; if(e>254)e=254;
  return u2f(sg|(e<<23)|man);
}
int main(int argc,char**argv){
  long ntiles = argc>1? atol(argv[1]):1000; if(argc>2) rs=strtoull(argv[2],0,10);
  if(amx_init()) return 1;
  static float C[256], C0[256]; static uint16_t A[16*32], B[32*16], Bv[16*32];
  long cnt[8]={0}, mis[8][NH]={{0}}; long ex=0;
  if(argc>2) rs=strtoull(argv[2],0,10);
  for(long t=0;t<ntiles;t++){
    int mode=t%8;
    switch(mode){
      case 0: ctr=127;cw=6;pz=0;psub=0;cc=127;cwc=6;sparse=0;break;      // narrow, cancellation
      case 1: ctr=127;cw=20;pz=20;psub=0;cc=130;cwc=20;sparse=0;break;   // medium
      case 2: ctr=127;cw=60;pz=20;psub=20;cc=127;cwc=100;sparse=0;break; // wide + subnormals
      case 3: ctr=64;cw=50;pz=20;psub=50;cc=10;cwc=10;sparse=0;break;    // tiny products/underflow
      case 4: ctr=127;cw=4;pz=0;psub=0;cc=127;cwc=20;sparse=1;break;     // single pair
      case 5: ctr=127;cw=3;pz=0;psub=0;cc=110;cwc=30;sparse=2;break;     // cancel construct
      case 6: ctr=127;cw=10;pz=0;psub=0;cc=127;cwc=30;sparse=3;break;    // few pairs
      case 7: ctr=127;cw=1;pz=0;psub=0;cc=127;cwc=1;sparse=0;break;      // very narrow
    }
    for(int i=0;i<16*32;i++) A[i]=gen(ctr,cw);
    for(int i=0;i<32*16;i++) B[i]=gen(ctr,cw);
    if(sparse==1){ int kp=rnd()%16; for(int m=0;m<16;m++) for(int k=0;k<32;k++) if(k/2!=kp) A[m*32+k]=0; }
    if(sparse==3){ for(int k=0;k<32;k+=2) if(rnd()%4) for(int m=0;m<16;m++){A[m*32+k]=0;A[m*32+k+1]=0;} }
    if(sparse==2){ // make pair products cancel approx: a1=a0, b1 = -b0 (+ perturb)
      for(int m=0;m<16;m++) for(int k=0;k<32;k+=2) A[m*32+k+1]=A[m*32+k] ^ ((rnd()%4==0)?1:0);
      for(int k=0;k<32;k+=2) for(int n=0;n<16;n++) B[(k+1)*16+n]=(B[k*16+n]^0x8000) ^ ((rnd()%4==0)?1:0);
      if(rnd()%2) for(int k=0;k<32;k+=2) if(rnd()%2) for(int n=0;n<16;n++){uint16_t x=B[k*16+n];B[k*16+n]=B[(k+1)*16+n];B[(k+1)*16+n]=x;}
    }
    for(int k=0;k<32;k++) for(int n=0;n<16;n++) Bv[(k/2)*32+2*n+(k&1)]=B[k*16+n];
    for(int i=0;i<256;i++) C0[i]=C[i]=genc();
    amx_mm(C,A,Bv);
    for(int m=0;m<16;m++) for(int n=0;n<16;n++){
      float hw=C[m*16+n]; if(!isfinite(hw)) { skipped++; continue; }
      double p[32]; sacc s;
      for(int k=0;k<32;k++) p[k]=(double)daz(bf2f(A[m*32+k]))*(double)daz(bf2f(B[k*16+n]));
      float c0=daz(C0[m*16+n]); float h[NH];
      for(int v=0;v<2;v++){ int fz=v?2:1; float E=0,O=0; for(int kp=0;kp<16;kp++){ sa_clear(&s); sa_add(&s,E); sa_add(&s,p[2*kp]); E=sa_round(&s,fz); sa_clear(&s); sa_add(&s,O); sa_add(&s,p[2*kp+1]); O=sa_round(&s,fz); }
        sa_clear(&s); sa_add(&s,E); sa_add(&s,O); float EO=sa_round(&s,fz); sa_clear(&s); sa_add(&s,c0); sa_add(&s,EO); h[v]=sa_round(&s,fz); }
      h[2]=fast_emul(&A[m*32],B,n,C0[m*16+n]);
      cnt[mode]++;
      for(int i=0;i<NH;i++) if(f2u(h[i])!=f2u(hw)){ mis[mode][i]++; if(ex<10){ex++; printf("mismatch mode%d hyp%d hw=%a(%08x) model=%a(%08x)\n",mode,i,hw,f2u(hw),h[i],f2u(h[i]));} }
    }
  }
  for(int md=0;md<8;md++){ printf("mode %d n=%ld:",md,cnt[md]); for(int i=0;i<NH;i++) printf(" %s=%.4f%%",hn[i],100.0*mis[md][i]/cnt[md]); printf("\n"); }
  printf("skipped nonfinite: %ld\n",skipped);
}
