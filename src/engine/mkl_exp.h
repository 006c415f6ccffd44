/* torch.exp on fp32 CPU tensors = MKL VML vsExp (HA), replicated one lane at
 * a time from its AVX-512 kernel (mkl_exp.c): range reduction by 32ths of
 * ln 2 (truncating FMA), a 32-entry two-part table, a degree-3 polynomial,
 * vscalefps.  Inputs with |x| >= 87.33654 take MKL's scalar callout, for
 * which libm expf stands in (subnormal / overflow results only). */
#ifndef FD_ENGINE_MKL_EXP_H
#define FD_ENGINE_MKL_EXP_H
float fd_mkl_expf(float x);
#endif
