/* The canonical per-position reduction (docs/NUMERICS.md): over the vocab in
 * fixed chunks of FD_KL_CHUNK columns, 8 fp64 lanes (column i of a chunk
 * goes to lane i % 8), lanes combined ((0+1)+(2+3))+((4+5)+(6+7)), chunks
 * folded into a running state with online max rescaling.  exp/log are our
 * own (a table-driven exp, a series log; no libm), so every machine gives the same bits. */
#ifndef FD_KERNELS_KL_H
#define FD_KERNELS_KL_H
#include <stddef.h>
#include <stdint.h>
#include "gemm.h"

#define FD_KL_CHUNK 2048

typedef struct fd_ref_state {     /* reference side of one position */
    double m, s, e;               /* running max, sum exp(r-m), sum exp(r-m)*(r-m) */
    float best;
    uint32_t argmax;
    int started;
    float chunk_best;             /* the max of the last chunk folded in */
} fd_ref_state;

typedef struct fd_pair_state {    /* one candidate against the reference */
    double m, s, t, u;            /* cand max m_c, sum exp(c-m_c), and with a = r-m_r, b = c-m_c:
                                     t = sum exp(a)(a-b), u = sum exp(b)(b-a) */
    float best;
    uint32_t argmax;
    int started;
    float chunk_best;             /* the max of the last chunk folded in */
} fd_pair_state;

/* Scratch for one chunk of the reference: its exps, shared by every candidate. */
typedef struct fd_ref_chunk {
    double er[FD_KL_CHUNK];
    double m;                     /* the reference max the exps are relative to */
    double scale;                 /* factor applied to the running reference sums */
    double shift;                 /* old reference max - new one (<= 0; 0 on the first chunk) */
    double s_old;                 /* the reference sum before this chunk (relative to the old max) */
} fd_ref_chunk;

typedef struct fd_kl_ops {
    /* Folds reference logits r[0..n) (columns v0..) into rs; fills ch. */
    int (*ref_chunk)(fd_ref_state *rs, fd_ref_chunk *ch, const float *r, size_t n, size_t v0);
    /* Folds candidate logits c[0..n) into ps, against the same chunk. */
    int (*pair_chunk)(fd_pair_state *ps, const fd_ref_state *rs, const fd_ref_chunk *ch, const float *r,
                      const float *c, size_t n, size_t v0);
    /* ref_chunk then pair_chunk on the same chunk, in one pass over the
     * columns (each reference exp used while in registers), identical bits;
     * ch->er is filled when keep (for further candidates' pair_chunk), maybe
     * also when not (the generic build runs the two passes).
     * 0, or 1 when r has a non-finite logit (nothing folded), 2 when c has
     * one (rs folded as by ref_chunk, ps untouched). */
    int (*ref_pair_chunk)(fd_ref_state *rs, fd_ref_chunk *ch, fd_pair_state *ps, const float *r, const float *c,
                          size_t n, size_t v0, int keep);
    /* Jensen-Shannon contribution of one chunk, given both sides' finished
     * first-pass states (max and sum). */
    double (*js_chunk)(const fd_ref_state *rs, const fd_pair_state *ps, const float *r, const float *c, size_t n);
    /* The index of the first x[i] > thr (an ordered compare: NaN never is), or n
     * when none: the token statistics' top-k skips the columns below its k-th
     * entry with it.  No arithmetic, so every path gives the same index. */
    size_t (*first_above)(const float *x, size_t n, float thr);
    /* y[i] = the path's inlined exp (x <= 0) / log (normal x > 0) of x[i],
     * 8 lanes a time as in the passes above: kernel-selftest holds every
     * path to the generic one bit for bit on extreme inputs. */
    void (*exp_n)(const double *x, size_t n, double *y);
    void (*log_n)(const double *x, size_t n, double *y);
} fd_kl_ops;

/* The path's KL build, chosen by CPU features only (never by timing). */
const fd_kl_ops *fd_kl_ops_for(fd_path p);

typedef struct fd_kl_result {
    double kl, rkl, entropy;
    int top1_match;
} fd_kl_result;
void fd_kl_finish(const fd_ref_state *rs, const fd_pair_state *ps, fd_kl_result *out);
/* 1 when a and b hold the same bits in every field (padding ignored). */
int fd_kl_result_same(const fd_kl_result *a, const fd_kl_result *b);

/* The canonical exp (x <= 0, finite) and log (x >= 1), exposed for tests. */
double fd_exp_canonical(double x);
double fd_log_canonical(double x);

#endif
