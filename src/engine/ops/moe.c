/* The MLP blocks of the DeepSeek-style MoE architectures (glm_moe_dsa,
 * deepseek_v3, deepseek_v32, and glm5_next through fd_moe_opts): SwiGLU with
 * torch's silu split (or glm5_next's clamped one), the dense MLP, and the MoE
 * layer (sigmoid router with correction bias, group-limited top-k in
 * torch.topk's order, experts over their tokens, the fp32 combine in slot
 * order, the shared experts).  Rounding points:
 * engine/arch/glm_moe_dsa/dsa_forward.h. */
#include "engine/ops/moe.h"
#include "engine/ops/kblocks.h"
#include "kernels/torch_ops.h"
#include "kernels/rowops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32

typedef fd_lin lin;
typedef fd_keyscore keyscore;

/* glm5_next's clamped SwiGLU, element by element:
 * bf(bf(silu(min(gate, lim))) * clamp(up, -lim, lim)) */
typedef struct clamp_job {
    uint16_t *a;
    const uint16_t *b;
    size_t I;
    float lim;
} clamp_job;

static void clamp_rows(void *ctx, size_t lo, size_t hi)
{
    const clamp_job *j = ctx;
    float lim = j->lim;
    for (size_t i = lo * j->I; i < hi * j->I; i++) {
        float gv = F(j->a[i]), uv = F(j->b[i]);
        if (gv > lim) gv = lim;
        if (uv > lim) uv = lim;
        if (uv < -lim) uv = -lim;
        j->a[i] = BF(F(BF(fd_op_silu(gv))) * uv);
    }
}

/* clamped: glm5_next's SwiGLU with limit lim; else torch's silu split (fd_op_swiglu, ops/mlp.c) */
static void swiglu(const fd_mm *m, const lin *g, const lin *u, const lin *d, const uint16_t *x, size_t rows, int per_row,
                   int clamped, float lim, uint16_t *y)
{
    if (!clamped) {
        fd_op_swiglu(m, g, u, d, x, rows, per_row, y);
        return;
    }
    size_t I = g->N;
    uint16_t *a = fd_xmalloc(rows * I * 2 + 2), *b = fd_xmalloc(rows * I * 2 + 2);
    fd_lin_apply(m, g, x, rows, a);
    fd_lin_apply(m, u, x, rows, b);
    clamp_job j = {a, b, I, lim};
    fd_mm_range(m, rows, 16, clamp_rows, &j);
    fd_lin_apply(m, d, a, rows, y);
    free(a);
    free(b);
}

int fd_mlp_dense(const fd_mm *m, const fd_weights *W, size_t H, size_t I, const char *prefix, const uint16_t *x, size_t rows,
                     uint16_t *y, fd_err *e)
{
    return fd_mlp_dense_lim(m, W, H, I, prefix, x, rows, 0, 0.0f, y, e);
}

int fd_mlp_dense_lim(const fd_mm *m, const fd_weights *W, size_t H, size_t I, const char *prefix, const uint16_t *x,
                     size_t rows, int clamped, float lim, uint16_t *y, fd_err *e)
{
    /* one packed Linear alive at a time (gate, then up, then down: the same
     * products in the same order as swiglu()): a quantized checkpoint's
     * dense MLP is never dequantized whole (docs/QUANT-FORMATS.md, peak RSS) */
    lin L = {0};
    char nm[300];
    int rc = -1;
    uint16_t *a = fd_xmalloc(rows * I * 2 + 2), *b = fd_xmalloc(rows * I * 2 + 2);
    snprintf(nm, sizeof nm, "%s.gate_proj", prefix);
    if (fd_lin_load(m, &L, W, e, I, H, rows, 0, nm)) goto out;
    fd_lin_apply(m, &L, x, rows, a);
    fd_lin_free(&L);
    snprintf(nm, sizeof nm, "%s.up_proj", prefix);
    if (fd_lin_load(m, &L, W, e, I, H, rows, 0, nm)) goto out;
    fd_lin_apply(m, &L, x, rows, b);
    fd_lin_free(&L);
    if (clamped) {
        clamp_job j = {a, b, I, lim};
        fd_mm_range(m, rows, 16, clamp_rows, &j);
    } else
        fd_op_glu(m, a, b, rows, I, 0); /* the silu run: the whole [rows, I] gate output */
    snprintf(nm, sizeof nm, "%s.down_proj", prefix);
    if (fd_lin_load(m, &L, W, e, H, I, rows, 0, nm)) goto out;
    fd_lin_apply(m, &L, a, rows, y);
    rc = 0;
out:
    fd_lin_free(&L);
    free(a);
    free(b);
    return rc;
}

