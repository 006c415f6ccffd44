#include "replay.h"
#include "kernels/kl.h"
#include "util/buf.h"
#include "util/progress.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SUB 64   /* positions per GEMM call inside a block (the logits tile) */

typedef struct {
    size_t ctx;     /* index into the shared context list */
    int64_t row;
} pos_ref;

/* One shared context: its tensors (every side) are read when a block first
 * needs them and freed when its last position is done, so memory holds the
 * contexts in flight, not the datasets. */
typedef struct {
    pthread_mutex_t lock;
    int state;                   /* 0 not read, 1 in memory, -1 refused */
    size_t left;                 /* positions not yet done (under lock) */
} ctx_slot;

typedef struct {
    const fd_side *const *sides;
    size_t nsides;
    fd_packed_head *packed;      /* per side (copies of the caller's; shared heads alias the same words); unused for logit sides */
    size_t kp, hidden;           /* of the hidden-form sides (0 when none) */
    fd_map *maps;                /* [nsides][nctx] */
    ctx_slot *slots;             /* [nctx] */
    const int64_t *ctx;          /* the shared context indices */
    size_t nctx;
    const int64_t *ctxidx;       /* the shared context indices */
    pos_ref *pos;                /* every position, in output order */
    size_t npos;
    const fd_replay_opts *o;
    fd_gemm_fn gemm;
    const fd_kl_ops *ops;
    fd_replay_out *out;          /* per candidate */
    atomic_size_t next_pos;      /* the first position no work unit has taken */
    int nthreads;
    atomic_int failed;
    atomic_size_t done;
    char errcode[32], errmsg[512];
    pthread_mutex_t lock;
} job;

static void fail_code(job *j, const char *code, const char *msg)
{
    pthread_mutex_lock(&j->lock);
    if (!atomic_exchange(&j->failed, 1)) {
        snprintf(j->errcode, sizeof j->errcode, "%s", code);
        snprintf(j->errmsg, sizeof j->errmsg, "%s", msg);
    }
    pthread_mutex_unlock(&j->lock);
}

static void fail(job *j, const char *msg) { fail_code(j, "non_finite", msg); }

/* Reads (and checks against its sealed digest) context c of every side,
 * once; -1 when it is refused. */
static int ctx_acquire(job *j, size_t c)
{
    ctx_slot *sl = &j->slots[c];
    pthread_mutex_lock(&sl->lock);
    for (size_t s = 0; s < j->nsides && !sl->state; s++) {
        const fd_ctx *x = fd_side_find(j->sides[s], j->ctx[c]);
        fd_err e = {0};
        int bad = j->sides[s]->logit
                      ? fd_load_ctx(x, "logits", "F32", j->sides[0]->vocab, &j->maps[s * j->nctx + c], &e)
                      : fd_load_ctx(x, "hidden_states", "BF16", (int64_t)j->hidden, &j->maps[s * j->nctx + c], &e);
        if (bad) {
            for (size_t t = 0; t < s; t++) fd_unmap(&j->maps[t * j->nctx + c]);
            sl->state = -1;
            fail_code(j, e.code, e.msg);
        }
    }
    if (!sl->state) sl->state = 1;
    int rc = sl->state < 0 ? -1 : 0;
    pthread_mutex_unlock(&sl->lock);
    return rc;
}

/* n positions of context c are done: its memory goes with the last. */
static void ctx_release(job *j, size_t c, size_t n)
{
    ctx_slot *sl = &j->slots[c];
    pthread_mutex_lock(&sl->lock);
    sl->left -= n < sl->left ? n : sl->left;
    if (!sl->left && sl->state == 1) {
        for (size_t s = 0; s < j->nsides; s++) fd_unmap(&j->maps[s * j->nctx + c]);
        sl->state = 2;
    }
    pthread_mutex_unlock(&sl->lock);
}

