/* The softmax-routed MoE block without shared experts (Qwen3-MoE,
 * transformers 5.25 grouped_mm experts); engine/ops/ops.h for the rounding
 * points. */
#include "engine/ops/ops.h"
#include "engine/ops/reduce.h"
#include "kernels/torch_ops.h"
#include "kernels/rowops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

typedef struct sx_job {
    const fd_tensor *const *tx; /* gate, up, down of expert x at 3x .. 3x+2 */
    const uint64_t *rx;         /* their first rows */
    size_t H, Im, slots, kk;
    const size_t *slot_x;       /* the expert of each (token, slot) */
    const uint16_t *h2;
    uint16_t *ys;               /* out: the expert output of each (token, slot) */
} sx_job;

/* expert x over the tokens routed to it, in token order (grouped_mm's rows
 * after the stable sort by expert); each output element is one canonical
 * dot, so the batching changes no bit */
static void sx_task(void *ctx, size_t x, const fd_mm *m)
{
    const sx_job *J = ctx;
    size_t H = J->H, n = 0;
    for (size_t i = 0; i < J->slots; i++) n += J->slot_x[i] == x;
    if (!n) return;
    uint16_t *xb = fd_xmalloc(n * H * 2), *yb = fd_xmalloc(n * H * 2);
    size_t *who = fd_xmalloc(n * sizeof *who);
    n = 0;
    for (size_t i = 0; i < J->slots; i++)
        if (J->slot_x[i] == x) { memcpy(xb + n * H, J->h2 + (i / J->kk) * H, H * 2); who[n++] = i; }
    fd_lin g, u, d;
    fd_lin_pack(m, &g, J->tx[3 * x], J->rx[3 * x], J->Im, H, n);
    fd_lin_pack(m, &u, J->tx[3 * x + 1], J->rx[3 * x + 1], J->Im, H, n);
    fd_lin_pack(m, &d, J->tx[3 * x + 2], J->rx[3 * x + 2], H, J->Im, n);
    fd_op_swiglu(m, &g, &u, &d, xb, n, 1, yb);
    for (size_t r = 0; r < n; r++) memcpy(J->ys + who[r] * H, yb + r * H, H * 2);
    fd_lin_free(&g); fd_lin_free(&u); fd_lin_free(&d);
    free(xb); free(yb); free(who);
}

typedef struct sc_job {
    const uint16_t *ys;
    const float *w;  /* bf16 routing weight of each (token, slot), widened */
    uint16_t *y;
    size_t H, kk;
} sc_job;

/* per token: weighted_out = bf(y * w) (bf16 x bf16), then the sum over the
 * slots in slot order in fp32 (the bf16 sum's accumulator), rounded once */
static void sc_rows(void *ctx, size_t lo, size_t hi)
{
    const sc_job *j = ctx;
    size_t H = j->H, kk = j->kk;
    float *acc = fd_xmalloc(H * 4);
    for (size_t t = lo; t < hi; t++) {
        memset(acc, 0, H * 4);
        for (size_t sl = 0; sl < kk; sl++) {
            const uint16_t *yr = j->ys + (t * kk + sl) * H;
            float w = j->w[t * kk + sl];
            for (size_t i = 0; i < H; i++) acc[i] += F(BF(F(yr[i]) * w));
        }
        fd_round_bf16(acc, NULL, H, j->y + t * H);
    }
    free(acc);
}

/* every expert's gate / up / down tensor and first row, in either on-disk
 * spelling: fused P"experts.{gate_up,down}_proj" or per expert
 * P"experts.X.<part>.weight" (part: gate, up, down names) */
