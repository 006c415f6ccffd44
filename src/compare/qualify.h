/* qualify-root --local: two cold captures of one root, their two full
 * verifications and the forced exact-zero self-comparison become one sealed
 * `fidelity.root-qualification-receipt.v1` (the Python tool's
 * cmd_qualify_root checks, local path), with a job contract derived from the
 * captures' own sealed evidence and the checkpoint directory they ran from
 * (execution_kind local).  Every failure is root_qualification_refused;
 * nothing is written unless every check passes.  See docs/LIFECYCLE.md for
 * what differs from the Python tool's hf_capture-bound contract. */
#ifndef FD_COMPARE_QUALIFY_H
#define FD_COMPARE_QUALIFY_H
#include "format/json.h"
#include "util/err.h"

typedef struct fd_qualify_opts {
    const char *first, *repeat, *first_label, *repeat_label;
    const char *first_verify, *repeat_verify, *comparison;
    const char *model_dir, *out, *job_out, *measurer;
} fd_qualify_opts;

/* _capture_identity of one root dataset (full verify, role root, run_count
 * 1, the process label in run_name / cold_run); NULL with the refusal. */
jv *fd_qualify_capture_identity(const char *root, const char *expected_label, const char *label, fd_err *e);

/* On success *receipt is the sealed receipt written to o->out and *job the
 * job contract written to o->job_out (or job.json beside out). */
int fd_qualify_root_local(const fd_qualify_opts *o, jv **receipt, jv **job, char **job_path, fd_err *e);

#endif
