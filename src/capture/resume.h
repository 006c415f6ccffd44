/* capture --resume: the journal OUT.resume/ of an interrupted capture.  After
 * each window is written, its hidden-states file (hard-linked from the
 * writer's staging directory, else copied) and a small record (window id,
 * token digest, checkpoint identity, product order, score_from, shape, content
 * sha256) are kept there; --resume takes every window whose record and file
 * match this capture's inputs (each verified, a mismatch refused) and computes
 * the rest.  The journal goes when the dataset is sealed. */
#ifndef FD_CAPTURE_RESUME_H
#define FD_CAPTURE_RESUME_H
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

typedef struct fd_resume {
    char *dir;
    int resume;
    size_t taken;   /* windows taken from the journal */
} fd_resume;

/* What a journal record must match. */
typedef struct fd_resume_key {
    size_t index;
    const char *window_id;
    const int64_t *ids;
    size_t n_ids;
    const char *checkpoint_identity, *order;
    size_t score_from, rows, hidden;
} fd_resume_key;

/* resume 0: an old journal of OUT is discarded (a fresh capture); 1: kept. */
int fd_resume_open(fd_resume *r, const char *out, int resume, fd_err *e);
/* 1: the scored rows of window k->index read into scored ((rows - score_from)
 * x hidden bf16) and *seconds set; 0: no record (compute it); -1: refused
 * (resume_mismatch: the record or its file does not match). */
int fd_resume_load(fd_resume *r, const fd_resume_key *k, uint16_t *scored, double *seconds, fd_err *e);
/* Records a window just written: staged is the writer's hidden-states file. */
int fd_resume_save(const fd_resume *r, const fd_resume_key *k, const char *staged, const uint16_t *scored,
                   double seconds, fd_err *e);
void fd_resume_finish(fd_resume *r); /* sealed: the journal goes */
void fd_resume_free(fd_resume *r);

#endif
