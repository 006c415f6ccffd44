/* The replay GEMM: fp32 logits from bf16 hidden states and a bf16 head, in
 * the one canonical order of docs/NUMERICS.md (pairs over the hidden axis in
 * increasing order, odd element then even, one fused multiply-add each,
 * subnormal inputs and outputs flushed).  Every code path computes the same
 * bits; this fence is the only place that knows about SIMD. */
#ifndef FD_KERNELS_GEMM_H
#define FD_KERNELS_GEMM_H
#include <stddef.h>
#include <stdint.h>

#define FD_TILE 16   /* vocab columns per packed tile (one 512-bit fp32 vector) */

typedef enum { FD_PATH_SCALAR, FD_PATH_AVX2, FD_PATH_AVX512F, FD_PATH_AVX512BF16, FD_PATH_COUNT } fd_path;

/* Packed head: for each tile of 16 vocab columns, for each pair k of the
 * hidden axis, 16 uint32 words (bf16 pair of column v: low half = element
 * 2k, high half = element 2k+1); columns past vocab are zero. */
typedef struct fd_packed_head {
    uint32_t *w;
    size_t vocab, hidden, kp, tiles;  /* kp = ceil(hidden/2) */
} fd_packed_head;

void fd_pack_head(const uint16_t *head, size_t vocab, size_t hidden, fd_packed_head *out);
void fd_packed_head_free(fd_packed_head *p);
/* Pairs of one hidden row, zero-padded to kp words. */
void fd_pack_hidden(const void *row, size_t hidden, uint32_t *out);

/* out[p*ostride + j] = logit of position p, column tile0*16 + j, for
 * p < np and j < ntiles*16. */
typedef void (*fd_gemm_fn)(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed_tiles,
                           size_t ntiles, float *out, size_t ostride);

const char *fd_path_name(fd_path p);
int fd_path_supported(fd_path p);
/* The fastest supported path, or the one named by FIDELITY_KERNEL
 * (scalar|avx2|avx512f|avx512bf16); -1 if that name is unknown or unsupported. */
int fd_path_select(const char *override_name, fd_path *out);
fd_gemm_fn fd_gemm_for(fd_path p);

/* The canonical scalar emulation of one dot product (the definition). */
float fd_dot_canonical(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride);
/* MXCSR control for the fma-emulating SIMD paths (saved/restored per call). */
unsigned fd_ftz_daz_enter(void);
void fd_ftz_daz_leave(unsigned saved);

#endif
