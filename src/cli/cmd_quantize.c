/* quantize: the toy RTN quantizer of FORMAT.md §7 (P bin/toy_quantize.py),
 * so a comparison has a real candidate.  Prints P's summary JSON; writes
 * the optional scope document and report exactly as P's json.dump does. */
#include "cli.h"
#include "args.h"
#include "capture/quantize.h"
#include "capture/quantize_fmt.h"
#include "capture/quantize_gguf.h"
#include "capture/qscope.h"
#include "engine/weights.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity quantize: %s\n", why);
    fprintf(stderr,
            "usage: fidelity quantize --src DIR --dst DIR --match SUBSTR [--match SUBSTR ...]\n"
            "  [--bits {2,3,4,5,6,8}] (default 4) [--tensor-class CLASS] (default moe.experts)\n"
            "  [--emit-scope FILE] [--emit-report FILE] [--dry-run] [--force]\n"
            "   or: fidelity quantize --format fp8-block|nvfp4 --src DIR --dst DIR [--match SUBSTR ...]\n"
            "  [--block R,C] (fp8-block, default 128,128) [--emit-scope FILE] [--emit-report FILE] [--dry-run] [--force]\n"
            "  (published layouts: fp8-block quantizes every Linear but lm_head and the indexer weights_proj by\n"
            "   default, nvfp4 the routed experts; the scope is read back from the written checkpoint)\n"
            "   or: fidelity quantize --format compressed-tensors|gptq|mlx --src DIR --dst DIR [--match SUBSTR ...]\n"
            "  [--group-size G] [--emit-scope FILE] [--emit-report FILE] [--dry-run] [--force]\n"
            "  (4-bit round-to-nearest: compressed-tensors W4A16 pack-quantized symmetric groups, GPTQ sym v1\n"
            "   desc_act false, MLX affine; G inputs per scale, default 128 (mlx 64), 8 to 1024, dividing every\n"
            "   selected weight's inputs; every Linear but lm_head by default)\n"
            "   or: fidelity quantize --format gguf --type bf16|q8_0|q4_0|q4_k --src DIR --dst FILE.gguf [--match SUBSTR ...]\n"
            "  [--force]  (llama.cpp's converter's layout, names and types; q8_0/q4_0/q4_k by ggml's reference quantizers\n"
            "   on every weight, or those --match selects, F16 where a row is not whole 32-blocks; every model_type\n"
            "   with a GGUF map but deepseek_v32 and glm5_next)\n"
            "CLASS is one of embed_tokens, attn.qkv, attn.o, mlp.gate, mlp.up, mlp.down, moe.experts, norm, lm_head\n");
    return FD_EXIT_USAGE;
}

/* json.dump(doc, f, indent=2, sort_keys=True): no trailing newline. */
static int write_json(const char *path, const jv *doc, fd_err *e)
{
    fd_buf b = {0};
    int rc = jv_dump(doc, &FD_QZ_JSON_STYLE, &b, e);
    if (!rc) rc = fd_write_atomic(path, b.p, b.n, e);
    fd_buf_free(&b);
    return rc;
}

static void print_summary(const jv *report)
{
    jv *s = fd_qz_summary(report);
    fd_buf b = {0};
    fd_err e;
    if (!jv_dump(s, &FD_QZ_JSON_STYLE, &b, &e)) printf("%s\n", fd_buf_cstr(&b));
    fd_buf_free(&b);
    jv_free(s);
}

/* The scope of a written checkpoint, read back as capture reads it. */
static jv *scope_of(const char *dir, fd_err *e)
{
    fd_glm_config c;
    memset(&c, 0, sizeof c);
    fd_weights W;
    jv *s = NULL;
    if (fd_glm_config_load(dir, &c, e)) return NULL;
    if (!fd_weights_open(dir, &W, e)) {
        if (!fd_weights_check(&W, &c, e)) s = fd_qscope_derive(&W, &c);
        fd_weights_close(&W);
    }
    fd_glm_config_free(&c);
    return s;
}