/* Canonical logits of positions [first, first+ns) of one side over the
 * columns of one chunk (tiles t0 .. t0+nt), rows of dst nt*16 floats apart;
 * with nsd = 2 (two hidden-form sides that apply the same head), the next
 * side's rows follow in dst (row ns + i): one GEMM of 2 x ns rows streams the
 * head once for both.  Every logit is computed alone: the same bits. */
static void logits(job *j, size_t side, size_t nsd, size_t first, size_t ns, size_t t0, size_t nt, uint32_t *hid,
                   float *dst)
{
    size_t kp = j->kp, hidden = j->hidden;
    if (j->sides[side]->logit) {
        /* stored log-probs enter the estimator as logits (log-softmax is
         * shift-invariant, docs/NUMERICS.md): a copy, no arithmetic */
        size_t vocab = (size_t)j->sides[0]->vocab, v0 = t0 * FD_TILE, w = nt * FD_TILE;
        size_t n = vocab - v0 < w ? vocab - v0 : w;
        for (size_t i = 0; i < ns; i++) {
            const pos_ref *pr = &j->pos[first + i];
            const unsigned char *row = j->maps[side * j->nctx + pr->ctx].data + ((size_t)pr->row * vocab + v0) * 4;
            memcpy(dst + i * w, row, n * 4);
            memset(dst + i * w + n, 0, (w - n) * 4);
        }
        return;
    }
    for (size_t sd = 0; sd < nsd; sd++)
        for (size_t i = 0; i < ns; i++) {
            const pos_ref *pr = &j->pos[first + i];
            const unsigned char *row = j->maps[(side + sd) * j->nctx + pr->ctx].data + (size_t)pr->row * hidden * 2;
            fd_pack_hidden(row, hidden, hid + (sd * ns + i) * kp);
        }
    fd_path path = j->o->path;
    int mx = path == FD_PATH_AVX2 || path == FD_PATH_AVX512F;
    unsigned csr = mx ? fd_ftz_daz_enter() : 0;
    j->gemm(hid, nsd * ns, kp, j->packed[side].w + t0 * kp * FD_TILE, nt, dst, nt * FD_TILE);
    if (mx) fd_ftz_daz_leave(csr);
}

/* The optional Jensen-Shannon pass: the logits again, now that both
 * sides' log-sum-exp are known. */
static void js_pass(job *j, size_t p0, size_t np, uint32_t *hid, float *lr, float *lc, const fd_ref_state *rs,
                    const fd_pair_state *ps)
{
    size_t nc = j->nsides - 1, vocab = (size_t)j->sides[0]->vocab;
    double *acc = fd_xcalloc(np * nc + 1, sizeof *acc);
    for (size_t v0 = 0; v0 < vocab; v0 += FD_KL_CHUNK) {
        size_t n = vocab - v0 < FD_KL_CHUNK ? vocab - v0 : FD_KL_CHUNK;
        size_t t0 = v0 / FD_TILE, nt = (n + FD_TILE - 1) / FD_TILE;
        for (size_t s0 = 0; s0 < np; s0 += SUB) {
            size_t ns = np - s0 < SUB ? np - s0 : SUB;
            logits(j, 0, 1, p0 + s0, ns, t0, nt, hid, lr);
            for (size_t side = 1; side < j->nsides; side++) {
                logits(j, side, 1, p0 + s0, ns, t0, nt, hid, lc);
                for (size_t i = 0; i < ns; i++) {
                    const fd_pair_state *p = &ps[(s0 + i) * nc + side - 1];
                    acc[(s0 + i) * nc + side - 1] += j->ops->js_chunk(&rs[s0 + i], p,
                                                                      lr + i * nt * FD_TILE, lc + i * nt * FD_TILE, n);
                }
            }
        }
    }
    for (size_t i = 0; i < np; i++)
        for (size_t c = 0; c < nc; c++) j->out[c].js[p0 + i] = acc[i * nc + c];
    free(acc);
}

/* The running top-k of one position and side (token statistics). */
typedef struct {
    float v[FD_TOPK];
    uint32_t id[FD_TOPK];
    int n;
    float obs;          /* the observed token's logit */
} tok_state;

