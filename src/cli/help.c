/* fidelity help CMD / CMD --help / CMD -h: the command's own usage text on
 * stdout with an EXAMPLES section, exit 0; did-you-mean for unknown words. */
#include "cli.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct { const char *name, *text; } EXAMPLES[] = {
    {"verify", "  fidelity verify ./ds-root\n  fidelity verify ./ds-root --json"},
    {"validate", "  fidelity validate ./ds-root\n  fidelity validate --receipt out/comparison-receipt.json"},
    {"describe", "  fidelity describe ./ds-root --format markdown"},
    {"fetch", "  fidelity fetch hf://owner/name@main --cache ~/.cache/fidelity"},
    {"compare", "  fidelity compare --reference ./root --candidate ./q4 --out cmp\n"
                "  fidelity compare --reference ./root --candidate ./q4 --candidate ./q5 --out cmp --paired\n"
                "  fidelity compare --reference ./root --candidate ./q4 --out cmp --json > receipt.json"},
    {"paired", "  fidelity paired cmpA/comparison-receipt.json cmpB/comparison-receipt.json --out p.json --reference ./root"},
    {"card", "  fidelity card --receipt cmp/comparison-receipt.json --out README.md"},
    {"provenance-template", "  fidelity provenance-template --out provenance.json"},
    {"report", "  fidelity report cmp --out report.html --dataset ./q4"},
    {"panel", "  fidelity panel build --out panel --vocab 151552 texts.jsonl\n  fidelity panel check panel --vocab 151552"},
    {"quantize", "  fidelity quantize --src ./model --dst ./model-int4 --match mlp --bits 4"},
    {"demo", "  fidelity demo --out demo"},
    {"write-fixture", "  fidelity write-fixture --out fx --records 4 --tokens 48 --vocab 3000"},
    {"kernel-selftest", "  fidelity kernel-selftest"},
    {"debug-logits", "  fidelity debug-logits ./ds-root 0 logits.f32"},
    {"inspect-model", "  fidelity inspect-model ./model\n  fidelity inspect-model model.gguf --json"},
    {"fixture", "  fidelity fixture --preset tiny --seed 1 --out tiny-model"},
    {"capture", "  fidelity capture --model ./model --panel ./panel --out ./ds --role quant --lane other \\\n"
                "      --dataset-id fidelity--me.model-q4.hidden --dataset-name model-q4"},
    {"merge", "  fidelity merge shard-0 shard-1 --out ds"},
    {"tokenize", "  fidelity tokenize --tokenizer tokenizer.json text.txt"},
    {"adapt", "  fidelity adapt --source llamacpp-kld --in base.kld --out ds-base --head lm_head.safetensors"},
    {"export", "  fidelity export --format llamacpp-kld --dataset ./root --out base.kld"},
    {"verify-k3-compat", "  fidelity verify-k3-compat ./ds-root"},
    {"debug-gguf-dequant", "  fidelity debug-gguf-dequant --tensor model.gguf blk.0.attn_q.weight q.f32"},
    {"reseal", "  fidelity reseal ./ds --out ./ds-fixed --dry-run"},
    {"architectures", "  fidelity architectures list\n  fidelity architectures show glm_moe_dsa"},
    {"panel-binding", "  fidelity panel-binding --panel ./panel --tokenizer-root ./model --out binding.json"},
    {"qualify-root", "  fidelity qualify-root --local --model-dir ./model --first ./a --repeat ./b ... --out q.json"},
    {"publish", "  fidelity publish ./ds --repo me/ds --qualification q.json --job job.json --expected-head absent --dry-run"},
    {"debug-kl", "  fidelity debug-kl ref.f32 cand.f32 151552"},
    {"debug-json", "  printf '{\"a\":1}\\n' | fidelity debug-json"},
};

/* Runs fn(name --help) with stdout and stderr captured and returns what it
 * printed from its first "usage:" line on (NULL when none). */
static char *captured_usage(const char *name, int (*fn)(int, char **))
{
    FILE *t = tmpfile();
    if (!t) return NULL;
    fflush(stdout);
    fflush(stderr);
    int o1 = dup(1), o2 = dup(2);
    if (o1 < 0 || o2 < 0) { fclose(t); return NULL; }
    dup2(fileno(t), 1);
    dup2(fileno(t), 2);
    char a0[64], a1[] = "--help";
    snprintf(a0, sizeof a0, "%s", name);
    char *argv[] = {a0, a1, NULL};
    fn(2, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(o1, 1);
    dup2(o2, 2);
    close(o1);
    close(o2);
    long n = ftell(t);
    char *buf = NULL;
    if (n > 0 && n < (1 << 20) && !fseek(t, 0, SEEK_SET)) {
        buf = calloc((size_t)n + 1, 1);
        if (buf && fread(buf, 1, (size_t)n, t) != (size_t)n) { free(buf); buf = NULL; }
    }
    fclose(t);
    if (!buf) return NULL;
    char *u = strncmp(buf, "usage:", 6) ? strstr(buf, "\nusage:") : buf;
    if (!u) { free(buf); return NULL; }
    if (*u == '\n') u++;
    char *r = strdup(u);
    free(buf);
    return r;
}

int fd_cli_help(const char *name, int (*fn)(int, char **), const char *oneline)
{
    char *u = captured_usage(name, fn);
    if (u) {
        fputs(u, stdout);
        if (u[0] && u[strlen(u) - 1] != '\n') putchar('\n');
    } else printf("usage: fidelity %s\n", oneline);
    free(u);
    for (size_t i = 0; i < sizeof EXAMPLES / sizeof *EXAMPLES; i++)
        if (!strcmp(EXAMPLES[i].name, name)) printf("\nEXAMPLES\n%s\n", EXAMPLES[i].text);
    printf("\nexit codes: 0 ok, 2 warnings (advisory), 3 refused (REFUSED [code]: ...), 4 usage\n");
    return FD_EXIT_OK;
}

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64) return 99;
    size_t d[65][65];
    for (size_t i = 0; i <= la; i++) d[i][0] = i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t s = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]), x = d[i - 1][j] + 1, y = d[i][j - 1] + 1;
            d[i][j] = s < x ? (s < y ? s : y) : (x < y ? x : y);
        }
    return d[la][lb];
}

const char *fd_cli_suggest(const char *word, const char *const *cands, size_t n)
{
    const char *best = NULL;
    size_t bd = 99, wl = strlen(word);
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, cands[i]);
        /* a unique-looking prefix of at least 3 characters counts as close */
        if (wl >= 3 && !strncmp(cands[i], word, wl) && d > 1) d = 1;
        if (d < bd) { bd = d; best = cands[i]; }
    }
    size_t limit = wl <= 4 ? 1 : wl <= 8 ? 2 : 3;
    return bd <= limit ? best : NULL;
}
