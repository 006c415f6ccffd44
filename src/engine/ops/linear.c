/* Linear layers on the fenced GEMMs: weights packed as column tiles per
 * K-block, fp32 dots in torch's summation order, the bias and one bf16
 * rounding (engine/ops/ops.h fd_lin; the public API is there). */
#include "engine/ops/ops.h"
#include "engine/ops/kblocks.h"
#include "engine/ops/reduce.h"
#include "kernels/gemm_f32.h"
#include "kernels/rowops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F fd_bf16_to_f32

/* A Linear, its rows packed as column tiles for fd_mm_run (fd_lin, engine/ops/ops.h).
 *
 * Summation order (measured against torch 2.11 on CPU, tests/parity/):
 *   LIN_BF16: oneDNN's matmul is one dot chain in the fd_mm's order (pair:
 *     its AVX512_BF16 kernel; tile: its AMX kernel) within each K-block of
 *     fd_kplan_bf16, each from +0, the block sums added in order.
 *   LIN_F32_SEQ: MKL's sgemm for the router's fp32 Linear on upcast bf16
 *     weights is one FMA chain per K-block in increasing k (the products are
 *     exact, so it is a sequential sum of them) — fd_kplan_mkl's blocks
 *     where they were measured (router_plan), else one chain; the canonical
 *     kernel computes it when both operands have each pair (2i, 2i+1)
 *     swapped.
 *   LIN_F32_W: the same fp32 Linear on a weight STORED as F32 (transformers
 *     keeps the router weight in fp32: _keep_in_fp32_modules_strict): the
 *     same chains and K-blocks on the fp32 values as stored
 *     (kernels/gemm_f32.h; docs/NUMERICS.md §5b).  Identical bits to
 *     LIN_F32_SEQ when every value is a bf16 value. */
typedef fd_lin lin;

typedef struct pack_job {
    lin *L;
    const fd_tensor *t;
    uint64_t row0;
} pack_job;

static void pack_rows(void *ctx, size_t lo, size_t hi)
{
    const pack_job *j = ctx;
    lin *L = j->L;
    size_t K = L->K;
    /* plain bf16 rows are read in place; others dequantized, cast or swapped first */
    int direct = !strcmp(j->t->dtype, "BF16") && j->t->qfmt == FD_Q_NONE && L->mode != LIN_F32_SEQ;
    uint16_t *buf = direct ? NULL : fd_xmalloc(FD_TILE * K * 2 + 2);
    const unsigned char *rows[FD_TILE], *rb[FD_TILE];
    for (size_t n0 = lo; n0 < hi; n0 += FD_TILE) {
        size_t nr = hi - n0 < FD_TILE ? hi - n0 : FD_TILE;
        for (size_t r = 0; r < nr; r++) {
            if (direct) rows[r] = (const unsigned char *)j->t->data + (j->row0 + n0 + r) * K * 2;
            else {
                uint16_t *row = buf + r * K;
                fd_tensor_row_bf16(j->t, j->row0 + n0 + r, K, row); /* quantized weights: dequantized here */
                if (L->mode == LIN_F32_SEQ) fd_op_swap_pairs16(row, K);
                rows[r] = (const unsigned char *)row;
            }
        }
        for (size_t b = 0; b < L->nb; b++) {
            for (size_t r = 0; r < nr; r++) rb[r] = rows[r] + L->kst[b] * 2;
            fd_mm_set_tile(b ? &L->more[b - 1] : &L->p, n0, rb, nr);
        }
    }
    free(buf);
}

/* LIN_F32_W: rows [lo, hi) of the fp32 weight into each K-block's tiles */
static void pack_rows_f32(void *ctx, size_t lo, size_t hi)
{
    const pack_job *j = ctx;
    lin *L = j->L;
    const unsigned char *base = j->t->data;
    for (size_t n = lo; n < hi; n++) {
        const unsigned char *row = base + (j->row0 + n) * L->K * 4;
        size_t t = n / FD_TILE, c = n % FD_TILE;
        for (size_t b = 0; b < L->nb; b++) {
            size_t k0 = L->kst[b], kb = L->kst[b + 1] - k0;
            float *dst = L->fw[b] + t * kb * FD_TILE + c;
            for (size_t k = 0; k < kb; k++) memcpy(dst + k * FD_TILE, row + (k0 + k) * 4, 4); /* any alignment */
        }
    }
}

/* m: the threads that pack the rows (NULL: the caller's thread).  plan:
 * the K-blocks (NULL: one chain); blocks never start inside a pair
 * (K-block starts are even). */
