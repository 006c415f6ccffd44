/* The layer-outer schedule (FORMAT.md §6 "Other options", issue 9): every
 * window, the probe's included, goes through layer 0, then layer 1, ...,
 * with the checkpoint opened lazily (engine/weights.h) so that only one
 * layer's tensors are mapped at a time; the result is bitwise the
 * window-outer one (the forward of a window never reads another window).
 * And the memory pre-flight both schedules run before any forward. */
#ifndef FD_CAPTURE_SCHEDULE_H
#define FD_CAPTURE_SCHEDULE_H
#include "capture/panel.h"
#include "capture/probe.h"
#include "engine/config.h"
#include "engine/ops/matmul.h"
#include "engine/weights.h"
#include "util/err.h"

/* hid[i]: the final-norm rows of window i (n_ids x hidden bf16), allocated
 * here; seconds[i]: its share of the forward time; *probe_record set when
 * the plan has ids; head_tensor (lm_head.weight, or the tied embedding) is
 * left mapped for the caller.  progress: a line per layer. */
int fd_layer_outer(const fd_mm *m, fd_weights *W, const fd_glm_config *c, const fd_panel *P, fd_probe_plan *pp,
                   const char *head_tensor, uint16_t **hid, double *seconds, jv **probe_record, int progress,
                   fd_err *e);

typedef struct fd_mem_estimate {
    uint64_t weights;       /* bytes mapped at the peak: the checkpoint, or (layer-outer) the largest of the
                               embedding, a layer, the final norm + head */
    uint64_t working;       /* packed copies of a layer's weights, activations, outputs */
    uint64_t total;
    uint64_t limit;         /* 0: none found */
    char limit_source[96];  /* "--memory-limit", "RLIMIT_AS", "cgroup", "MemAvailable" */
} fd_mem_estimate;

/* Refuses (insufficient_memory) a run whose estimate exceeds the limit:
 * the explicit one when > 0, else RLIMIT_AS (address space: both schedules),
 * else for layer-outer the cgroup limit or MemAvailable. */
int fd_memory_preflight(fd_weights *W, const fd_glm_config *c, const fd_panel *P, int layer_outer,
                        uint64_t explicit_limit, fd_mem_estimate *est, fd_err *e);

#endif