static int experts(const fd_weights *W, const char *P, size_t E, size_t H, size_t Im, const char *const part[3],
                   const fd_tensor **tx, uint64_t *rx, fd_err *e)
{
    char nm[300];
    snprintf(nm, sizeof nm, "%sexperts.gate_up_proj", P);
    if (fd_weights_get(W, nm)) {
        const fd_tensor *gu = fd_op_get(W, e, 3, E, 2 * Im, H, "%s", nm);
        const fd_tensor *dp = gu ? fd_op_get(W, e, 3, E, H, Im, "%sexperts.down_proj", P) : NULL;
        if (!dp) return -1;
        for (size_t x = 0; x < E; x++) {
            tx[3 * x] = tx[3 * x + 1] = gu;
            tx[3 * x + 2] = dp;
            rx[3 * x] = x * 2 * Im;
            rx[3 * x + 1] = x * 2 * Im + Im;
            rx[3 * x + 2] = x * H;
        }
        return 0;
    }
    for (size_t x = 0; x < 3 * E; x++) {
        size_t n = x % 3 == 2 ? H : Im, kd = x % 3 == 2 ? Im : H;
        if (!(tx[x] = fd_op_get(W, e, 2, n, kd, 0, "%sexperts.%zu.%s.weight", P, x / 3, part[x % 3]))) return -1;
    }
    return 0;
}

int fd_op_moe_softmax(const fd_mm *m, const fd_weights *W, const char *P, size_t H, size_t E, size_t Im, size_t k,
                      int norm_topk_prob, const uint16_t *h2, size_t S, uint16_t *y, fd_err *e)
{
    char nm[300];
    fd_lin router = {0};
    snprintf(nm, sizeof nm, "%sgate", P);
    if (fd_lin_load(m, &router, W, e, E, H, S, 0, nm)) return -1;
    const fd_tensor **tx = fd_xcalloc(3 * E + 1, sizeof *tx);
    uint64_t *rx = fd_xcalloc(3 * E + 1, sizeof *rx);
    int rc = -1;
    static const char *const part[3] = {"gate_proj", "up_proj", "down_proj"};
    if (experts(W, P, E, H, Im, part, tx, rx, e)) goto out;
    size_t kk = k < E ? k : E;
    uint16_t *lg = fd_xmalloc(S * E * 2 + 2);
    fd_lin_apply(m, &router, h2, S, lg); /* bf16 router logits (F.linear in bf16) */
    float *p = fd_xmalloc(E * 4 + 4), *w = fd_xmalloc(S * kk * 4 + 4), *v = fd_xmalloc(kk * 4 + 4);
    fd_keyscore *ks = fd_xmalloc(E * sizeof *ks);
    size_t *slot_x = fd_xmalloc(S * kk * sizeof *slot_x + 8);
    for (size_t t = 0; t < S; t++) {
        for (size_t x = 0; x < E; x++) p[x] = F(lg[t * E + x]);
        fd_torch_softmax_masked(p, NULL, E, E); /* softmax(dtype=float) */
        for (size_t x = 0; x < E; x++) { ks[x].s = p[x]; ks[x].j = x; }
        fd_op_topk_sorted(ks, E, kk);
        float sum = 0.0f;
        for (size_t sl = 0; sl < kk; sl++) v[sl] = ks[sl].s;
        if (norm_topk_prob) sum = fd_op_sum_aten(v, kk); /* top_value.sum(-1): torch's inner sum */
        for (size_t sl = 0; sl < kk; sl++) {
            float r = norm_topk_prob ? v[sl] / sum : v[sl];
            slot_x[t * kk + sl] = ks[sl].j;
            w[t * kk + sl] = F(BF(r)); /* .to(router_logits.dtype) */
        }
    }
    uint16_t *ys = fd_xmalloc(S * kk * H * 2 + 2);
    sx_job xj = {tx, rx, H, Im, S * kk, kk, slot_x, h2, ys};
    fd_mm_each(m, E, sx_task, &xj);
    sc_job cj = {ys, w, y, H, kk};
    fd_mm_range(m, S, 16, sc_rows, &cj);
    free(lg); free(p); free(v); free(w); free(ks); free(slot_x); free(ys);
    rc = 0;
out:
    free(tx); free(rx);
    fd_lin_free(&router);
    return rc;
}

typedef struct sg_job {
    const uint16_t *ys;
    const float *w;  /* fp32 routing weight of each (token, slot) */
    uint16_t *y;
    size_t H, kk;
} sg_job;

/* per token: weighted_out = y (bf16) * w (fp32) in fp32, summed over the
 * slots in slot order in fp32 (torch's fp32 sum over dim 1), rounded once */