/* Folds one chunk's n logits (columns v0..) into t: a column enters when it
 * is strictly larger than the k-th entry, after every equal one, so ties go
 * to the lower column as the kernel's argmax does.  The observed token's
 * logit is kept when its column is in the chunk.  No arithmetic. */
static void tok_fold(const fd_kl_ops *ops, tok_state *t, const float *x, size_t n, size_t v0, uint32_t obs,
                     float chunk_max)
{
    /* a full top-k takes no column of a chunk whose max is not above its k-th
     * entry (the KL pass's scan found that max): the same columns skipped */
    for (size_t i = t->n == FD_TOPK && !(chunk_max > t->v[FD_TOPK - 1]) ? n : 0; i < n; i++) {
        /* once full, the columns not above the k-th entry are skipped in one
         * vector scan (the same columns the per-column test skips) */
        if (t->n == FD_TOPK && (i += ops->first_above(x + i, n - i, t->v[FD_TOPK - 1])) >= n) break;
        float v = x[i];
        int at = t->n < FD_TOPK ? t->n : FD_TOPK - 1;
        while (at > 0 && v > t->v[at - 1]) {
            t->v[at] = t->v[at - 1];
            t->id[at] = t->id[at - 1];
            at--;
        }
        t->v[at] = v;
        t->id[at] = (uint32_t)(v0 + i);
        if (t->n < FD_TOPK) t->n++;
    }
    if (obs >= v0 && obs < v0 + n) t->obs = x[obs - v0];
}

/* The next work unit, positions [*p0, *p0 + *np): half of one thread's share
 * of what is left (left / (2 x threads), in whole sub-tiles), at most pb (--chunk-positions) and at
 * least one sub-tile (or pb, if smaller): large units while much is left (each
 * unit streams the whole head once), smaller ones at the end so the threads
 * finish together.  0 when none is left.  Which positions a unit holds never
 * changes a bit: every position is computed alone. */
static int take_unit(job *j, size_t pb, size_t *p0, size_t *np)
{
    size_t cur = atomic_load(&j->next_pos);
    for (;;) {
        if (cur >= j->npos) return 0;
        size_t left = j->npos - cur, lo = pb < SUB ? pb : SUB;
        size_t want = (left / (2 * (size_t)j->nthreads) + SUB - 1) / SUB * SUB;
        want = want < lo ? lo : want > pb ? pb : want;
        size_t n = want < left ? want : left;
        if (atomic_compare_exchange_weak(&j->next_pos, &cur, cur + n)) {
            *p0 = cur;
            *np = n;
            return 1;
        }
    }
}

