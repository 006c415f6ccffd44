/* quantize: the toy RTN quantizer of FORMAT.md §7 (P bin/toy_quantize.py),
 * so a comparison has a real candidate.  Prints P's summary JSON; writes
 * the optional scope document and report exactly as P's json.dump does. */
#include "cli.h"
#include "capture/quantize.h"
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

int cmd_quantize(int argc, char **argv)
{
    fd_qz_opts o = {0};
    o.bits = 4;
    const char *tensor_class = "moe.experts", *emit_scope = NULL, *emit_report = NULL;
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
                    !strcmp(s, "--tensor-class") || !strcmp(s, "--emit-scope") || !strcmp(s, "--emit-report");
        if (takes && !v) { rc = usage("an option is missing its value"); break; }
        if (takes && !eq) i++;
        if (!takes && eq) { rc = usage("this option takes no value"); break; }
        if (!strcmp(s, "--src")) o.src = v;
        else if (!strcmp(s, "--dst")) o.dst = v;
        else if (!strcmp(s, "--match")) pats[o.npatterns++] = v;
        else if (!strcmp(s, "--tensor-class")) tensor_class = v;
        else if (!strcmp(s, "--emit-scope")) emit_scope = v;
        else if (!strcmp(s, "--emit-report")) emit_report = v;
        else if (!strcmp(s, "--bits")) {
            char *end;
            long b = strtol(v, &end, 10);
            if (!*v || *end || !fd_qz_bits_ok((int)b) || b != (int)b) rc = usage("--bits must be one of 2, 3, 4, 5, 6, 8");
            else o.bits = (int)b;
        } else if (!strcmp(s, "--dry-run")) o.dry_run = 1;
        else if (!strcmp(s, "--force")) o.force = 1;
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) { usage(NULL); rc = -1; }
        else {
            fprintf(stderr, "fidelity quantize: unknown argument %s\n", argv[i]);
            rc = usage(NULL);
        }
    }
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
