#include "compare.h"
#include <pthread.h>
#include "compare_internal.h"
#include "gates.h"
#include "k3summary.h"
#include "replay.h"
#include "side.h"
#include "stats.h"
#include "observed.h"
#include "tokstats.h"
#include "format/npy.h"
#include "format/paths.h"
#include "format/sha.h"
#include "format/version.h"
#include "kernels/kl.h"
#include "mpi/dist.h"
#include "util/fsio.h"
#include "util/utc.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int fd_cmp_pick_threads(int t)
{
    if (t > 0) return t;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* The records of one replay group split across the ranks: contiguous
 * context ranges in the shared (index) order, each rank computing its own
 * positions; rank 0 gathers them in rank order, which is the context order,
 * so it holds exactly the arrays one process computes (no per-position value
 * depends on which other positions share its block, docs/NUMERICS.md). */
static int replay_sharded(const fd_dist *d, const fd_side **sides, size_t ns, const fd_packed_head **heads,
                          const fd_side *ref,
                          const int64_t *shared, size_t nshared, size_t npos, const fd_replay_opts *ro,
                          fd_replay_out *outs, fd_err *e)
{
    if (!d || d->size < 2)
        return fd_replay((const fd_side *const *)sides, ns, heads, shared, nshared, ro, outs, e);
    size_t lo, hi, mine = 0, nc = ns - 1;
    fd_dist_range(nshared, d->rank, d->size, &lo, &hi);
    for (size_t c = lo; c < hi; c++) mine += (size_t)fd_side_find(ref, shared[c])->rows;
    fd_replay_out *part = fd_xcalloc(nc + 1, sizeof *part);
    int rc = 0;
    fd_replay_opts sro = *ro;   /* this rank's observed tokens start after the earlier ranks' positions */
    if (ro->observed) {
        size_t before = 0;
        for (size_t c = 0; c < lo; c++) before += (size_t)fd_side_find(ref, shared[c])->rows;
        sro.observed = ro->observed + before;
    }
    if (hi > lo) rc = fd_replay((const fd_side *const *)sides, ns, heads, shared + lo, hi - lo, &sro, part, e);
    else
        for (size_t k = 0; k < nc; k++) {   /* more ranks than records: an empty share */
            part[k].kl = fd_xmalloc(8); part[k].rkl = fd_xmalloc(8); part[k].entropy = fd_xmalloc(8);
            part[k].top1 = fd_xmalloc(1); part[k].js = ro->js ? fd_xmalloc(8) : NULL;
            if (ro->observed) {
                part[k].lp_ref = fd_xmalloc(8); part[k].lp_cand = fd_xmalloc(8); part[k].lp_ref_top1 = fd_xmalloc(8);
                part[k].topk_ref = fd_xmalloc(4 * FD_TOPK); part[k].topk_cand = fd_xmalloc(4 * FD_TOPK);
            }
        }
    if (fd_dist_agree(d, rc, e)) {
        if (!rc) fd_replay_out_free(part, nc);
        free(part);
        return -1;
    }
    int root = d->rank == 0;
    for (size_t k = 0; k < nc; k++) {
        double **f[4] = {&outs[k].kl, &outs[k].rkl, &outs[k].entropy, &outs[k].js};
        double *p[4] = {part[k].kl, part[k].rkl, part[k].entropy, part[k].js};
        for (int a = 0; a < 4; a++) {
            if (a == 3 && !ro->js) break;
            *f[a] = root ? fd_xmalloc((npos + 1) * 8) : NULL;
            fd_dist_gather(d, p[a], mine * 8, *f[a]);
        }
        outs[k].top1 = root ? fd_xmalloc(npos + 1) : NULL;
        fd_dist_gather(d, part[k].top1, mine, outs[k].top1);
        if (ro->observed) {
            double **g[3] = {&outs[k].lp_ref, &outs[k].lp_cand, &outs[k].lp_ref_top1};
            double *q[3] = {part[k].lp_ref, part[k].lp_cand, part[k].lp_ref_top1};
            for (int a = 0; a < 3; a++) {
                *g[a] = root ? fd_xmalloc((npos + 1) * 8) : NULL;
                fd_dist_gather(d, q[a], mine * 8, *g[a]);
            }
            outs[k].topk_ref = root ? fd_xmalloc((npos + 1) * FD_TOPK * 4) : NULL;
            fd_dist_gather(d, part[k].topk_ref, mine * FD_TOPK * 4, outs[k].topk_ref);
            outs[k].topk_cand = root ? fd_xmalloc((npos + 1) * FD_TOPK * 4) : NULL;
            fd_dist_gather(d, part[k].topk_cand, mine * FD_TOPK * 4, outs[k].topk_cand);
        }
    }
    fd_replay_out_free(part, nc);
    free(part);
    return 0;
}

static int compare_run(const fd_cmp_opts *o, fd_cmp_result *res, fd_err *e);

/* OUT.partial-PID / OUT.old-PID left by a compare that was killed (its PID
 * no longer runs) are removed; a live run's are left alone. */
static void sweep_stale(const char *out)
{
    char parent[4096];
    fd_dirname(out, parent, sizeof parent);
    if (!parent[0] && out[0] == '/') snprintf(parent, sizeof parent, "/");
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    size_t bl = strlen(base);
    DIR *d = opendir(parent[0] ? parent : ".");
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *n = de->d_name, *t;
        if (strncmp(n, base, bl)) continue;
        if (fd_starts(n + bl, ".partial-")) t = n + bl + 9;
        else if (fd_starts(n + bl, ".old-")) t = n + bl + 5;
        else continue;
        char *end;
        long pid = strtol(t, &end, 10);
        if (!*t || *end || pid <= 0 || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char *full = parent[0] ? fd_path_join(parent, n) : fd_xstrdup(n);
        fd_rmtree(full);
        free(full);
    }
    if (d) closedir(d);
}

int fd_compare(const fd_cmp_opts *o_in, fd_cmp_result *res, fd_err *e)
{
    memset(res, 0, sizeof *res);
    /* OUT without trailing slashes: OUT.partial-PID is its sibling, never inside it */
    fd_cmp_opts oo = *o_in;
    const fd_cmp_opts *o = &oo;
    char *outn = fd_xstrdup(o_in->out ? o_in->out : "");
    for (size_t l = strlen(outn); l > 1 && outn[l - 1] == '/'; l--) outn[l - 1] = 0;
    oo.out = outn;
    if (!o->dist || !o->dist->rank) sweep_stale(outn);
    struct stat dsb;
    if (lstat(outn, &dsb) == 0 && !o->force) {
        fd_fail(e, "destination_exists", "cli", "%s already exists (pass --force to replace it)", outn);
        free(outn);
        if (o->dist) fd_dist_agree(o->dist, -1, e);
        return -1;
    }
    int rc = compare_run(o, res, e);
    free(outn);
    return rc;
}

/* A side given no --*-label is labelled with its dataset's name (issue 22
 * item 7), else keeps "reference" / "candidate" / "candidate-N". */
static void name_label(fd_side *s)
{
    const char *n = jv_get_str(jv_get(s->manifest, "dataset"), "name");
    if (!n || !*n) return;
    free(s->label);
    s->label = fd_xstrdup(n);
}

/* candidate i's label before its dataset names one: the --candidate-label,
 * else "candidate" (one candidate) or "candidate-N" (lab: 64 bytes) */
static const char *cand_label(const fd_cmp_opts *o, size_t i, char *lab)
{
    snprintf(lab, 64, "candidate-%zu", i + 1);
    return o->candidate_labels && o->candidate_labels[i] ? o->candidate_labels[i] : o->ncand == 1 ? "candidate" : lab;
}

/* The first candidate's fd_side_open on a second thread while the reference's
 * runs: opening verifies the seal, which hashes every file (each side's head
 * dominates), so the two datasets' hashes overlap.  Nothing is shared between
 * the two opens; what is reported is what the sequential order reports (the
 * reference's refusal first, then the candidate's). */
typedef struct pre_open {
    const fd_cmp_opts *o;
    char lab[64];
    pthread_t th;
    int started, rc;
    fd_side side;
    fd_err e;
} pre_open;

static void *pre_open_run(void *arg)
{
    pre_open *p = arg;
    const fd_cmp_opts *o = p->o;
    p->rc = fd_side_open(o->candidates[0], cand_label(o, 0, p->lab), o->verify_tensors, o->allow_partial, &p->side, &p->e);
    return NULL;
}

/* starts candidate 0's open when there is one (p->started: a thread runs) */
static void pre_open_start(const fd_cmp_opts *o, pre_open *p)
{
    memset(p, 0, sizeof *p);
    p->o = o;
    p->started = o->ncand > 0 && pthread_create(&p->th, NULL, pre_open_run, p) == 0;
}

/* waits for it; returns its fd_side_open result (its error in *e), or 1 when
 * no thread ran (the caller opens the side itself) */
static int pre_open_join(pre_open *p, fd_side *out, fd_err *e)
{
    if (!p->started) return 1;
    pthread_join(p->th, NULL);
    p->started = 0;
    if (p->rc) {
        *e = p->e;
        return -1;
    }
    *out = p->side;
    return 0;
}

/* candidate 0's open when nothing took it (a refusal came first): waited for
 * and closed */
static void pre_open_discard(pre_open *p)
{
    fd_side c0;
    fd_err ignored;
    if (pre_open_join(p, &c0, &ignored) == 0) fd_side_close(&c0);
}

/* open every candidate and run its gates (opened: how many sides to close);
 * candidate 0 comes from pre when its thread ran */
static int open_candidates(const fd_cmp_opts *o, const fd_side *ref, cand_run *cr, size_t *opened, pre_open *pre,
                           fd_err *e)
{
    for (size_t i = 0; i < o->ncand; i++) {
        char lab[64];
        const char *label = cand_label(o, i, lab);
        int got = i == 0 ? pre_open_join(pre, &cr[i].side, e) : 1;
        if (got < 0 || (got > 0 && fd_side_open(o->candidates[i], label, o->verify_tensors, o->allow_partial,
                                                &cr[i].side, e))) return -1;
        if (!(o->candidate_labels && o->candidate_labels[i])) name_label(&cr[i].side);
        (*opened)++;
        if (ref->realroot && cr[i].side.realroot && !strcmp(ref->realroot, cr[i].side.realroot))
            return fd_fail(e, "same_root", "cli", "reference and candidate resolve to the same directory %s", ref->realroot);
        fd_gate_opts go = {o->self_compare, o->allow_cross_lane, o->allow_partial, o->own_heads,
                           o->disclose_head_substitution, o->verify_tensors};
        if (fd_gates_run(ref, &cr[i].side, &go, &cr[i].g, e)) {
            fd_err_prefix(e, label);
            return -1;
        }
        cr[i].compute = strcmp(cr[i].g.kind, "reproduction_confirmation") || o->force_compute;
        cr[i].short_circuited = !strcmp(cr[i].g.kind, "reproduction_confirmation") && !o->force_compute;
        if (o->emit_k3_compat && (fd_k3_check_panel(ref, cr[i].g.shared, cr[i].g.nshared, e) ||
                                  fd_k3_check_panel(&cr[i].side, cr[i].g.shared, cr[i].g.nshared, e))) return -1;
    }
    return 0;
}

/* A head streamed through a ring of pieces (whole rows): this thread reads
 * each piece and packs it, a second one hashes the pieces in order.  A slot
 * is read again only when both are done with it, so the bytes packed are
 * the bytes hashed, and no full unpacked copy is ever held. */
#define HEAD_SLOTS 4
typedef struct head_stream {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned char *slot[HEAD_SLOTS];
    size_t len[HEAD_SLOTS];
    size_t filled, hashed;   /* pieces read in, pieces hashed (counts) */
    int end;                 /* no piece will follow */
    fd_sha *sha;
} head_stream;

static void *head_hash_run(void *arg)
{
    head_stream *h = arg;
    for (;;) {
        pthread_mutex_lock(&h->mu);
        while (h->hashed == h->filled && !h->end) pthread_cond_wait(&h->cv, &h->mu);
        int more = h->hashed < h->filled;
        size_t at = h->hashed % HEAD_SLOTS;
        pthread_mutex_unlock(&h->mu);
        if (!more) return NULL;
        fd_sha_update(h->sha, h->slot[at], h->len[at]);
        pthread_mutex_lock(&h->mu);
        h->hashed++;
        pthread_cond_broadcast(&h->cv);
        pthread_mutex_unlock(&h->mu);
    }
}

/* The head of path packed for the GEMM into *out and hashed (hex: the
 * SHA-256 of the bytes packed), as above; the hash on a second thread. */
static int read_pack_hash(const char *path, const char *key, const fd_side *s, fd_packed_head *out, char hex[65],
                          fd_err *e)
{
    uint64_t off, len;
    if (fd_head_extent(path, key, s->vocab, s->hidden, &off, &len, e)) return -1;
    size_t vocab = (size_t)s->vocab, row = (size_t)s->hidden * 2;
    size_t rows = ((size_t)1 << 20) / row ? ((size_t)1 << 20) / row : 1;   /* ~1 MiB a piece */
    if (len != (uint64_t)vocab * row)   /* every read below is bounded by the declared extent */
        return fd_fail(e, "bad_tensor_file", "", "%s: the head tensor holds %llu bytes, not vocab x hidden x 2", path,
                       (unsigned long long)len);
    int fd = fd_open_regular(path, 0, NULL, e);
    if (fd < 0) return -1;
    head_stream h = {.sha = fd_sha_new()};
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    for (int i = 0; i < HEAD_SLOTS; i++) h.slot[i] = fd_xmalloc(rows * row);
    pthread_t th;
    int threaded = pthread_create(&th, NULL, head_hash_run, &h) == 0;
    /* the pages populated piece by piece, beside the second thread's hash (in
     * one call up front they had kept this thread alone ~25 ms first) */
    fd_pack_head_alloc(vocab, (size_t)s->hidden, 0, out);
    int rc = 0;
    for (size_t v0 = 0; v0 < vocab && !rc; v0 += rows) {
        size_t n = vocab - v0 < rows ? vocab - v0 : rows, at = h.filled % HEAD_SLOTS, got = 0;
        pthread_mutex_lock(&h.mu);   /* the slot's last piece hashed */
        while (h.filled - h.hashed >= HEAD_SLOTS) pthread_cond_wait(&h.cv, &h.mu);
        pthread_mutex_unlock(&h.mu);
        while (got < n * row) {
            ssize_t k = pread(fd, h.slot[at] + got, n * row - got, (off_t)(off + v0 * row + got));
            if (k <= 0) break;
            got += (size_t)k;
        }
        if (got != n * row) {
            rc = fd_fail(e, "unreadable", "", "%s: short read of the head", path);
            break;
        }
        h.len[at] = got;
        pthread_mutex_lock(&h.mu);
        h.filled++;
        pthread_cond_broadcast(&h.cv);
        pthread_mutex_unlock(&h.mu);
        if (!threaded) {   /* no second thread: hashed here */
            fd_sha_update(h.sha, h.slot[at], got);
            h.hashed++;
        }
        fd_pack_head_touch(out, v0, n);
        fd_pack_head_rows(out, (const uint16_t *)(const void *)h.slot[at], v0, n);
    }
    pthread_mutex_lock(&h.mu);
    h.end = 1;
    pthread_cond_broadcast(&h.cv);
    pthread_mutex_unlock(&h.mu);
    if (threaded) pthread_join(th, NULL);
    close(fd);
    fd_sha_final_hex(h.sha, hex);
    for (int i = 0; i < HEAD_SLOTS; i++) free(h.slot[i]);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    if (rc) fd_packed_head_free(out);
    return rc;
}

/* a side's head, read, packed and re-hashed against the manifest's content digest */
static int read_checked_head(const fd_side *s, fd_packed_head *out, fd_err *e)
{
    char got[65];
    if (read_pack_hash(s->head_path, s->head_key, s, out, got, e)) return -1;
    if (strcmp(got, s->head_content)) {
        fd_packed_head_free(out);
        return fd_fail(e, "head_mismatch", "head", "%s: head bytes do not hash to the manifest's content digest", s->root);
    }
    return 0;
}

/* the heads every computed candidate applies, each distinct head read (and re-hashed) and packed once */
typedef struct heads {
    fd_packed_head ref, sub, *cand;
    char sub_content[65];
} heads;

static int load_heads(const fd_cmp_opts *o, const fd_side *ref, cand_run *cr, heads *h, fd_err *e)
{
    int need = 0;
    for (size_t i = 0; i < o->ncand; i++) need |= cr[i].compute;
    if (need && !ref->logit) {
        if (read_checked_head(ref, &h->ref, e)) return -1;
        if (o->head && read_pack_hash(o->head, "lm_head.weight", ref, &h->sub, h->sub_content, e))  /* the head applied */
            return -1;
    }
    for (size_t i = 0; i < o->ncand; i++) {
        cr[i].head = &h->ref;
        cr[i].head_applied = ref->head_content;
        if (!cr[i].compute) continue;
        if (cr[i].side.logit) {           /* stored log-probs: no head is applied */
            cr[i].head = NULL;
            cr[i].head_applied = NULL;
        } else if (ref->logit || (!cr[i].g.heads_equal && !cr[i].g.head_substituted)) {
            /* HEAD-3 (a logit reference): the candidate's own head, equal to the declared one; or differing heads */
            if (read_checked_head(&cr[i].side, &h->cand[i], e)) return -1;
            cr[i].head = &h->cand[i];
            cr[i].head_applied = cr[i].side.head_content;
        } else if (cr[i].g.head_substituted && h->sub.w) {
            cr[i].head = &h->sub;
            cr[i].head_applied = h->sub_content;
        }
    }
    return 0;
}

/* the replay of the candidates that share candidate i's context list (normally all of them) */
static int replay_group(const fd_cmp_opts *o, const fd_side *ref, cand_run *cr, size_t i, const heads *h, fd_path path,
                        fd_err *e)
{
    size_t group[64], ng = 0;
    for (size_t k = i; k < o->ncand && ng < 64; k++) {
        if (cr[k].npos || cr[k].g.nshared != cr[i].g.nshared ||
            memcmp(cr[k].g.shared, cr[i].g.shared, cr[i].g.nshared * sizeof *cr[i].g.shared)) continue;
        group[ng++] = k;
    }
    size_t npos = 0;
    for (size_t c = 0; c < cr[i].g.nshared; c++) npos += (size_t)fd_side_find(ref, cr[i].g.shared[c])->rows;
    const fd_side **sides = fd_xcalloc(ng + 1, sizeof *sides);
    const fd_packed_head **hs = fd_xcalloc(ng + 1, sizeof *hs);
    size_t ns = 1;
    sides[0] = ref;
    hs[0] = cr[i].g.head_substituted && h->sub.w ? &h->sub : &h->ref;
    size_t computed[64], nc = 0;
    for (size_t k = 0; k < ng; k++) {
        cand_run *c = &cr[group[k]];
        c->npos = npos;
        if (!c->compute) continue;
        sides[ns] = &c->side;
        hs[ns++] = c->head;
        computed[nc++] = group[k];
    }
    fd_replay_out *outs = fd_xcalloc(nc + 1, sizeof *outs);
    uint32_t *observed = NULL;
    /* the observed next tokens for the token statistics (every rank reads them: a refusal is agreed below) */
    uint32_t *obs_pos = NULL;
    int rc = 0;
    if (nc || o->csv)
        rc = fd_observed_tokens_at(ref, cr[i].g.shared, cr[i].g.nshared, npos, &observed, o->csv ? &obs_pos : NULL, e);
    if (o->dist && fd_dist_agree(o->dist, rc, e)) rc = -1;
    for (size_t k = 0; k < ng && !rc && o->csv; k++) {
        cand_run *c = &cr[group[k]];
        c->obs = fd_xmalloc((npos + 1) * 4);
        c->obs_pos = fd_xmalloc((npos + 1) * 4);
        memcpy(c->obs, observed, npos * 4);
        memcpy(c->obs_pos, obs_pos, npos * 4);
    }
    free(obs_pos);
    if (nc && !rc) {
        fd_replay_opts ro = {fd_cmp_pick_threads(o->threads), o->position_block ? o->position_block : FD_CMP_POSITION_BLOCK, path, o->progress,
                             o->js, observed};
        rc = replay_sharded(o->dist, sides, ns, hs, ref, cr[i].g.shared, cr[i].g.nshared, npos, &ro, outs, e);
    }
    free(observed);
    for (size_t k = 0; k < nc && !rc; k++) cr[computed[k]].r = outs[k];
    free(outs);
    free(sides);
    free(hs);
    return rc;
}

/* SC-1: the hash proof, and --force-compute must agree with it bit for bit; every candidate's KL and top-1 arrays */
static int self_compare_check(const fd_cmp_opts *o, cand_run *cr, fd_err *e)
{
    int rc = 0;
    for (size_t i = 0; i < o->ncand && !rc; i++) {
        cand_run *c = &cr[i];
        if (!strcmp(c->g.kind, "reproduction_confirmation") && c->compute) {
            for (size_t p = 0; p < c->npos; p++) {
                uint64_t bits;
                memcpy(&bits, &c->r.kl[p], 8);
                if (bits != 0 || !c->r.top1[p]) {
                    rc = fd_fail(e, "self_compare_disagreement", "classify",
                                 "--force-compute: position %zu gives KL bits %016llx (top-1 %s) where the hash proof asserts +0.0",
                                 p, (unsigned long long)bits, c->r.top1[p] ? "agrees" : "differs");
                    break;
                }
            }
            c->force_agreed = !rc;
        }
        if (!c->compute) {
            c->kl = fd_xcalloc(c->npos + 1, 8);
            c->top1 = fd_xmalloc(c->npos + 1);
            memset(c->top1, 1, c->npos + 1);
        } else {
            c->kl = c->r.kl;
            c->top1 = c->r.top1;
        }
    }
    return rc;
}

static int compare_run(const fd_cmp_opts *o, fd_cmp_result *res, fd_err *e)
{
    fd_side ref;
    int rc = 0;
    pre_open pre;
    pre_open_start(o, &pre);
    if (fd_side_open(o->reference, o->reference_label ? o->reference_label : "reference", o->verify_tensors,
                     o->allow_partial, &ref, e)) {
        pre_open_discard(&pre);
        if (o->dist) fd_dist_agree(o->dist, -1, e);
        return -1;
    }
    if (!o->reference_label) name_label(&ref);
    cand_run *cr = fd_xcalloc(o->ncand, sizeof *cr);
    size_t opened = 0;
    heads h = {0};
    h.cand = fd_xcalloc(o->ncand, sizeof *h.cand);
    fd_path path;
    if (fd_path_select(o->kernel, &path))
        rc = fd_fail(e, "bad_kernel", "usage", "kernel path '%s' is unknown or not supported by this CPU", o->kernel);
    if (!rc) rc = open_candidates(o, &ref, cr, &opened, &pre, e);
    pre_open_discard(&pre); /* a no-op unless a refusal came before candidate 0 was taken */
    if (!rc) rc = load_heads(o, &ref, cr, &h, e);
    /* every rank reaches this point once: a refusal on any rank stops all */
    if (o->dist && fd_dist_agree(o->dist, rc, e)) rc = -1;
    if (rc) goto out;
    /* ranks may run on CPUs with different features: every rank runs rank
     * 0's path, the one the receipt names (the bits are the same on any) */
    if (o->dist) fd_dist_bcast(o->dist, &path, sizeof path, 0);
    /* replay: candidates grouped by their shared-context list (normally one group) */
    for (size_t i = 0; i < o->ncand && !rc; i++)
        if (!cr[i].npos) rc = replay_group(o, &ref, cr, i, &h, path, e);
    if (rc) goto out;
    if (o->dist && o->dist->rank) goto out;   /* rank 0 holds every position now and writes alone */
    rc = self_compare_check(o, cr, e);
    if (!rc) rc = fd_cmp_write_outputs(o, &ref, cr, res, path, e);
out:
    for (size_t i = 0; i < o->ncand; i++) {
        if (cr[i].kl && cr[i].kl != cr[i].r.kl) free(cr[i].kl);
        if (cr[i].top1 && cr[i].top1 != cr[i].r.top1) free(cr[i].top1);
        fd_replay_out_free(&cr[i].r, 1);
        free(cr[i].obs);
        free(cr[i].obs_pos);
        fd_gates_free(&cr[i].g);
        if (i < opened) fd_side_close(&cr[i].side);
        fd_packed_head_free(&h.cand[i]);
    }
    free(h.cand);
    free(cr);
    fd_packed_head_free(&h.ref);
    fd_packed_head_free(&h.sub);
    fd_side_close(&ref);
    if (rc) fd_cmp_result_free(res);
    return rc;
}

void fd_cmp_result_free(fd_cmp_result *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->receipt_paths[i]);
        free(r->classes[i]);
        jv_free(r->receipts[i]);
    }
    free(r->receipt_paths);
    free(r->classes);
    free(r->receipts);
    memset(r, 0, sizeof *r);
}
