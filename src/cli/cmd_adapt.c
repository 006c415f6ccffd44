/* adapt: foreign captures into a sealed fidelity dataset (docs/ADAPTERS.md). */
#include "cli.h"
#include "args.h"
#include <limits.h>
#include <stdint.h>
#include "adapt/adapt.h"
#include "format/writer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity adapt: %s\n", why);
    fprintf(stderr, "usage: fidelity adapt --source llamacpp-kld|k3v1|k3v0-window --in FILE.kld|DIR --out DIR [--head HEAD.safetensors]\n"
                    "  [--vocab N] [--tokenizer-id ID] [--weights-repository R] [--panel-id panel--X]\n"
                    "  [--dataset-id ID] [--name NAME] [--role derived|quant|root] [--lane " FD_LANES "] [--force]\n"
                    "  --head: the BF16 [vocab, hidden] head DECLARED to have produced the logits (lets a hidden-form\n"
                    "  dataset with the same head be compared against this one, HEAD-3); --vocab: refuse a file whose\n"
                    "  n_vocab differs; --tokenizer-id: the panel tokenizer id (must equal the partner dataset's)\n"
                    "  k3v1 / k3v0-window: --in is the artifact directory (suite-manifest.json, reference-hidden/ or ref/,\n"
                    "  lm-head/), or a dataset's compat/ view; [--limit N] first N contexts; [--emit-k3-compat]\n"
                    "  source malaiwah-serving-v2 is not implemented (refused)\n");
    return FD_EXIT_USAGE;
}

int cmd_adapt(int argc, char **argv)
{
    fd_adapt_opts o = {0};
    const char *source = NULL;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--force")) { o.force = 1; continue; }
        if (!strcmp(s, "--emit-k3-compat")) { o.emit_k3_compat = 1; continue; }
        if (!v || strncmp(s, "--", 2)) return usage("bad or unknown option");
        i++;
        if (!strcmp(s, "--source")) source = v;
        else if (!strcmp(s, "--in")) o.in = v;
        else if (!strcmp(s, "--out")) o.out = v;
        else if (!strcmp(s, "--head")) o.head = v;
        else if (!strcmp(s, "--vocab")) {
            long long n;
            if (fd_arg_int(v, 1, INT32_MAX, &n)) return usage("--vocab must be a positive integer (at most 2^31-1)");
            o.vocab = n;
        }
        else if (!strcmp(s, "--tokenizer-id")) o.tokenizer_id = v;
        else if (!strcmp(s, "--weights-repository")) o.weights_repository = v;
        else if (!strcmp(s, "--panel-id")) o.panel_id = v;
        else if (!strcmp(s, "--dataset-id")) o.dataset_id = v;
        else if (!strcmp(s, "--name")) o.name = v;
        else if (!strcmp(s, "--role")) o.role = v;
        else if (!strcmp(s, "--lane")) o.lane = v;
        else if (!strcmp(s, "--created-utc")) o.created_utc = v;
        else if (!strcmp(s, "--limit")) {
            long long n;
            if (fd_arg_int(v, 1, INT64_MAX, &n)) return usage("--limit must be a positive integer");
            o.limit = n;
        }
        else return usage("bad or unknown option");
    }
    if (!source || !o.in || !o.out) return usage("--source, --in and --out are required");
    if (o.role && strcmp(o.role, "root") && strcmp(o.role, "quant") && strcmp(o.role, "derived")) return usage("--role must be derived, quant or root");
    if (o.lane && !fd_lane_valid(o.lane)) return usage("--lane must be one of " FD_LANES);
    int k3 = !strcmp(source, "k3v1") || !strcmp(source, "k3v0-window");
    if (strcmp(source, "llamacpp-kld") && !k3) {
        if (!strcmp(source, "malaiwah-serving-v2")) {
            printf("REFUSED [not_implemented]: adapt --source malaiwah-serving-v2 is not implemented in this build "
                            "(glm53flash-fidelity-capture/2 needs its suite and head directories); llamacpp-kld, k3v1 and "
                            "k3v0-window are (docs/ADAPTERS.md)\n");
            return FD_EXIT_REFUSED;
        }
        return usage("--source must be llamacpp-kld, k3v1, k3v0-window or malaiwah-serving-v2");
    }
    if (!k3 && (o.limit || o.emit_k3_compat)) return usage("--limit and --emit-k3-compat apply to the k3 sources only");
    fd_err e = {0};
    char summary[512];
    if (k3 ? fd_adapt_k3(&o, source, summary, &e) : fd_adapt_llamacpp_kld(&o, summary, &e)) {
        printf("REFUSED [%s]: %s%s%s%s\n", e.code, e.msg, *e.rule ? " (" : "", e.rule, *e.rule ? ")" : "");
        return !strcmp(e.code, "bad_usage") ? FD_EXIT_USAGE : FD_EXIT_REFUSED;
    }
    if (k3) {
        printf("SEALED DATASET -> %s\n  adapted from the kimi-k3 artifact %s (%s)\n  role derived, head quantization unknown "
               "(D-1): every comparison against it is advisory\n", o.out, o.in, summary);
        return FD_EXIT_OK;
    }
    printf("SEALED DATASET -> %s\n  adapted from llama.cpp .kld %s (%s)\n  logit form, lossy_codec declared: every comparison "
           "against it is advisory\n", o.out, o.in, summary);
    return FD_EXIT_OK;
}
