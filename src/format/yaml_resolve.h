/* PyYAML implicit-resolver patterns shared by the card reader and emitter. */
#ifndef FD_YAML_RESOLVE_H
#define FD_YAML_RESOLVE_H
#include <stddef.h>

extern const char *const FD_YAML_BOOL, *const FD_YAML_INT, *const FD_YAML_FLOAT, *const FD_YAML_NULL, *const FD_YAML_TS;
/* 1 when s[0..n) matches the pattern. */
int fd_yaml_rx(const char *pattern, const char *s, size_t n);
/* 1 when a plain scalar s would resolve to something other than a string in
 * PyYAML (the emitter must then quote it). */
int fd_yaml_plain_is_typed(const char *s, size_t n);

#endif
