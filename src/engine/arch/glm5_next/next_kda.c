/* KDA linear attention of glm5_next (Glm5NextTextLinearAttention with the
 * torch fallbacks causal_conv1d_fn and chunk_kimi_delta_attention, which is
 * what runs on CPU without the fla / kernels packages).  Rounding points in
 * docs/MODEL-GLM5-NEXT.md §3.3. */
#include "engine/arch/glm5_next/next_internal.h"
#include "engine/ops/kda.h"
#include "kernels/mkl_vml.h"
#include "util/buf.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nx_kda(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *x, size_t S, uint16_t *y,
           fd_err *e)
{
    const fd_next_ext *nx = NX(c);
    size_t H = (size_t)c->hidden_size, nh = (size_t)nx->lin_heads, d = (size_t)nx->lin_dim, Q = nh * d, K = (size_t)nx->conv_k;
    if (d > 1024) return fd_fail(e, "bad_config", "", "glm5_next: linear_head_dim > 1024 is not supported");
    char P[160];
    snprintf(P, sizeof P, FD_NEXT_PREFIX "layers.%lld.self_attn", L);
    fd_lin lq = {0}, lk = {0}, lv = {0}, fa = {0}, fb = {0}, bp = {0}, ga = {0}, gb = {0}, op = {0};
    float *cw = NULL, *dt = NULL, *Alog = NULL, *qkv = NULL, *g = NULL, *beta = NULL, *core = NULL;
    uint16_t *ow = NULL, *mix = NULL, *t16 = NULL, *gate = NULL, *o = NULL;
    int rc = -1;
    if (fd_op_lin_named(m, S, &lq, W, e, Q, H, "%s.q_proj", P) ||
        fd_op_lin_named(m, S, &lk, W, e, Q, H, "%s.k_proj", P) ||
        fd_op_lin_named(m, S, &lv, W, e, Q, H, "%s.v_proj", P) ||
        fd_op_lin_named(m, S, &fa, W, e, d, H, "%s.f_a_proj", P) ||
        fd_op_lin_named(m, S, &fb, W, e, Q, d, "%s.f_b_proj", P) ||
        fd_op_lin_named(m, S, &bp, W, e, nh, H, "%s.b_proj", P) ||
        fd_op_lin_named(m, S, &ga, W, e, d, H, "%s.g_a_proj", P) ||
        fd_op_lin_named(m, S, &gb, W, e, Q, d, "%s.g_b_proj", P) ||
        fd_op_lin_named(m, S, &op, W, e, H, Q, "%s.o_proj", P))
        goto out;
    cw = fd_xmalloc(3 * Q * K * 4);
    static const char *const nm[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) { /* conv1d is kept in fp32 (_keep_in_fp32_modules_strict) */
        const fd_tensor *t = fd_op_get(W, e, 3, Q, 1, K, "%s.%s_conv1d.weight", P, nm[i]);
        if (!t) goto out;
        for (size_t j = 0; j < Q * K; j++) cw[i * Q * K + j] = fd_tensor_f32_at(t, j);
    }
    const fd_tensor *tdt = fd_op_get(W, e, 1, Q, 0, 0, "%s.dt_bias", P);
    const fd_tensor *tal = tdt ? fd_op_get(W, e, 1, nh, 0, 0, "%s.A_log", P) : NULL;
    const fd_tensor *tow = tal ? fd_op_get(W, e, 1, d, 0, 0, "%s.o_norm.weight", P) : NULL;
    if (!tow) goto out;
    dt = fd_op_vec_f32(tdt, Q);
    Alog = fd_op_vec_f32(tal, nh);
    ow = fd_op_vec_bf16(tow, 0, d);
    /* q/k/v projections, causal depthwise conv (fp32: one FMA chain over the taps in
     * order, oneDNN's order, measured), silu, bf16 */
    mix = fd_xmalloc(S * 3 * Q * 2);
    t16 = fd_xmalloc(S * Q * 2 + 2);
    const fd_lin *pr[3] = {&lq, &lk, &lv};
    for (int i = 0; i < 3; i++) {
        fd_lin_apply(m, pr[i], x, S, t16);
        for (size_t t = 0; t < S; t++) memcpy(mix + (t * 3 + (size_t)i) * Q, t16 + t * Q, Q * 2);
    }
    qkv = fd_xmalloc(S * 3 * Q * 4);
    fd_op_kda_conv_silu(mix, cw, S, 3 * Q, K, 0, qkv); /* an fp32 Conv1d */
    fd_op_dump(L, "kda_qkv", "f32", qkv, S * 3 * Q * 4);
    /* forget gate, fp32: with the safe lower bound lower * sigmoid(exp(A_log) * (f_b(f_a(x)) + dt_bias)),
     * without it -exp(A_log) * softplus(f_b(f_a(x)) + dt_bias) */
    uint16_t *fa16 = fd_xmalloc(S * d * 2 + 2);
    fd_lin_apply(m, &fa, x, S, fa16);
    fd_lin_apply(m, &fb, fa16, S, t16);
    free(fa16);
    g = fd_xmalloc(S * Q * 4);
    if (!nx->has_lower) { /* no linear_lower_bound: -exp(A_log) * softplus(g), kimi_linear's gate */
        float *decay = fd_xmalloc(nh * 4 + 4);
        for (size_t h = 0; h < nh; h++) decay[h] = W->gstored ? -Alog[h] : fd_mkl_expf(Alog[h]);
        fd_op_kda_gate_softplus_decay(FD_VML_Z0, t16, dt, decay, S, nh, d, g);
        free(decay);
    } else
        for (size_t t = 0; t < S; t++)
            for (size_t ch = 0; ch < Q; ch++) {
                /* torch.exp: MKL vsExp; from a GGUF read as stored (W->gstored) the
                 * A_log view holds the converter's ssm_a = -exp(A_log) */
                float A = W->gstored ? -Alog[ch / d] : fd_mkl_expf(Alog[ch / d]);
                g[t * Q + ch] = (float)nx->lower * fd_op_sigmoid_at(A * (F(t16[t * Q + ch]) + dt[ch]), t * Q + ch, S * Q);
            }
    fd_op_dump(L, "kda_g", "f32", g, S * Q * 4);
    uint16_t *b16 = fd_xmalloc(S * nh * 2 + 2);
    fd_lin_apply(m, &bp, x, S, b16);
    beta = fd_xmalloc(S * nh * 4);
    fd_op_kda_beta(b16, S * nh, beta);
    free(b16);
    fd_op_dump(L, "kda_beta", "f32", beta, S * nh * 4);
    /* per head: l2norm(q), l2norm(k), chunked delta rule */
    core = fd_xmalloc(S * Q * 4);
    fd_op_kda_chunk(m, FD_VML_Z0, qkv, g, beta, S, d, nh, core); /* the golden host's MKL: Z0 */
    /* gated RMSNorm per head (fp32, weight not downcast), o_proj */
    uint16_t *ga16 = fd_xmalloc(S * d * 2 + 2);
    gate = fd_xmalloc(S * Q * 2);
    fd_lin_apply(m, &ga, x, S, ga16);
    fd_lin_apply(m, &gb, ga16, S, gate);
    free(ga16);
    o = fd_xmalloc(S * Q * 2);
    fd_op_kda_gated_norm(core, gate, ow, S, nh, d, (float)c->rms_norm_eps, o);
    fd_op_dump(L, "kda_core", "f32", core, S * Q * 4);
    fd_op_dump(L, "kda_gate", "bf16", gate, S * Q * 2);
    fd_op_dump(L, "kda_o", "bf16", o, S * Q * 2);
    fd_lin_apply(m, &op, o, S, y);
    rc = 0;
out:
    fd_lin_free(&lq); fd_lin_free(&lk); fd_lin_free(&lv); fd_lin_free(&fa); fd_lin_free(&fb); fd_lin_free(&bp);
    fd_lin_free(&ga); fd_lin_free(&gb); fd_lin_free(&op);
    free(cw); free(dt); free(Alog); free(qkv); free(g); free(beta); free(core); free(ow); free(mix); free(t16); free(gate);
    free(o);
    return rc;
}
