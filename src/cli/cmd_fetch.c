/* fetch hf://owner/name[@rev]: the verified, resumable download into the
 * cache, then the format's own verification of what arrived. */
#include "cli.h"
#include "hub_args.h"
#include "format/json.h"
#include "format/validate.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr, "usage: fidelity fetch hf://owner/name[@revision] [--cache DIR] [--token-file PATH]\n"
                    "  [--allow-partial] [--manifest-only] [--no-verify-tensors] [--progress]\n"
                    "  env: HF_ENDPOINT (default " FD_HUB_DEFAULT_ENDPOINT "), HF_TOKEN, HUGGING_FACE_HUB_TOKEN,\n"
                    "       FIDELITY_CACHE (default ~/.cache/fidelity/datasets)\n");
    return FD_EXIT_USAGE;
}

int cmd_fetch(int argc, char **argv)
{
    fd_fetch_opts o = {0};
    const char *ref = NULL;
    int verify_tensors = 1;
    o.progress = isatty(2);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (fd_cli_hub_flag(argc, argv, &i, &o)) continue;
        if (!strcmp(s, "--allow-partial")) o.allow_partial = 1;
        else if (!strcmp(s, "--manifest-only")) o.manifest_only = 1;
        else if (!strcmp(s, "--progress")) o.progress = 1;
        else if (!strcmp(s, "--no-verify-tensors")) verify_tensors = 0;
        else if (s[0] == '-' || ref) { fprintf(stderr, "fidelity fetch: bad or unknown argument %s\n", s); return usage(); }
        else ref = s;
    }
    if (!ref) return usage();
    if (!fd_hub_is_ref(ref)) { fprintf(stderr, "fidelity fetch: '%s' is not an hf:// reference\n", ref); return usage(); }
    char *root = NULL;
    fd_fetch_stats st;
    fd_err e = {0};
    if (fd_hub_fetch(ref, &o, &root, &st, &e)) return fd_cli_hub_refuse(&e);
    printf("FETCHED %s -> %s\n", ref, root);
    printf("  files downloaded %zu, reused %zu (re-verified), resumed %zu\n", st.downloaded, st.reused, st.resumed);
    fd_validate_opts vo = {.verify_tensors = verify_tensors, .manifest_only = o.manifest_only,
                           .allow_partial = o.allow_partial};
    fd_report r;
    fd_validate_dataset(root, &vo, &r);
    int rc = FD_EXIT_OK;
    if (r.n_errors) {
        printf("REFUSED [%s]: %s (%s)\n", r.errors[0].code, r.errors[0].message, r.errors[0].rule);
        rc = FD_EXIT_REFUSED;
    } else {
        printf("VERIFIED %s\n", root);
        printf("  dataset_sha256          %s\n", jv_get_str(r.manifest, "dataset_sha256"));
        for (size_t i = 0; i < r.n_warnings; i++)
            printf("  warning [%s/%s] %s\n", r.warnings[i].code, r.warnings[i].rule, r.warnings[i].message);
        rc = r.n_warnings ? FD_EXIT_WARN : FD_EXIT_OK;
    }
    fd_report_free(&r);
    free(root);
    return rc;
}