static int run_gguf(const char *type, const fd_qz_opts *base, const char *emit_scope, const char *emit_report)
{
    if (!type) return usage("--format gguf needs --type bf16|q8_0|q4_0|q4_k");
    if (emit_scope || base->dry_run) return usage("--emit-scope and --dry-run are not for --format gguf");
    fd_qg_opts o = {.src = base->src, .dst = base->dst, .type = type, .patterns = base->patterns,
                    .npatterns = base->npatterns, .force = base->force};
    fd_err e;
    fd_err_clear(&e);
    jv *report = NULL;
    int rc = FD_EXIT_OK;
    if (fd_quantize_gguf(&o, &report, &e) || (emit_report && write_json(emit_report, report, &e))) rc = FD_EXIT_REFUSED;
    if (rc) printf("REFUSED [%s]: %s\n", e.code, e.msg);
    else print_summary(report);
    jv_free(report);
    return rc;
}

static int run_format(const char *format, const char *block, const char *group, fd_qz_opts *base,
                      const char *emit_scope, const char *emit_report)
{
    fd_qf_opts o = {.src = base->src, .dst = base->dst, .patterns = base->patterns, .npatterns = base->npatterns,
                    .dry_run = base->dry_run, .force = base->force, .bm = 128, .bn = 128};
    o.kind = !strcmp(format, "fp8-block") ? FD_Q_FP8_BLOCK : !strcmp(format, "nvfp4") ? FD_Q_NVFP4
             : !strcmp(format, "compressed-tensors") ? FD_Q_CT_PACK : !strcmp(format, "gptq") ? FD_Q_GPTQ
             : !strcmp(format, "mlx") ? FD_Q_MLX : FD_Q_NONE;
    if (o.kind == FD_Q_NONE) return usage("--format must be fp8-block, nvfp4, compressed-tensors, gptq, mlx or gguf");
    int packed = o.kind == FD_Q_CT_PACK || o.kind == FD_Q_GPTQ || o.kind == FD_Q_MLX;
    o.group = o.kind == FD_Q_MLX ? 64 : 128;
    if (group) {
        long long g = 0;
        if (!packed || fd_arg_int(group, 8, 1024, &g) || g % 8)
            return usage("--group-size G (a multiple of 8 in [8, 1024]) applies to --format compressed-tensors, gptq "
                         "and mlx only");
        o.group = (int)g;
    }
    if (block) {
        char rs[32];
        const char *comma = strchr(block, ',');
        long long bm = 0, bn = 0;
        int ok = o.kind == FD_Q_FP8_BLOCK && comma && (size_t)(comma - block) < sizeof rs;
        if (ok) {
            memcpy(rs, block, (size_t)(comma - block));
            rs[comma - block] = 0;
            ok = !fd_arg_int(rs, 1, 65536, &bm) && !fd_arg_int(comma + 1, 1, 65536, &bn);
        }
        if (!ok) return usage("--block R,C (positive) applies to --format fp8-block only");
        o.bm = (int)bm;
        o.bn = (int)bn;
    }
    fd_err e;
    fd_err_clear(&e);
    jv *report = NULL, *scope = NULL;
    int rc = FD_EXIT_OK;
    if (fd_quantize_fmt(&o, &report, &e)) rc = FD_EXIT_REFUSED;
    else if (emit_scope && (o.dry_run ? (fd_fail(&e, "usage", "", "--emit-scope reads the written checkpoint: not "
                                                 "with --dry-run"), 1) : !(scope = scope_of(o.dst, &e))))
        rc = FD_EXIT_REFUSED;
    else if (emit_scope && write_json(emit_scope, scope, &e)) rc = FD_EXIT_REFUSED;
    else if (emit_report && write_json(emit_report, report, &e)) rc = FD_EXIT_REFUSED;
    if (rc) printf("REFUSED [%s]: %s\n", e.code, e.msg);
    else print_summary(report);
    jv_free(scope);
    jv_free(report);
    return rc;
}