void fd_lin_pack_plan(const fd_mm *m, lin *L, const fd_tensor *t, uint64_t row0, size_t N, size_t K, enum lin_mode mode,
                      const fd_kplan *plan)
{
    fd_kplan one;
    if (!plan) {
        one.nb = 1;
        one.half = 0;
        one.st[0] = 0;
        one.st[1] = K;
        plan = &one;
    }
    memset(L, 0, sizeof *L);
    L->N = N;
    L->K = K;
    /* a weight stored as F32 is used as stored by an fp32 product */
    if (mode == LIN_F32_SEQ && t->qfmt == FD_Q_NONE && !strcmp(t->dtype, "F32")) mode = LIN_F32_W;
    L->mode = mode;
    L->nb = plan->nb;
    L->half = plan->half;
    L->kst = fd_xmalloc((plan->nb + 1) * sizeof *L->kst);
    memcpy(L->kst, plan->st, (plan->nb + 1) * sizeof *L->kst);
    if (mode == LIN_F32_W) {
        L->p.tiles = (N + FD_TILE - 1) / FD_TILE;
        L->p.vocab = N;
        L->p.hidden = K;
        L->fw = fd_xcalloc(plan->nb, sizeof *L->fw);
        for (size_t b = 0; b < L->nb; b++)
            L->fw[b] = fd_xcalloc(L->p.tiles * (L->kst[b + 1] - L->kst[b]) * FD_TILE + 1, sizeof(float));
        pack_job j = {L, t, row0};
        fd_mm_range(m, N, 64, pack_rows_f32, &j);
        return;
    }
    L->more = plan->nb > 1 ? fd_xcalloc(plan->nb - 1, sizeof *L->more) : NULL;
    for (size_t b = 0; b < L->nb; b++) fd_mm_alloc_packed(b ? &L->more[b - 1] : &L->p, N, L->kst[b + 1] - L->kst[b]);
    pack_job j = {L, t, row0};
    fd_mm_range(m, N, 64, pack_rows, &j);
}

/* MKL's blocks for the router's [S, H] x [H, E] fp32 product where they
 * were measured against torch (M >= 353, E <= 32, 384 < K <= 2048; docs/
 * CAPTURE.md), else NULL: one chain (measured for K <= 256).  Blocks must
 * start on a pair boundary (the operands are pair-swapped). */
const fd_kplan *fd_router_plan(size_t S, size_t E, size_t K, fd_kplan *p)
{
    if (S < 353 || E > 32 || K <= 384 || K > 2048) return NULL;
    fd_kplan_mkl(S, K, p);
    if (p->half) return NULL;
    for (size_t b = 0; b < p->nb; b++)
        if (p->st[b] % 2) return NULL;
    return p;
}

void fd_lin_pack(const fd_mm *m, lin *L, const fd_tensor *t, uint64_t row0, size_t N, size_t K, size_t M)
{
    fd_kplan plan;
    fd_kplan_bf16(m->order == FD_ORDER_TILE, M, N, K, &plan);
    fd_lin_pack_plan(m->pool ? m : NULL, L, t, row0, N, K, LIN_BF16, &plan);
}

int fd_lin_load(const fd_mm *m, lin *L, const fd_weights *w, fd_err *e, size_t N, size_t K, size_t M, int with_bias,
                const char *name)
{
    memset(L, 0, sizeof *L);
    const fd_tensor *t = fd_op_get(w, e, 2, N, K, 0, "%s.weight", name);
    if (!t) return -1;
    fd_lin_pack(m, L, t, 0, N, K, M);
    if (with_bias) {
        const fd_tensor *b = fd_op_get(w, e, 1, N, 0, 0, "%s.bias", name);
        if (!b) { fd_lin_free(L); return -1; }
        L->bias = fd_xmalloc(N * sizeof *L->bias);
        for (size_t n = 0; n < N; n++) L->bias[n] = F(fd_tensor_bf16_at(b, n));
    }
    return 0;
}

void fd_lin_free(lin *L)
{
    if (L->p.w) fd_packed_head_free(&L->p);
    for (size_t b = 1; L->more && b < L->nb; b++) fd_packed_head_free(&L->more[b - 1]);
    for (size_t b = 0; L->fw && b < L->nb; b++) free(L->fw[b]);
    free(L->fw);
    free(L->more);
    free(L->kst);
    free(L->bias);
    memset(L, 0, sizeof *L);
}

/* LIN_F32_W: per K-block the widened activations times the fp32 weight,
 * the block sums added as fd_lin_dots adds them */
