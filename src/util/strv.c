#include "strv.h"
#include "buf.h"
#include <stdlib.h>
#include <string.h>

void fd_strv_push(fd_strv *s, const char *str)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 16;
        s->v = fd_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = fd_xstrdup(str);
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void fd_strv_sort(fd_strv *s)
{
    if (s->n) qsort(s->v, s->n, sizeof *s->v, cmp);
}

long fd_strv_find(const fd_strv *s, const char *str)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(s->v[mid], str);
        if (!c) return (long)mid;
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    return -1;
}

void fd_strv_free(fd_strv *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
    s->v = NULL;
    s->n = s->cap = 0;
}
