/* model_type kimi_linear (KimiLinearForCausalLM, transformers 5.25: Kimi
 * Linear 48B-A3B): deepseek_v3's decoder (engine/arch/deepseek_v3/) with
 * MLA without RoPE on the full_attention layers, KDA linear attention
 * (KimiLinearDeltaAttention: glm5_next's KDA ops, engine/ops/kda.h, with a
 * bf16 short conv and the softplus forget gate) on the linear_attention
 * layers, the sigmoid-routed MoE of ops/moe.c.  Config spellings: the
 * attribute_map names transformers saves (num_experts, num_experts_per_token,
 * num_expert_group, moe_renormalize, num_shared_experts, model_max_length)
 * and the hub's linear_attn_config.  On disk: the MoE / MLP under
 * block_sparse_moe. (save_pretrained writes the dense MLP there too), experts
 * w1 / w2 / w3.  GGUF: llama.cpp's "kimi-linear" (kl_gguf.c).
 * docs/MODEL-DEEPSEEK.md §9. */
#include "engine/arch/deepseek_v3/ds3.h"
#include "engine/config.h"
#include "engine/gguf_model.h"
#include "engine/ops/kda.h"
#include "engine/ops/ops.h"
#include "util/bf16.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(fd_err *e, const char *field, const char *why)
{
    return fd_fail(e, "bad_config", "", "config field %s: %s", field, why);
}

/* transformers' attribute_map: the attribute spelling wins over the stored one */
static const char *const ALIAS[][3] = {
    {"n_routed_experts", "num_local_experts", "num_experts"},
    {"num_experts_per_tok", "num_experts_per_tok", "num_experts_per_token"},
    {"n_group", "n_group", "num_expert_group"},
    {"norm_topk_prob", "norm_topk_prob", "moe_renormalize"},
    {"n_shared_experts", "n_shared_experts", "num_shared_experts"},
    {"max_position_embeddings", "max_position_embeddings", "model_max_length"},
};

/* KimiLinearConfig's defaults where they differ from DeepseekV3Config's */
static void def_int(jv *d, const char *k, int64_t v) { if (!jv_get(d, k)) jv_set(d, k, jv_int(v)); }

static int layer_list(const jv *v, const char *k, int64_t L, const char *one, const char *zero, unsigned char *out, fd_err *e)
{
    return fd_cfg_types(v, k, L, one, zero, out, e);
}

/* linear_attn_config.full_attn_layers / kda_layers: 1-indexed layer numbers */
static int one_indexed(const jv *a, const char *k, int64_t L, unsigned char *set, fd_err *e)
{
    char f[80];
    snprintf(f, sizeof f, "linear_attn_config.%s", k);
    if (!a || a->t != JV_ARR) return bad(e, f, "is not a list of layer numbers");
    for (size_t i = 0; i < a->u.a.n; i++) {
        const jv *v = a->u.a.v[i];
        if (v->t != JV_INT || v->u.i < 1 || v->u.i > L) return bad(e, f, "entries must be layer numbers 1..num_hidden_layers");
        set[v->u.i - 1] = 1;
    }
    return 0;
}

