/* verify-k3-compat DATASET: the dataset must verify (the compat/ view is only
 * as trustworthy as the seal it sits inside), then the view is re-checked
 * against panel/panel.json and the capture manifest (k3compat.verify). */
#include "cli.h"
#include "format/k3compat.h"
#include "format/validate.h"
#include <stdio.h>
#include <string.h>

int cmd_verify_k3_compat(int argc, char **argv)
{
    const char *root = NULL, *view = NULL;
    int verify_tensors = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--view") && i + 1 < argc) view = argv[++i];
        else if (!strcmp(argv[i], "--no-verify-tensors")) verify_tensors = 0;
        else if (!strcmp(argv[i], "--verify-tensors")) verify_tensors = 1;
        else if (argv[i][0] != '-' && !root) root = argv[i];
        else root = NULL, i = argc;
    }
    if (!root) {
        fprintf(stderr, "usage: fidelity verify-k3-compat DATASET [--view DIR] [--no-verify-tensors]\n"
                        "  --view DIR: check a view outside the dataset (compare --emit-k3-compat's DIR/k3-compat/NAME)\n");
        return FD_EXIT_USAGE;
    }
    fd_validate_opts vo = {.verify_tensors = verify_tensors};
    fd_report r = {0};
    fd_validate_dataset(root, &vo, &r);
    if (r.n_errors) {
        printf("REFUSED [%s]: %s (%s)\n", r.errors[0].code, r.errors[0].message, r.errors[0].rule);
        fd_report_free(&r);
        return FD_EXIT_REFUSED;
    }
    fd_report_free(&r);
    jv *problems = jv_arr();
    fd_err e = {0};
    if (view ? fd_k3compat_verify_view(root, view, problems, &e) : fd_k3compat_verify(root, problems, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        jv_free(problems);
        return FD_EXIT_REFUSED;
    }
    size_t n = problems->u.a.n;
    for (size_t i = 0; i < n; i++) printf("  problem: %s\n", problems->u.a.v[i]->u.s.p);
    if (n) printf("REFUSED [k3_compat_mismatch]: %s: %zu problem(s) in %s, first: %s\n", root, n,
                   view ? view : "compat/", problems->u.a.v[0]->u.s.p);
    else printf("K3-COMPAT OK %s%s%s\n", root, view ? " view " : "", view ? view : "");
    jv_free(problems);
    return n ? FD_EXIT_REFUSED : FD_EXIT_OK;
}
