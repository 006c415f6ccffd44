/* reseal DATASET --out DIR [--receipt FILE] [--dry-run]: the Python tool's
 * reseal (src/format/reseal.h). */
#include "cli.h"
#include "format/reseal.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_reseal(int argc, char **argv)
{
    const char *dataset = NULL, *out = NULL, *receipt = NULL;
    int dry = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(s, "--receipt") && i + 1 < argc) receipt = argv[++i];
        else if (!strcmp(s, "--dry-run")) dry = 1;
        else if (s[0] == '-' && s[1]) { fprintf(stderr, "fidelity reseal: unknown option %s\n", s); return FD_EXIT_USAGE; }
        else if (!dataset) dataset = s;
        else { fprintf(stderr, "fidelity reseal: unexpected argument %s\n", s); return FD_EXIT_USAGE; }
    }
    if (!dataset || (!out && !dry)) {
        fprintf(stderr, "usage: fidelity reseal DATASET --out DIR [--receipt FILE] [--dry-run]\n");
        return FD_EXIT_USAGE;
    }
    fd_reseal_plan plan;
    fd_err e;
    if (fd_reseal(dataset, out, dry, &plan, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        printf("  remedy: a reseal repairs exactly validation/structural-validation.json's subject on a dataset "
               "that verifies; anything else is a re-capture\n");
        return FD_EXIT_REFUSED;
    }
    const jv *r = plan.receipt;
    const jv *m = jv_get(r, "members_rewritten")->u.a.v[0];
    if (dry) {
        printf("DRY RUN -- nothing written\n");
        printf("  from dataset_sha256     %s\n", jv_get_str(r, "from_dataset_sha256"));
        printf("  capture_content_digest  %s (unchanged)\n", jv_get_str(r, "capture_content_digest"));
        printf("  would rewrite           %s.%s (value sha256 %s -> '%s')\n", jv_get_str(m, "path"),
               jv_get_str(m, "field"), jv_get_str(m, "original_value_sha256"), jv_get_str(m, "resealed_value"));
        printf("  would add               %s, dataset.resealed, disclosure resealed_validation_subject, "
               "README.md note\n", FD_RESEAL_RECEIPT_NAME);
        printf("  member sha256           %s -> %s\n", jv_get_str(m, "original_sha256"), jv_get_str(m, "resealed_sha256"));
        if (out) printf("  out                     %s (absent)\n", out);
        fd_reseal_plan_free(&plan);
        return FD_EXIT_OK;
    }
    if (receipt) {
        fd_buf b = {0};
        int rc = jv_dump(r, &JV_PRETTY, &b, &e);
        if (!rc) { fd_buf_putc(&b, '\n'); rc = fd_write_atomic(receipt, b.p, b.n, &e); }
        fd_buf_free(&b);
        if (rc) {
            printf("REFUSED [%s]: %s (the resealed dataset %s was written)\n", e.code, e.msg, out);
            fd_reseal_plan_free(&plan);
            return FD_EXIT_REFUSED;
        }
    }
    printf("RESEALED %s\n", out);
    printf("  from dataset_sha256     %s\n", jv_get_str(r, "from_dataset_sha256"));
    printf("  dataset_sha256          %s\n", jv_get_str(r, "resealed_dataset_sha256"));
    printf("  capture_content_digest  %s (unchanged)\n", jv_get_str(r, "capture_content_digest"));
    printf("  members rewritten       %s.%s\n", jv_get_str(m, "path"), jv_get_str(m, "field"));
    printf("  receipt                 %s\n", FD_RESEAL_RECEIPT_NAME);
    fd_reseal_plan_free(&plan);
    return FD_EXIT_OK;
}