static float *lin_dots_f32(const fd_mm *m, const lin *L, const uint16_t *x, size_t rows)
{
    size_t os = L->p.tiles * FD_TILE;
    float *out = NULL, *out2 = NULL, *tmp = NULL, *a = NULL;
    for (size_t b = 0; b < L->nb; b++) {
        size_t k0 = L->kst[b], kb = L->kst[b + 1] - k0;
        a = fd_xrealloc(a, (rows * kb + 1) * 4);
        for (size_t r = 0; r < rows; r++)
            for (size_t k = 0; k < kb; k++) a[r * kb + k] = F(x[r * L->K + k0 + k]);
        int second = L->half && b >= L->half;
        float **sum = second ? &out2 : &out;
        if (!*sum) {
            *sum = fd_xcalloc(rows * os + 1, 4);
            fd_mm_run_f32(m, a, rows, kb, L->fw[b], L->p.tiles, *sum, os);
            continue;
        }
        if (!tmp) tmp = fd_xcalloc(rows * os + 1, 4);
        fd_mm_run_f32(m, a, rows, kb, L->fw[b], L->p.tiles, tmp, os);
        for (size_t i = 0; i < rows * os; i++) (*sum)[i] += tmp[i];
    }
    if (out2)
        for (size_t i = 0; i < rows * os; i++) out[i] += out2[i];
    free(out2);
    free(tmp);
    free(a);
    return out;
}

/* fp32 dots of `rows` rows of x (K each) with every row of L, in L's
 * order: out[r * L->p.tiles*16 + n].  Returned buffer is the caller's. */
float *fd_lin_dots(const fd_mm *m, const lin *L, const uint16_t *x, size_t rows)
{
    size_t os = L->p.tiles * FD_TILE;
    if (L->mode == LIN_F32_W) return lin_dots_f32(m, L, x, rows);
    const uint16_t *src = x;
    uint16_t *sw = NULL;
    if (L->mode == LIN_F32_SEQ) {
        sw = fd_xmalloc(rows * L->K * 2 + 2);
        memcpy(sw, x, rows * L->K * 2);
        for (size_t r = 0; r < rows; r++) fd_op_swap_pairs16(sw + r * L->K, L->K);
        src = sw;
    }
    void (*run)(const fd_mm *, const uint32_t *, size_t, const fd_packed_head *, float *, size_t) =
        L->mode == LIN_F32_SEQ ? fd_mm_run_seq : fd_mm_run;
    float *out = NULL, *out2 = NULL, *tmp = NULL;
    uint32_t *xp = NULL;
    for (size_t b = 0; b < L->nb; b++) {
        const fd_packed_head *pb = b ? &L->more[b - 1] : &L->p;
        const uint32_t *a = xp;
        if (L->nb == 1 && L->K % 2 == 0 && (uintptr_t)src % 4 == 0)
            a = (const uint32_t *)(const void *)src; /* rows of pairs already: the packed form */
        else {
            xp = fd_xrealloc(xp, (rows * pb->kp + 1) * 4);
            fd_mm_pack_rows(src + L->kst[b], rows, L->kst[b + 1] - L->kst[b], L->K, xp);
            a = xp;
        }
        int second = L->half && b >= L->half;
        float **sum = second ? &out2 : &out;
        if (!*sum) { /* the first block of a sum is that sum */
            *sum = fd_xmalloc((rows * os + 1) * 4);
            run(m, a, rows, pb, *sum, os);
            continue;
        }
        if (!tmp) tmp = fd_xmalloc((rows * os + 1) * 4);
        run(m, a, rows, pb, tmp, os);
        for (size_t i = 0; i < rows * os; i++) (*sum)[i] += tmp[i];
    }
    if (out2)
        for (size_t i = 0; i < rows * os; i++) out[i] += out2[i];
    free(out2);
    free(tmp);
    free(xp);
    free(sw);
    return out;
}

typedef struct epi_job {
    const lin *L;
    const float *out;
    size_t os;
    uint16_t *y;
} epi_job;

static void epilogue_rows(void *ctx, size_t lo, size_t hi)
{
    const epi_job *j = ctx;
    const lin *L = j->L;
    for (size_t r = lo; r < hi; r++) {
        fd_round_bf16(j->out + r * j->os, L->bias, L->N, j->y + r * L->N);
    }
}

/* y[r] = Linear(x[r]) for r < rows; x rows of K, y rows of N (bf16). */
void fd_lin_apply(const fd_mm *m, const lin *L, const uint16_t *x, size_t rows, uint16_t *y)
{
    size_t os = L->p.tiles * FD_TILE;
    float *out = fd_lin_dots(m, L, x, rows);
    epi_job j = {L, out, os, y};
    fd_mm_range(rows * L->N >= 1u << 14 ? m : NULL, rows, 32, epilogue_rows, &j);
    free(out);
}


void fd_lin_pack_f32seq(fd_lin *L, const fd_tensor *t, uint64_t row0, size_t N, size_t K)
{
    fd_lin_pack_plan(NULL, L, t, row0, N, K, LIN_F32_SEQ, NULL);
}

int fd_op_lin_named(const fd_mm *m, size_t M, fd_lin *L, const fd_weights *w, fd_err *e, size_t N, size_t K, const char *fmt, ...)
{
    char name[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return fd_lin_load(m, L, w, e, N, K, M, 0, name);
}
