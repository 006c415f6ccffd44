/* reseal: the one publication repair a sealed dataset may carry without
 * touching science (the Python tool's dsreseal): the validator's sealed
 * verdict (validation/structural-validation.json) names a private absolute
 * path as its subject; the copy names `dataset:<id>` instead, carries a
 * sealed reseal receipt, a dataset.resealed block, a disclosure and a card
 * note, and is sealed again.  Every other member is copied byte for byte, so
 * capture_content_digest is unchanged (checked).  Anything broader refuses
 * with reseal_refused. */
#ifndef FD_RESEAL_H
#define FD_RESEAL_H
#include "json.h"

#define FD_RESEAL_RECEIPT_NAME "validation/reseal-receipt.json"
#define FD_RESEAL_VALIDATION_RECORD "validation/structural-validation.json"

/* Textual members the publisher scans (dshub._textual_publish_member). */
int fd_publish_textual_member(const char *relpath);
/* 1 if the bytes contain one of the publisher's private-path patterns; the
 * first pattern hit goes to *hit when hit is not NULL. */
int fd_has_private_path(const void *p, size_t n, const char **hit);
/* Streams root/rel (regular file) through the private-path scan.  1 hit,
 * 0 clean, -1 error. */
int fd_file_has_private_path(const char *root, const char *rel, fd_err *e);

typedef struct fd_reseal_plan {
    jv *receipt;      /* the outer receipt: the sealed inner one plus resealed_* and output null */
    char from_sha[65], capture_digest[65], original_value_sha[65];
    char *new_subject;
} fd_reseal_plan;

/* Checks every precondition and, unless dry_run, writes `out` (temp name,
 * verified, renamed into place).  Errors carry code reseal_refused. */
int fd_reseal(const char *source, const char *out, int dry_run, fd_reseal_plan *plan, fd_err *e);
void fd_reseal_plan_free(fd_reseal_plan *plan);

#endif
