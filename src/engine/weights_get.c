/* A tensor of the map by name, and its first bytes mapped or not
 * (engine/weights.h): what the weight-format layer (weights_quant.c) and
 * the loader (weights.c) both call, kept apart so neither depends on the
 * other in a circle. */
#include "engine/weights.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

const fd_tensor *fd_weights_get(const fd_weights *w, const char *name)
{
    size_t lo = 0, hi = w->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(w->t[mid].name, name);
        if (!c) return &w->t[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

int fd_weights_read(const fd_weights *w, const fd_tensor *t, void *buf, size_t n, fd_err *e)
{
    if (n > t->nbytes) return fd_fail(e, "bad_tensor_file", "", "%s: reading %zu bytes of a %llu-byte tensor", t->name, n,
                                      (unsigned long long)t->nbytes);
    if (t->data) { memcpy(buf, t->data, n); return 0; }
    const char *path = w->shards[t->shard].path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fd_fail(e, "unreadable", "", "%s: %s", path, strerror(errno));
    ssize_t r = pread(fd, buf, n, (off_t)t->off);
    close(fd);
    if (r != (ssize_t)n) return fd_fail(e, "unreadable", "", "%s: short read of %s", path, t->name);
    return 0;
}

