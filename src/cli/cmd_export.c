/* export: a fidelity dataset into a foreign format (docs/ADAPTERS.md). */
#include "cli.h"
#include "adapt/adapt.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity export: %s\n", why);
    fprintf(stderr, "usage: fidelity export --format llamacpp-kld --dataset DIR --out FILE.kld [--kld-window 16|24]\n"
                    "  [--no-verify-tensors] [--kernel scalar|avx2|avx512f|avx512bf16|neon|neon-bf16] [--force]\n"
                    "  a hidden-form dataset replayed through its own head and packed as llama.cpp's\n"
                    "  --kl-divergence-base file (the second half of every window; 16-nat floor as upstream,\n"
                    "  24 as ik_llama.cpp)\n");
    return FD_EXIT_USAGE;
}

int cmd_export(int argc, char **argv)
{
    fd_export_opts o = {.window = 16, .verify_tensors = 1};
    const char *format = NULL;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--force")) o.force = 1;
        else if (!strcmp(s, "--no-verify-tensors")) o.verify_tensors = 0;
        else if (!strcmp(s, "--verify-tensors")) o.verify_tensors = 1;
        else if (!v || strncmp(s, "--", 2)) return usage("bad or unknown option");
        else if (!strcmp(s, "--format")) { format = v; i++; }
        else if (!strcmp(s, "--dataset")) { o.dataset = v; i++; }
        else if (!strcmp(s, "--out")) { o.out = v; i++; }
        else if (!strcmp(s, "--kernel")) { o.kernel = v; i++; }
        else if (!strcmp(s, "--kld-window")) {
            o.window = !strcmp(v, "16") ? 16 : !strcmp(v, "24") ? 24 : 0;
            i++;
            if (!o.window) return usage("--kld-window must be 16 or 24");
        } else return usage("bad or unknown option");
    }
    if (!format || !o.dataset || !o.out) return usage("--format, --dataset and --out are required");
    if (strcmp(format, "llamacpp-kld")) return usage("--format must be llamacpp-kld");
    fd_err e = {0};
    char summary[512];
    if (fd_export_llamacpp_kld(&o, summary, &e)) {
        printf("REFUSED [%s]: %s%s%s%s\n", e.code, e.msg, *e.rule ? " (" : "", e.rule, *e.rule ? ")" : "");
        return !strcmp(e.code, "bad_usage") ? FD_EXIT_USAGE : FD_EXIT_REFUSED;
    }
    printf("EXPORTED -> %s\n  llama.cpp --kl-divergence-base layout: %s\n  score a llama.cpp candidate with: llama-perplexity "
           "-m MODEL --kl-divergence-base %s --kl-divergence\n", o.out, summary, o.out);
    return FD_EXIT_OK;
}
