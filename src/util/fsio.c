#include "fsio.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <ftw.h>
#include <stdint.h>
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

static const char *kind_name(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : S_ISLNK(m) ? "a symlink" : "not a regular file";
}

int fd_open_regular(const char *path, int nofollow, struct stat *stp, fd_err *e)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP && nofollow)
            return fd_fail(e, "unreadable", "", "%s: a symlink (refused, never followed)", path);
        return fd_fail(e, err == ENOENT ? "missing_file" : "unreadable", "", "%s: %s", path, strerror(err));
    }
    struct stat st;
    if (fstat(fd, &st)) {
        int err = errno;
        close(fd);
        return fd_fail(e, "unreadable", "", "%s: %s", path, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fd_fail(e, "unreadable", "", "%s: %s, not a regular file (refused)", path, kind_name(st.st_mode));
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK)) {
        int err = errno;
        close(fd);
        return fd_fail(e, "unreadable", "", "%s: %s", path, strerror(err));
    }
    if (stp) *stp = st;
    return fd;
}

int fd_read_file(const char *path, size_t max, fd_buf *out, fd_err *e)
{
    struct stat st;
    int fd = fd_open_regular(path, 0, &st, e);
    if (fd < 0) return -1;
    if ((uint64_t)st.st_size > (uint64_t)max) {
        close(fd);
        return fd_fail(e, "file_too_large", "", "%s: %lld bytes is over the %zu-byte limit for this file",
                       path, (long long)st.st_size, max);
    }
    out->n = 0;
    char chunk[65536];
    for (;;) {
        ssize_t k = read(fd, chunk, sizeof chunk);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) { int err = errno; close(fd); return fd_fail(e, "unreadable", "", "%s: %s", path, strerror(err)); }
        if (k == 0) break;
        if (out->n + (size_t)k > max) {
            close(fd);
            return fd_fail(e, "file_too_large", "", "%s: grew past the %zu-byte limit while read", path, max);
        }
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

static void on_sigbus(int sig)
{
    (void)sig;
    static const char msg[] = "REFUSED [file_changed]: a memory-mapped input file shrank while it was read (SIGBUS); "
                              "nothing was written under the destination name\n";
    ssize_t w = write(1, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

void fd_sigbus_refuses(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}
