/* panel build / panel check: write an upstream-format token panel
 * (quant-pipeline.glm53-token-panel.v1) from token lists, and load one the
 * way a capture does (FORMAT.md §5), printing what it would capture. */
#include "cli.h"
#include "args.h"
#include "capture/panel.h"
#include "tokenizer/tokenizer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_i64(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    long long v;
    if (fd_arg_int(s, lo, hi, &v)) return -1;
    *out = v;
    return 0;
}

static int usage_build(void)
{
    fprintf(stderr, "usage: fidelity panel build --out DIR --vocab V [--role final] [--domain D] "
                    "[--context-length L] [--panel-id ID] [--name NAME] [--force] INPUT...\n"
                    "  INPUT: a JSON list of token-id lists (or one list), or a .npy integer array "
                    "(1-D: one window, 2-D: one per row)\n"
                    "   or: fidelity panel build --out DIR --tokenizer tokenizer.json --context-length L\n"
                    "       [--windows N] [--tokenizer-id ID] [--no-prefix] [--vocab V] [...] [DOMAIN=]TEXT...\n"
                    "       [--upstream-layout --tokenizer-repository OWNER/NAME --tokenizer-revision SHA40]\n"
                    "  --upstream-layout: per-window arrays/<id>.mask.npy and a malaiwah.token-panel-build-receipt.v1\n"
                    "   receipt, so that panel-binding (the Python tool's resolve_panel) resolves the panel\n"
                    "  TEXT: a text file, a .jsonl corpus (a string or {\"text\",\"domain\",\"id\"} per line) "
                    "or a .json list of those\n");
    return FD_EXIT_USAGE;
}

static int usage_check(void)
{
    fprintf(stderr, "usage: fidelity panel check DIR --vocab V [--role R] [--windows N]\n");
    return FD_EXIT_USAGE;
}

static int refused(const fd_err *e)
{
    printf("REFUSED [%s]: %s\n", e->code, e->msg);
    return FD_EXIT_REFUSED;
}

static int panel_build(int argc, char **argv)
{
    fd_panel_build_opts o = {0};
    char **inputs = calloc((size_t)argc + 1, sizeof *inputs);
    size_t n = 0;
    int have_vocab = 0, bad = 0;
    const char *tok_path = NULL;
    for (int i = 1; i < argc && !bad; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t t;
        if (!strcmp(s, "--out") && v) { o.out = v; i++; }
        else if (!strcmp(s, "--vocab") && v && !parse_i64(v, 1, (int64_t)1 << 40, &o.vocab_size)) { have_vocab = 1; i++; }
        else if (!strcmp(s, "--role") && v) { o.role = v; i++; }
        else if (!strcmp(s, "--domain") && v) { o.domain = v; i++; }
        else if (!strcmp(s, "--context-length") && v && !parse_i64(v, 2, 1 << 24, &t)) { o.context_length = (long)t; i++; }
        else if (!strcmp(s, "--panel-id") && v) { o.panel_id = v; i++; }
        else if (!strcmp(s, "--name") && v) { o.name = v; i++; }
        else if (!strcmp(s, "--tokenizer") && v) { tok_path = v; i++; }
        else if (!strcmp(s, "--tokenizer-id") && v) { o.tokenizer_id = v; i++; }
        else if (!strcmp(s, "--windows") && v && !parse_i64(v, 1, 1 << 30, &t)) { o.max_windows = (long)t; i++; }
        else if (!strcmp(s, "--tokenizer-repository") && v) { o.tokenizer_repository = v; i++; }
        else if (!strcmp(s, "--tokenizer-revision") && v) { o.tokenizer_revision = v; i++; }
        else if (!strcmp(s, "--upstream-layout")) o.upstream_layout = 1;
        else if (!strcmp(s, "--no-prefix")) o.no_prefix = 1;
        else if (!strcmp(s, "--force")) o.force = 1;
        else if (!strcmp(s, "--")) { while (++i < argc) inputs[n++] = argv[i]; }
        else if (s[0] == '-' && s[1]) { fprintf(stderr, "fidelity panel build: bad or unknown option %s\n", s); bad = 1; }
        else inputs[n++] = argv[i];
    }
    if (bad || !o.out || (!have_vocab && !tok_path) || n == 0 || (tok_path && !o.context_length) ||
        (!tok_path && (o.max_windows || o.no_prefix || o.tokenizer_id || o.upstream_layout)) ||
        (!o.upstream_layout && (o.tokenizer_repository || o.tokenizer_revision))) {
        free(inputs);
        return usage_build();
    }
    fd_err e = {0};
    fd_tokenizer *tok = NULL;
    if (tok_path && !(tok = fd_tok_load(tok_path, &e))) { free(inputs); return refused(&e); }
    o.tokenizer = tok;
    o.tokenizer_file = tok_path;
    fd_panel_build_result r;
    int rc = fd_panel_build(&o, inputs, n, &r, &e);
    free(inputs);
    fd_tok_free(tok);
    if (rc) return refused(&e);
    printf("PANEL WRITTEN -> %s\n  windows                  %zu x %zu tokens\n", o.out, r.windows, r.context_length);
    if (r.dropped_tails)
        printf("  dropped tails            %zu sequence tail(s) shorter than %zu tokens (%zu tokens)\n", r.dropped_tails,
               r.context_length, r.dropped_tokens);
    printf("  suite_token_hash_sha256  %s\n", r.suite_token_hash_sha256);
    return FD_EXIT_OK;
}