static int parse(const jv *doc, fd_glm_config *c, fd_err *e)
{
    jv *d = jv_copy(doc);
    int rc = -1;
    for (size_t i = 0; i < sizeof ALIAS / sizeof *ALIAS; i++) {
        const jv *a = jv_get(doc, ALIAS[i][1]), *s = jv_get(doc, ALIAS[i][2]);
        const jv *v = a ? a : s;
        jv_del(d, ALIAS[i][1]);
        jv_del(d, ALIAS[i][2]);
        if (v) jv_set(d, ALIAS[i][0], jv_copy(v));
    }
    def_int(d, "vocab_size", 163840);
    def_int(d, "hidden_size", 2304);
    def_int(d, "intermediate_size", 9216);
    def_int(d, "moe_intermediate_size", 1024);
    def_int(d, "num_hidden_layers", 27);
    def_int(d, "num_attention_heads", 32);
    def_int(d, "n_routed_experts", 256);
    def_int(d, "n_group", 1);
    def_int(d, "topk_group", 1);
    def_int(d, "first_k_dense_replace", 1);
    def_int(d, "max_position_embeddings", 1048576);
    if (!jv_get(d, "q_lora_rank")) jv_set(d, "q_lora_rank", jv_null());
    if (!jv_get(d, "routed_scaling_factor")) jv_set(d, "routed_scaling_factor", jv_float(2.446));
    if (!jv_get(d, "rms_norm_eps")) jv_set(d, "rms_norm_eps", jv_float(1e-5));
    /* KimiLinearConfig has no RoPE (rope_parameters is an AttributeError): MLA runs without it */
    jv_del(d, "rope_parameters");
    jv_del(d, "rope_scaling");
    jv_del(d, "rope_interleave");
    /* read by Moonshot's own code only: refused unless they name what transformers computes */
    const jv *ra = jv_get(doc, "moe_router_activation_func");
    if (ra && ra->t != JV_NULL && (ra->t != JV_STR || strcmp(ra->u.s.p, "sigmoid"))) {
        rc = bad(e, "moe_router_activation_func", "only \"sigmoid\" is implemented (transformers' router computes it)");
        goto out;
    }
    const jv *nope = jv_get(doc, "mla_use_nope");
    if (nope && nope->t != JV_NULL && nope->t != JV_BOOL) { rc = bad(e, "mla_use_nope", "is not a boolean"); goto out; }
    if (nope && nope->t == JV_BOOL && !nope->u.b) {
        rc = bad(e, "mla_use_nope", "false is not implemented (KimiLinearAttention applies no RoPE)");
        goto out;
    }
    if (fd_ds3_parse(d, c, e)) goto out;
    fd_ds3_ext *x = (fd_ds3_ext *)c->ext;
    x->nope = 1;
    x->yarn = 0;
    int64_t L = c->num_hidden_layers;
    x->kda = fd_xcalloc((size_t)L, 1);
    const jv *lac = jv_get(doc, "linear_attn_config");
    if (lac && lac->t == JV_NULL) lac = NULL;
    if (lac && lac->t != JV_OBJ) { rc = bad(e, "linear_attn_config", "is not an object"); goto out; }
    if (fd_cfg_int(doc, "linear_head_dim", 128, 1, &x->lin_dim, e) || fd_cfg_int(doc, "linear_num_heads", 32, 1, &x->lin_heads, e) ||
        fd_cfg_int(doc, "linear_conv_kernel_dim", 4, 1, &x->conv_k, e))
        goto out;
    if (lac && (fd_cfg_int(lac, "head_dim", x->lin_dim, 1, &x->lin_dim, e) ||
                fd_cfg_int(lac, "num_heads", x->lin_heads, 1, &x->lin_heads, e) ||
                fd_cfg_int(lac, "short_conv_kernel_size", x->conv_k, 1, &x->conv_k, e))) {
        fd_err_prefix(e, "linear_attn_config");
        goto out;
    }
    if (x->lin_dim > 1024) { rc = bad(e, "linear_head_dim", "> 1024 is not supported"); goto out; }
    if (x->lin_heads > 65536) { rc = bad(e, "linear_num_heads", "is implausibly large (> 65536)"); goto out; }
    if (x->conv_k > 64) { rc = bad(e, "linear_conv_kernel_dim", "> 64 is not supported"); goto out; }
    /* layer_types > linear_attn_config's lists > every 4th layer from 4 full */
    const jv *lt = jv_get(doc, "layer_types");
    if (lt && lt->t != JV_NULL) {
        unsigned char *full = fd_xcalloc((size_t)L, 1);
        int r = layer_list(lt, "layer_types", L, "full_attention", "linear_attention", full, e);
        for (int64_t i = 0; i < L; i++) x->kda[i] = !full[i];
        free(full);
        if (r) goto out;
    } else if (lac && jv_get(lac, "full_attn_layers") && jv_get(lac, "kda_layers")) {
        unsigned char *full = fd_xcalloc((size_t)L, 1);
        int r = one_indexed(jv_get(lac, "full_attn_layers"), "full_attn_layers", L, full, e) ||
                one_indexed(jv_get(lac, "kda_layers"), "kda_layers", L, x->kda, e);
        for (int64_t i = 0; !r && i < L; i++)
            if (full[i] == x->kda[i]) r = bad(e, "linear_attn_config", "every layer must be in exactly one of full_attn_layers, kda_layers");
        free(full);
        if (r) goto out;
    } else
        for (int64_t i = 0; i < L; i++) x->kda[i] = !(i && i % 4 == 0);
    const jv *mlt = jv_get(doc, "mlp_layer_types");
    if (mlt && mlt->t != JV_NULL && layer_list(mlt, "mlp_layer_types", L, "sparse", "dense", c->mlp_sparse, e)) goto out;
    rc = 0;
out:
    jv_free(d);
    return rc;
}

