/* Strict numeric flag values, shared by every command: the whole string
 * is the number (no leading space or '+', no trailing junk), in range, no
 * overflow; a '-' only where the range allows a negative.  0 on success,
 * -1 otherwise (*out untouched). */
#ifndef FD_CLI_ARGS_H
#define FD_CLI_ARGS_H
#include <stdint.h>

int fd_arg_int(const char *s, long long lo, long long hi, long long *out);
int fd_arg_uint(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out);
/* a finite decimal (or C hex) floating-point value in [lo, hi] */
int fd_arg_real(const char *s, double lo, double hi, double *out);

#endif
