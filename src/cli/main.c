#include "cli.h"
#include "format/version.h"
#include "format/writer.h"
#include <malloc.h>
#include <stdio.h>
#include <string.h>

/* flags: every flag of the command (flags.c: "--x" a switch, "--x=" takes a
 * value, "--x=a|b" takes one of those, "--x=@fixture-presets" one of the
 * fixture presets), checked before the command runs; NULL
 * leaves the command to its own parser. */
static const struct { const char *name; int (*fn)(int, char **); const char *help, *flags; } CMDS[] = {
    {"verify", cmd_verify, "verify DATASET [--json REPORT.json] [--verify-tensors|--no-verify-tensors] [--manifest-only] [--allow-partial] [--cache DIR] [--token-file F]: seals, checksums, digests; refuse on the first error",
     "--verify-tensors --no-verify-tensors --manifest-only --allow-partial --json= --cache= --token-file="},
    {"validate", cmd_validate, "validate DATASET [--strict] [--json REPORT.json] [--verify-tensors|--no-verify-tensors] [--manifest-only] [--allow-partial] [--cache DIR] [--token-file F] | validate --receipt FILE: report every finding",
     "--verify-tensors --no-verify-tensors --manifest-only --allow-partial --strict --json= --receipt= --cache= --token-file="},
    {"describe", cmd_describe, "describe DATASET [--format text|json|markdown] [--verify-tensors|--no-verify-tensors] [--manifest-only] [--allow-partial] [--cache DIR] [--token-file F]: identity card",
     "--verify-tensors --no-verify-tensors --manifest-only --allow-partial --format=text|json|markdown --cache= --token-file="},
    {"fetch", cmd_fetch, "fetch hf://owner/name[@rev] [--cache DIR] [--token-file F] [--allow-partial] [--manifest-only]: verified, resumable download",
     "--cache= --token-file= --allow-partial --manifest-only --no-verify-tensors --progress"},
    {"compare", cmd_compare, "compare --reference A --candidate B [...] --out DIR: full-vocabulary KL, sealed receipts",
     "--reference= --candidate= --out= --reference-label= --candidate-label= --head= --report= --submission-provenance= --measurer= --emit-submission --kernel=scalar|avx2|avx512f|avx512bf16|neon|neon-bf16 --created-utc= --threads= --chunk-positions= --vocab-chunk= --self-compare --force-compute --force --allow-cross-lane --allow-partial --own-heads --disclose-head-substitution --verify-tensors --no-verify-tensors --no-bootstrap --js --emit-k3-compat --json --progress --paired --csv --tie-tolerance= --cache= --token-file="},
    {"card", cmd_card, "card --receipt FILE... --out README.md [--card EXISTING] | card --check README.md --receipt FILE...: model card (model-index + x_fidelity)",
     "--receipt= --out= --card= --check= --model-name= --base-model= --panel-repository= --panel-revision="},
    {"paired", cmd_paired, "paired RECEIPT_A RECEIPT_B --out FILE [--reference DATASET] [--tie-tolerance NATS]: B - A of two receipts of one reference",
     "--out= --check= --reference= --created-utc= --tie-tolerance= --no-bootstrap --json"},
    {"provenance-template", cmd_provenance_template, "provenance-template [--out FILE]: the skeleton for compare --emit-submission --submission-provenance FILE",
     "--out="},
    {"report", cmd_report, "report RECEIPT|DIR... --out FILE.html [--dataset DIR ...]: HTML comparison report with inline SVG plots",
     "--out= --dataset= --title= --summary-only --tokenizer= --panel="},
    {"panel", cmd_panel, "panel build --out DIR --vocab V INPUT... | panel check DIR --vocab V: upstream token panels",
     "--out= --vocab= --role= --domain= --context-length= --panel-id= --name= --tokenizer= --tokenizer-id= --windows= --no-prefix --force --upstream-layout --tokenizer-repository= --tokenizer-revision="},
    {"quantize", cmd_quantize, "quantize --src DIR --dst DIR --match SUBSTR [--bits N] [--emit-scope F]: toy RTN candidate (FORMAT §7); --format fp8-block|nvfp4|compressed-tensors|gptq|mlx|gguf: published layouts",
     "--src= --dst= --bits=2|3|4|5|6|8 --match= --tensor-class=embed_tokens|attn.qkv|attn.o|mlp.gate|mlp.up|mlp.down|moe.experts|norm|lm_head --emit-scope= --emit-report= --format=fp8-block|nvfp4|compressed-tensors|gptq|mlx|gguf --type=bf16|q8_0|q4_0|q4_k --block= --group-size= --dry-run --force"},
    {"demo", cmd_demo, "demo [--out DIR]: write a small sealed dataset and verify it",
     "--out= --preset=@fixture-presets --windows="},
    {"write-fixture", cmd_write_fixture, "write-fixture --out DIR [--records N ...]: synthetic dataset",
     "--out= --records= --tokens= --hidden= --vocab= --seed= --head-seed= --noise-seed= --perturb= --declared-bits= --declared-records= --lane=" FD_LANES " --role=root|quant|derived --engine-tag= --dataset-id= --cold-run= --fixed-time --force --emit-k3-compat"},
    {"kernel-selftest", cmd_kernel_selftest, "kernel-selftest [--products N]: prove every kernel path bit-identical",
     "--products= --seed="},
    {"debug-logits", cmd_debug_logits, "debug-logits DATASET CONTEXT OUT.f32: canonical logits of one context (tests)",
     "--kernel=scalar|avx2|avx512f|avx512bf16|amx|neon|neon-bf16"},
    {"debug-kl", cmd_debug_kl, "debug-kl REF.f32 CAND.f32 VOCAB: the canonical KL/JS of raw fp32 logit rows on every path (tests)",
     ""},
    {"inspect-model", cmd_inspect_model, "inspect-model DIR|FILE.gguf [--json]: config and tensor check of a checkpoint; a GGUF's metadata, tensors, type census and bits per weight",
     "--json"},
    {"fixture", cmd_model_fixture, "fixture --preset tiny|flash-0.1b|small --seed N --out DIR: a random-init glm_moe_dsa checkpoint",
     "--preset=@fixture-presets --seed= --out= --force"},
    {"capture", cmd_capture, "capture --model DIR --panel DIR --out DIR --role root|quant --lane L --dataset-id ID --dataset-name NAME [...]",
     "--model= --panel= --out= --role=root|quant --lane=" FD_LANES " --dataset-id= --dataset-name= --panel-role= --scope-file= --run-name= --cold-run= --memory-report= --weights-repository= --weights-revision= --repository= --kernel= --schedule=window-outer|layer-outer --sanity-prompt= --sanity-expect= --windows= --score-from= --threads= --declared-bits= --gemm-order=tile|pair --memory-limit= --force --emit-k3-compat --no-sanity-check --progress --resume --panel-binding= --panel-binding-sha256= --panel-tokenizer-root= --author="},
    {"merge", cmd_merge, "merge SHARD_DIR... --out DIR: the shards of `mpirun -np N fidelity capture` as one sealed dataset",
     "--out= --created-utc= --force"},
    {"tokenize", cmd_tokenize, "tokenize --tokenizer PATH [--add-special] [--decode] FILE...: tokenizer.json encode/decode",
     "--tokenizer= --out= --out-dir= --add-special --decode --skip-special --normalize --info --time"},
    {"adapt", cmd_adapt, "adapt --source llamacpp-kld --in FILE.kld --out DIR [--head F]: a llama.cpp .kld as a sealed logit-form dataset",
     "--source=llamacpp-kld|k3v1|k3v0-window|malaiwah-serving-v2 --in= --out= --head= --vocab= --tokenizer-id= --weights-repository= --panel-id= --dataset-id= --name= --role=derived|quant|root --lane=" FD_LANES " --created-utc= --limit= --force --emit-k3-compat"},
    {"export", cmd_export, "export --format llamacpp-kld --dataset DIR --out FILE.kld: a hidden-form dataset as a llama.cpp .kld base file",
     "--format=llamacpp-kld --dataset= --out= --kernel=scalar|avx2|avx512f|avx512bf16|neon|neon-bf16 --kld-window=16|24 --verify-tensors --no-verify-tensors --force"},
    {"verify-k3-compat", cmd_verify_k3_compat, "verify-k3-compat DATASET: the dataset verifies and its compat/ kimi-k3 view is faithful",
     "--view= --verify-tensors --no-verify-tensors"},
    {"debug-gguf-dequant", cmd_debug_gguf_dequant, "debug-gguf-dequant TYPE IN.bin OUT.f32 [OUT.bf16] | --tensor FILE.gguf NAME OUT.f32 [OUT.bf16]: ggml blocks -> float32 (and bf16) (tests)",
     "--tensor"},
    {"reseal", cmd_reseal, "reseal DATASET --out DIR [--receipt FILE] [--dry-run]: repair a private validation subject, re-seal",
     "--out= --receipt= --dry-run"},
    {"architectures", cmd_architectures, "architectures list|show NAME|prepare --model DIR --panel DIR --out DIR: supported architectures/formats, a run plan",
     "--json --model= --panel= --out= --lane=" FD_LANES " --dataset-id= --dataset-name= --reference= --weights-revision= --repository= --windows= --memory-limit= --force --model-dir= --model-revision= --dataset-repository= --architecture= --model-repository= --author= --tokenizer-root="},
    {"panel-binding", cmd_panel_binding, "panel-binding --panel DIR --tokenizer-root DIR [--role R] --out FILE: the ResolvedPanel contract a root capture binds",
     "--panel= --tokenizer-root= --role= --out="},
    {"qualify-root", cmd_qualify_root, "qualify-root --local --model-dir DIR --first A --repeat B ... --out Q.json: two cold captures + exact-zero self-compare -> sealed qualification",
     "--local --model-dir= --first= --repeat= --first-label= --repeat-label= --first-verify= --repeat-verify= --comparison= --out= --job-out= --measurer= --job="},
    {"publish", cmd_publish, "publish DATASET --repo OWNER/NAME --qualification Q --job J --expected-head absent|SHA [--dry-run]: one Hub commit, verified anonymously",
     "--repo= --qualification= --job= --expected-head= --revision-message= --token-file= --receipt= --cache= --result-archive= --expected-archive-sha256= --expected-archive-bytes= --dry-run --private"},
    {"debug-json", cmd_debug_json, "debug-json: JSON lines on stdin -> digests of each form (tests)",
     ""},
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
    /* blocks of 1 MB and more (a Linear's packed copy, a window's activations)
     * come from mmap and return to the system when freed: glibc's dynamic
     * threshold would rise to the largest block freed so far and keep that
     * much freed heap resident (docs/QUANT-FORMATS.md, "Peak RSS") */
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
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
    int rc = fd_cli_check_flags(CMDS[k].name, CMDS[k].flags, argc - 1, argv + 1);
    return rc ? rc : CMDS[k].fn(argc - 1, argv + 1);
}