int cmd_quantize(int argc, char **argv)
{
    fd_qz_opts o = {0};
    o.bits = 4;
    const char *tensor_class = "moe.experts", *emit_scope = NULL, *emit_report = NULL, *format = NULL, *block = NULL,
               *type = NULL, *group = NULL;
    int have_bits = 0;
    const char **pats = fd_xcalloc((size_t)argc + 1, sizeof *pats);
    char **owned = fd_xcalloc((size_t)argc + 1, sizeof *owned); /* "--opt=value" splits */
    size_t nowned = 0;
    int rc = FD_EXIT_OK;
    for (int i = 1; i < argc && rc == FD_EXIT_OK; i++) {
        const char *s = argv[i], *v = NULL;
        const char *eq = strncmp(s, "--", 2) ? NULL : strchr(s, '=');
        if (eq) {
            owned[nowned] = fd_xstrndup(s, (size_t)(eq - s));
            s = owned[nowned++];
            v = eq + 1;
        } else if (i + 1 < argc && strncmp(argv[i + 1], "--", 2)) v = argv[i + 1];
        int takes = !strcmp(s, "--src") || !strcmp(s, "--dst") || !strcmp(s, "--bits") || !strcmp(s, "--match") ||
                    !strcmp(s, "--tensor-class") || !strcmp(s, "--emit-scope") || !strcmp(s, "--emit-report") ||
                    !strcmp(s, "--format") || !strcmp(s, "--block") || !strcmp(s, "--type") ||
                    !strcmp(s, "--group-size");
        if (takes && !v) { rc = usage("an option is missing its value"); break; }
        if (takes && !eq) i++;
        if (!takes && eq) { rc = usage("this option takes no value"); break; }
        if (!strcmp(s, "--src")) o.src = v;
        else if (!strcmp(s, "--dst")) o.dst = v;
        else if (!strcmp(s, "--match")) pats[o.npatterns++] = v;
        else if (!strcmp(s, "--tensor-class")) tensor_class = v;
        else if (!strcmp(s, "--emit-scope")) emit_scope = v;
        else if (!strcmp(s, "--emit-report")) emit_report = v;
        else if (!strcmp(s, "--format")) format = v;
        else if (!strcmp(s, "--block")) block = v;
        else if (!strcmp(s, "--type")) type = v;
        else if (!strcmp(s, "--group-size")) group = v;
        else if (!strcmp(s, "--bits")) {
            long long b;
            if (fd_arg_int(v, 2, 8, &b) || !fd_qz_bits_ok((int)b)) rc = usage("--bits must be one of 2, 3, 4, 5, 6, 8");
            else { o.bits = (int)b; have_bits = 1; }
        } else if (!strcmp(s, "--dry-run")) o.dry_run = 1;
        else if (!strcmp(s, "--force")) o.force = 1;
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) { usage(NULL); rc = -1; }
        else {
            fprintf(stderr, "fidelity quantize: unknown argument %s\n", argv[i]);
            rc = usage(NULL);
        }
    }
    if (rc == FD_EXIT_OK && format) {
        o.patterns = pats;
        if (!o.src || !o.dst) rc = usage("--src and --dst are required");
        else if (have_bits) rc = usage("--bits belongs to the RTN quantizer, not --format");
        else if (!strcmp(format, "gguf")) rc = block || group ? usage("--block / --group-size do not apply to --format gguf")
                                                     : run_gguf(type, &o, emit_scope, emit_report);
        else if (type) rc = usage("--type belongs to --format gguf");
        else rc = run_format(format, block, group, &o, emit_scope, emit_report);
        goto done;
    }
    if (rc == FD_EXIT_OK && block) { rc = usage("--block needs --format fp8-block"); goto done; }
    if (rc == FD_EXIT_OK && type) { rc = usage("--type belongs to --format gguf"); goto done; }
    if (rc == FD_EXIT_OK && group) { rc = usage("--group-size needs --format compressed-tensors, gptq or mlx"); goto done; }
    if (rc == -1) rc = FD_EXIT_OK;
    else if (rc == FD_EXIT_OK) {
        if (!o.src || !o.dst || !o.npatterns) rc = usage("--src, --dst and at least one --match are required");
        else if (!fd_qz_class_ok(tensor_class)) rc = usage("--tensor-class must be one of the nine scope classes");
    }
    if (rc != FD_EXIT_OK || !o.src) goto done;
    o.patterns = pats;
    fd_err e;
    fd_err_clear(&e);
    jv *report = NULL;
    if (fd_quantize(&o, &report, &e)) {
        if (report && !strcmp(e.code, "nothing_matched")) print_summary(report);
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        rc = FD_EXIT_REFUSED;
    } else {
        jv *scope = fd_qz_scope_doc(report, tensor_class);
        if (emit_scope && write_json(emit_scope, scope, &e)) rc = FD_EXIT_REFUSED;
        else if (emit_report && write_json(emit_report, report, &e)) rc = FD_EXIT_REFUSED;
        jv_free(scope);
        if (rc) printf("REFUSED [%s]: %s\n", e.code, e.msg);
        else print_summary(report);
    }
    jv_free(report);
done:
    for (size_t k = 0; k < nowned; k++) free(owned[k]);
    free(owned);
    free(pats);
    return rc;
}
