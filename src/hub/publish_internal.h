/* publish: what publish.c (the gates, the command) and publish_http.c (the
 * Hub's HTTP commit API: requests, preupload, LFS, the NDJSON commit) share. */
#ifndef FD_HUB_PUBLISH_INTERNAL_H
#define FD_HUB_PUBLISH_INTERNAL_H
#include "publish.h"
#include "util/buf.h"
#include <stdint.h>
#include <stdio.h>

#define FD_PUB_QUAL_PATH "receipts/root-qualification.json"
#define FD_PUB_INLINE_MAX ((uint64_t)1 << 30) /* the inline (non-LFS) commit payload bound */

typedef struct pub {
    const fd_publish_opts *o;
    char *token;
    const char *endpoint;
} pub;

typedef struct upfile {
    const char *repo_path;  /* borrowed */
    char *path;             /* local file */
    uint64_t size;
    char sha[65];
    int lfs;
} upfile;

/* One request: no redirect is followed, the token (when asked for) goes
 * only to the endpoint's own origin. */
int fd_pub_request(const pub *p, const char *method, const char *url, int with_token, const char *ctype,
                   const void *body, size_t n, long *status, fd_buf *out, char *msg, size_t cap);
/* ENDPOINT (trailing slashes dropped) then FMT with the repository id. */
void fd_pub_repo_url(fd_buf *b, const char *endpoint, const char *fmt, const char *repo);
/* POST preupload: the Hub says, per file, regular or lfs (sets f[i].lfs). */
int fd_pub_upload_modes(const pub *p, upfile *f, size_t n, char *msg, size_t cap);
/* The LFS batch API, each upload action and its verify action. */
int fd_pub_lfs_upload(const pub *p, upfile *f, size_t n, char *msg, size_t cap);
/* The one NDJSON commit on top of HEAD ("absent": none); REVISION gets the
 * 40-hex commitOid. MSG says why not, and whether the commit was sent. */
int fd_pub_commit(const pub *p, const upfile *f, size_t n, const char *head, char revision[41], char *msg, size_t cap);

#endif
