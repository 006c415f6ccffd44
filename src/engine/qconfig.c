#include "engine/qconfig.h"
#include "util/buf.h"
#include "util/fsio.h"
#define PCRE2_CODE_UNIT_WIDTH 8
#include <fnmatch.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void fd_qconfig_free(fd_qconfig *q)
{
    fd_strv_free(&q->exclude);
    fd_strv_free(&q->ct_targets);
    fd_strv_free(&q->include);
    fd_strv_free(&q->mo_layers);
    free(q->mo_algo);
    free(q->ct);
    free(q->ct_target_group);
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

static int null_or_absent(const jv *o, const char *k)
{
    const jv *v = jv_get(o, k);
    return !v || v->t == JV_NULL;
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
    const char *sf = jv_get_str(qc, "scale_fmt");
    if (!null_or_absent(qc, "scale_fmt") && (!sf || (strcmp(sf, "ue8m0") && strcmp(sf, "float"))))
        return fd_fail(e, "unsupported_quantization", "", "%s: fp8 scale_fmt %.40s is not read (\"float\" or absent: "
                       "float scales; \"ue8m0\": power-of-two scales)", where, sf ? sf : "(not a string)");
    q->ue8m0 = sf && !strcmp(sf, "ue8m0");
    q->kind = FD_Q_FP8_BLOCK;
    q->bm = (int)bs->u.a.v[0]->u.i;
    q->bn = (int)bs->u.a.v[1]->u.i;
    if (fd_qconfig_expert_dtype(jv_get(qc, "expert_dtype"), where, q, e)) return -1;
    const char *as = jv_get_str(qc, "activation_scheme");
    snprintf(q->activation_scheme, sizeof q->activation_scheme, "%s", as ? as : "");
    if (str_list(jv_get(qc, "modules_to_not_convert"), where, "modules_to_not_convert", &q->exclude, e)) return -1;
    fd_strv_push(&q->exclude, "lm_head");
    return 0;
}

/* ModelOpt MIXED_PRECISION (modelopt.torch.export quant_utils
 * process_layer_quant_config; convert_hf_config keeps quantized_layers in the
 * config.json form beside its config_groups): every converted module listed
 * with its own algorithm.  JSON objects keep their keys sorted and refuse a
 * duplicate key (a layer named twice), so mo_layers is sorted as read. */
static int parse_mo_mixed(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    const jv *ql = jv_get(qc, "quantized_layers");
    if (!ql || ql->t != JV_OBJ || !ql->u.o.n)
        return fd_fail(e, "unsupported_quantization", "", "%s: modelopt quant_algo MIXED_PRECISION without a non-empty "
                       "quantized_layers object (the per-layer algorithms)", where);
    q->kind = FD_Q_NVFP4;
    q->group = 16;
    q->mo_algo = fd_xcalloc(ql->u.o.n, sizeof *q->mo_algo);
    for (size_t i = 0; i < ql->u.o.n; i++) {
        const char *name = ql->u.o.m[i].k;
        const jv *lc = ql->u.o.m[i].v;
        const char *a = lc && lc->t == JV_OBJ ? jv_get_str(lc, "quant_algo") : NULL;
        if (!name[0] || strlen(name) != ql->u.o.m[i].klen)
            return fd_fail(e, "unsupported_quantization", "", "%s: quantized_layers has an empty or NUL-bearing layer name", where);
        if (!a)
            return fd_fail(e, "unsupported_quantization", "", "%s: quantized_layers.%.200s has no quant_algo string", where, name);
        if (!strcmp(a, "FP8")) {
            if (jv_get(lc, "group_size") && !null_or_absent(lc, "group_size"))
                return fd_fail(e, "unsupported_quantization", "", "%s: quantized_layers.%.200s: FP8 with a group_size "
                               "(per-tensor FP8 only)", where, name);
            q->mo_algo[i] = FD_MO_FP8;
        } else if (!strcmp(a, "NVFP4")) {
            int64_t g = 16;
            if (!null_or_absent(lc, "group_size") && (jv_get_i64(lc, "group_size", &g) || g != 16))
                return fd_fail(e, "unsupported_quantization", "", "%s: quantized_layers.%.200s: NVFP4 group_size is not 16",
                               where, name);
            q->mo_algo[i] = FD_MO_NVFP4;
        } else
            return fd_fail(e, "unsupported_quantization", "", "%s: quantized_layers.%.200s: quant_algo %.60s is not read "
                           "(NVFP4 and FP8 layers only)", where, name, a);
        fd_strv_push(&q->mo_layers, name);
    }
    if (str_list(jv_get(qc, "ignore"), where, "ignore", &q->exclude, e)) return -1;
    return str_list(jv_get(qc, "exclude_modules"), where, "exclude_modules", &q->exclude, e);
}

/* ModelOpt NVFP4: config.json form (config_groups + ignore) or the
 * hf_quant_config.json "quantization" form (group_size + exclude_modules). */
static int parse_nvfp4(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    const char *algo = jv_get_str(qc, "quant_algo");
    if (algo && !strcmp(algo, "MIXED_PRECISION")) return parse_mo_mixed(qc, where, q, e);
    if (!algo || strcmp(algo, "NVFP4"))
        return fd_fail(e, "unsupported_quantization", "", "%s: modelopt quant_algo %s is not supported (NVFP4, or "
                       "MIXED_PRECISION of NVFP4 and FP8 layers)", where, algo ? algo : "(absent)");
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

/* ------------------------------------------------ compressed-tensors */

#define CT_FAIL(...) fd_fail(e, "unsupported_quantization", "", __VA_ARGS__)

/* A "re:" target compiles (Python re syntax read by PCRE2: the patterns
 * llm-compressor writes are the common subset). */
static int ct_regex_ok(const char *t, const char *where, const char *key, fd_err *e)
{
    if (strncmp(t, "re:", 3)) return 0;
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(t + 3), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_ANCHORED, &ec, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[128];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return CT_FAIL("%s: %s pattern %.200s does not compile: %s", where, key, t, (const char *)msg);
    }
    pcre2_code_free(re);
    return 0;
}

static int ct_bool(const jv *o, const char *k, int dflt, int *out)
{
    const jv *v = jv_get(o, k);
    if (!v || v->t == JV_NULL) { *out = dflt; return 0; }
    if (v->t != JV_BOOL) return -1;
    *out = v->u.b;
    return 0;
}


/* the compressed-tensors formats read: index = storage kind */
enum { CTF_PACK, CTF_INT, CTF_FLOAT, CTF_NAIVE, CTF_NVFP4, CTF_MXFP4, CTF_OTHER };
static int ct_format_code(const char *f)
{
    return !f ? CTF_OTHER : !strcmp(f, "pack-quantized") ? CTF_PACK : !strcmp(f, "int-quantized") ? CTF_INT
         : !strcmp(f, "float-quantized") ? CTF_FLOAT : !strcmp(f, "naive-quantized") ? CTF_NAIVE
         : !strcmp(f, "nvfp4-pack-quantized") ? CTF_NVFP4 : !strcmp(f, "mxfp4-pack-quantized") ? CTF_MXFP4 : CTF_OTHER;
}

static int parse_ct_weights(const jv *w, const char *where, const char *gname, int fc, fd_ct_scheme *s, fd_err *e)
{
    if (!w || w->t != JV_OBJ) return CT_FAIL("%s: config_groups.%s.weights is not an object (weight quantization "
                                               "is what is read)", where, gname);
    const char *type = jv_get_str(w, "type");
    int fl = type && !strcmp(type, "float");
    if (!type || (strcmp(type, "int") && !fl))
        return CT_FAIL("%s: config_groups.%s.weights.type %s is not supported (int, float)", where, gname,
                       type ? type : "(absent)");
    if (fl && (fc == CTF_PACK || fc == CTF_INT))
        return CT_FAIL("%s: config_groups.%s: float weights in format %s are not read (float-quantized or "
                       "naive-quantized)", where, gname, fc == CTF_PACK ? "pack-quantized" : "int-quantized");
    if (!fl && fc == CTF_FLOAT)
        return CT_FAIL("%s: config_groups.%s: int weights in format float-quantized are not read (int-quantized, "
                       "naive-quantized or pack-quantized)", where, gname);
    if (fc == CTF_NVFP4 || fc == CTF_MXFP4) { /* the two FP4 presets (quant_scheme.py NVFP4 / MXFP4), nothing else */
        const char *nm = fc == CTF_NVFP4 ? "nvfp4" : "mxfp4", *st = jv_get_str(w, "strategy");
        int64_t bits, g;
        int sym;
        if (!fl || jv_get_i64(w, "num_bits", &bits) || bits != 4)
            return CT_FAIL("%s: config_groups.%s: %s-pack-quantized needs float weights of 4 bits", where, gname, nm);
        if (jv_get_i64(w, "group_size", &g) || g != (fc == CTF_NVFP4 ? 16 : 32))
            return CT_FAIL("%s: config_groups.%s.weights.group_size must be %d for %s", where, gname,
                           fc == CTF_NVFP4 ? 16 : 32, nm);
        if (!st || strcmp(st, fc == CTF_NVFP4 ? "tensor_group" : "group"))
            return CT_FAIL("%s: config_groups.%s.weights.strategy must be %s for %s", where, gname,
                           fc == CTF_NVFP4 ? "tensor_group" : "group", nm);
        if (ct_bool(w, "symmetric", 1, &sym) || !sym)
            return CT_FAIL("%s: config_groups.%s.weights: %s is read symmetric only", where, gname, nm);
        const jv *dv = jv_get(w, "dynamic");
        if (dv && dv->t != JV_NULL && (dv->t != JV_BOOL || dv->u.b))
            return CT_FAIL("%s: config_groups.%s.weights.dynamic must be false (weights are static)", where, gname);
        s->bits = 4;
        s->sym = 1;
        s->strategy = FD_CT_GROUP;
        s->group = (int)g;
        s->dense = fc == CTF_NVFP4 ? FD_CT_NVFP4 : FD_CT_MXFP4;
        return 0;
    }
    int64_t bits;
    if (fl && (jv_get_i64(w, "num_bits", &bits) || bits != 8))
        return CT_FAIL("%s: config_groups.%s.weights.num_bits must be 8 for float weights (FP8 e4m3; 4-bit float "
                       "is nvfp4/mxfp4, not read)", where, gname);
    if (!fl && (jv_get_i64(w, "num_bits", &bits) || (bits != 4 && bits != 8)))
        return CT_FAIL("%s: config_groups.%s.weights.num_bits must be 4 or 8 (int4 / int8: the widths whose "
                       "packing every compressed-tensors version writes alike and the registry names)", where, gname);
    s->bits = (int)bits;
    s->dense = fc == CTF_PACK ? FD_CT_PACKED : fl ? FD_CT_DENSE_FP8 : FD_CT_DENSE_INT;
    if (ct_bool(w, "symmetric", 1, &s->sym))
        return CT_FAIL("%s: config_groups.%s.weights.symmetric is not a boolean", where, gname);
    int dyn = 0;
    const jv *dv = jv_get(w, "dynamic");
    if (dv && dv->t != JV_NULL && (dv->t != JV_BOOL || (dyn = dv->u.b)))
        return CT_FAIL("%s: config_groups.%s.weights.dynamic must be false (weights are static)", where, gname);
    const char *ao = jv_get_str(w, "actorder");
    if (!null_or_absent(w, "actorder") && (!ao || (strcmp(ao, "static") && strcmp(ao, "weight"))))
        return CT_FAIL("%s: config_groups.%s.weights.actorder %s is not read (group activation order stores a "
                       "weight_g_idx permutation the decompressor does not apply)", where, gname, ao ? ao : "(not a string)");
    const char *st = jv_get_str(w, "strategy");
    int64_t g = 0;
    int has_g = !null_or_absent(w, "group_size");
    if (has_g && (jv_get_i64(w, "group_size", &g) || g < 1 || g > (1 << 20)))
        return CT_FAIL("%s: config_groups.%s.weights.group_size is not an integer in [1, 2^20]", where, gname);
    if (!null_or_absent(w, "strategy") && !st)
        return CT_FAIL("%s: config_groups.%s.weights.strategy is not a string", where, gname);
    if (!st) st = has_g ? "group" : "tensor"; /* QuantizationArgs' inference */
    if (!strcmp(st, "channel")) s->strategy = FD_CT_CHANNEL;
    else if (!strcmp(st, "group")) {
        if (!has_g) return CT_FAIL("%s: config_groups.%s.weights: strategy group without group_size", where, gname);
        s->strategy = FD_CT_GROUP;
        s->group = (int)g;
    } else if (!strcmp(st, "block")) {
        const jv *bs = jv_get(w, "block_structure");
        if (!bs || bs->t != JV_ARR || bs->u.a.n != 2 || !jv_is_int(bs->u.a.v[0]) || !jv_is_int(bs->u.a.v[1]) ||
            bs->u.a.v[0]->u.i < 1 || bs->u.a.v[1]->u.i < 1 || bs->u.a.v[0]->u.i > 65536 || bs->u.a.v[1]->u.i > 65536)
            return CT_FAIL("%s: config_groups.%s.weights: strategy block needs block_structure [rows, cols]", where, gname);
        if (!s->sym && !s->dense)
            return CT_FAIL("%s: config_groups.%s.weights: asymmetric block is not read (pack-quantized packs zero "
                           "points for channel and group only)", where, gname);
        s->strategy = FD_CT_BLOCK;
        s->bh = (int)bs->u.a.v[0]->u.i;
        s->bw = (int)bs->u.a.v[1]->u.i;
    } else if (!strcmp(st, "tensor") && s->dense)
        s->strategy = FD_CT_TENSOR;
    else
        return CT_FAIL("%s: config_groups.%s.weights.strategy %.40s is not supported (channel, group, block; tensor "
                       "for the unpacked formats)", where, gname, st);
    if (!s->sym && s->dense == FD_CT_DENSE_FP8)
        return CT_FAIL("%s: config_groups.%s.weights: asymmetric float weights are not read (FP8 zero points)", where,
                       gname);
    return 0;
}

static int parse_ct(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    const char *fmt = jv_get_str(qc, "format");
    if (fmt && ct_format_code(fmt) == CTF_OTHER && strcmp(fmt, "mixed-precision"))
        return CT_FAIL("%s: compressed-tensors format %.40s is not supported (pack-quantized, int-quantized, "
                       "float-quantized, naive-quantized)", where, fmt);
    if (!fmt && !null_or_absent(qc, "format")) return CT_FAIL("%s: compressed-tensors format is not a string", where);
    const char *status = jv_get_str(qc, "quantization_status");
    if (!null_or_absent(qc, "quantization_status") && (!status || strcmp(status, "compressed")))
        return CT_FAIL("%s: quantization_status %.40s: only compressed checkpoints are read", where,
                       status ? status : "(not a string)");
    const jv *sp = jv_get(qc, "sparsity_config");
    if (sp && sp->t != JV_NULL && (sp->t != JV_OBJ || sp->u.o.n))
        return CT_FAIL("%s: sparsity_config is not read (a sparse compressor)", where);
    static const char *const NOT_READ[] = {"kv_cache_scheme", "transform_config"};
    for (size_t i = 0; i < sizeof NOT_READ / sizeof *NOT_READ; i++)
        if (!null_or_absent(qc, NOT_READ[i])) return CT_FAIL("%s: %s is not read", where, NOT_READ[i]);
    const jv *groups = jv_get(qc, "config_groups");
    if (!groups || groups->t != JV_OBJ || !groups->u.o.n || groups->u.o.n > 256)
        return CT_FAIL("%s: config_groups must be an object of 1 to 256 groups", where);
    q->kind = FD_Q_CT_PACK;
    q->ct = fd_xcalloc(groups->u.o.n, sizeof *q->ct);
    for (size_t i = 0; i < groups->u.o.n; i++) {
        const char *gname = groups->u.o.m[i].k;
        const jv *gr = groups->u.o.m[i].v;
        if (gr->t != JV_OBJ) return CT_FAIL("%s: config_groups.%.40s is not an object", where, gname);
        const char *gf = jv_get_str(gr, "format");
        int fc = ct_format_code(!null_or_absent(gr, "format") ? gf : fmt);
        if (fc == CTF_OTHER)
            return CT_FAIL("%s: config_groups.%.40s.format %.40s is not supported (pack-quantized, int-quantized, "
                           "float-quantized, naive-quantized)", where, gname, gf ? gf : fmt ? fmt : "(absent)");
        /* pack-quantized is weight-only (W4A16 / W8A16): activation quantization is refused there. The unpacked
         * formats are W8A8 by construction: input_activations is read as declared and not applied (a weight-only
         * capture, disclosed); output activations are refused everywhere. */
        if (!null_or_absent(gr, "output_activations") || (fc == CTF_PACK && !null_or_absent(gr, "input_activations")))
            /* nvfp4 / mxfp4: W4A4 presets, input activations read and not applied as for the unpacked formats */
            return CT_FAIL("%s: config_groups.%.40s.%s is not read (weight-only schemes: activation quantization "
                           "would not be applied)", where, gname,
                           !null_or_absent(gr, "output_activations") ? "output_activations" : "input_activations");
        const jv *ia = jv_get(gr, "input_activations");
        if (ia && ia->t != JV_NULL && ia->t != JV_OBJ)
            return CT_FAIL("%s: config_groups.%.40s.input_activations is not an object", where, gname);
        q->ct[q->nct].acts = ia && ia->t == JV_OBJ;
        if (parse_ct_weights(jv_get(gr, "weights"), where, gname, fc, &q->ct[q->nct], e)) return -1;
        const jv *tg = jv_get(gr, "targets");
        if (!tg || tg->t != JV_ARR || !tg->u.a.n)
            return CT_FAIL("%s: config_groups.%.40s.targets must be a non-empty list", where, gname);
        for (size_t k = 0; k < tg->u.a.n; k++) {
            const jv *t = tg->u.a.v[k];
            if (t->t != JV_STR || memchr(t->u.s.p, 0, t->u.s.n) || !t->u.s.n)
                return CT_FAIL("%s: config_groups.%.40s.targets[%zu] is not a non-empty string", where, gname, k);
            if (ct_regex_ok(t->u.s.p, where, "targets", e)) return -1;
            size_t j = 0;
            while (j < q->ct_targets.n && strcmp(q->ct_targets.v[j], t->u.s.p)) j++;
            if (j == q->ct_targets.n) {
                fd_strv_push(&q->ct_targets, t->u.s.p);
                q->ct_target_group = fd_xrealloc(q->ct_target_group, q->ct_targets.n * sizeof *q->ct_target_group);
            }
            q->ct_target_group[j] = (int)q->nct; /* a later group takes the target over */
        }
        q->nct++;
    }
    if (str_list(jv_get(qc, "ignore"), where, "ignore", &q->exclude, e)) return -1;
    for (size_t i = 0; i < q->exclude.n; i++)
        if (ct_regex_ok(q->exclude.v[i], where, "ignore", e)) return -1;
    return 0;
}

/* ------------------------------------------------ GPTQ / AWQ */

static int pk_group(const jv *qc, const char *where, int *g, fd_err *e)
{
    int64_t v;
    if (jv_get_i64(qc, "group_size", &v) || (v != -1 && (v < 1 || v > (1 << 20))))
        return CT_FAIL("%s: group_size must be -1 or an integer in [1, 2^20]", where);
    *g = (int)v;
    return 0;
}

static int parse_gptq(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    int64_t bits;
    if (jv_get_i64(qc, "bits", &bits) || bits < 2 || bits > 8 || bits == 5 || bits == 6 || bits == 7)
        return CT_FAIL("%s: gptq bits must be 2, 3, 4 or 8 (5-7 are GPTQModel's planar layouts, not read)", where);
    fd_ct_scheme s = {.bits = (int)bits, .sym = 1};
    if (pk_group(qc, where, &s.group, e)) return -1;
    if (ct_bool(qc, "sym", 1, &s.sym)) return CT_FAIL("%s: sym is not a boolean", where);
    int desc;
    if (ct_bool(qc, "desc_act", 0, &desc)) return CT_FAIL("%s: desc_act is not a boolean", where);
    const char *cf = jv_get_str(qc, "checkpoint_format");
    if (!null_or_absent(qc, "checkpoint_format") && (!cf || (strcmp(cf, "gptq") && strcmp(cf, "gptq_v2"))))
        return CT_FAIL("%s: gptq checkpoint_format %.40s is not read (gptq, gptq_v2)", where, cf ? cf : "(not a string)");
    const char *fmt = jv_get_str(qc, "format"); /* GPTQModel 2+ spells it format */
    if (!null_or_absent(qc, "format") && (!fmt || (strcmp(fmt, "gptq") && strcmp(fmt, "gptq_v2"))))
        return CT_FAIL("%s: gptq format %.40s is not read (gptq, gptq_v2; marlin / bitblas / ... repack the "
                       "weights)", where, fmt ? fmt : "(not a string)");
    s.v1 = !((cf && !strcmp(cf, "gptq_v2")) || (fmt && !strcmp(fmt, "gptq_v2")));
    const char *pd = jv_get_str(qc, "pack_dtype");
    if (!null_or_absent(qc, "pack_dtype") && (!pd || strcmp(pd, "int32")))
        return CT_FAIL("%s: gptq pack_dtype %.40s is not read (int32)", where, pd ? pd : "(not a string)");
    const jv *dyn = jv_get(qc, "dynamic");
    if (dyn && dyn->t != JV_NULL && (dyn->t != JV_OBJ || dyn->u.o.n))
        return CT_FAIL("%s: gptq dynamic (per-module overrides) is not read", where);
    if (ct_bool(qc, "lm_head", 0, &q->lm_head)) return CT_FAIL("%s: lm_head is not a boolean", where);
    const jv *mb = jv_get(qc, "modules_in_block_to_quantize");
    if (mb && mb->t != JV_NULL) {
        if (mb->t != JV_ARR) return CT_FAIL("%s: modules_in_block_to_quantize is not a list of lists", where);
        for (size_t i = 0; i < mb->u.a.n; i++)
            if (str_list(mb->u.a.v[i], where, "modules_in_block_to_quantize[]", &q->include, e) ||
                (mb->u.a.v[i]->t != JV_ARR && CT_FAIL("%s: modules_in_block_to_quantize[%zu] is not a list", where, i)))
                return -1;
    }
    q->kind = FD_Q_GPTQ;
    q->ct = fd_xcalloc(1, sizeof *q->ct);
    q->ct[0] = s;
    q->nct = 1;
    (void)desc; /* g_idx is read whatever desc_act says (act-order or not, it maps each input to its group) */
    return 0;
}

static int parse_awq(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    int64_t bits;
    const char *bk = jv_get(qc, "bits") ? "bits" : "w_bit";
    if (jv_get_i64(qc, bk, &bits) || bits != 4) return CT_FAIL("%s: awq bits must be 4", where);
    const char *ver = jv_get_str(qc, "version");
    if (!null_or_absent(qc, "version") && (!ver || strcasecmp(ver, "gemm")))
        return CT_FAIL("%s: awq version %.40s is not read (GEMM packing only)", where, ver ? ver : "(not a string)");
    int zp;
    if (ct_bool(qc, "zero_point", 1, &zp) || !zp)
        return CT_FAIL("%s: awq zero_point must be true (GEMM checkpoints store qzeros)", where);
    fd_ct_scheme s = {.bits = 4, .sym = 0};
    const char *gk = jv_get(qc, "group_size") ? "group_size" : "q_group_size";
    int64_t g;
    if (jv_get_i64(qc, gk, &g) || g < 1 || g > (1 << 20))
        return CT_FAIL("%s: awq group_size must be an integer in [1, 2^20]", where);
    s.group = (int)g;
    q->kind = FD_Q_AWQ;
    q->ct = fd_xcalloc(1, sizeof *q->ct);
    q->ct[0] = s;
    q->nct = 1;
    return str_list(jv_get(qc, "modules_to_not_convert"), where, "modules_to_not_convert", &q->exclude, e);
}

/* mlx-lm's config.json `quantization` object: {group_size, bits[, mode]};
 * any other key is a per-module override (module path -> {group_size, bits}
 * or false), not read. */
int fd_qconfig_parse_mlx(const jv *mq, const char *where, fd_qconfig *q, fd_err *e)
{
    if (mq->t != JV_OBJ) return CT_FAIL("%s: quantization (MLX affine) is not an object", where);
    int64_t g, b;
    if (jv_get_i64(mq, "group_size", &g) || (g != 32 && g != 64 && g != 128))
        return CT_FAIL("%s: quantization.group_size must be 32, 64 or 128 (MLX affine)", where);
    if (jv_get_i64(mq, "bits", &b) || b < 2 || b > 8 || b == 7)
        return CT_FAIL("%s: quantization.bits must be 2, 3, 4, 5, 6 or 8 (MLX affine)", where);
    const char *mode = jv_get_str(mq, "mode");
    if (!null_or_absent(mq, "mode") && (!mode || strcmp(mode, "affine")))
        return CT_FAIL("%s: quantization.mode %.40s is not read (MLX affine only; mxfp4 / nvfp4 / mxfp8 modes are "
                       "other formats)", where, mode ? mode : "(not a string)");
    for (size_t i = 0; i < mq->u.o.n; i++) {
        const char *k = mq->u.o.m[i].k;
        if (strcmp(k, "group_size") && strcmp(k, "bits") && strcmp(k, "mode"))
            return CT_FAIL("%s: quantization.%.120s: per-module MLX overrides are not read", where, k);
    }
    q->kind = FD_Q_MLX;
    q->ct = fd_xcalloc(1, sizeof *q->ct);
    q->ct[0].bits = (int)b;
    q->ct[0].group = (int)g;
    q->ct[0].sym = 0;
    q->nct = 1;
    return 0;
}

int fd_qconfig_parse(const jv *qc, const char *where, fd_qconfig *q, fd_err *e)
{
    if (!qc || qc->t != JV_OBJ) return fd_fail(e, "unsupported_quantization", "", "%s: quantization_config is not an object", where);
    const char *m = jv_get_str(qc, "quant_method");
    if (m && !strcmp(m, "fp8")) return parse_fp8(qc, where, q, e);
    if (m && !strcmp(m, "modelopt")) return parse_nvfp4(qc, where, q, e);
    if (m && !strcmp(m, "compressed-tensors")) return parse_ct(qc, where, q, e);
    if (m && !strcmp(m, "gptq")) return parse_gptq(qc, where, q, e);
    if (m && !strcmp(m, "awq")) return parse_awq(qc, where, q, e);
    if (m && (!strcmp(m, "exl3") || !strcmp(m, "exl2")))
        return fd_fail(e, "unsupported_quantization", "", "%s: quant_method %s (exllama's trellis / EXL2 codes) is not read: "
                       "its reference decoder lives in exllamav3's compiled CUDA extension, not built here, so no decode of ours "
                       "could be checked against it (docs/QUANT-FORMATS.md \"EXL3\")", where, m);
    return fd_fail(e, "unsupported_quantization", "", "%s: quant_method %.60s is not supported (fp8 with "
                   "weight_block_size, modelopt NVFP4, compressed-tensors pack-quantized, gptq, awq)", where, m ? m : "(absent)");
}

int fd_qconfig_load(const char *dir, fd_qconfig *q, fd_err *e)
{
    memset(q, 0, sizeof *q);
    char *cp = fd_path_join(dir, "config.json"), *hp = fd_path_join(dir, "hf_quant_config.json");
    int rc = 0;
    jv *cfg = fd_is_file(cp) ? jv_parse_file(cp, e) : NULL;
    if (fd_is_file(cp) && !cfg) rc = -1;
    const jv *qc = cfg ? jv_get(cfg, "quantization_config") : NULL;
    const jv *mlx = cfg ? jv_get(cfg, "quantization") : NULL;
    if (!rc && mlx && mlx->t != JV_NULL) {
        /* mlx-lm's key; mlx-lm also mirrors it as quantization_config (no quant_method): a quantization_config
         * that names a quant_method as well is a second, conflicting declaration */
        if (qc && qc->t == JV_OBJ && !null_or_absent(qc, "quant_method"))
            rc = fd_fail(e, "unsupported_quantization", "", "%s: both quantization (MLX affine) and a "
                         "quantization_config with quant_method: two declarations of the weight format", cp);
        else rc = fd_qconfig_parse_mlx(mlx, cp, q, e);
        snprintf(q->source, sizeof q->source, "config.json");
    } else if (!rc && qc) {
        rc = fd_qconfig_parse(qc, cp, q, e);
        if (!rc && q->kind == FD_Q_FP8_BLOCK && null_or_absent(qc, "expert_dtype")) /* transformers folds it in */
            rc = fd_qconfig_expert_dtype(jv_get(cfg, "expert_dtype"), cp, q, e);
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
                                      "wk", "weights_proj", "gate_proj", "up_proj", "down_proj",
                                      /* minimax_m2's experts (block_sparse_moe.experts.X.w1 / w3 gate, up; w2 down) */
                                      "w1", "w2", "w3"};
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

/* compressed_tensors.utils.match.match_name: "re:" = re.match (anchored at
 * the start), else the exact module name. */
static int ct_match_name(const char *mod, const char *t)
{
    if (strncmp(t, "re:", 3)) return !strcmp(mod, t);
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(t + 3), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_ANCHORED, &ec, &off, NULL);
    if (!re) return 0; /* refused at parse */
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    pcre2_set_match_limit(mc, 1000000);
    pcre2_set_depth_limit(mc, 10000);
    int rc = pcre2_match(re, (PCRE2_SPTR)mod, strlen(mod), 0, 0, md, mc);
    pcre2_match_context_free(mc);
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    return rc >= 0;
}

/* _match_class on an nn.Linear: its MRO is Linear, Module. */
static int ct_match_class(const char *t) { return !strcmp(t, "Linear") || !strcmp(t, "Module"); }

/* sort key ("re:" in x, x) */
static int ct_before(const char *a, const char *b)
{
    int ra = strstr(a, "re:") != NULL, rb = strstr(b, "re:") != NULL;
    return ra != rb ? ra < rb : strcmp(a, b) < 0;
}

int fd_q_ct_scheme(const fd_qconfig *q, const char *weight_name)
{
    if (q->kind != FD_Q_CT_PACK || !fd_q_is_linear_weight(weight_name)) return -1;
    size_t n = strlen(weight_name);
    char *mod = fd_xstrndup(weight_name, n - 7);
    int ign = 0, best = -1, cls = -1;
    for (size_t i = 0; i < q->exclude.n && !ign; i++)
        ign = ct_match_name(mod, q->exclude.v[i]) || ct_match_class(q->exclude.v[i]);
    for (size_t i = 0; i < q->ct_targets.n && !ign; i++) {
        const char *t = q->ct_targets.v[i];
        if (ct_match_name(mod, t) && (best < 0 || ct_before(t, q->ct_targets.v[best]))) best = (int)i;
        if (ct_match_class(t) && (cls < 0 || ct_before(t, q->ct_targets.v[cls]))) cls = (int)i;
    }
    free(mod);
    if (ign) return -1;
    if (best < 0) best = cls;
    return best < 0 ? -1 : q->ct_target_group[best];
}

int fd_q_excluded(const fd_qconfig *q, const char *weight_name)
{
    if (q->kind == FD_Q_CT_PACK) return fd_q_ct_scheme(q, weight_name) < 0;
    if (q->kind == FD_Q_GPTQ) {
        if (!strcmp(weight_name, "lm_head.weight")) return !q->lm_head;
        if (!q->include.n) return 0;
        /* the name inside its decoder layer: after "layers.N." */
        const char *p = strstr(weight_name, "layers.");
        if (!p) return 1;
        p += 7;
        while (*p >= '0' && *p <= '9') p++;
        if (*p != '.') return 1;
        p++;
        size_t n = strlen(p) - 7;
        for (size_t i = 0; i < q->include.n; i++)
            if (strlen(q->include.v[i]) == n && !strncmp(q->include.v[i], p, n)) return 0;
        return 1;
    }
    if (q->kind == FD_Q_AWQ) {
        for (size_t i = 0; i < q->exclude.n; i++)
            if (strstr(weight_name, q->exclude.v[i])) return 1;
        return !strcmp(weight_name, "lm_head.weight"); /* AutoAWQ never converts lm_head */
    }
    size_t n = strlen(weight_name);
    char *mod = fd_xstrndup(weight_name, n >= 7 && !strcmp(weight_name + n - 7, ".weight") ? n - 7 : n);
    int hit = 0;
    if (q->kind == FD_Q_FP8_BLOCK) {
        char *star = digits_to_star(weight_name);
        for (size_t i = 0; i < q->exclude.n && !hit; i++)
            hit = strstr(star, q->exclude.v[i]) || strstr(weight_name, q->exclude.v[i]);
        free(star);
    } else if (q->kind == FD_Q_NVFP4) {
        hit = q->mo_layers.n && fd_strv_find(&q->mo_layers, mod) < 0;
        for (size_t i = 0; i < q->exclude.n && !hit; i++) {
            const char *p = q->exclude.v[i];
            size_t pl = strlen(p);
            hit = !fnmatch(p, mod, 0) || (!strncmp(mod, p, pl) && (mod[pl] == 0 || mod[pl] == '.'));
        }
    }
    free(mod);
    return hit;
}

int fd_q_mo_algo(const fd_qconfig *q, const char *weight_name)
{
    size_t n = strlen(weight_name);
    if (q->kind != FD_Q_NVFP4 || !q->mo_layers.n || n < 8 || strcmp(weight_name + n - 7, ".weight")) return 0;
    char *mod = fd_xstrndup(weight_name, n - 7);
    long i = fd_strv_find(&q->mo_layers, mod);
    free(mod);
    return i < 0 ? 0 : q->mo_algo[i];
}

const char *fd_q_format(fd_qkind k)
{
    return k == FD_Q_FP8_BLOCK || k == FD_Q_MO_FP8 ? "fp8_e4m3" : k == FD_Q_NVFP4 ? "nvfp4" : k == FD_Q_GGUF ? "gguf" : k == FD_Q_GPTQ ? "gptq"
         : k == FD_Q_AWQ ? "awq" : k == FD_Q_MLX ? "mlx-affine" : "bf16";
}
int fd_q_bits(fd_qkind k) { return k == FD_Q_FP8_BLOCK || k == FD_Q_MO_FP8 ? 8 : k == FD_Q_NVFP4 ? 4 : 16; }
const char *fd_q_int_format(int bits) { return bits == 8 ? "int8" : "int4"; }

int fd_qconfig_bits(const fd_qconfig *q)
{
    if (q->kind == FD_Q_NVFP4 && q->mo_layers.n) {
        int b = 4;
        for (size_t i = 0; i < q->mo_layers.n; i++)
            if (q->mo_algo[i] == FD_MO_FP8) b = 8;
        return b;
    }
    if (q->kind != FD_Q_CT_PACK && q->kind != FD_Q_GPTQ && q->kind != FD_Q_AWQ && q->kind != FD_Q_MLX)
        return fd_q_bits(q->kind);
    int b = 0;
    for (size_t i = 0; i < q->nct; i++)
        if (q->ct[i].bits > b) b = q->ct[i].bits;
    return b;
}

static void ct_codec(const fd_ct_scheme *s, char *out, size_t cap)
{
    if (s->dense == FD_CT_NVFP4 || s->dense == FD_CT_MXFP4) {
        snprintf(out, cap, "ct-%s-g%d", s->dense == FD_CT_NVFP4 ? "nvfp4" : "mxfp4", s->group);
        return;
    }
    const char *k = s->dense == FD_CT_DENSE_FP8 ? "ct-fp8-w" : s->dense ? "ct-int-w" : "ct-pack-w";
    const char *sy = s->sym ? "sym" : "asym";
    if (s->strategy == FD_CT_CHANNEL) snprintf(out, cap, "%s%d-channel-%s", k, s->bits, sy);
    else if (s->strategy == FD_CT_GROUP) snprintf(out, cap, "%s%d-group%d-%s", k, s->bits, s->group, sy);
    else if (s->strategy == FD_CT_TENSOR) snprintf(out, cap, "%s%d-tensor-%s", k, s->bits, sy);
    else snprintf(out, cap, "%s%d-block%dx%d-%s", k, s->bits, s->bh, s->bw, sy);
}

void fd_q_codec(const fd_qconfig *q, char *out, size_t cap)
{
    if (q->kind == FD_Q_FP8_BLOCK) snprintf(out, cap, "fp8-e4m3-block%dx%d%s%s", q->bm, q->bn, q->ue8m0 ? "-ue8m0" : "",
                                         q->expert_fp4 ? "-fp4experts" : "");
    else if (q->kind == FD_Q_NVFP4 && q->mo_layers.n) {
        int a = 0;
        for (size_t i = 0; i < q->mo_layers.n; i++) a |= q->mo_algo[i];
        snprintf(out, cap, "%s", a == FD_MO_FP8 ? "modelopt-mixed-fp8" : a == FD_MO_NVFP4 ? "modelopt-mixed-nvfp4-g16"
                                                                       : "modelopt-mixed-nvfp4-g16-fp8");
    } else if (q->kind == FD_Q_NVFP4) snprintf(out, cap, "nvfp4-modelopt-g%d", q->group);
    else if (q->kind == FD_Q_GGUF) snprintf(out, cap, "gguf");
    else if (q->kind == FD_Q_CT_PACK) {
        char a[64], b[64];
        ct_codec(&q->ct[0], a, sizeof a);
        int same = 1;
        for (size_t i = 1; i < q->nct && same; i++) {
            ct_codec(&q->ct[i], b, sizeof b);
            same = !strcmp(a, b);
        }
        int packed = 1;
        for (size_t i = 0; i < q->nct; i++) packed &= q->ct[i].dense == FD_CT_PACKED;
        snprintf(out, cap, "%s", same ? a : packed ? "ct-pack-mixed" : "ct-mixed");
    } else if (q->kind == FD_Q_GPTQ)
        snprintf(out, cap, "gptq-%s-w%d-g%d-%s", q->ct[0].v1 ? "v1" : "v2", q->ct[0].bits, q->ct[0].group,
                 q->ct[0].sym ? "sym" : "asym");
    else if (q->kind == FD_Q_AWQ) snprintf(out, cap, "awq-gemm-w4-g%d", q->ct[0].group);
    else if (q->kind == FD_Q_MLX) snprintf(out, cap, "mlx-affine-w%d-g%d", q->ct[0].bits, q->ct[0].group);
    else snprintf(out, cap, "bf16");
}
