#include "engine/qconfig.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fd_qconfig_free(fd_qconfig *q)
{
    fd_strv_free(&q->exclude);
    memset(q, 0, sizeof *q);
}

static int str_list(const jv *v, const char *where, const char *key, fd_strv *out, fd_err *e)
{
    if (!v || v->t == JV_NULL) return 0;
    if (v->t != JV_ARR) return fd_fail(e, "unsupported_quantization", "", "%s: %s is not a list", where, key);
    for (size_t i = 0; i < v->u.a.n; i++) {
        const jv *s = v->u.a.v[i];
        if (s->t != JV_STR || memchr(s->u.s.p, 0, s->u.s.n))
            return fd_fail(e, "unsupported_quantization", "", "%s: %s[%zu] is not a string", where, key, i);
        fd_strv_push(out, s->u.s.p);
    }
    return 0;
}

static int parse_fp8(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    const char *fmt = jv_get_str(qc, "fmt");
    if (jv_get(qc, "fmt") && (!fmt || strcmp(fmt, "e4m3")))
        return fd_fail(e, "unsupported_quantization", "", "%s: fp8 fmt must be \"e4m3\"", where);
    const jv *bs = jv_get(qc, "weight_block_size");
    if (!bs || bs->t != JV_ARR || bs->u.a.n != 2 || !jv_is_int(bs->u.a.v[0]) || !jv_is_int(bs->u.a.v[1]) ||
        bs->u.a.v[0]->u.i < 1 || bs->u.a.v[1]->u.i < 1 || bs->u.a.v[0]->u.i > 65536 || bs->u.a.v[1]->u.i > 65536)
        return fd_fail(e, "unsupported_quantization", "", "%s: fp8 needs weight_block_size [rows, cols] (per-tensor "
                       "FP8 is not read)", where);
    q->kind = FD_Q_FP8_BLOCK;
    q->bm = (int)bs->u.a.v[0]->u.i;
    q->bn = (int)bs->u.a.v[1]->u.i;
    const char *as = jv_get_str(qc, "activation_scheme");
    snprintf(q->activation_scheme, sizeof q->activation_scheme, "%s", as ? as : "");
    if (str_list(jv_get(qc, "modules_to_not_convert"), where, "modules_to_not_convert", &q->exclude, e)) return -1;
    fd_strv_push(&q->exclude, "lm_head");
    return 0;
}

/* ModelOpt NVFP4: config.json form (config_groups + ignore) or the
 * hf_quant_config.json "quantization" form (group_size + exclude_modules). */
static int parse_nvfp4(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    const char *algo = jv_get_str(qc, "quant_algo");
    if (!algo || strcmp(algo, "NVFP4"))
        return fd_fail(e, "unsupported_quantization", "", "%s: modelopt quant_algo %s is not supported (NVFP4 only)",
                       where, algo ? algo : "(absent)");
    int64_t g = 16;
    const jv *groups = jv_get(qc, "config_groups");
    if (groups && groups->t == JV_OBJ) {
        for (size_t i = 0; i < groups->u.o.n; i++) {
            const jv *wts = jv_get(groups->u.o.m[i].v, "weights");
            if (wts && jv_get_i64(wts, "group_size", &g) == 0 && g != 16) break;
        }
    } else if (jv_get(qc, "group_size") && jv_get_i64(qc, "group_size", &g))
        return fd_fail(e, "unsupported_quantization", "", "%s: group_size is not an integer", where);
    if (g != 16) return fd_fail(e, "unsupported_quantization", "", "%s: NVFP4 group_size %lld (16 only)", where, (long long)g);
    q->kind = FD_Q_NVFP4;
    q->group = 16;
    if (str_list(jv_get(qc, "ignore"), where, "ignore", &q->exclude, e)) return -1;
    return str_list(jv_get(qc, "exclude_modules"), where, "exclude_modules", &q->exclude, e);
}

int fd_qconfig_parse(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    if (!qc || qc->t != JV_OBJ) return fd_fail(e, "unsupported_quantization", "", "%s: quantization_config is not an object", where);
    const char *m = jv_get_str(qc, "quant_method");
    if (m && !strcmp(m, "fp8")) return parse_fp8(qc, where, q, e);
    if (m && !strcmp(m, "modelopt")) return parse_nvfp4(qc, where, q, e);
    return fd_fail(e, "unsupported_quantization", "", "%s: quant_method %s is not supported (fp8 with "
                   "weight_block_size, modelopt NVFP4)", where, m ? m : "(absent)");
}

