/* The observed next token at every scored position (docs/COMPARE-IMPL.md
 * "Token statistics"): row r of a context is the r-th causal position p
 * (mask[p] and mask[p+1], an absent mask being all ones) after the first
 * score_from of them, and its observed token is ids[p + 1]. */
#ifndef FD_COMPARE_OBSERVED_H
#define FD_COMPARE_OBSERVED_H
#include <stddef.h>
#include <stdint.h>
#include "side.h"

/* out: npos tokens in output order (the shared contexts in order, then rows).
 * Refusals: bad_panel_tokens (a token file or mask that cannot be read or
 * does not give the context's scored rows), token_out_of_range. */
int fd_observed_tokens(const fd_side *s, const int64_t *shared, size_t nshared, size_t npos, uint32_t **out,
                       fd_err *e);
/* The same, with the position p of each row in its window (NULL: not wanted). */
int fd_observed_tokens_at(const fd_side *s, const int64_t *shared, size_t nshared, size_t npos, uint32_t **out,
                          uint32_t **pos_out, fd_err *e);

#endif
