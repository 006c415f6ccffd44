/* validate / verify: every check of FORMAT.md §4 in the reference order
 * (dsvalidate.validate_dataset), each finding with its code and rule id.
 * verify refuses with the first error; validate reports them all. */
#ifndef FD_VALIDATE_H
#define FD_VALIDATE_H
#include "json.h"

typedef struct fd_finding {
    char *code, *rule, *message, *where;
} fd_finding;

typedef struct fd_report {
    char *subject;
    fd_finding *errors, *warnings;
    size_t n_errors, n_warnings, cap_errors, cap_warnings;
    char **checks;
    size_t n_checks, cap_checks;
    jv *manifest;            /* the loaded manifest when it parsed, for callers */
} fd_report;

typedef struct fd_validate_opts {
    int verify_tensors, allow_partial, manifest_only, strict;
} fd_validate_opts;

void fd_validate_dataset(const char *root, const fd_validate_opts *o, fd_report *r);
void fd_report_free(fd_report *r);
void fd_report_error(fd_report *r, const char *code, const char *rule, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void fd_report_warn(fd_report *r, const char *code, const char *rule, const char *where, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The sealed report dict (malaiwah.fidelity-structural-validation.v1). */
jv *fd_report_to_json(const fd_report *r);

#endif
