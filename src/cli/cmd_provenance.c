/* provenance-template [--out FILE]: the skeleton compare --emit-submission
 * --submission-provenance FILE needs, every required key present and empty. */
#include "cli.h"
#include "compare/submission.h"
#include "util/fsio.h"
#include <stdio.h>
#include <string.h>

int cmd_provenance_template(int argc, char **argv)
{
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else { fprintf(stderr, "usage: fidelity provenance-template [--out FILE]\n"); return FD_EXIT_USAGE; }
    }
    jv *t = fd_provenance_template();
    fd_buf b = {0};
    fd_err e = {0};
    int rc = jv_dump(t, &JV_PRETTY, &b, &e);
    fd_buf_putc(&b, '\n');
    if (!rc && out) rc = fd_write_atomic(out, b.p, b.n, &e);
    else if (!rc) fwrite(b.p, 1, b.n, stdout);
    if (rc) printf("REFUSED [%s]: %s\n", e.code, e.msg);
    else if (out) printf("PROVENANCE TEMPLATE -> %s\n", out);
    fd_buf_free(&b);
    jv_free(t);
    return rc ? FD_EXIT_REFUSED : FD_EXIT_OK;
}