static void free_ext(void *p)
{
    fd_ds3_ext *x = p;
    if (x) free(x->kda);
    free(x);
}

/* ------------------------------------------------------------ tensors */

static void put(fd_tensor_fn f, void *ctx, const char *dtype, int init, int ndim, uint64_t a, uint64_t b, uint64_t c2,
                uint64_t d2, const char *name)
{
    fd_tensor_spec t = {name, dtype, init, 0, ndim, {a, b, c2, d2, 0}};
    f(ctx, &t);
}

/* w NULL (the fixture writer): the names as save_pretrained spells them,
 * the reverse of RENAMES below: .mlp. -> .block_sparse_moe. (the dense MLP
 * too), experts.N.{gate,up,down}_proj -> experts.N.{w1,w3,w2} */
typedef struct saved_ctx {
    fd_tensor_fn f;
    void *ctx;
} saved_ctx;

static void saved_name(void *p, const fd_tensor_spec *t)
{
    const saved_ctx *sc = p;
    char nm[256];
    const char *m = strstr(t->name, ".mlp.");
    if (!m) { sc->f(sc->ctx, t); return; }
    snprintf(nm, sizeof nm, "%.*s.block_sparse_moe.%s", (int)(m - t->name), t->name, m + 5);
    static const char *const EX[3][2] = {{".gate_proj.weight", ".w1.weight"}, {".up_proj.weight", ".w3.weight"},
                                         {".down_proj.weight", ".w2.weight"}};
    char *x = strstr(nm, ".experts.");
    for (int i = 0; x && x[9] >= '0' && x[9] <= '9' && i < 3; i++) {
        size_t n = strlen(nm), k = strlen(EX[i][0]);
        if (n > k && !strcmp(nm + n - k, EX[i][0])) { strcpy(nm + n - k, EX[i][1]); break; }
    }
    fd_tensor_spec u = *t;
    u.name = nm;
    sc->f(sc->ctx, &u);
}

