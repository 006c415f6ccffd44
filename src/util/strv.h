/* A growable list of owned C strings. */
#ifndef FD_STRV_H
#define FD_STRV_H
#include <stddef.h>

typedef struct fd_strv {
    char **v;
    size_t n, cap;
} fd_strv;

void fd_strv_push(fd_strv *s, const char *str);
void fd_strv_sort(fd_strv *s);            /* byte order == code-point order */
long fd_strv_find(const fd_strv *s, const char *str); /* on a sorted list; -1 */
void fd_strv_free(fd_strv *s);

#endif
