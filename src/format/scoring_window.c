/* The windowed scoring block (scoring_window.h). */
#include "scoring_window.h"
#include <stdio.h>

jv *fd_scoring_window_block(int64_t score_from, int64_t context_length, int64_t n_windows)
{
    char policy[320];
    if (score_from == context_length / 2)
        snprintf(policy, sizeof policy, "llama.cpp scores positions n_ctx/2 .. n_ctx-2 of every chunk (the second half); "
                 "the first %lld predictions of each chunk are dropped", (long long)score_from);
    else
        snprintf(policy, sizeof policy, "positions %lld .. n-2 of every window are scored; the first %lld predictions "
                 "of each window are dropped", (long long)score_from, (long long)score_from);
    jv *sw = jv_obj();
    jv_set(sw, "score_from", jv_int(score_from));
    jv_set(sw, "windowed", jv_bool(1));
    jv_set(sw, "min_left_context_tokens", jv_int(score_from));
    jv_set(sw, "dropped_positions_total", jv_int(score_from * n_windows));
    jv_set(sw, "policy", jv_str(policy));
    return sw;
}
