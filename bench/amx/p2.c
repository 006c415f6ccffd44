#include "common.h"
static float C[256]; static uint16_t A[512], Bv[512];
static void run(uint16_t a[16][32], float c[16], float out[16]){
  memset(Bv,0,sizeof Bv); for(int kp=0;kp<16;kp++){ Bv[kp*32+0]=0x3f80; Bv[kp*32+1]=0x3f80; }
  for(int m=0;m<16;m++){ memcpy(&A[m*32],a[m],64); C[m*16]=c[m]; }
  amx_mm(C,A,Bv); for(int m=0;m<16;m++) out[m]=C[m*16];
}
static uint16_t f2bf(float f){ return f2u(f)>>16; }
int main(int argc,char**argv){
  amx_init(); int BIG=argc>1?atoi(argv[1]):40;
  uint16_t a[16][32]; float c[16], o[16];
  // position 32 means "C input"
  static int res[33][33][33];
  for(int i=0;i<33;i++) for(int j=0;j<33;j++){ if(i==j) continue;
    for(int k0=0;k0<33;k0+=16){ memset(a,0,sizeof a); for(int r=0;r<16;r++){ int k=k0+r; c[r]=0; if(k>32||k==i||k==j) continue;
        if(i<32) a[r][i]=f2bf(ldexpf(1,BIG)); else c[r]=ldexpf(1,BIG);
        if(j<32) a[r][j]=f2bf(-ldexpf(1,BIG)); else c[r]=-ldexpf(1,BIG);
        if(k<32) a[r][k]=f2bf(1.0f); else c[r]=1.0f; }
      run(a,c,o); for(int r=0;r<16;r++){ int k=k0+r; if(k>32||k==i||k==j) continue; res[i][j][k]= o[r]==1.0f?1: o[r]==0.0f?0: 9; } }
  }
  // print for several i,j
  int sel[][2]={{0,1},{1,0},{0,2},{2,0},{0,31},{31,0},{4,5},{4,6},{32,0},{0,32},{32,31},{31,32},{10,20},{20,10},{30,31},{8,9}};
  for(int s=0;s<16;s++){ int i=sel[s][0], j=sel[s][1]; printf("+big@%2d -big@%2d: k survives:",i,j); for(int k=0;k<33;k++) printf("%c", (k==i||k==j)?'*': res[i][j][k]==1?'1':res[i][j][k]==0?'.':'?'); printf("\n"); }
}
