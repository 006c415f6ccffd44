/* Registry submissions (COMPARE.md §7): a measurement receipt plus the
 * operator's provenance becomes a sealed
 * quant-fidelity-registry/submission-receipt.v1 document. */
#ifndef FD_SUBMISSION_H
#define FD_SUBMISSION_H
#include "format/json.h"
#include "util/err.h"

#define FD_SUBMISSION_SCHEMA "quant-fidelity-registry/submission-receipt.v1"

/* The provenance skeleton `fidelity provenance-template` writes. */
jv *fd_provenance_template(void);
/* Refusals: SC-3 (not a measurement) and SC-5 (a blocking disclosure) are
 * code not_a_measurement; SC-4 (an artifact/panel/reference field missing)
 * is missing_provenance; a preview/teacher marker anywhere is
 * not_submittable.  On success *out is the sealed submission. */
int fd_submission_build(const jv *receipt, const jv *provenance, const char *measurer, jv **out, fd_err *e);

#endif