static void run_block(job *j, size_t p0, size_t np, uint32_t *hid, float *lr, float *lc, fd_ref_state *rs,
                      fd_pair_state *ps, fd_ref_chunk *ch, tok_state *tk)
{
    size_t nc = j->nsides - 1, ns_all = j->nsides;
    size_t vocab = (size_t)j->sides[0]->vocab;
    const uint32_t *obs = j->o->observed;
    /* the reference and the first candidate in one GEMM when they apply the same head */
    int pair = j->nsides > 1 && !j->sides[0]->logit && !j->sides[1]->logit && j->packed[0].w == j->packed[1].w;
    memset(rs, 0, np * sizeof *rs);
    memset(ps, 0, np * nc * sizeof *ps);
    if (obs) memset(tk, 0, np * ns_all * sizeof *tk);
    for (size_t v0 = 0; v0 < vocab; v0 += FD_KL_CHUNK) {
        size_t n = vocab - v0 < FD_KL_CHUNK ? vocab - v0 : FD_KL_CHUNK;
        size_t t0 = v0 / FD_TILE, nt = (n + FD_TILE - 1) / FD_TILE;
        for (size_t s0 = 0; s0 < np; s0 += SUB) {
            size_t ns = np - s0 < SUB ? np - s0 : SUB;
            for (size_t side = 0; side < j->nsides; side++) {
                /* this candidate's logits: with pair, the first one's rows follow the reference's */
                float *cl = side == 1 && pair ? lr + ns * nt * FD_TILE : lc;
                if (!side) logits(j, 0, pair ? 2 : 1, p0 + s0, ns, t0, nt, hid, lr);
                else if (side > 1 || !pair) logits(j, side, 1, p0 + s0, ns, t0, nt, hid, cl);
                if (!side && j->nsides > 1) continue; /* the reference is folded with the first candidate */
                for (size_t i = 0; i < ns; i++) {
                    const float *r = lr + i * nt * FD_TILE, *c = cl + i * nt * FD_TILE;
                    int bad;
                    if (side == 1) { /* reference and first candidate in one pass; the exps kept for more */
                        bad = j->ops->ref_pair_chunk(&rs[s0 + i], &ch[i], &ps[(s0 + i) * nc], r, c, n, v0, nc > 1);
                        if (bad == 2) /* the separate passes' order: every reference row of the sub-tile first */
                            for (size_t q = i + 1; q < ns && bad == 2; q++) {
                                fd_ref_state tmp = rs[s0 + q];
                                if (j->ops->ref_chunk(&tmp, &ch[q], lr + q * nt * FD_TILE, n, v0)) bad = 1, i = q;
                            }
                    } else if (!side) bad = j->ops->ref_chunk(&rs[s0 + i], &ch[i], r, n, v0) ? 1 : 0;
                    else bad = j->ops->pair_chunk(&ps[(s0 + i) * nc + side - 1], &rs[s0 + i], &ch[i], r, c, n, v0) ? 2 : 0;
                    if (bad) {
                        const pos_ref *pr = &j->pos[p0 + s0 + i];
                        size_t sd = bad == 1 ? 0 : side;
                        char msg[400];
                        snprintf(msg, sizeof msg,
                                 "%s (%s): a %s logit of context %lld, row %lld, in columns %zu..%zu is not finite "
                                 "(an overflowing hidden x head product or a stored NaN/inf; refused, never clamped)",
                                 sd ? "candidate" : "reference", j->sides[sd]->label ? j->sides[sd]->label : "?",
                                 j->sides[sd]->logit ? "stored" : "replayed", (long long)j->ctxidx[pr->ctx],
                                 (long long)pr->row, v0, v0 + n - 1);
                        fail(j, msg);
                        return;
                    }
                }
                /* the token statistics' top-k, after the pass that found each chunk's max */
                for (size_t sd = side == 1 ? 0 : side; obs && sd <= side; sd++)
                    for (size_t i = 0; i < ns; i++)
                        tok_fold(j->ops, &tk[(s0 + i) * ns_all + sd], (sd ? cl : lr) + i * nt * FD_TILE, n, v0,
                                 obs[p0 + s0 + i],
                                 sd ? ps[(s0 + i) * nc + sd - 1].chunk_best : rs[s0 + i].chunk_best);
            }
        }
    }
    for (size_t i = 0; i < np; i++)
        for (size_t c = 0; c < nc; c++) {
            fd_kl_result r;
            fd_kl_finish(&rs[i], &ps[i * nc + c], &r);
            size_t at = p0 + i;
            j->out[c].kl[at] = r.kl;
            j->out[c].rkl[at] = r.rkl;
            j->out[c].entropy[at] = r.entropy;
            j->out[c].top1[at] = (uint8_t)r.top1_match;
            if (obs) {
                const tok_state *tr = &tk[i * ns_all], *tc = &tk[i * ns_all + c + 1];
                /* a logit-form side stores log-probabilities: read as stored, as llama.cpp
                 * reads its base log-probs (docs/COMPARE-IMPL.md "Token statistics") */
                /* lp = (x - m) - log(s): relative to the running max first, no cancellation */
                const fd_pair_state *pc = &ps[i * nc + c];
                int lr_ = j->sides[0]->logit, lc_ = j->sides[c + 1]->logit;
                double ls_r = lr_ ? 0.0 : fd_log_canonical(rs[i].s), ls_c = lc_ ? 0.0 : fd_log_canonical(pc->s);
                j->out[c].lp_ref[at] = lr_ ? (double)tr->obs : ((double)tr->obs - rs[i].m) - ls_r;
                j->out[c].lp_cand[at] = lc_ ? (double)tc->obs : ((double)tc->obs - pc->m) - ls_c;
                j->out[c].lp_ref_top1[at] = lr_ ? (double)rs[i].best : ((double)rs[i].best - rs[i].m) - ls_r;
                for (int k = 0; k < FD_TOPK; k++) {
                    j->out[c].topk_ref[at * FD_TOPK + (size_t)k] = k < tr->n ? tr->id[k] : UINT32_MAX;
                    j->out[c].topk_cand[at * FD_TOPK + (size_t)k] = k < tc->n ? tc->id[k] : UINT32_MAX;
                }
            }
        }
    if (j->o->js) js_pass(j, p0, np, hid, lr, lc, rs, ps);
}

