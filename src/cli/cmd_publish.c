/* publish DATASET --repo OWNER/NAME --qualification Q.json --job J.json
 * --expected-head absent|40HEX [--revision-message M] [--token-file F]
 * [--dry-run] [--receipt FILE] [--cache DIR] (hub/publish.h). */
#include "cli.h"
#include "hub/publish.h"
#include <stdio.h>
#include <string.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity publish: %s\n", why);
    fprintf(stderr, "usage: fidelity publish DATASET --repo OWNER/NAME --qualification Q.json --job JOB.json\n"
                    "  --expected-head absent|40_HEX [--revision-message M] [--token-file F] [--dry-run]\n"
                    "  [--receipt FILE] [--cache DIR]\n"
                    "  [--result-archive F --expected-archive-sha256 H --expected-archive-bytes N] (pod path: refused)\n");
    return FD_EXIT_USAGE;
}

static int hex40(const char *s)
{
    return strlen(s) == 40 && strspn(s, "0123456789abcdef") == 40;
}

static int positive_int(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s) && strspn(s, "0") < strlen(s) && strlen(s) < 19;
}

int cmd_publish(int argc, char **argv)
{
    fd_publish_opts o = {0};
    int priv = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = !strcmp(s, "--repo") ? &o.repo : !strcmp(s, "--qualification") ? &o.qualification
                          : !strcmp(s, "--job") ? &o.job : !strcmp(s, "--expected-head") ? &o.expected_head
                          : !strcmp(s, "--revision-message") ? &o.message : !strcmp(s, "--token-file") ? &o.token_file
                          : !strcmp(s, "--receipt") ? &o.receipt : !strcmp(s, "--cache") ? &o.cache
                          : !strcmp(s, "--result-archive") ? &o.result_archive
                          : !strcmp(s, "--expected-archive-sha256") ? &o.archive_sha256
                          : !strcmp(s, "--expected-archive-bytes") ? &o.archive_bytes : NULL;
        if (!strcmp(s, "--dry-run")) o.dry_run = 1;
        else if (!strcmp(s, "--private")) priv = 1;
        else if (slot && v) { *slot = v; i++; }
        else if (s[0] == '-' && s[1]) return usage(s);
        else if (!o.dataset) o.dataset = s;
        else return usage(s);
    }
    if (!o.dataset || !o.repo || !o.qualification || !o.job || !o.expected_head)
        return usage("DATASET, --repo, --qualification, --job and --expected-head are required");
    if (strcmp(o.expected_head, "absent") && !hex40(o.expected_head))
        return usage("expected HEAD must be 'absent' or an exact lowercase 40-hex revision");
    if (priv) {
        printf("REFUSED [public_publication_required]: canonical root publication must be anonymously readable; "
               "--private is refused\n");
        return FD_EXIT_REFUSED;
    }
    if (o.archive_bytes && !positive_int(o.archive_bytes))
        return usage("--expected-archive-bytes must be a positive integer");
    int rc = fd_publish_route(&o);
    return rc ? rc : fd_publish(&o);
}