typedef struct expert_job {
    const fd_tensor *const *tx; /* gate, up, down of expert x at 3x .. 3x+2 */
    const uint64_t *rx;         /* their first rows */
    size_t H, Im, slots, kk;
    const size_t *slot_x;       /* the expert of each (token, slot) */
    const uint16_t *h2;
    uint16_t *ys;               /* out: the expert output of each (token, slot) */
    size_t pack_rows;           /* the M of the K-block plan; 0: the expert's own rows */
    int clamped;                /* the clamped SwiGLU with limit lim */
    float lim;
} expert_job;

/* expert x over the tokens routed to it (each output element is still one
 * independent canonical dot, so batching changes no bit) */
static void expert_task(void *ctx, size_t x, const fd_mm *m)
{
    const expert_job *J = ctx;
    size_t H = J->H, n = 0;
    for (size_t i = 0; i < J->slots; i++) n += J->slot_x[i] == x;
    if (!n) return;
    uint16_t *xb = fd_xmalloc(n * H * 2), *yb = fd_xmalloc(n * H * 2);
    size_t *who = fd_xmalloc(n * sizeof *who);
    n = 0;
    for (size_t i = 0; i < J->slots; i++)
        if (J->slot_x[i] == x) { memcpy(xb + n * H, J->h2 + (i / J->kk) * H, H * 2); who[n++] = i; }
    lin g, u, d;
    size_t M = J->pack_rows ? J->pack_rows : n;
    fd_lin_pack(m, &g, J->tx[3 * x], J->rx[3 * x], J->Im, H, M);
    fd_lin_pack(m, &u, J->tx[3 * x + 1], J->rx[3 * x + 1], J->Im, H, M);
    fd_lin_pack(m, &d, J->tx[3 * x + 2], J->rx[3 * x + 2], H, J->Im, M);
    swiglu(m, &g, &u, &d, xb, n, 1, J->clamped, J->lim, yb);
    for (size_t r = 0; r < n; r++) memcpy(J->ys + who[r] * H, yb + r * H, H * 2);
    fd_lin_free(&g); fd_lin_free(&u); fd_lin_free(&d);
    free(xb); free(yb); free(who);
}

typedef struct combine_job {
    const uint16_t *ys;
    const float *slot_r;
    const uint16_t *sh;
    uint16_t *drt, *y;
    size_t H, kk;
} combine_job;

/* per token: the routed sum in slot order (fp32), rounded, plus the shared expert */
static void combine_rows(void *ctx, size_t lo, size_t hi)
{
    const combine_job *j = ctx;
    size_t H = j->H, kk = j->kk;
    float *acc = fd_xmalloc(H * 4);
    for (size_t t = lo; t < hi; t++) {
        memset(acc, 0, H * 4);
        for (size_t sl = 0; sl < kk; sl++) fd_bf16_axpy(acc, j->ys + (t * kk + sl) * H, j->slot_r[t * kk + sl], H);
        fd_round_bf16(acc, NULL, H, j->drt + t * H);
        memcpy(j->y + t * H, j->drt + t * H, H * 2);
        fd_bf16_add(j->y + t * H, j->sh + t * H, H);
    }
    free(acc);
}

int fd_mlp_moe(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const char *P, long long L, const uint16_t *h2,
               size_t S, uint16_t *y, fd_err *e)
{
    static const fd_moe_opts torch_default = {0};
    return fd_mlp_moe_opts(m, W, c, P, L, h2, S, &torch_default, y, e);
}

/* each expert's tensor and first row of gate, up and down (tx, rx: 3 per expert), fused
 * (experts.gate_up_proj / down_proj) or per expert; resolved and shape-checked, packed where it runs */
