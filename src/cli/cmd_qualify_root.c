/* qualify-root --local --model-dir DIR --first A --repeat B --first-label L1
 * --repeat-label L2 --first-verify A.json --repeat-verify B.json
 * --comparison R.json --out Q.json [--job-out J] [--measurer M]
 * (compare/qualify.h). */
#include "cli.h"
#include "compare/qualify.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity qualify-root: %s\n", why);
    fprintf(stderr, "usage: fidelity qualify-root --local --model-dir DIR --first A --repeat B --first-label L1\n"
                    "  --repeat-label L2 --first-verify A.verify.json --repeat-verify B.verify.json\n"
                    "  --comparison RECEIPT --out QUALIFICATION.json [--job-out JOB.json] [--measurer HANDLE]\n");
    return FD_EXIT_USAGE;
}

static void refuse(const char *code, const char *msg)
{
    printf("REFUSED [%s]: %s\n", code, msg);
}

int cmd_qualify_root(int argc, char **argv)
{
    fd_qualify_opts o = {0};
    const char *job = NULL;
    int local = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = !strcmp(s, "--first") ? &o.first : !strcmp(s, "--repeat") ? &o.repeat
                          : !strcmp(s, "--first-label") ? &o.first_label : !strcmp(s, "--repeat-label") ? &o.repeat_label
                          : !strcmp(s, "--first-verify") ? &o.first_verify : !strcmp(s, "--repeat-verify") ? &o.repeat_verify
                          : !strcmp(s, "--comparison") ? &o.comparison : !strcmp(s, "--model-dir") ? &o.model_dir
                          : !strcmp(s, "--out") ? &o.out : !strcmp(s, "--job-out") ? &o.job_out
                          : !strcmp(s, "--measurer") ? &o.measurer : !strcmp(s, "--job") ? &job : NULL;
        if (!strcmp(s, "--local")) local = 1;
        else if (slot && v) { *slot = v; i++; }
        else return usage(s);
    }
    if (!o.first || !o.repeat || !o.first_label || !o.repeat_label || !o.first_verify || !o.repeat_verify ||
        !o.comparison || !o.out)
        return usage("--first, --repeat, --first-label, --repeat-label, --first-verify, --repeat-verify, --comparison "
                     "and --out are required");
    char *a = realpath(o.first, NULL), *b = realpath(o.repeat, NULL);
    int same = a && b && !strcmp(a, b);
    free(a);
    free(b);
    if (same) { refuse("same_root", "root qualification needs two distinct dataset paths"); return FD_EXIT_REFUSED; }
    if (!strcmp(o.first_label, o.repeat_label)) {
        refuse("same_process_label", "the two cold capture process labels must differ");
        return FD_EXIT_REFUSED;
    }
    if (local == !!job) {
        refuse("job_or_local", "pass exactly one of --job (a controller-written job.json) or --local --model-dir DIR "
                               "(derive the contract from the captures)");
        return FD_EXIT_REFUSED;
    }
    if (job) {
        refuse("job_or_local", "this build qualifies --local roots only; a controller-written job.json (the pod path) "
                               "is the Python tool's");
        return FD_EXIT_REFUSED;
    }
    if (!o.model_dir) {
        refuse("model_dir_required", "--local needs --model-dir: the checkpoint directory both captures ran from "
                                     "(config.json and the shards are bound to the census the captures hashed)");
        return FD_EXIT_REFUSED;
    }
    jv *receipt = NULL, *contract = NULL;
    char *job_path = NULL;
    fd_err e;
    if (fd_qualify_root_local(&o, &receipt, &contract, &job_path, &e)) {
        refuse(e.code, e.msg);
        return FD_EXIT_REFUSED;
    }
    const jv *le = jv_get(receipt, "local_execution");
    printf("ROOT QUALIFIED %s\n", o.first);
    printf("  repeat              %s\n", o.repeat);
    printf("  comparison          exact +0.0 mean/max, top-1 1.0\n");
    printf("  execution           local (%s, %s; no pod attestation)\n", jv_get_str(le, "device"),
           jv_get_str(le, "engine") ? jv_get_str(le, "engine") : "?");
    printf("  job contract        %s\n", job_path);
    printf("  receipt             %s\n", o.out);
    printf("  receipt_sha256      %s\n", jv_get_str(receipt, "receipt_sha256"));
    jv_free(receipt);
    jv_free(contract);
    free(job_path);
    return FD_EXIT_OK;
}