static void *worker(void *arg)
{
    job *j = arg;
    size_t pb = j->o->position_block, kp = j->kp, nc = j->nsides - 1;
    /* two sides' rows in one GEMM (run_block): twice the sub-tile in hid and lr */
    uint32_t *hid = fd_xmalloc(2 * SUB * kp * 4 + 4);   /* kp is 0 when every side is logit form */
    float *lr = fd_xmalloc(2 * SUB * FD_KL_CHUNK * 4), *lc = fd_xmalloc(SUB * FD_KL_CHUNK * 4);
    fd_ref_state *rs = fd_xmalloc(pb * sizeof *rs);
    fd_pair_state *ps = fd_xmalloc(pb * nc * sizeof *ps);
    fd_ref_chunk *ch = fd_xmalloc(SUB * sizeof *ch);
    tok_state *tk = j->o->observed ? fd_xmalloc(pb * j->nsides * sizeof *tk) : NULL;
    /* per-position state lives across chunks, so the sub-tile loop needs one
     * chunk scratch per position of the sub-tile only */
    for (;;) {
        if (atomic_load(&j->failed)) break;
        size_t p0, np;
        if (!take_unit(j, pb, &p0, &np)) break;
        size_t c0 = j->pos[p0].ctx, c1 = j->pos[p0 + np - 1].ctx;
        int bad = 0;
        for (size_t c = c0; c <= c1 && !bad; c++) bad = ctx_acquire(j, c);
        if (bad) break;
        run_block(j, p0, np, hid, lr, lc, rs, ps, ch, tk);
        for (size_t c = c0; c <= c1; c++) {
            size_t n = 0;
            for (size_t q = p0; q < p0 + np; q++) n += j->pos[q].ctx == c;
            ctx_release(j, c, n);
        }
        atomic_fetch_add(&j->done, np);
    }
    free(hid); free(lr); free(lc); free(rs); free(ps); free(ch); free(tk);
    return NULL;
}

