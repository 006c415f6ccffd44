#include "fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *fd_path_join(const char *a, const char *b)
{
    fd_buf p = {0};
    fd_buf_puts(&p, a);
    if (p.n && p.p[p.n - 1] != '/') fd_buf_putc(&p, '/');
    fd_buf_puts(&p, b);
    return fd_buf_cstr(&p);
}

int fd_read_file(const char *path, size_t max, fd_buf *out, fd_err *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fd_fail(e, errno == ENOENT ? "missing_file" : "unreadable", "", "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return fd_fail(e, "unreadable", "", "%s: not a regular file", path);
    }
    if ((size_t)st.st_size > max) {
        close(fd);
        return fd_fail(e, "unreadable", "", "%s: %lld bytes is over the %zu-byte limit for this file",
                       path, (long long)st.st_size, max);
    }
    out->n = 0;
    char chunk[65536];
    for (;;) {
        ssize_t k = read(fd, chunk, sizeof chunk);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { close(fd); return fd_fail(e, "unreadable", "", "%s: %s", path, strerror(errno)); }
        if (k == 0) break;
        if (out->n + (size_t)k > max) { close(fd); return fd_fail(e, "unreadable", "", "%s: grew past the limit", path); }
        fd_buf_put(out, chunk, (size_t)k);
    }
    fd_buf_cstr(out);
    close(fd);
    return 0;
}

int fd_write_atomic(const char *path, const void *p, size_t n, fd_err *e)
{
    fd_buf tmp = {0};
    fd_buf_printf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp.p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fd_fail(e, "unwritable", "", "%s: %s", tmp.p, strerror(errno));
        fd_buf_free(&tmp);
        return -1;
    }
    const char *c = p;
    size_t left = n;
    while (left) {
        ssize_t k = write(fd, c, left);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            fd_fail(e, "unwritable", "", "%s: %s", path, strerror(errno));
            close(fd);
            unlink(tmp.p);
            fd_buf_free(&tmp);
            return -1;
        }
        c += k;
        left -= (size_t)k;
    }
    int bad = fsync(fd) != 0;
    bad |= close(fd) != 0;
    if (bad || rename(tmp.p, path)) {
        fd_fail(e, "unwritable", "", "%s: %s", path, strerror(errno));
        unlink(tmp.p);
        fd_buf_free(&tmp);
        return -1;
    }
    fd_buf_free(&tmp);
    return 0;
}

int fd_mkdirs(const char *path, fd_err *e)
{
    char *p = fd_xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) && errno != EEXIST) {
            fd_fail(e, "unwritable", "", "%s: %s", p, strerror(errno));
            free(p);
            return -1;
        }
        *s = '/';
    }
    int rc = 0;
    if (mkdir(p, 0755) && errno != EEXIST) rc = fd_fail(e, "unwritable", "", "%s: %s", p, strerror(errno));
    free(p);
    return rc;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

int fd_rmtree(const char *path)
{
    return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int fd_is_file(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int fd_is_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}