static int resolve_experts(const fd_weights *W, const char *P, size_t E, size_t Im, size_t H, const fd_tensor **tx,
                           uint64_t *rx, fd_err *e)
{
    char nm[256];
    snprintf(nm, sizeof nm, "%s.experts.gate_up_proj", P);
    if (fd_weights_get(W, nm)) {
        const fd_tensor *gu = fd_op_get(W, e, 3, E, 2 * Im, H, "%s", nm);
        const fd_tensor *dp = gu ? fd_op_get(W, e, 3, E, H, Im, "%s.experts.down_proj", P) : NULL;
        if (!dp) return -1;
        for (size_t x = 0; x < E; x++) {
            tx[3 * x] = tx[3 * x + 1] = gu;
            tx[3 * x + 2] = dp;
            rx[3 * x] = x * 2 * Im;      /* first half: gate */
            rx[3 * x + 1] = x * 2 * Im + Im; /* second half: up */
            rx[3 * x + 2] = x * H;
        }
    } else {
        static const char *const part[3] = {"gate_proj", "up_proj", "down_proj"};
        for (size_t x = 0; x < 3 * E; x++) {
            size_t n = x % 3 == 2 ? H : Im, kdim = x % 3 == 2 ? Im : H;
            if (!(tx[x] = fd_op_get(W, e, 2, n, kdim, 0, "%s.experts.%zu.%s.weight", P, x / 3, part[x % 3])))
                return -1;
        }
    }
    return 0;
}

/* the group limit: a group's score is the sum of its 2 largest s (its largest when it has one expert);
 * the topk_group best groups are kept, the other experts' s set to -inf */
static void group_limit(float *s, size_t E, size_t G, size_t TG, float *gs, unsigned char *gkeep)
{
    size_t per = E / G;
    for (size_t gi = 0; gi < G; gi++) {
        float b1 = -INFINITY, b2 = -INFINITY;
        for (size_t x = gi * per; x < (gi + 1) * per; x++) {
            if (s[x] > b1) { b2 = b1; b1 = s[x]; }
            else if (s[x] > b2) b2 = s[x];
        }
        gs[gi] = per >= 2 ? b1 + b2 : b1;
    }
    memset(gkeep, 0, G);
    for (size_t r = 0; r < TG && r < G; r++) {
        size_t best = G;
        for (size_t gi = 0; gi < G; gi++)
            if (!gkeep[gi] && (best == G || gs[gi] > gs[best])) best = gi;
        gkeep[best] = 1;
    }
    for (size_t x = 0; x < E; x++)
        if (!gkeep[x / per]) s[x] = -INFINITY;
}

