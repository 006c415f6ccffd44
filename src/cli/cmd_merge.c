/* merge: the shards of a distributed capture -> the full sealed dataset
 * (capture/merge.h, docs/MPI.md). */
#include "cli.h"
#include "capture/merge.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity merge: %s\n", why);
    fprintf(stderr, "usage: fidelity merge SHARD_DIR... --out DIR [--force] [--created-utc T]\n"
                    "  SHARD_DIR: the OUT.shard-R-of-T datasets of `mpirun -np T fidelity capture ... --out OUT`\n");
    return FD_EXIT_USAGE;
}

int cmd_merge(int argc, char **argv)
{
    const char **shards = fd_xcalloc((size_t)argc + 1, sizeof *shards);
    fd_merge_opts o = {0};
    int rc = FD_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--out") && v) { o.out = v; i++; }
        else if (!strcmp(s, "--created-utc") && v) { o.created_utc = v; i++; }
        else if (!strcmp(s, "--force")) o.force = 1;
        else if (s[0] == '-' && s[1] == '-') { rc = usage("unknown option"); goto done; }
        else shards[o.n++] = s;
    }
    if (!o.out || !o.n) { rc = usage("--out and at least one shard are required"); goto done; }
    o.shards = shards;
    fd_err e = {0};
    jv *m = NULL;
    if (fd_merge_shards(&o, &m, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        rc = FD_EXIT_REFUSED;
        goto done;
    }
    printf("SEALED DATASET -> %s (merged from %zu shard%s)\n  dataset_sha256          %s\n  capture_content_digest  %s\n",
           o.out, o.n, o.n == 1 ? "" : "s", jv_get_str(m, "dataset_sha256"),
           jv_get_str(jv_get(m, "capture"), "capture_content_digest"));
    jv_free(m);
done:
    free(shards);
    return rc;
}
