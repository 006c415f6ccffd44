/* Subcommand entry points.  Each returns the process exit code. */
#ifndef FD_CLI_H
#define FD_CLI_H

enum { FD_EXIT_OK = 0, FD_EXIT_WARN = 2, FD_EXIT_REFUSED = 3, FD_EXIT_USAGE = 4 };

int cmd_verify(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_describe(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_write_fixture(int argc, char **argv);
int cmd_debug_json(int argc, char **argv);
int cmd_kernel_selftest(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_paired(int argc, char **argv);
int cmd_debug_logits(int argc, char **argv);
int cmd_debug_kl(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_panel(int argc, char **argv);
int cmd_inspect_model(int argc, char **argv);
int cmd_model_fixture(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_adapt(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_card(int argc, char **argv);
int cmd_provenance_template(int argc, char **argv);
int cmd_verify_k3_compat(int argc, char **argv);
int cmd_debug_gguf_dequant(int argc, char **argv);
/* inspect-model on a GGUF file (cmd_inspect_gguf.c) */
int fd_inspect_gguf(const char *path, int as_json);
int cmd_reseal(int argc, char **argv);
int cmd_architectures(int argc, char **argv);
int cmd_panel_binding(int argc, char **argv);
int cmd_qualify_root(int argc, char **argv);
int cmd_publish(int argc, char **argv);

/* help.c: `fidelity help CMD`, `CMD --help`, `CMD -h`: the command's usage (its
 * own text, from running it with --help captured) with EXAMPLES, on stdout. */
int fd_cli_help(const char *name, int (*fn)(int, char **), const char *oneline);
/* The candidate nearest to word (edit distance, prefix), or NULL when none is close. */
#include <stddef.h>
const char *fd_cli_suggest(const char *word, const char *const *cands, size_t n);

/* flags.c: argv[1..] against the command's flag spec: an unknown flag
 * (did-you-mean), a flag without its value, or a value outside a fixed set
 * (the set listed) is refused, exit FD_EXIT_USAGE; NULL spec: no check. */
int fd_cli_check_flags(const char *cmd, const char *spec, int argc, char **argv);

#endif
