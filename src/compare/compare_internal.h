/* What compare.c shares with the units that write its outputs (receipt.c:
 * the comparison receipt; outputs.c: the output directory; k3emit.c: the
 * --emit-k3-compat views and summaries).  Not an API. */
#ifndef FD_COMPARE_INTERNAL_H
#define FD_COMPARE_INTERNAL_H
#include "compare.h"
#include "gates.h"
#include "k3summary.h"
#include "replay.h"
#include "side.h"
#include "stats.h"
#include "format/paths.h"
#include "kernels/kl.h"
#include <stdint.h>

/* one candidate's run: its side, gates, the head applied, the replay and its per-position arrays */
typedef struct cand_run {
    fd_side side;
    fd_gates g;
    const fd_packed_head *head;   /* applied to the candidate (packed for the GEMM) */
    const char *head_applied;     /* its content digest */
    int compute, short_circuited, force_agreed;
    fd_replay_out r;
    double *kl;                   /* tokenwise KL (zeros when hash-proven) */
    uint8_t *top1;
    size_t npos;
    uint32_t *obs, *obs_pos;      /* observed token and its position per scored row (with --csv) */
} cand_run;

/* the threads a replay uses (t > 0: t, else the online CPUs) */
int fd_cmp_pick_threads(int t);
/* the receipt, tokenwise-kld.npy (and --csv, --emit-k3-compat) of every candidate, staged then renamed into place */
int fd_cmp_write_outputs(const fd_cmp_opts *o, const fd_side *ref, cand_run *cr, fd_cmp_result *res, fd_path path,
                         fd_err *e);
/* the sealed comparison receipt of candidate c (receipt.c) */
jv *fd_cmp_build_receipt(const fd_cmp_opts *o, const fd_side *ref, const cand_run *c, const fd_kl_stats *st,
                         const fd_bootstrap *bs, const double *rkl_mean_entropy, fd_path path, const char *np_sha,
                         size_t np_bytes, const jv *interop, const jv *xfid);
/* --emit-k3-compat: the views once (NULL, e set, on failure) */
fd_k3_view *fd_cmp_k3_views(const fd_cmp_opts *o, const char *stage, const char *final_real, const fd_side *ref,
                            const cand_run *cr, fd_err *e);
/* --emit-k3-compat: candidate i's k3-summary.json in staging; the receipt's interop block (NULL, e set, on failure) */
jv *fd_cmp_k3_emit_summary(const fd_cmp_opts *o, const fd_side *ref, const cand_run *c, size_t i, const fd_k3_view *views,
                           const size_t *matches, const char *staging, const char *np_sha, size_t np_bytes, fd_err *e);

#endif
