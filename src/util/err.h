/* Error reporting: every fallible function takes an fd_err* and returns 0 on
 * success, -1 on failure.  The error carries a refusal code (FORMAT.md §4
 * vocabulary, e.g. "seal_failed"), a rule id and a message naming the file. */
#ifndef FD_ERR_H
#define FD_ERR_H
#include <stdarg.h>

typedef struct fd_err {
    char code[48];
    char rule[32];
    char msg[1024];
} fd_err;

/* Sets code/rule/message; returns -1 so callers can `return fd_fail(...)`. */
int fd_fail(fd_err *e, const char *code, const char *rule, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void fd_err_clear(fd_err *e);
/* Prepends "prefix: " to the message (truncating the tail if needed). */
void fd_err_prefix(fd_err *e, const char *prefix);

#endif