static void tensors(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx)
{
    saved_ctx sc = {f, ctx};
    fd_ds3_tensors(c, w, w ? f : saved_name, w ? ctx : (void *)&sc);
    const fd_ds3_ext *x = DS3(c);
    uint64_t H = (uint64_t)c->hidden_size, nh = (uint64_t)x->lin_heads, d = (uint64_t)x->lin_dim, Q = nh * d,
             K = (uint64_t)x->conv_k;
    const int N = FD_INIT_NORMAL, O = FD_INIT_ONES;
    for (long long L = 0; L < c->num_hidden_layers; L++) {
        if (!x->kda[L]) continue;
        char P[96], nm[160];
        snprintf(P, sizeof P, "%slayers.%lld.self_attn.", c->arch->prefix, L);
#define S(suffix, dt, init, nd, a, b, c3, d3) \
    snprintf(nm, sizeof nm, "%s%s", P, suffix); \
    put(f, ctx, dt, init, nd, a, b, c3, d3, nm);
        S("q_proj.weight", "BF16", N, 2, Q, H, 0, 0)
        S("k_proj.weight", "BF16", N, 2, Q, H, 0, 0)
        S("v_proj.weight", "BF16", N, 2, Q, H, 0, 0)
        S("q_conv1d.weight", "BF16", N, 3, Q, 1, K, 0)
        S("k_conv1d.weight", "BF16", N, 3, Q, 1, K, 0)
        S("v_conv1d.weight", "BF16", N, 3, Q, 1, K, 0)
        S("f_a_proj.weight", "BF16", N, 2, d, H, 0, 0)
        S("f_b_proj.weight", "BF16", N, 2, Q, d, 0, 0)
        S("dt_bias", "F32", FD_INIT_DT_BIAS, 1, Q, 0, 0, 0)
        S("A_log", "BF16", FD_INIT_A_LOG, 4, 1, 1, nh, 1)
        S("b_proj.weight", "BF16", N, 2, nh, H, 0, 0)
        S("g_a_proj.weight", "BF16", N, 2, d, H, 0, 0)
        S("g_b_proj.weight", "BF16", N, 2, Q, d, 0, 0)
        S("o_norm.weight", "BF16", O, 1, d, 0, 0, 0)
        S("o_proj.weight", "BF16", N, 2, H, Q, 0, 0)
#undef S
    }
}

/* ------------------------------------------------------------ the KDA layer */

#define BF fd_f32_to_bf16
#define F fd_bf16_to_f32
/* torch.exp / sqrt / log as MKL runs them on the host of the kimi_linear
 * goldens (AMD Zen 4, torch 2.15: the EX kernels; docs/MODEL-DEEPSEEK.md §9) */
#define KL_VML FD_VML_EX

/* y = KimiLinearDeltaAttention(h): q/k/v projections, the bf16 short conv +
 * silu, the softplus forget gate, beta, the chunked delta rule, the gated
 * RMSNorm per head, o_proj */
