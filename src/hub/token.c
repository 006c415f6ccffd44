/* The Hub token: an explicit protected file, or the standard client sources.
 * An explicit path is authoritative and never silently replaced by ambient
 * credentials.  The value never enters an error message. */
#include "hub.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/fsio.h"

static char *strip(fd_buf *b)
{
    char *s = fd_buf_cstr(b);
    size_t n = b->n;
    while (n && strchr(" \t\r\n\f\v", s[n - 1])) n--;
    size_t i = 0;
    while (i < n && strchr(" \t\r\n\f\v", s[i])) i++;
    return fd_xstrndup(s + i, n - i);
}

static int read_explicit(const char *path, char **out, fd_err *e)
{
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);   /* a FIFO never blocks the open */
    if (fd < 0)
        return fd_fail(e, "hub_error", "HUB-TOKEN", "explicit token file REFUSED: %s: %s%s", path, strerror(errno),
                       errno == ELOOP ? " (a symlink is never followed)" : "");
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st)) why = "cannot be inspected";
    else if (!S_ISREG(st.st_mode)) why = "is not a regular file";
    else if (st.st_uid != getuid()) why = "is owned by another uid";
    else if ((st.st_mode & 07777) != 0600) why = "mode must be exactly 0600";
    else if (st.st_size > 65536) why = "is larger than any token";
    else {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) why = "cannot be read";
    }
    fd_buf b = {0};
    char chunk[4096];
    ssize_t k;
    while (!why && (k = read(fd, chunk, sizeof chunk)) != 0) {
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) why = "cannot be read";
        else if (b.n + (size_t)k > 65536) why = "grew past any token's size while read";
        else fd_buf_put(&b, chunk, (size_t)k);
    }
    close(fd);
    if (!why) {
        *out = strip(&b);
        if (!**out) { free(*out); *out = NULL; why = "is empty"; }
        else if (strpbrk(*out, "\r\n")) { free(*out); *out = NULL; why = "holds more than one line"; }
    }
    if (b.p) explicit_bzero(b.p, b.cap);
    fd_buf_free(&b);
    if (why) return fd_fail(e, "hub_error", "HUB-TOKEN", "explicit token file REFUSED: %s %s", path, why);
    return 0;
}

int fd_hub_token_load(const char *token_file, char **out, fd_err *e)
{
    *out = NULL;
    if (token_file) return read_explicit(token_file, out, e);
    const char *var = "HF_TOKEN", *v = getenv(var);
    if (!v || !*v) v = getenv(var = "HUGGING_FACE_HUB_TOKEN");
    if (v && *v) {
        /* it becomes an Authorization header line: a CR, LF or any other
         * control byte could inject a header, so it is refused by name */
        for (const unsigned char *p = (const unsigned char *)v; *p; p++)
            if (*p < 0x20 || *p == 0x7f)
                return fd_fail(e, "hub_error", "HUB-TOKEN", "the %s environment variable holds a control character "
                               "(CR, LF or another byte below 0x20): REFUSED, a token is one line of printable bytes", var);
        *out = fd_xstrdup(v);
        return 0;
    }
    const char *home = getenv("HOME");
    if (!home || !*home) return 0;
    char *path = fd_path_join(home, ".cache/huggingface/token");
    fd_buf b = {0};
    fd_err ign;
    if (fd_is_file(path) && !fd_read_file(path, 65536, &b, &ign)) {
        *out = strip(&b);
        if (!**out || strpbrk(*out, "\r\n")) { free(*out); *out = NULL; }
        if (b.p) explicit_bzero(b.p, b.cap);
    }
    fd_buf_free(&b);
    free(path);
    return 0;
}