static int panel_check(int argc, char **argv)
{
    const char *dir = NULL, *role = NULL;
    int64_t vocab = 0, windows = 0;
    int have_vocab = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--vocab") && v && !parse_i64(v, 1, (int64_t)1 << 40, &vocab)) { have_vocab = 1; i++; }
        else if (!strcmp(s, "--role") && v) { role = v; i++; }
        else if (!strcmp(s, "--windows") && v && !parse_i64(v, 1, (int64_t)1 << 30, &windows)) i++;
        else if (s[0] == '-' && s[1]) { fprintf(stderr, "fidelity panel check: bad or unknown option %s\n", s); return usage_check(); }
        else if (!dir) dir = s;
        else { fprintf(stderr, "fidelity panel check: unexpected argument %s\n", s); return usage_check(); }
    }
    if (!dir || !have_vocab) return usage_check();
    fd_err e = {0};
    fd_panel p;
    if (fd_panel_load(dir, role, (long)windows, vocab, &p, &e)) return refused(&e);
    for (size_t i = 0; i < p.n; i++) {
        const fd_panel_window *w = &p.w[i];
        const char *mask = strrchr(w->mask_file, '/');
        printf("%04zu %s role=%s domain=%s document_id=%s tokens=%zu prediction_positions=%zu "
               "token_ids_json_sha256=%s mask=%s\n",
               i, w->window_id, w->role ? w->role : "null", w->domain ? w->domain : "null",
               w->document_id ? w->document_id : "null", w->n_ids, w->prediction_positions, w->token_ids_json_sha256,
               mask ? mask + 1 : w->mask_file);
    }
    const char *declared = jv_get_str(p.doc, "suite_token_hash_sha256");
    const char *state = !declared ? "absent" : p.n != p.total_windows ? "not comparable: a subset"
                        : !strcmp(declared, p.suite_token_hash_sha256) ? "matches" : "DIFFERS";
    printf("PANEL OK %s\n  panel_id                 %s%s\n  windows                  %zu of %zu (role %s) x %zu tokens, vocab %lld\n",
           dir, p.panel_id, p.panel_id_derived ? " (derived from the directory name)" : "", p.n, p.total_windows,
           role && *role ? role : "any", p.context_length, (long long)p.vocab_size);
    printf("  panel_receipt_sha256     %s\n", p.have_receipt ? p.panel_receipt_sha256 : "none (no panel.receipt.json)");
    printf("  suite_token_hash_sha256  %s\n", p.suite_token_hash_sha256);
    printf("  declared suite hash      %s\n", state);
    fd_panel_free(&p);
    return FD_EXIT_OK;
}

int cmd_panel(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "build")) return panel_build(argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "check")) return panel_check(argc - 1, argv + 1);
    if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage_build();
        usage_check();
        return FD_EXIT_OK;
    }
    fprintf(stderr, "usage: fidelity panel build|check ...\n");
    usage_build();
    usage_check();
    return FD_EXIT_USAGE;
}
