/* DeepSeek V4's release weight format (docs/QUANT-FORMATS.md "DeepSeek V4
 * release"): quantization_config fp8 (e4m3, weight_block_size [128, 128],
 * scale_fmt ue8m0) with expert_dtype "fp4". Non-expert Linears F8_E4M3 with
 * an F8_E8M0 block scale named X.scale (transformers' FP8 quantizer renames
 * it X.weight_scale_inv; either spelling is read, never both); routed experts
 * I8 (or U8) [N, K/2], two e2m1 codes a byte (low nibble first), with an
 * F8_E8M0 [N, K/32] X.scale. Each weight's value is its code times its
 * power-of-two scale, used as bf16 (exact in bf16 for every finite scale the
 * format can carry but the extremes, docs). */
#include "engine/weights_quant.h"
#include "engine/qconfig.h"
#include "util/buf.h"
#include <stdlib.h>
#include <string.h>

int fd_qconfig_expert_dtype(const jv *v, const char *where, fd_qconfig *q, fd_err *e)
{
    if (!v || v->t == JV_NULL) return 0;
    const char *s = v->t == JV_STR && !memchr(v->u.s.p, 0, v->u.s.n) ? v->u.s.p : NULL;
    if (!s || (strcmp(s, "fp8") && strcmp(s, "fp4")))
        return fd_fail(e, "unsupported_quantization", "", "%s: expert_dtype %.40s is not read (\"fp8\": FP8-block "
                       "experts; \"fp4\": packed fp4 experts, DeepSeek V4's release)", where, s ? s : "(not a string)");
    q->expert_fp4 = !strcmp(s, "fp4");
    if (q->expert_fp4 && !q->ue8m0)
        return fd_fail(e, "unsupported_quantization", "", "%s: expert_dtype \"fp4\" without scale_fmt \"ue8m0\" (float "
                       "expert scales) is not read: the release's fp4 experts carry E8M0 scales", where);
    return 0;
}

static char *with_suffix(const char *wname, const char *suffix)
{
    size_t n = strlen(wname);
    if (n < 7 || strcmp(wname + n - 7, ".weight")) return NULL;
    fd_buf b = {0};
    fd_buf_printf(&b, "%.*s%s", (int)(n - 7), wname, suffix);
    return fd_buf_cstr(&b);
}

const fd_tensor *fd_wq_block_scale(const fd_weights *w, const char *wname, fd_buf *why)
{
    char *a = with_suffix(wname, ".weight_scale_inv"), *b = with_suffix(wname, ".scale");
    const fd_tensor *sa = a ? fd_weights_get(w, a) : NULL, *sb = b ? fd_weights_get(w, b) : NULL, *r = sa ? sa : sb;
    if (sa && sb) {
        fd_buf_printf(why, "%s and %s are both present (two scales of %s)", a, b, wname);
        r = NULL;
    } else if (!r)
        fd_buf_printf(why, "%s is missing (the scale of %s; the release spells it %s)", a ? a : ".weight_scale_inv",
                      wname, b ? b : ".scale");
    free(a);
    free(b);
    return r;
}

/* the Linear leaves of deepseek_v4 beyond fd_q_is_linear_weight's (q_a_proj, kv_proj, o_a_proj, o_b_proj
 * and the compressors' gate_proj in the release's spelling): nn.Linear modules the FP8 quantizer converts */
static int v4_linear(const char *name)
{
    static const char *const L[] = {"wq_a", "wkv", "wo_a", "wo_b", "wgate"};
    if (fd_q_is_linear_weight(name)) return 1;
    size_t n = strlen(name);
    if (n < 8 || strcmp(name + n - 7, ".weight")) return 0;
    const char *end = name + n - 7, *dot = end;
    while (dot > name && dot[-1] != '.') dot--;
    for (size_t i = 0; i < sizeof L / sizeof *L; i++)
        if (strlen(L[i]) == (size_t)(end - dot) && !strncmp(dot, L[i], (size_t)(end - dot))) return 1;
    return 0;
}

static int bind_fp4(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    const uint64_t N = want[0], K = want[1];
    if (K % 32 || t->ndim != 2 || t->shape[0] != N || t->shape[1] * 2 != K) {
        fd_buf_printf(why, "%s: %s [%llu,%llu] expected packed fp4 [%llu,%llu] (expert_dtype \"fp4\": two e2m1 codes a "
                      "byte, the input dim a multiple of 32)", t->name, t->dtype, (unsigned long long)t->shape[0],
                      (unsigned long long)(t->ndim == 2 ? t->shape[1] : 0), (unsigned long long)N,
                      (unsigned long long)K / 2);
        return -1;
    }
    const fd_tensor *s = fd_wq_block_scale(w, t->name, why);
    if (!s) return -1;
    if (strcmp(s->dtype, "F8_E8M0") || s->ndim != 2 || s->shape[0] != N || s->shape[1] != K / 32) {
        fd_buf_printf(why, "%s: %s expected F8_E8M0 [%llu,%llu] (one E8M0 scale per 32 inputs of %s)", s->name, s->dtype,
                      (unsigned long long)N, (unsigned long long)K / 32, t->name);
        return -1;
    }
    uint64_t n = N * (K / 32), i = 0;
    uint8_t *v = fd_xmalloc(n ? n : 1);
    fd_err re;
    int rc = fd_weights_read(w, s, v, n, &re);
    while (!rc && i < n && v[i] != 255) i++;
    free(v);
    if (rc) fd_buf_printf(why, "%s", re.msg);
    else if (i < n) fd_buf_printf(why, "%s[%llu] is the E8M0 NaN code 255", s->name, (unsigned long long)i);
    if (rc || i < n) return -1;
    t->qfmt = FD_Q_FP4_E8;
    t->scale = s;
    t->lshape[1] = K;
    w->qbytes += t->nbytes + s->nbytes;
    return 1;
}

int fd_wq_bind_release(fd_weights *w, fd_tensor *t, const uint64_t *want, fd_buf *why)
{
    const char *qn = t->qname ? t->qname : t->name;
    int expert = strstr(t->name, ".experts.") != NULL; /* routed (shared_experts has no ".experts.") */
    int f8 = !strcmp(t->dtype, "F8_E4M3"), p4 = !strcmp(t->dtype, "I8") || !strcmp(t->dtype, "U8"), rc;
    if (expert && !p4) {
        fd_buf_printf(why, "%s is %s but quantization_config (%s) declares expert_dtype \"fp4\" (routed experts packed: "
                      "I8 [N, K/2] and an F8_E8M0 scale per 32 inputs)", t->name, t->dtype, w->q.source);
        return -1;
    }
    if (expert) rc = bind_fp4(w, t, want, why);
    else if (p4) {
        fd_buf_printf(why, "%s is %s: only routed experts are packed fp4 (expert_dtype \"fp4\")", t->name, t->dtype);
        return -1;
    } else if (!f8) return 0; /* a BF16 / F32 Linear read as stored (docs: a choice) */
    else if (!v4_linear(t->name) || !strcmp(t->name, "lm_head.weight")) {
        fd_buf_printf(why, "%s is F8_E4M3 but is not a converted Linear (embeddings, the router, norms and the head "
                      "stay unquantized)", t->name);
        return -1;
    } else if (fd_q_excluded(&w->q, qn)) {
        fd_buf_printf(why, "%s is quantized but quantization_config (%s) leaves its module unconverted", t->name,
                      w->q.source);
        return -1;
    } else rc = fd_wq_bind_fp8(w, t, want, why);
    if (rc == 1) w->nquant++;
    return rc;
}
