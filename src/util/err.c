#include "err.h"
#include <stdio.h>
#include <string.h>

int fd_fail(fd_err *e, const char *code, const char *rule, const char *fmt, ...)
{
    if (!e) return -1;
    snprintf(e->code, sizeof e->code, "%s", code ? code : "error");
    snprintf(e->rule, sizeof e->rule, "%s", rule ? rule : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

void fd_err_clear(fd_err *e)
{
    if (e) memset(e, 0, sizeof *e);
}

void fd_err_prefix(fd_err *e, const char *prefix)
{
    if (!e) return;
    size_t pl = strlen(prefix), ml = strlen(e->msg), cap = sizeof e->msg - 1;
    if (pl + 2 >= cap) return;
    if (pl + 2 + ml > cap) ml = cap - pl - 2;
    memmove(e->msg + pl + 2, e->msg, ml);
    memcpy(e->msg, prefix, pl);
    e->msg[pl] = ':';
    e->msg[pl + 1] = ' ';
    e->msg[pl + 2 + ml] = 0;
}
