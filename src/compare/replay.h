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
    const uint32_t *observed;/* per position (output order): the panel's observed next
                                token, or NULL: no token statistics (lp_*, topk_* NULL) */
} fd_replay_opts;

/* top-k sets kept per position and side: the FD_TOPK largest logits, value
 * descending, ties to the lower column (entry 0 is the kernel's argmax) */
#define FD_TOPK 10

typedef struct fd_replay_out {
    double *kl, *rkl, *entropy;  /* per position, context order then row order */
    double *js;                  /* with opts.js, else NULL */
    uint8_t *top1;
    /* with opts.observed (docs/COMPARE-IMPL.md "Token statistics"), else NULL:
     * log-probability of the observed token on each side (logit - lse, fp64,
     * the lse the KL kernel folded), the reference's top-1 log-probability,
     * and both sides' top-k column ids (FD_TOPK per position; UINT32_MAX
     * pads when the vocabulary is smaller) */
    double *lp_ref, *lp_cand, *lp_ref_top1;
    uint32_t *topk_ref, *topk_cand;
} fd_replay_out;

/* ctx: the shared context indices (ascending); heads[i] is the head applied
 * to side i (0 = reference), packed (fd_pack_head), NULL for a logit-form
 * side; the caller keeps them. */
int fd_replay(const fd_side *const *sides, size_t nsides, const fd_packed_head *const *heads,
              const int64_t *ctx, size_t nctx, const fd_replay_opts *o, fd_replay_out *out, fd_err *e);
void fd_replay_out_free(fd_replay_out *o, size_t ncand);

#endif
