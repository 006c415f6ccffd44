/* panel.scoring_window for a windowed dataset (PANEL-D3: part of panel
 * identity, compared key for key): one spelling shared by every writer, so a
 * `capture --score-from n_ctx/2` and an adapted llama.cpp .kld land on the
 * same panel.  docs/ADAPTERS.md. */
#ifndef FD_SCORING_WINDOW_H
#define FD_SCORING_WINDOW_H
#include <stdint.h>
#include "json.h"

/* {score_from, windowed: true, min_left_context_tokens: score_from,
 *  dropped_positions_total: score_from * n_windows, policy}; the policy is
 * llama.cpp's second-half text when score_from == context_length / 2. */
jv *fd_scoring_window_block(int64_t score_from, int64_t context_length, int64_t n_windows);

#endif
