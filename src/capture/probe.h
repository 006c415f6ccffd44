/* The generation sanity probe (FORMAT.md §6, schema
 * malaiwah.generation-sanity-probe.v1): one extra window outside the
 * dataset, "The capital of France is" by default, whose last-position logits
 * are read in fp64.  Always recorded; refused when the distribution is
 * degenerate (every logit equal: a head or hidden state that loaded as
 * zeros) and, when an expectation is declared, when the top-1 token is not
 * the expected word's first token.
 *
 * Logits: the canonical fp32 dot of the final hidden row with each head row,
 * rounded to bf16 (transformers' bf16 lm_head output), then fp64.  Softmax:
 * max-shifted exp, sequential sum, divide.  Top-k ties go to the lower id. */
#ifndef FD_CAPTURE_PROBE_H
#define FD_CAPTURE_PROBE_H
#include "engine/config.h"
#include "engine/ops/matmul.h"
#include "engine/weights.h"
#include "format/json.h"
#include "util/err.h"

#define FD_PROBE_SCHEMA "malaiwah.generation-sanity-probe.v1"
#define FD_PROBE_DEFAULT_PROMPT "The capital of France is"

typedef struct fd_probe_opts {
    const char *prompt;     /* NULL: FD_PROBE_DEFAULT_PROMPT */
    const char *expect;     /* NULL or blank: recorded, not enforced */
    int disabled;           /* --no-sanity-check: a skipped record */
} fd_probe_opts;

/* The probe in two halves, for a schedule that runs the probe window among
 * the others (layer-outer): prepare (tokenizer, prompt ids; or a skipped
 * record when it cannot or must not run), then finish with the last
 * final-norm row of the prompt's forward. */
typedef struct fd_tokenizer fd_tokenizer;
typedef struct fd_probe_plan {
    const char *prompt, *expect;
    fd_tokenizer *tok;
    int64_t *ids;           /* NULL: no forward; the record is `skipped` */
    size_t n;
    jv *skipped;
} fd_probe_plan;
int fd_probe_prepare(const fd_probe_opts *o, const char *model_dir, fd_probe_plan *p, fd_err *e);
int fd_probe_finish(fd_probe_plan *p, const fd_mm *m, const fd_glm_config *c, const fd_tensor *head,
                    const uint16_t *last_row, jv **record, fd_err *e);
void fd_probe_plan_free(fd_probe_plan *p);

/* *record: the generation_sanity_probe block (status recorded|pass|skipped).
 * Refusals: degenerate, sanity_probe_failed, sanity_probe_unavailable
 * (tokenizer missing while enforced), bad_token. */
int fd_probe_run(const fd_probe_opts *o, const char *model_dir, const fd_mm *m, const fd_weights *W,
                 const fd_glm_config *c, const fd_tensor *head, jv **record, fd_err *e);

/* The probe's evaluation of one logit row (fp64), split out for tests:
 * fills top ids/probabilities (k of them), entropy and spread. */
typedef struct fd_probe_stats {
    int64_t top_id[5];
    double top_p[5];
    size_t k;
    double entropy, uniform_entropy, spread;
} fd_probe_stats;
void fd_probe_stats_of(const double *logits, size_t vocab, fd_probe_stats *s);

#endif