static int kda(const fd_mm *m, const fd_weights *W, const fd_glm_config *c, long long L, const uint16_t *x, size_t S,
               uint16_t *y, fd_err *e)
{
    const fd_ds3_ext *X = DS3(c);
    size_t H = (size_t)c->hidden_size, nh = (size_t)X->lin_heads, d = (size_t)X->lin_dim, Q = nh * d, K = (size_t)X->conv_k;
    char P[160];
    snprintf(P, sizeof P, "%slayers.%lld.self_attn", c->arch->prefix, L);
    fd_lin lq = {0}, lk = {0}, lv = {0}, fa = {0}, fb = {0}, bp = {0}, ga = {0}, gb = {0}, op = {0};
    float *cw = NULL, *dt = NULL, *Alog = NULL, *qkv = NULL, *g = NULL, *beta = NULL, *core = NULL;
    uint16_t *ow = NULL, *mix = NULL, *t16 = NULL, *gate = NULL, *o = NULL, *a16 = NULL, *b16 = NULL;
    int rc = -1;
    if (fd_op_lin_named(m, S, &lq, W, e, Q, H, "%s.q_proj", P) || fd_op_lin_named(m, S, &lk, W, e, Q, H, "%s.k_proj", P) ||
        fd_op_lin_named(m, S, &lv, W, e, Q, H, "%s.v_proj", P) || fd_op_lin_named(m, S, &fa, W, e, d, H, "%s.f_a_proj", P) ||
        fd_op_lin_named(m, S, &fb, W, e, Q, d, "%s.f_b_proj", P) || fd_op_lin_named(m, S, &bp, W, e, nh, H, "%s.b_proj", P) ||
        fd_op_lin_named(m, S, &ga, W, e, d, H, "%s.g_a_proj", P) || fd_op_lin_named(m, S, &gb, W, e, Q, d, "%s.g_b_proj", P) ||
        fd_op_lin_named(m, S, &op, W, e, H, Q, "%s.o_proj", P))
        goto out;
    cw = fd_xmalloc(3 * Q * K * 4);
    static const char *const qn[3] = {"q", "k", "v"};
    for (int i = 0; i < 3; i++) { /* a bf16 Conv1d (not in _keep_in_fp32_modules_strict) */
        const fd_tensor *t = fd_op_get(W, e, 3, Q, 1, K, "%s.%s_conv1d.weight", P, qn[i]);
        if (!t) goto out;
        for (size_t j = 0; j < Q * K; j++) cw[i * Q * K + j] = F(BF(fd_tensor_f32_at(t, j)));
    }
    const fd_tensor *tdt = fd_op_get(W, e, 1, Q, 0, 0, "%s.dt_bias", P);
    /* A_log [1, 1, nh, 1] (the loader's check verified the shape) */
    char an[200];
    snprintf(an, sizeof an, "%s.A_log", P);
    const fd_tensor *tal = tdt ? fd_weights_get(W, an) : NULL;
    if (tdt && (!tal || tal->numel != nh || tal->qfmt)) {
        fd_fail(e, "checkpoint_mismatch", "", "tensor %s is missing or not [1, 1, %zu, 1]", an, nh);
        goto out;
    }
    const fd_tensor *tow = tal ? fd_op_get(W, e, 1, d, 0, 0, "%s.o_norm.weight", P) : NULL;
    if (!tow) goto out;
    dt = fd_op_vec_f32(tdt, Q);
    Alog = fd_xmalloc(nh * 4);
    /* a bf16 parameter, .float(); from a GGUF read as stored (W->gstored) the
     * A_log view holds the converter's ssm_a = -exp(A_log), float32 */
    for (size_t h = 0; h < nh; h++) Alog[h] = W->gstored ? fd_tensor_f32_at(tal, h) : F(BF(fd_tensor_f32_at(tal, h)));
    ow = fd_op_vec_bf16(tow, 0, d);
    mix = fd_xmalloc(S * 3 * Q * 2);
    t16 = fd_xmalloc(S * Q * 2 + 2);
    const fd_lin *pr[3] = {&lq, &lk, &lv};
    for (int i = 0; i < 3; i++) {
        fd_lin_apply(m, pr[i], x, S, t16);
        for (size_t t = 0; t < S; t++) memcpy(mix + (t * 3 + (size_t)i) * Q, t16 + t * Q, Q * 2);
    }
    qkv = fd_xmalloc(S * 3 * Q * 4);
    fd_op_kda_conv_silu(mix, cw, S, 3 * Q, K, 1, qkv);
    fd_op_dump(L, "kda_qkv", "f32", qkv, S * 3 * Q * 4);
    a16 = fd_xmalloc(S * d * 2 + 2);
    fd_lin_apply(m, &fa, x, S, a16);
    fd_lin_apply(m, &fb, a16, S, t16);
    g = fd_xmalloc(S * Q * 4);
    if (W->gstored) { /* exp(A_log) = -ssm_a */
        for (size_t h = 0; h < nh; h++) Alog[h] = -Alog[h];
        fd_op_kda_gate_softplus_decay(KL_VML, t16, dt, Alog, S, nh, d, g);
    } else
        fd_op_kda_gate_softplus(KL_VML, t16, dt, Alog, S, nh, d, g);
    fd_op_dump(L, "kda_g", "f32", g, S * Q * 4);
    b16 = fd_xmalloc(S * nh * 2 + 2);
    fd_lin_apply(m, &bp, x, S, b16);
    beta = fd_xmalloc(S * nh * 4);
    fd_op_kda_beta(b16, S * nh, beta);
    fd_op_dump(L, "kda_beta", "f32", beta, S * nh * 4);
    core = fd_xmalloc(S * Q * 4);
    fd_op_kda_chunk(m, KL_VML, qkv, g, beta, S, d, nh, core);
    gate = fd_xmalloc(S * Q * 2);
    fd_lin_apply(m, &ga, x, S, a16);
    fd_lin_apply(m, &gb, a16, S, gate);
    o = fd_xmalloc(S * Q * 2);
    fd_op_kda_gated_norm(core, gate, ow, S, nh, d, (float)c->rms_norm_eps, o);
    fd_op_dump(L, "kda_core", "f32", core, S * Q * 4);
    fd_op_dump(L, "kda_o", "bf16", o, S * Q * 2);
    fd_lin_apply(m, &op, o, S, y);
    rc = 0;
out:
    fd_lin_free(&lq); fd_lin_free(&lk); fd_lin_free(&lv); fd_lin_free(&fa); fd_lin_free(&fb); fd_lin_free(&bp);
    fd_lin_free(&ga); fd_lin_free(&gb); fd_lin_free(&op);
    free(cw); free(dt); free(Alog); free(qkv); free(g); free(beta); free(core); free(ow); free(mix); free(t16); free(gate);
    free(o); free(a16); free(b16);
    return rc;
}

