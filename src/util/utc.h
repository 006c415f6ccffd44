/* The current UTC time formatted with strftime (e.g. "%Y-%m-%dT%H:%M:%SZ",
 * the manifests' created_utc form), into out[cap]. */
#ifndef FD_UTC_H
#define FD_UTC_H
#include <stddef.h>
#include <time.h>

static inline void fd_utc_now(char *out, size_t cap, const char *fmt)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, cap, fmt, &tm);
}

#endif
