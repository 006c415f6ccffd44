/* report: sealed comparison receipts -> one self-contained HTML page with
 * inline SVG figures (report/report.h, docs/REPORT.md). */
#include "cli.h"
#include "report/report.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity report: %s\n", why);
    fprintf(stderr, "usage: fidelity report RECEIPT|DIR... --out FILE.html [--dataset DIR ...] [--summary-only]\n"
                    "  [--title TEXT] [--tokenizer tokenizer.json] [--panel DIR]\n"
                    "  RECEIPT: a comparison-receipt.json, the directory holding one, or a compare --out DIR\n"
                    "  with NN-LABEL/ subdirectories; --dataset: a candidate dataset whose weights.declared_bits\n"
                    "  places it on the size-against-KL plot; --summary-only: draw a receipt whose tokenwise\n"
                    "  file is missing or does not match from its summary statistics, with a visible note;\n"
                    "  --tokenizer: decode the drill-down's token ids; --panel: the panel the receipts scored,\n"
                    "  for the drill-down's left context (each row's observed token is checked against it)\n");
    return FD_EXIT_USAGE;
}

int cmd_report(int argc, char **argv)
{
    fd_rpt_opts o = {0};
    const char *out = NULL;
    o.receipts = calloc((size_t)argc, sizeof *o.receipts);
    o.datasets = calloc((size_t)argc, sizeof *o.datasets);
    int rc = FD_EXIT_OK;
    if (!o.receipts || !o.datasets) { rc = usage("out of memory"); goto done; }
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--out") && v) { out = v; i++; }
        else if (!strcmp(s, "--dataset") && v) { o.datasets[o.ndatasets++] = v; i++; }
        else if (!strcmp(s, "--title") && v) { o.title = v; i++; }
        else if (!strcmp(s, "--tokenizer") && v) { o.tokenizer = v; i++; }
        else if (!strcmp(s, "--panel") && v) { o.panel = v; i++; }
        else if (!strcmp(s, "--summary-only")) o.summary_only = 1;
        else if (!strncmp(s, "--", 2)) { rc = usage("bad or unknown option"); goto done; }
        else o.receipts[o.nreceipts++] = s;
    }
    if (!out || !o.nreceipts) { rc = usage("--out and at least one receipt are required"); goto done; }
    fd_err e = {0};
    if (fd_rpt_write(&o, out, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        rc = FD_EXIT_REFUSED;
        goto done;
    }
    printf("REPORT -> %s (%zu receipt argument%s)\n", out, o.nreceipts, o.nreceipts == 1 ? "" : "s");
done:
    free(o.receipts);
    free(o.datasets);
    return rc;
}
