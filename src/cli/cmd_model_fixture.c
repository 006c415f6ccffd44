/* fixture --preset NAME --seed N --out DIR [--force]: a random-init
 * checkpoint of an architecture's preset with a synthetic token panel
 * (capture/fixture.h).  Exit 0 ok, 3 refused, 4 usage. */
#include "capture/fixture.h"
#include "cli.h"
#include "args.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity fixture: %s\n", why);
    char names[1024];
    fd_fixture_preset_names(names, sizeof names);
    fprintf(stderr, "usage: fidelity fixture --preset %s --seed N --out DIR [--force]\n", names);
    return FD_EXIT_USAGE;
}

int cmd_model_fixture(int argc, char **argv)
{
    const char *preset = NULL, *seed_s = NULL, *out = NULL;
    int force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(NULL); return FD_EXIT_OK; }
        else if (!strcmp(a, "--force")) force = 1;
        else if (!strcmp(a, "--preset") || !strcmp(a, "--seed") || !strcmp(a, "--out")) {
            if (i + 1 >= argc) return usage("an option is missing its value");
            const char *v = argv[++i];
            if (!strcmp(a, "--preset")) preset = v;
            else if (!strcmp(a, "--seed")) seed_s = v;
            else out = v;
        } else return usage("unknown argument");
    }
    if (!preset) return usage("--preset is required");
    if (!seed_s) return usage("--seed is required");
    if (!out || !*out) return usage("--out is required");
    const fd_fixture_preset *p = fd_fixture_preset_find(preset);
    if (!p) return usage("unknown preset");
    unsigned long long seed;
    if (fd_arg_uint(seed_s, 0, UINT64_MAX, &seed)) return usage("--seed must be a non-negative integer");

    fd_err e;
    fd_err_clear(&e);
    fd_fixture_result r;
    if (fd_fixture_write(p, (uint64_t)seed, out, force, &r, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        return FD_EXIT_REFUSED;
    }
    printf("fixture: preset %s seed %llu -> %s\n", p->name, seed, out);
    printf("dims: vocab %lld hidden %lld layers %lld heads %lld q_lora %lld kv_lora %lld qk_nope %lld qk_rope %lld "
           "v %lld intermediate %lld moe_intermediate %lld experts %lld top-%lld shared %lld indexer %lldx%lld top-k %lld\n",
           (long long)p->vocab, (long long)p->hidden, (long long)p->layers, (long long)p->heads, (long long)p->q_lora,
           (long long)p->kv_lora, (long long)p->dn, (long long)p->dr, (long long)p->dv, (long long)p->inter,
           (long long)p->moe_inter, (long long)p->experts, (long long)p->top_k, (long long)p->shared,
           (long long)p->idx_heads, (long long)p->idx_dim, (long long)p->idx_topk);
    printf("tensors: %zu\n", r.tensors);
    printf("parameters: %llu (+ %llu fp32 router-bias elements = %llu)\n", (unsigned long long)r.params,
           (unsigned long long)r.bias_elems, (unsigned long long)(r.params + r.bias_elems));
    printf("model.safetensors: %llu bytes\n", (unsigned long long)r.weight_bytes);
    printf("panel: %zu x %zu tokens, suite_token_hash_sha256 %s\n", r.panel_windows, r.panel_len,
           r.suite_token_hash_sha256);
    return FD_EXIT_OK;
}
