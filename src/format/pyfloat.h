/* Python float repr(): the shortest decimal that round-trips, laid out as
 * CPython's float_repr_style "short" does (exponent form when the decimal
 * point position is <= -4 or > 16, ".0" added to integral values). */
#ifndef FD_PYFLOAT_H
#define FD_PYFLOAT_H
#include <stddef.h>

/* Writes the repr of a finite double into out (>= 32 bytes); returns the
 * length, or -1 for NaN/Inf (which canonical JSON refuses). */
int fd_pyfloat_repr(double d, char *out, size_t cap);

#endif
