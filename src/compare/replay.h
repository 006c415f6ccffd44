/* The replay engine: one reference against N candidates in one pass.  For
 * each block of positions and each canonical vocab chunk, the reference
 * logits and exps are computed once and reused for every candidate.
 * Threads take whole position blocks, so no per-position arithmetic depends
 * on the thread count or the block size. */
#ifndef FD_COMPARE_REPLAY_H
#define FD_COMPARE_REPLAY_H
#include <stddef.h>
#include <stdint.h>
#include "side.h"
#include "kernels/gemm.h"

typedef struct fd_replay_opts {
    int threads;             /* >= 1 */
    size_t position_block;   /* rows per work unit (>= 1) */
    fd_path path;            /* kernel path */
    int progress;            /* report on stderr */
    int js;                  /* second pass: Jensen-Shannon divergence */
} fd_replay_opts;

typedef struct fd_replay_out {
    double *kl, *rkl, *entropy;  /* per position, context order then row order */
    double *js;                  /* with opts.js, else NULL */
    uint8_t *top1;
} fd_replay_out;

/* ctx: the shared context indices (ascending); heads[i] is the head applied
 * to side i (0 = reference); sides with the same head pointer share it. */
int fd_replay(const fd_side *const *sides, size_t nsides, const uint16_t *const *heads,
              const int64_t *ctx, size_t nctx, const fd_replay_opts *o, fd_replay_out *out, fd_err *e);
void fd_replay_out_free(fd_replay_out *o, size_t ncand);

#endif
