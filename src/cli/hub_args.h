/* The flags every dataset-reading command shares for hf:// arguments
 * (--cache DIR, --token-file PATH) and the hub refusal with its remedy. */
#ifndef FD_CLI_HUB_ARGS_H
#define FD_CLI_HUB_ARGS_H
#include "hub/hub.h"

/* Consumes argv[*i] (and its value) when it is a hub flag; 1 if consumed. */
int fd_cli_hub_flag(int argc, char **argv, int *i, fd_fetch_opts *o);
/* Prints REFUSED [hub_error]: ... (rule) and the remedy; returns exit 3. */
int fd_cli_hub_refuse(const fd_err *e);
/* Resolves arg (fetching an hf:// reference); on failure prints the refusal. */
int fd_cli_hub_resolve(const char *arg, const fd_fetch_opts *o, char **local);

#endif