int fd_replay(const fd_side *const *sides, size_t nsides, const fd_packed_head *const *heads, const int64_t *ctx, size_t nctx,
              const fd_replay_opts *o, fd_replay_out *out, fd_err *e)
{
    job j;
    memset(&j, 0, sizeof j);
    j.sides = sides;
    j.nsides = nsides;
    j.nctx = nctx;
    j.ctxidx = ctx;
    j.o = o;
    j.out = out;
    j.gemm = fd_gemm_for(o->path);
    j.ops = fd_kl_ops_for(o->path);
    pthread_mutex_init(&j.lock, NULL);
    int rc = 0;
    size_t vocab = (size_t)sides[0]->vocab, hidden = 0;
    for (size_t s = 0; s < nsides && !hidden; s++)
        if (!sides[s]->logit) hidden = (size_t)sides[s]->hidden;
    j.hidden = hidden;
    j.packed = fd_xcalloc(nsides, sizeof *j.packed);
    for (size_t s = 0; s < nsides; s++) {
        if (sides[s]->logit) continue;
        j.packed[s] = *heads[s];
        if (!j.kp) j.kp = j.packed[s].kp;
    }
    j.maps = fd_xcalloc(nsides * nctx + 1, sizeof *j.maps);
    j.slots = fd_xcalloc(nctx + 1, sizeof *j.slots);
    j.ctx = ctx;
    size_t npos = 0;
    for (size_t c = 0; c < nctx; c++) {
        const fd_ctx *rc0 = fd_side_find(sides[0], ctx[c]);
        npos += (size_t)rc0->rows;
        pthread_mutex_init(&j.slots[c].lock, NULL);
        j.slots[c].left = (size_t)rc0->rows;
    }
    (void)vocab;
    if (!rc) {
        j.pos = fd_xmalloc((npos + 1) * sizeof *j.pos);
        j.npos = npos;
        size_t at = 0;
        for (size_t c = 0; c < nctx; c++) {
            const fd_ctx *x = fd_side_find(sides[0], ctx[c]);
            for (int64_t r = 0; r < x->rows; r++) j.pos[at++] = (pos_ref){c, r};
        }
        for (size_t c = 0; c + 1 < nsides; c++) {
            out[c].kl = fd_xmalloc((npos + 1) * 8);
            out[c].rkl = fd_xmalloc((npos + 1) * 8);
            out[c].entropy = fd_xmalloc((npos + 1) * 8);
            out[c].top1 = fd_xmalloc(npos + 1);
            out[c].js = o->js ? fd_xmalloc((npos + 1) * 8) : NULL;
            if (o->observed) {
                out[c].lp_ref = fd_xmalloc((npos + 1) * 8);
                out[c].lp_cand = fd_xmalloc((npos + 1) * 8);
                out[c].lp_ref_top1 = fd_xmalloc((npos + 1) * 8);
                out[c].topk_ref = fd_xmalloc((npos + 1) * FD_TOPK * 4);
                out[c].topk_cand = fd_xmalloc((npos + 1) * FD_TOPK * 4);
            }
        }
        int nt = o->threads < 1 ? 1 : o->threads;
        j.nthreads = nt;
        pthread_t *th = fd_xcalloc((size_t)nt, sizeof *th);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int t = 0; t < nt; t++) pthread_create(&th[t], NULL, worker, &j);
        if (o->progress) {
            while (atomic_load(&j.done) < npos && !atomic_load(&j.failed)) {
                usleep(200000);
                struct timespec t1;
                clock_gettime(CLOCK_MONOTONIC, &t1);
                double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
                fd_progress_line(stderr, "compare", atomic_load(&j.done), npos, "positions", 0, dt, 1);
            }
            if (!atomic_load(&j.failed)) { /* the last count: every position */
                struct timespec t1;
                clock_gettime(CLOCK_MONOTONIC, &t1);
                double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
                fd_progress_line(stderr, "compare", atomic_load(&j.done), npos, "positions", 0, dt, 1);
            }
            fprintf(stderr, "\n");
        }
        for (int t = 0; t < nt; t++) pthread_join(th[t], NULL);
        free(th);
        if (atomic_load(&j.failed)) rc = fd_fail(e, j.errcode, "compute", "%s", j.errmsg);
    }
    for (size_t i = 0; i < nsides * nctx; i++) fd_unmap(&j.maps[i]);
    for (size_t c = 0; c < nctx; c++) pthread_mutex_destroy(&j.slots[c].lock);
    free(j.slots);
    free(j.maps);
    free(j.packed);
    free(j.pos);
    pthread_mutex_destroy(&j.lock);
    if (rc && j.npos) fd_replay_out_free(out, nsides - 1);
    return rc;
}

void fd_replay_out_free(fd_replay_out *o, size_t ncand)
{
    for (size_t c = 0; c < ncand; c++) {
        free(o[c].kl); free(o[c].rkl); free(o[c].entropy); free(o[c].top1); free(o[c].js);
        free(o[c].lp_ref); free(o[c].lp_cand); free(o[c].lp_ref_top1); free(o[c].topk_ref); free(o[c].topk_cand);
        memset(&o[c], 0, sizeof o[c]);
    }
}
