/* Output redaction, as common.redact: the registered secret, then the
 * token shapes the Python tool masks even when it was never told the value. */
#include "hub.h"
#include <ctype.h>
#include <string.h>

#define MASK "***REDACTED***"

static int word(unsigned char c) { return isalnum(c) || c == '_'; }

/* Length of a match of one shape at s[i], or 0.  Shapes (with \b at both
 * ends where Python has them):
 *   hf_[A-Za-z0-9]{20,}   api_org_[A-Za-z0-9]{20,}   sk-[A-Za-z0-9_-]{20,}
 *   (?i)token=[A-Za-z0-9._-]{24,}   (?i)authorization:\s*bearer\s+[A-Za-z0-9._-]{20,} */
static size_t run(const char *s, size_t i, const char *extra)
{
    size_t j = i;
    while (s[j] && (isalnum((unsigned char)s[j]) || (s[j] && strchr(extra, s[j])))) j++;
    return j - i;
}

static size_t shape_at(const char *s, size_t i)
{
    if (i && word((unsigned char)s[i - 1])) return 0;
    static const struct { const char *pre; const char *extra; size_t min; int icase, tail_b; } shapes[] = {
        {"hf_", "", 20, 0, 1}, {"api_org_", "", 20, 0, 1}, {"sk-", "_-", 20, 0, 1}, {"token=", "._-", 24, 1, 0},
    };
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++) {
        size_t pl = strlen(shapes[k].pre);
        if (shapes[k].icase ? strncasecmp(s + i, shapes[k].pre, pl) : strncmp(s + i, shapes[k].pre, pl)) continue;
        size_t n = run(s, i + pl, shapes[k].extra);
        /* the trailing \b: the run stops at a non-alphanumeric byte; a '_' there
         * leaves no word boundary anywhere in an alphanumeric run */
        if (n >= shapes[k].min && (!shapes[k].tail_b || !word((unsigned char)s[i + pl + n]))) return pl + n;
    }
    if (!strncasecmp(s + i, "authorization:", 14)) {
        size_t j = i + 14;
        while (s[j] && isspace((unsigned char)s[j])) j++;
        if (!strncasecmp(s + j, "bearer", 6) && isspace((unsigned char)s[j + 6])) {
            j += 6;
            while (s[j] && isspace((unsigned char)s[j])) j++;
            size_t n = run(s, j, "._-");
            if (n >= 20) return j + n - i;
        }
    }
    return 0;
}

char *fd_redact(const char *text, const char *secret)
{
    fd_buf a = {0}, b = {0};
    size_t sl = secret ? strlen(secret) : 0;
    for (const char *p = text; *p;) {
        if (sl >= 8 && !strncmp(p, secret, sl)) { fd_buf_puts(&a, MASK); p += sl; }
        else fd_buf_putc(&a, *p++);
    }
    const char *s = fd_buf_cstr(&a);
    for (size_t i = 0; s[i];) {
        size_t m = shape_at(s, i);
        if (m) { fd_buf_puts(&b, MASK); i += m; }
        else fd_buf_putc(&b, s[i++]);
    }
    fd_buf_free(&a);
    return fd_buf_cstr(&b);
}
