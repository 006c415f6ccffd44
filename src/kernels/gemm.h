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

/* FD_PATH_AMX (Intel AMX tiles) computes only the tile order below.
 * FD_PATH_NEON (aarch64 ASIMD) and FD_PATH_NEON_BF16 (aarch64 FEAT_BF16:
 * BFMLALT/BFMLALB) compute both orders and the F32-weight products
 * (gemm_neon.c). */
typedef enum {
    FD_PATH_SCALAR, FD_PATH_AVX2, FD_PATH_AVX512F, FD_PATH_AVX512BF16, FD_PATH_AMX,
    FD_PATH_NEON, FD_PATH_NEON_BF16, FD_PATH_COUNT
} fd_path;

/* Packed head: for each tile of 16 vocab columns, for each pair k of the
 * hidden axis, 16 uint32 words (bf16 pair of column v: low half = element
 * 2k, high half = element 2k+1); columns past vocab are zero. */
typedef struct fd_packed_head {
    uint32_t *w;
    size_t vocab, hidden, kp, tiles;  /* kp = ceil(hidden/2) */
    size_t bytes;                     /* of the mapping w */
} fd_packed_head;

void fd_pack_head(const uint16_t *head, size_t vocab, size_t hidden, fd_packed_head *out);
/* fd_pack_head in pieces: the buffer (zeroed: the lanes past vocab are 0;
 * with touch its pages populated up front, else call fd_pack_head_touch for
 * each piece before packing it), then rows [v0, v0+n) of the head from
 * rows[0..n). */
void fd_pack_head_alloc(size_t vocab, size_t hidden, int touch, fd_packed_head *out);
/* Populates the pages that rows [v0, v0+n) pack into, in one call (a piece's
 * page faults taken together, not one by one while packing). */
void fd_pack_head_touch(fd_packed_head *o, size_t v0, size_t n);
void fd_pack_head_rows(fd_packed_head *o, const uint16_t *rows, size_t v0, size_t n);
void fd_packed_head_free(fd_packed_head *p);
/* Pairs of one hidden row, zero-padded to kp words. */
void fd_pack_hidden(const void *row, size_t hidden, uint32_t *out);

/* out[p*ostride + j] = logit of position p, column tile0*16 + j, for
 * p < np and j < ntiles*16. */
typedef void (*fd_gemm_fn)(const uint32_t *hid, size_t np, size_t kp, const uint32_t *packed_tiles,
                           size_t ntiles, float *out, size_t ostride);

const char *fd_path_name(fd_path p);
/* The path of that name (scalar|avx2|avx512f|avx512bf16|amx|neon|neon-bf16); -1 if none. */
int fd_path_parse(const char *name, fd_path *out);
/* Supported here for the pair order (never FD_PATH_AMX). */
int fd_path_supported(fd_path p);
/* The default pair-order path, by CPU features only (never by timing):
 * avx512f, else avx2, else scalar (x86-64); neon-bf16 where HWCAP2_BF16,
 * else neon (aarch64). */
fd_path fd_path_default(void);
/* The path named by override_name (scalar|avx2|avx512f|avx512bf16), or the
 * default when it is NULL or empty; -1 if that name is unknown or unsupported. */
int fd_path_select(const char *override_name, fd_path *out);
fd_gemm_fn fd_gemm_for(fd_path p);

/* The canonical scalar emulation of one dot product (the definition). */
float fd_dot_canonical(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride);
/* MXCSR control for the fma-emulating SIMD paths (saved/restored per call). */
unsigned fd_ftz_daz_enter(void);
void fd_ftz_daz_leave(unsigned saved);
/* For the SIMD kernels that cut K into passes (gemm_x86.c, gemm_tile_x86.c):
 * the pairs [k0, k0 + kc) of each pass of at most kcm pairs, in order; a K
 * of 0 still runs one pass, of kc = 0, whose blocks write every output +0. */
#define FD_FOR_PASSES(k0, kc, kp, kcm)                                                        \
    for (size_t k0 = 0, kc = (kp) < (kcm) ? (kp) : (kcm), fd_first_ = 1; fd_first_ || k0 < (kp); \
         fd_first_ = 0, k0 += (kcm), kc = k0 < (kp) && (kp) - k0 < (kcm) ? (kp) - k0 : (kcm))

/* ---- The tile order (docs/NUMERICS.md §5): what one AMX TDPBF16PS chain
 * computes, and the capture engine's default.  Per output, the pairs are
 * taken 16 at a time (32 elements; a last partial chunk is padded with +0):
 *     E = +0; O = +0
 *     for the 16 pairs j of the chunk, in order:
 *         E = ftz(fmaf(daz(a[2j]),   daz(b[2j]),   E))    even elements
 *         O = ftz(fmaf(daz(a[2j+1]), daz(b[2j+1]), O))    odd elements
 *     C = ftz(C + ftz(E + O))                              C from +0
 * Same packed operands and fd_gemm_fn signature as the pair order. */
float fd_dot_tile(const uint32_t *a, const uint32_t *b, size_t kp, size_t bstride);
/* Supported here for the tile order: scalar, the FMA emulations (avx2,
 * avx512f; avx512bf16 runs the avx512f one) and amx where the CPU has it
 * and the kernel grants the tile state. */
int fd_tile_path_supported(fd_path p);
/* As fd_path_select, for the tile order, by CPU features only: amx when
 * usable, else avx512f, else avx2, else scalar. */
int fd_tile_path_select(const char *override_name, fd_path *out);
/* The tile-order kernels set FTZ+DAZ themselves where they need it. */
fd_gemm_fn fd_gemm_tile_for(fd_path p);

#endif
