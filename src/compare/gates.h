#ifndef FD_COMPARE_GATES_H
#define FD_COMPARE_GATES_H
#include "side.h"

typedef struct fd_gate_opts {
    int self_compare, allow_cross_lane, allow_partial, own_heads, disclose_head_substitution, verify_tensors;
} fd_gate_opts;

typedef struct fd_gates {
    jv *gates, *disclosures, *bias;
    int advisory, floor_ok, same_lane, covers_full, tokenizer_equal;
    int heads_equal, head_substituted, digest_equal, weights_equal;
    const char *head_policy, *stack_relation, *kind;
    const char *head_ref, *head_cand;   /* content digests of the heads each side ships */
    int64_t *shared;                    /* shared context indices, ascending */
    size_t nshared;
} fd_gates;

static inline int py_true(const jv *v) { return v && ((v->t == JV_BOOL && v->u.b) || (v->t != JV_NULL && v->t != JV_BOOL)); }

int fd_gates_run(const fd_side *ref, const fd_side *cand, const fd_gate_opts *o, fd_gates *g, fd_err *e);
void fd_gates_free(fd_gates *g);

#endif
