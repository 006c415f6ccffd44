#include "hub_args.h"
#include "cli.h"
#include <stdio.h>
#include <string.h>

int fd_cli_hub_flag(int argc, char **argv, int *i, fd_fetch_opts *o)
{
    const char *s = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(s, "--cache") && v) { o->cache = v; ++*i; return 1; }
    if (!strcmp(s, "--token-file") && v) { o->token_file = v; ++*i; return 1; }
    return 0;
}

/* Q's remedies: the status decides the advice. */
static const char *remedy(const fd_err *e)
{
    if (strstr(e->msg, "HTTP 429")) return "the Hub is rate-limiting this client; wait and run again "
                                           "(files already verified are reused)";
    if (strstr(e->msg, "HTTP 401") || strstr(e->msg, "HTTP 403"))
        return "the dataset needs a token: pass --token-file FILE (mode 0600) or set HF_TOKEN";
    if (strstr(e->msg, "HTTP 404")) return "check the repository name and the revision (hf://owner/name@revision)";
    if (!strcmp(e->rule, "HUB-TOKEN")) return "chmod 600 the token file, owned by you, not a symlink";
    if (!strcmp(e->rule, "HUB-NET")) return "check HF_ENDPOINT and the network; a rerun resumes";
    return "the remote dataset is not what its own manifest and checksums.txt say; nothing unverified was kept";
}

int fd_cli_hub_refuse(const fd_err *e)
{
    printf("REFUSED [%s]: %s (%s)\n", e->code, e->msg, e->rule);
    printf("  remedy: %s\n", remedy(e));
    return FD_EXIT_REFUSED;
}

int fd_cli_hub_resolve(const char *arg, const fd_fetch_opts *o, char **local)
{
    fd_err e = {0};
    if (!fd_hub_resolve_arg(arg, o, local, &e)) return 0;
    fd_cli_hub_refuse(&e);
    return -1;
}
