/* card: a model card (model-index + x_fidelity) from comparison receipts,
 * merged into an existing README when given; --check re-reads a card and
 * verifies it against the receipts it cites. */
#include "cli.h"
#include "card/card.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr, "usage: fidelity card --receipt FILE [--receipt FILE ...] --out README.md [--card EXISTING.md]\n"
                    "         [--model-name NAME] [--base-model REPO] [--panel-repository REPO] [--panel-revision REV]\n"
                    "       fidelity card --check README.md --receipt FILE [--receipt FILE ...]\n");
    return FD_EXIT_USAGE;
}

int cmd_card(int argc, char **argv)
{
    fd_card_opts o = {0};
    const char **rs = fd_xcalloc((size_t)argc, sizeof *rs);
    const char *out = NULL, *existing = NULL, *check = NULL;
    int rc = FD_EXIT_OK;
    for (int i = 1; i < argc; i += 2) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "fidelity card: bad or unknown option %s\n", s); rc = usage(); goto done; }
        if (!strcmp(s, "--receipt")) rs[o.nreceipts++] = v;
        else if (!strcmp(s, "--out")) out = v;
        else if (!strcmp(s, "--card")) existing = v;
        else if (!strcmp(s, "--check")) check = v;
        else if (!strcmp(s, "--model-name")) o.model_name = v;
        else if (!strcmp(s, "--base-model")) o.base_model = v;
        else if (!strcmp(s, "--panel-repository")) o.panel_repository = v;
        else if (!strcmp(s, "--panel-revision")) o.panel_revision = v;
        else { fprintf(stderr, "fidelity card: bad or unknown option %s\n", s); rc = usage(); goto done; }
    }
    o.receipts = rs;
    if (!o.nreceipts || !!check == !!out) { rc = usage(); goto done; }
    fd_err e = {0};
    if (check) {
        if (fd_card_check(check, &o, &e)) {
            printf("REFUSED [%s]: %s (%s)\n", e.code, e.msg, e.rule);
            rc = FD_EXIT_REFUSED;
        } else printf("CARD OK %s: %zu measurement(s), every value equal to its sealed receipt\n", check, o.nreceipts);
        goto done;
    }
    jv *mi = NULL, *x = NULL, *top = NULL;
    fd_buf old = {0}, text = {0};
    if ((existing && fd_read_file(existing, 16 << 20, &old, &e)) || fd_card_build(&o, &mi, &x, &top, &e) ||
        fd_card_render(existing ? old.p : NULL, old.n, mi, x, top, &text, &e) ||
        fd_write_atomic(out, text.p, text.n, &e)) {
        printf("REFUSED [%s]: %s (%s)\n", e.code, e.msg, e.rule);
        rc = FD_EXIT_REFUSED;
    } else {
        if (jv_get(x, "reference_model")->t == JV_NULL)
            fprintf(stderr, "fidelity card: warning: x_fidelity.reference_model is null: the reference receipt side "
                            "names no weights repository (GEN-11)\n");
        printf("CARD -> %s (%zu measurement(s))\n", out, o.nreceipts);
    }
    jv_free(mi);
    jv_free(x);
    jv_free(top);
    fd_buf_free(&old);
    fd_buf_free(&text);
done:
    free(rs);
    return rc;
}
