/* torch 2.11's CPU reductions and element-wise kernel paths as the forwards
 * need them (docs/MODEL-GLM5-NEXT.md §6; the kernels are kernels/torch_ops.h). */
#ifndef FD_ENGINE_OPS_REDUCE_H
#define FD_ENGINE_OPS_REDUCE_H
#include <stddef.h>
#include <stdint.h>

/* torch 2.11's CPU sum of fp32 values (cascade_sum in ATen's SumKernel.cpp,
 * AVX2 build: 8 lanes).  multi_row_sum: one lane's cascade over `size` rows
 * (levels of 16 rows); row_sum: 4 interleaved multi_row_sums + the rest.
 * fd_op_sum_aten: a contiguous row of n (vectorized_inner_sum); fd_op_sum_outer:
 * output column col of ncols contiguous columns, reduced over `size` rows
 * `stride` apart (vectorized_outer_sum / scalar_outer_sum). */
float fd_op_multi_row_sum(const float *x, size_t stride, size_t size);
float fd_op_row_sum(const float *x, size_t stride, size_t size);
float fd_op_sum_aten(const float *x, size_t n);
float fd_op_sum_outer(const float *x, size_t stride, size_t size, size_t col, size_t ncols);
/* Does element i of a contiguous elementwise op over n elements take the
 * vector path of torch's cpu_kernel_vec (blocks of `block`, split in 2
 * thread chunks from 32768 elements on: the goldens' torch.set_num_threads(2))? */
int fd_op_torch_vec(size_t i, size_t n, size_t block);
/* torch.sigmoid of element i of a contiguous fp32 tensor of n elements */
float fd_op_sigmoid_at(float x, size_t i, size_t n);
/* one fp32 FMA chain in increasing k: MKL's sgemm order for the small
 * shapes measured (K <= 64; tests/parity, docs/MODEL-GLM5-NEXT.md §6) */
float fd_op_chain32(const float *a, size_t as, const float *b, size_t bs, size_t n);
/* swap the pairs (2i, 2i+1) of a bf16 array (n even): fd_dot_canonical's
 * odd-then-even chain then runs in increasing k */
void fd_op_swap_pairs16(uint16_t *v, size_t n);
#endif
