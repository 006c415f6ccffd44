/* One progress line for every long command (compare positions, capture
 * windows and layers, fetch bytes): count, percent, rate and ETA on stderr.
 * Shown on a terminal or with --progress; the caller decides. */
#ifndef FD_UTIL_PROGRESS_H
#define FD_UTIL_PROGRESS_H
#include <stdint.h>
#include <stdio.h>

/* "WHAT: DONE/TOTAL UNIT PCT% (RATE UNIT/s, ETA h:mm:ss)"; TOTAL 0: unknown
 * (no percent, no ETA).  base: what was done before elapsed_s began (a
 * resumed download's bytes on disk), counted but not in the rate.  inplace:
 * "\r" before and padding after, no newline (one line redrawn on a
 * terminal); else the line ends in "\n". */
void fd_progress_line(FILE *f, const char *what, uint64_t done, uint64_t total, const char *unit, uint64_t base,
                      double elapsed_s, int inplace);
/* the ETA of done/total at rate units/s: "h:mm:ss", or "--" when unknown */
void fd_progress_eta(uint64_t done, uint64_t total, double rate, char *out, size_t cap);

#endif