int fd_mlp_moe_opts(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, const char *P, long long L,
                    const uint16_t *h2, size_t S, const fd_moe_opts *o, uint16_t *y, fd_err *e)
{
    size_t H = (size_t)c->hidden_size, E = (size_t)c->n_routed_experts, Im = (size_t)c->moe_intermediate_size,
           k = (size_t)c->num_experts_per_tok, G = (size_t)c->n_group, TG = (size_t)c->topk_group;
    int rc = -1;
    const fd_tensor *gw = fd_op_get(W, e, 2, E, H, 0, "%s.gate.weight", P);
    const fd_tensor *gb = gw ? fd_op_get(W, e, 1, E, 0, 0, "%s.gate.e_score_correction_bias", P) : NULL;
    if (!gb) return -1;
    lin router;
    fd_kplan rp;
    fd_lin_pack_plan(m, &router, gw, 0, E, H, LIN_F32_SEQ, o->router_one_chain ? NULL : fd_router_plan(S, E, H, &rp));
    float *bias = fd_xmalloc(E * 4);
    for (size_t i = 0; i < E; i++) bias[i] = fd_tensor_f32_at(gb, i);
    /* experts: each one's tensor and first row of gate, up and down, resolved
     * (and shape-checked) here; packed where it runs (expert_task) */
    const fd_tensor **tx = fd_xcalloc(3 * E + 1, sizeof *tx);
    uint64_t *rx = fd_xcalloc(3 * E + 1, sizeof *rx);
    char nm[256];
    if (resolve_experts(W, P, E, Im, H, tx, rx, e)) goto out;
    uint16_t *sh = fd_xmalloc(S * H * 2);
    snprintf(nm, sizeof nm, "%s.shared_experts", P);
    if (fd_mlp_dense_lim(m, W, H, Im * (size_t)c->n_shared_experts, nm, h2, S, o->swiglu_clamped, o->swiglu_limit, sh, e)) { free(sh); goto out; }
    float *g = fd_xmalloc(E * 4), *s = fd_xmalloc(E * 4), *gs = fd_xmalloc(G * 4);
    unsigned char *gkeep = fd_xmalloc(G);
    keyscore *eks = fd_xmalloc(E * sizeof *eks);
    size_t kk = k < E ? k : E, ro = router.p.tiles * FD_TILE;
    float *dlog = fd_xcalloc(S * E + 1, 4);
    uint16_t *drt = fd_xcalloc(S * H + 1, 2);
    /* routing of every token first; then each expert runs once over the
     * tokens routed to it (each output element is still one independent
     * canonical dot, so batching changes no bit); then the combine, per
     * token in slot order */
    float *lgs = fd_lin_dots(m, &router, h2, S);
    size_t sig_vend = fd_torch_vec_end(S * E, 32); /* sigmoid over the [S, E] logits */
    size_t *slot_x = fd_xmalloc((S * kk + 1) * sizeof *slot_x);
    float *slot_r = fd_xmalloc((S * kk + 1) * 4);
    for (size_t t = 0; t < S; t++) {
        for (size_t x = 0; x < E; x++) {
            float lg = lgs[t * ro + x];
            dlog[t * E + x] = lg;
            g[x] = t * E + x < sig_vend ? fd_torch_sigmoid(lg) : fd_torch_sigmoid_tail(lg);
            s[x] = g[x] + bias[x];
        }
        if (G > 1) group_limit(s, E, G, TG, gs, gkeep); /* keep topk_group groups */
        /* torch.topk(sorted=False): the k experts AND their slot order are
         * what libstdc++'s selection leaves in the first k places; the
         * norm_topk_prob sum and the combine run in that slot order */
        for (size_t x = 0; x < E; x++) { eks[x].s = s[x]; eks[x].j = x; }
        if (o->topk_heap_order) fd_op_topk_select(eks, E, kk);
        else fd_op_topk_ordered(eks, E, kk);
        float rs = 0.0f;
        for (size_t sl = 0; sl < kk; sl++) rs += g[eks[sl].j];
        for (size_t sl = 0; sl < kk; sl++) {
            size_t x = eks[sl].j;
            float r = g[x];
            if (c->norm_topk_prob) r = r / (rs + 1e-20f);
            slot_x[t * kk + sl] = x;
            slot_r[t * kk + sl] = r * (float)c->routed_scaling_factor;
        }
    }
    free(lgs);
    uint16_t *ys = fd_xmalloc((S * kk * H + 1) * 2);
    expert_job xj = {tx, rx, H, Im, S * kk, kk, slot_x, h2, ys, o->pack_all_rows ? S : 0, o->swiglu_clamped,
                      (float)o->swiglu_limit};
    fd_mm_each(m, E, expert_task, &xj); /* experts as tasks when there are enough of them */
    combine_job cj = {ys, slot_r, sh, drt, y, H, kk};
    fd_mm_range(m, S, 16, combine_rows, &cj);
    fd_op_dump(L, "router_logits", "f32", dlog, S * E * 4);
    fd_op_dump(L, "routed", "bf16", drt, S * H * 2);
    fd_op_dump(L, "shared", "bf16", sh, S * H * 2);
    fd_op_dump(L, "experts", "i64", slot_x, S * kk * sizeof *slot_x); /* the top-k experts, slot order */
    free(dlog);
    free(drt);
    free(ys); free(slot_x); free(slot_r);
    free(g); free(s); free(gs); free(eks); free(gkeep); free(sh);
    rc = 0;
out:
    free(tx);
    free(rx);
    fd_lin_free(&router);
    free(bias);
    return rc;
}
