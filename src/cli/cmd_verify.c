/* verify / validate / describe: the reading side of the format. */
#include "cli.h"
#include "format/json.h"
#include "format/validate.h"
#include "compare/compare.h"
#include "hub_args.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *dataset, *json_out, *format;
    fd_validate_opts o;
    fd_fetch_opts hub;
    char *local; /* the dataset directory (an hf:// argument is fetched first) */
} args;

static int parse(int argc, char **argv, args *a, int is_describe, const char *cmd)
{
    memset(a, 0, sizeof *a);
    a->o.verify_tensors = 1;
    a->format = "text";
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (fd_cli_hub_flag(argc, argv, &i, &a->hub)) continue;
        if (!strcmp(s, "--verify-tensors")) a->o.verify_tensors = 1;
        else if (!strcmp(s, "--no-verify-tensors")) a->o.verify_tensors = 0;
        else if (!strcmp(s, "--manifest-only")) a->o.manifest_only = 1;
        else if (!strcmp(s, "--allow-partial")) a->o.allow_partial = 1;
        else if (!strcmp(s, "--strict") && !strcmp(cmd, "validate")) a->o.strict = 1;
        else if (!strcmp(s, "--json") && i + 1 < argc && !is_describe) a->json_out = argv[++i];
        else if (!strcmp(s, "--format") && i + 1 < argc && is_describe) a->format = argv[++i];
        else if (s[0] == '-' && s[1]) { fprintf(stderr, "fidelity %s: unknown option %s\n", cmd, s); return -1; }
        else if (!a->dataset) a->dataset = s;
        else { fprintf(stderr, "fidelity %s: unexpected argument %s\n", cmd, s); return -1; }
    }
    if (!a->dataset) { fprintf(stderr, "usage: fidelity %s DATASET [options]\n", cmd); return -1; }
    if (is_describe && strcmp(a->format, "text") && strcmp(a->format, "json") && strcmp(a->format, "markdown")) {
        fprintf(stderr, "fidelity describe: --format must be text, json or markdown\n");
        return -1;
    }
    return 0;
}

/* hf:// arguments: describe fetches only the manifest (as the Python tool). */
static int resolve(args *a, int is_describe)
{
    a->hub.manifest_only = is_describe || a->o.manifest_only;
    a->hub.allow_partial = a->o.allow_partial;
    return fd_cli_hub_resolve(a->dataset, &a->hub, &a->local);
}

static int write_report(const fd_report *r, const char *path)
{
    jv *d = fd_report_to_json(r);
    fd_buf b = {0};
    fd_err e;
    int rc = jv_dump(d, &JV_PRETTY, &b, &e);
    if (!rc) {
        fd_buf_putc(&b, '\n');
        rc = fd_write_atomic(path, b.p, b.n, &e);
    }
    if (rc) fprintf(stderr, "fidelity: cannot write %s: %s\n", path, e.msg);
    fd_buf_free(&b);
    jv_free(d);
    return rc;
}

static const char *mget(const jv *m, const char *block, const char *key)
{
    const char *s = jv_get_str(jv_get(m, block), key);
    return s ? s : "None";
}

int cmd_verify(int argc, char **argv)
{
    args a;
    if (parse(argc, argv, &a, 0, "verify")) return FD_EXIT_USAGE;
    if (resolve(&a, 0)) return FD_EXIT_REFUSED;
    fd_report r;
    fd_validate_dataset(a.local, &a.o, &r);
    free(a.local);
    if (a.json_out && write_report(&r, a.json_out)) { fd_report_free(&r); return FD_EXIT_REFUSED; }
    if (r.n_errors) {
        printf("REFUSED [%s]: %s (%s)\n", r.errors[0].code, r.errors[0].message, r.errors[0].rule);
        printf("  remedy: there is no --force; fix the dataset or fetch it again\n");
        fd_report_free(&r);
        return FD_EXIT_REFUSED;
    }
    const jv *m = r.manifest;
    printf("VERIFIED %s\n", r.subject);
    printf("  dataset_sha256          %s\n", jv_get_str(m, "dataset_sha256"));
    printf("  capture_content_digest  %s\n", mget(m, "capture", "capture_content_digest"));
    printf("  head tensor content     %s\n", mget(m, "head", "tensor_content_sha256"));
    printf("  panel suite token hash  %s\n", mget(m, "panel", "suite_token_hash_sha256"));
    printf("  tensors recomputed      %s\n", a.o.manifest_only ? "NO (--manifest-only)"
                                             : a.o.verify_tensors ? "yes" : "NO (--no-verify-tensors)");
    for (size_t i = 0; i < r.n_warnings; i++)
        printf("  warning [%s/%s] %s\n", r.warnings[i].code, r.warnings[i].rule, r.warnings[i].message);
    int rc = r.n_warnings ? FD_EXIT_WARN : FD_EXIT_OK;
    fd_report_free(&r);
    return rc;
}

static void receipt_line(void *ctx, const char *code, const char *rule, const char *msg)
{
    fd_buf_printf(ctx, "  ERROR   [%s/%s] %s\n", code, rule, msg);
}