static int parse_kl(const jv *doc, fd_glm_config *c, fd_err *e)
{
    if (parse(doc, c, e)) return -1;
    ((fd_ds3_ext *)c->ext)->mixer = kda;
    return 0;
}

static uint64_t state_bytes(const fd_glm_config *c, uint64_t S)
{
    return S * (uint64_t)c->hidden_size * 4 + S * S;
}

static uint64_t wide(const fd_glm_config *c)
{
    uint64_t H = (uint64_t)c->hidden_size, I = (uint64_t)c->intermediate_size,
             Im = (uint64_t)c->moe_intermediate_size * (uint64_t)c->num_experts_per_tok,
             A = (uint64_t)c->num_attention_heads * (uint64_t)(c->qk_nope_head_dim + c->qk_rope_head_dim + c->v_head_dim),
             Q = 3 * (uint64_t)DS3(c)->lin_heads * (uint64_t)DS3(c)->lin_dim * 2;
    uint64_t w = H;
    if (I > w) w = I;
    if (Im > w) w = Im;
    if (A > w) w = A;
    if (Q > w) w = Q;
    return w;
}

/* save_pretrained's spelling (and the hub's): the MLP / MoE under
 * block_sparse_moe., experts w1 (gate) / w3 (up) / w2 (down) */
static const char *const RENAMES[] = {".block_sparse_moe.", ".mlp.", ".w1.", ".gate_proj.", ".w3.", ".up_proj.",
                                      ".w2.", ".down_proj.", NULL};

extern const fd_gguf_arch FD_GGUF_KIMI_LINEAR; /* kl_gguf.c */
extern const fd_gguf_stored FD_GGUF_KL_STORED;

const fd_arch FD_ARCH_KIMI_LINEAR = {
    .info = {"kimi_linear", "KimiLinearForCausalLM",
             "Kimi Linear: KDA linear attention and MLA without RoPE (layer_types), deepseek_v3's sigmoid-routed MoE",
             "docs/MODEL-DEEPSEEK.md", "bf16, fp8-block, nvfp4, gguf"},
    .prefix = "model.",
    .parse = parse_kl,
    .free_ext = free_ext,
    .tensors = tensors,
    .begin = fd_ds3_begin,
    .layer = fd_ds3_layer,
    .end = fd_ds3_end,
    .free_state = fd_ds3_free,
    .state_bytes = state_bytes,
    .wide = wide,
    .presets = FD_KIMI_LINEAR_PRESETS,
    .renames = RENAMES,
    .gguf = &FD_GGUF_KIMI_LINEAR,
    .gguf_stored = &FD_GGUF_KL_STORED,
};
