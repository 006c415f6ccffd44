/* Dataset path rules (PATH-1/PATH-3) with Python os.path.normpath semantics. */
#ifndef FD_PATHS_H
#define FD_PATHS_H
#include <stddef.h>
#include "../util/err.h"

/* POSIX normpath of a relative or absolute path into out (cap bytes). */
int fd_normpath(const char *in, char *out, size_t cap);
/* dsformat.check_relpath: code path_escape on failure; the message names owner. */
int fd_check_relpath(const char *value, const char *owner, int allow_parent, fd_err *e);
/* Joins base (a directory relative to the root, may be "") and rel, normalised. */
int fd_join_norm(const char *base, const char *rel, char *out, size_t cap);
/* Python str.startswith over C strings. */
int fd_starts(const char *s, const char *prefix);
/* A user string (a label) as ONE path component confined to its parent:
 * every byte outside [A-Za-z0-9._+-] becomes '_', a leading '.' becomes '_'
 * (so never ".", ".." or a hidden name), empty becomes "_", at most 80 bytes.
 * The string itself is recorded elsewhere unchanged. */
void fd_path_component(const char *s, char *out, size_t cap);
/* Directory part of a relative path ("capture/manifest.json" -> "capture"). */
void fd_dirname(const char *path, char *out, size_t cap);

#endif