/* validate --receipt FILE: a comparison receipt on its own. */
static int validate_receipt_file(const char *path)
{
    fd_err e;
    jv *r = jv_parse_file(path, &e);
    if (!r) { printf("REFUSED [%s]: %s\n", e.code, e.msg); return FD_EXIT_REFUSED; }
    fd_buf lines = {0};   /* one pass: the count is printed before its findings */
    int n = fd_validate_receipt(r, receipt_line, &lines);
    printf("%s: %d error(s), 0 warning(s)\n", path, n);
    if (lines.n) fwrite(lines.p, 1, lines.n, stdout);
    fd_buf_free(&lines);
    jv_free(r);
    return n ? FD_EXIT_REFUSED : FD_EXIT_OK;
}

int cmd_validate(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--receipt")) {
            if (argc != 3) { fprintf(stderr, "usage: fidelity validate --receipt FILE\n"); return FD_EXIT_USAGE; }
            return validate_receipt_file(argv[i + 1]);
        }
    args a;
    if (parse(argc, argv, &a, 0, "validate")) return FD_EXIT_USAGE;
    if (resolve(&a, 0)) return FD_EXIT_REFUSED;
    fd_report r;
    fd_validate_dataset(a.local, &a.o, &r);
    free(a.local);
    if (a.json_out && write_report(&r, a.json_out)) { fd_report_free(&r); return FD_EXIT_REFUSED; }
    printf("%s: %zu error(s), %zu warning(s)\n", r.subject, r.n_errors, r.n_warnings);
    for (size_t i = 0; i < r.n_errors; i++) {
        fd_finding *f = &r.errors[i];
        printf("  ERROR   [%s/%s] %s%s%s%s\n", f->code, f->rule, f->message, *f->where ? "  (" : "", f->where, *f->where ? ")" : "");
    }
    for (size_t i = 0; i < r.n_warnings; i++)
        printf("  warning [%s/%s] %s\n", r.warnings[i].code, r.warnings[i].rule, r.warnings[i].message);
    jv *d = fd_report_to_json(&r);
    const jv *checks = jv_get(d, "checks_run");
    printf("  checks:");
    for (size_t i = 0; i < checks->u.a.n; i++) printf(" %s", checks->u.a.v[i]->u.s.p);
    printf("\n");
    jv_free(d);
    int rc = r.n_errors ? FD_EXIT_REFUSED : r.n_warnings ? FD_EXIT_WARN : FD_EXIT_OK;
    fd_report_free(&r);
    return rc;
}

/* Identity card from the manifest alone (after its seal is checked). */
int cmd_describe(int argc, char **argv)
{
    args a;
    if (parse(argc, argv, &a, 1, "describe")) return FD_EXIT_USAGE;
    if (resolve(&a, 1)) return FD_EXIT_REFUSED;
    fd_report r;
    fd_validate_opts o = {.manifest_only = 1};
    fd_validate_dataset(a.local, &o, &r);
    free(a.local);
    if (r.n_errors) {
        printf("REFUSED [%s]: %s (%s)\n", r.errors[0].code, r.errors[0].message, r.errors[0].rule);
        fd_report_free(&r);
        return FD_EXIT_REFUSED;
    }
    const jv *m = r.manifest;
    static const char *const rows[][3] = {
        {"id", "dataset", "id"}, {"name", "dataset", "name"}, {"role", "dataset", "role"},
        {"dataset_sha256", NULL, "dataset_sha256"}, {"created_utc", NULL, "created_utc"},
        {"capture_content_digest", "capture", "capture_content_digest"}, {"form", "capture", "form"},
        {"records", "capture", "records_count"}, {"scored_rows_total", "capture", "scored_rows_total"},
        {"hidden_width", "capture", "hidden_width"}, {"vocab_size", "capture", "vocab_size"},
        {"panel_id", "panel", "panel_id"}, {"suite_token_hash_sha256", "panel", "suite_token_hash_sha256"},
        {"head_tensor_content_sha256", "head", "tensor_content_sha256"}, {"scope_digest", "scope", "scope_digest"},
        {"weights_repository", "weights", "repository"}, {"lane", "runtime", "lane"},
        {"stack_fingerprint_sha256", "runtime", "stack_fingerprint_sha256"},
    };
    jv *card = jv_obj();
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
        const jv *v = rows[i][1] ? jv_get(jv_get(m, rows[i][1]), rows[i][2]) : jv_get(m, rows[i][2]);
        jv_set(card, rows[i][0], v ? jv_copy(v) : jv_null());
    }
    fd_buf b = {0};
    fd_err e;
    if (!strcmp(a.format, "json")) {
        jv_dump(card, &JV_PRETTY, &b, &e);
        printf("%s\n", b.p);
    } else {
        int md = !strcmp(a.format, "markdown");
        if (md) printf("| field | value |\n|---|---|\n");
        for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
            const jv *v = jv_get(card, rows[i][0]);
            b.n = 0;
            if (v->t == JV_STR) fd_buf_put(&b, v->u.s.p, v->u.s.n);
            else jv_dump(v, &JV_CANON, &b, &e);
            printf(md ? "| %s | `%s` |\n" : "%-27s %s\n", rows[i][0], fd_buf_cstr(&b));
        }
    }
    fd_buf_free(&b);
    jv_free(card);
    fd_report_free(&r);
    return FD_EXIT_OK;
}
