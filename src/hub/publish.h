/* publish: a qualified local root to a Hub dataset repository in one commit
 * (the Hub's NDJSON commit API through libcurl), then the anonymous
 * re-download of that immutable revision, verified, before anything is
 * reported as published (the Python tool's cmd_publish, local path).  The
 * token goes only to the endpoint's origin, never into any output. */
#ifndef FD_HUB_PUBLISH_H
#define FD_HUB_PUBLISH_H
#include "format/json.h"
#include "util/err.h"

typedef struct fd_publish_opts {
    const char *dataset, *repo, *qualification, *job, *expected_head; /* expected_head: "absent" or 40 hex */
    const char *message, *token_file, *cache, *receipt;
    const char *result_archive, *archive_sha256, *archive_bytes; /* the pod path's flags */
    int dry_run;
} fd_publish_opts;

/* Returns the exit code (0 published and verified; 3 refused, the refusal
 * already printed). */
int fd_publish(const fd_publish_opts *o);
/* The routing by the qualification's execution_kind (publish_route.c):
 * 0 for the local path, else 3 with the refusal printed. */
int fd_publish_route(const fd_publish_opts *o);

#endif
