#include "cli.h"
#include "format/version.h"
#include <stdio.h>
#include <string.h>

static const struct { const char *name; int (*fn)(int, char **); const char *help; } CMDS[] = {
    {"verify", cmd_verify, "verify DATASET: seals, checksums, digests; refuse on the first error"},
    {"validate", cmd_validate, "validate DATASET: report every finding"},
    {"describe", cmd_describe, "describe DATASET [--format text|json|markdown]: identity card"},
    {"fetch", cmd_fetch, "fetch hf://owner/name[@rev] [--cache DIR] [--token-file F] [--allow-partial] [--manifest-only]: verified, resumable download"},
    {"compare", cmd_compare, "compare --reference A --candidate B [...] --out DIR: full-vocabulary KL, sealed receipts"},
    {"card", cmd_card, "card --receipt FILE... --out README.md [--card EXISTING] | card --check README.md --receipt FILE...: model card (model-index + x_fidelity)"},
    {"paired", cmd_paired, "paired RECEIPT_A RECEIPT_B --out FILE [--reference DATASET] [--tie-tolerance NATS]: B - A of two receipts of one reference"},
    {"provenance-template", cmd_provenance_template, "provenance-template [--out FILE]: the skeleton for compare --emit-submission --submission-provenance FILE"},
    {"report", cmd_report, "report RECEIPT|DIR... --out FILE.html [--dataset DIR ...]: HTML comparison report with inline SVG plots"},
    {"panel", cmd_panel, "panel build --out DIR --vocab V INPUT... | panel check DIR --vocab V: upstream token panels"},
    {"quantize", cmd_quantize, "quantize --src DIR --dst DIR --match SUBSTR [--bits N] [--emit-scope F]: toy RTN candidate (FORMAT §7)"},
    {"demo", cmd_demo, "demo [--out DIR]: write a small sealed dataset and verify it"},
    {"write-fixture", cmd_write_fixture, "write-fixture --out DIR [--records N ...]: synthetic dataset"},
    {"kernel-selftest", cmd_kernel_selftest, "kernel-selftest [--products N]: prove every kernel path bit-identical"},
    {"debug-logits", cmd_debug_logits, "debug-logits DATASET CONTEXT OUT.f32: canonical logits of one context (tests)"},
    {"debug-kl", cmd_debug_kl, "debug-kl REF.f32 CAND.f32 VOCAB: the canonical KL/JS of raw fp32 logit rows on every path (tests)"},
    {"inspect-model", cmd_inspect_model, "inspect-model DIR|FILE.gguf [--json]: config and tensor check of a checkpoint; a GGUF's metadata, tensors, type census and bits per weight"},
    {"fixture", cmd_model_fixture, "fixture --preset tiny|flash-0.1b|small --seed N --out DIR: a random-init glm_moe_dsa checkpoint"},
    {"capture", cmd_capture, "capture --model DIR --panel DIR --out DIR --role root|quant --lane L --dataset-id ID --dataset-name NAME [...]"},
    {"merge", cmd_merge, "merge SHARD_DIR... --out DIR: the shards of `mpirun -np N fidelity capture` as one sealed dataset"},
    {"tokenize", cmd_tokenize, "tokenize --tokenizer PATH [--add-special] [--decode] FILE...: tokenizer.json encode/decode"},
    {"adapt", cmd_adapt, "adapt --source llamacpp-kld --in FILE.kld --out DIR [--head F]: a llama.cpp .kld as a sealed logit-form dataset"},
    {"export", cmd_export, "export --format llamacpp-kld --dataset DIR --out FILE.kld: a hidden-form dataset as a llama.cpp .kld base file"},
    {"verify-k3-compat", cmd_verify_k3_compat, "verify-k3-compat DATASET: the dataset verifies and its compat/ kimi-k3 view is faithful"},
    {"debug-gguf-dequant", cmd_debug_gguf_dequant, "debug-gguf-dequant TYPE IN.bin OUT.f32 [OUT.bf16] | --tensor FILE.gguf NAME OUT.f32 [OUT.bf16]: ggml blocks -> float32 (and bf16) (tests)"},
    {"reseal", cmd_reseal, "reseal DATASET --out DIR [--receipt FILE] [--dry-run]: repair a private validation subject, re-seal"},
    {"architectures", cmd_architectures, "architectures list|show NAME|prepare --model DIR --panel DIR --out DIR: supported architectures/formats, a run plan"},
    {"panel-binding", cmd_panel_binding, "panel-binding --panel DIR --tokenizer-root DIR [--role R] --out FILE: the ResolvedPanel contract a root capture binds"},
    {"qualify-root", cmd_qualify_root, "qualify-root --local --model-dir DIR --first A --repeat B ... --out Q.json: two cold captures + exact-zero self-compare -> sealed qualification"},
    {"publish", cmd_publish, "publish DATASET --repo OWNER/NAME --qualification Q --job J --expected-head absent|SHA [--dry-run]: one Hub commit, verified anonymously"},
    {"debug-json", cmd_debug_json, "debug-json: JSON lines on stdin -> digests of each form (tests)"},
};

static int usage(FILE *f)
{
    fprintf(f, "usage: fidelity COMMAND [ARGS]      (fidelity help COMMAND, fidelity COMMAND --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof CMDS / sizeof *CMDS; i++) fprintf(f, "  %s\n", CMDS[i].help);
    fprintf(f, "\nexit codes: 0 ok, 2 warnings, 3 refused, 4 usage\n");
    return FD_EXIT_USAGE;
}

static int find(const char *name)
{
    for (size_t i = 0; i < sizeof CMDS / sizeof *CMDS; i++)
        if (!strcmp(name, CMDS[i].name)) return (int)i;
    return -1;
}

static int unknown(const char *name)
{
    const char *names[sizeof CMDS / sizeof *CMDS];
    for (size_t i = 0; i < sizeof CMDS / sizeof *CMDS; i++) names[i] = CMDS[i].name;
    const char *s = fd_cli_suggest(name, names, sizeof CMDS / sizeof *CMDS);
    if (s) fprintf(stderr, "fidelity: unknown command '%s'; did you mean '%s'?\n", name, s);
    else fprintf(stderr, "fidelity: unknown command '%s' (fidelity help lists them)\n", name);
    return FD_EXIT_USAGE;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage(stderr);
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) { usage(stdout); return 0; }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("fidelity %s (%s)\n", FD_VERSION, FD_ENGINE_NAME);
        return 0;
    }
    if (!strcmp(argv[1], "help")) {
        if (argc < 3) { usage(stdout); return 0; }
        int k = find(argv[2]);
        return k < 0 ? unknown(argv[2]) : fd_cli_help(CMDS[k].name, CMDS[k].fn, CMDS[k].help);
    }
    int k = find(argv[1]);
    if (k < 0) return unknown(argv[1]);
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return fd_cli_help(CMDS[k].name, CMDS[k].fn, CMDS[k].help);
    return CMDS[k].fn(argc - 1, argv + 1);
}
