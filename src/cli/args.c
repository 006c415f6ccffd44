#include "args.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int digits_from(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

int fd_arg_int(const char *s, long long lo, long long hi, long long *out)
{
    if (!s || !digits_from(s[0] == '-' && lo < 0 ? s + 1 : s)) return -1;
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int fd_arg_uint(const char *s, unsigned long long lo, unsigned long long hi, unsigned long long *out)
{
    if (!s || !digits_from(s)) return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int fd_arg_real(const char *s, double lo, double hi, double *out)
{
    if (!s || !*s) return -1;
    const char *p = s[0] == '-' ? s + 1 : s;
    if (!((*p >= '0' && *p <= '9') || *p == '.')) return -1; /* no space, '+', inf, nan */
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno == ERANGE || *end || !isfinite(v) || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}