int fd_qconfig_load(const char *dir, fd_qconfig *q, fd_err *e)
{
    memset(q, 0, sizeof *q);
    char *cp = fd_path_join(dir, "config.json"), *hp = fd_path_join(dir, "hf_quant_config.json");
    int rc = 0;
    jv *cfg = fd_is_file(cp) ? jv_parse_file(cp, e) : NULL;
    if (fd_is_file(cp) && !cfg) rc = -1;
    const jv *qc = cfg ? jv_get(cfg, "quantization_config") : NULL;
    if (!rc && qc) {
        rc = fd_qconfig_parse(qc, cp, q, e);
        snprintf(q->source, sizeof q->source, "config.json");
    } else if (!rc && fd_is_file(hp)) {
        jv *h = jv_parse_file(hp, e);
        const jv *qz = h ? jv_get(h, "quantization") : NULL;
        if (!h) rc = -1;
        else if (!qz || qz->t != JV_OBJ) rc = fd_fail(e, "unsupported_quantization", "", "%s: no quantization object", hp);
        else {
            jv *c = jv_copy(qz);
            jv_set(c, "quant_method", jv_str("modelopt"));
            rc = fd_qconfig_parse(c, hp, q, e);
            jv_free(c);
            snprintf(q->source, sizeof q->source, "hf_quant_config.json");
        }
        jv_free(h);
    }
    jv_free(cfg);
    free(cp);
    free(hp);
    if (rc) fd_qconfig_free(q);
    return rc;
}

int fd_q_is_linear_weight(const char *name)
{
    static const char *const LIN[] = {"q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj", "wq_b",
                                      "wk", "weights_proj", "gate_proj", "up_proj", "down_proj"};
    if (!strcmp(name, "lm_head.weight")) return 1;
    size_t n = strlen(name);
    if (n < 8 || strcmp(name + n - 7, ".weight")) return 0;
    const char *end = name + n - 7, *dot = end;
    while (dot > name && dot[-1] != '.') dot--;
    for (size_t i = 0; i < sizeof LIN / sizeof *LIN; i++)
        if (strlen(LIN[i]) == (size_t)(end - dot) && !strncmp(dot, LIN[i], (size_t)(end - dot))) return 1;
    return 0;
}

static char *digits_to_star(const char *s)
{
    fd_buf b = {0};
    while (*s) {
        if (*s >= '0' && *s <= '9') {
            fd_buf_putc(&b, '*');
            while (*s >= '0' && *s <= '9') s++;
        } else fd_buf_putc(&b, *s++);
    }
    return fd_buf_cstr(&b);
}

int fd_q_excluded(const fd_qconfig *q, const char *weight_name)
{
    size_t n = strlen(weight_name);
    char *mod = fd_xstrndup(weight_name, n >= 7 && !strcmp(weight_name + n - 7, ".weight") ? n - 7 : n);
    int hit = 0;
    if (q->kind == FD_Q_FP8_BLOCK) {
        char *star = digits_to_star(weight_name);
        for (size_t i = 0; i < q->exclude.n && !hit; i++)
            hit = strstr(star, q->exclude.v[i]) || strstr(weight_name, q->exclude.v[i]);
        free(star);
    } else if (q->kind == FD_Q_NVFP4) {
        for (size_t i = 0; i < q->exclude.n && !hit; i++) {
            const char *p = q->exclude.v[i];
            size_t pl = strlen(p);
            hit = !fnmatch(p, mod, 0) || (!strncmp(mod, p, pl) && (mod[pl] == 0 || mod[pl] == '.'));
        }
    }
    free(mod);
    return hit;
}

const char *fd_q_format(fd_qkind k)
{
    return k == FD_Q_FP8_BLOCK ? "fp8_e4m3" : k == FD_Q_NVFP4 ? "nvfp4" : k == FD_Q_GGUF ? "gguf" : "bf16";
}
int fd_q_bits(fd_qkind k) { return k == FD_Q_FP8_BLOCK ? 8 : k == FD_Q_NVFP4 ? 4 : 16; }

void fd_q_codec(const fd_qconfig *q, char *out, size_t cap)
{
    if (q->kind == FD_Q_FP8_BLOCK) snprintf(out, cap, "fp8-e4m3-block%dx%d", q->bm, q->bn);
    else if (q->kind == FD_Q_NVFP4) snprintf(out, cap, "nvfp4-modelopt-g%d", q->group);
    else if (q->kind == FD_Q_GGUF) snprintf(out, cap, "gguf");
    else snprintf(out, cap, "bf16");
}