static void sg_rows(void *ctx, size_t lo, size_t hi)
{
    const sg_job *j = ctx;
    size_t H = j->H, kk = j->kk;
    float *acc = fd_xmalloc(H * 4);
    for (size_t t = lo; t < hi; t++) {
        memset(acc, 0, H * 4);
        for (size_t sl = 0; sl < kk; sl++) fd_bf16_axpy(acc, j->ys + (t * kk + sl) * H, j->w[t * kk + sl], H);
        fd_round_bf16(acc, NULL, H, j->y + t * H);
    }
    free(acc);
}

int fd_op_moe_sigmoid(const fd_mm *m, const fd_weights *W, const char *P, const char *const part[3], size_t H, size_t E,
                      size_t Im, size_t k, const uint16_t *h2, size_t S, uint16_t *y, uint16_t *dump_logits,
                      size_t *dump_experts, fd_err *e)
{
    char nm[300];
    fd_lin router = {0};
    snprintf(nm, sizeof nm, "%sgate", P);
    if (fd_lin_load(m, &router, W, e, E, H, S, 0, nm)) return -1;
    const fd_tensor *bt = fd_op_get(W, e, 1, E, 0, 0, "%se_score_correction_bias", P);
    const fd_tensor **tx = fd_xcalloc(3 * E + 1, sizeof *tx);
    uint64_t *rx = fd_xcalloc(3 * E + 1, sizeof *rx);
    int rc = -1;
    if (!bt || experts(W, P, E, H, Im, part, tx, rx, e)) goto out;
    size_t kk = k < E ? k : E;
    float *bias = fd_xmalloc(E * 4 + 4);
    /* the buffer as a bf16 load holds it: an F32 bias rounded to bf16 */
    for (size_t x = 0; x < E; x++) bias[x] = F(fd_tensor_bf16_at(bt, x));
    uint16_t *lg = fd_xmalloc(S * E * 2 + 2);
    fd_lin_apply(m, &router, h2, S, lg); /* bf16 router logits (F.linear in bf16) */
    float *g = fd_xmalloc(E * 4 + 4), *w = fd_xmalloc(S * kk * 4 + 4), *v = fd_xmalloc(kk * 4 + 4);
    fd_keyscore *ks = fd_xmalloc(E * sizeof *ks);
    size_t *slot_x = fd_xmalloc(S * kk * sizeof *slot_x + 8);
    size_t vend = fd_torch_vec_end(S * E, 32); /* sigmoid over the contiguous [S, E] fp32 logits */
    for (size_t t = 0; t < S; t++) {
        for (size_t x = 0; x < E; x++) {
            float l = F(lg[t * E + x]);
            g[x] = t * E + x < vend ? fd_torch_sigmoid(l) : fd_torch_sigmoid_tail(l);
            ks[x].s = g[x] + bias[x]; /* scores_for_choice (fp32 + bf16 -> fp32) */
            ks[x].j = x;
        }
        fd_op_topk_ordered(ks, E, kk); /* torch.topk(sorted=False): the slot order too */
        for (size_t sl = 0; sl < kk; sl++) v[sl] = g[ks[sl].j]; /* routing_weights.gather */
        float sum = fd_op_sum_aten(v, kk);                        /* .sum(dim=-1) */
        for (size_t sl = 0; sl < kk; sl++) {
            slot_x[t * kk + sl] = ks[sl].j;
            w[t * kk + sl] = v[sl] / sum;
        }
    }
    uint16_t *ys = fd_xmalloc(S * kk * H * 2 + 2);
    sx_job xj = {tx, rx, H, Im, S * kk, kk, slot_x, h2, ys};
    fd_mm_each(m, E, sx_task, &xj);
    sg_job cj = {ys, w, y, H, kk};
    fd_mm_range(m, S, 16, sg_rows, &cj);
    if (dump_logits) memcpy(dump_logits, lg, S * E * 2);
    if (dump_experts) memcpy(dump_experts, slot_x, S * kk * sizeof *slot_x);
    free(bias); free(lg); free(g); free(v); free(w); free(ks); free(slot_x); free(ys);
    rc = 0;
out:
    free(tx); free(rx);
    fd_lin_free(&router);
    return rc;
}
