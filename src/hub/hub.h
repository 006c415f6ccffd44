/* hf:// dataset references, the Hub's resolve URLs, tokens and the verified
 * fetch into a per-repo, per-revision cache (docs/HUB.md, FORMAT.md §4
 * "hf:// resolution and dshub").  Every failure is code "hub_error" (the
 * Python tool's single HubError code) with a rule naming the class:
 * HUB-REF, HUB-TOKEN, HUB-HTTP, HUB-NET, HUB-ORIGIN, HUB-SCHEMA, HUB-SEAL,
 * HUB-PATH, HUB-DIGEST, HUB-CACHE. */
#ifndef FD_HUB_H
#define FD_HUB_H
#include <stddef.h>
#include "util/buf.h"
#include "util/err.h"

#define FD_HUB_DEFAULT_ENDPOINT "https://huggingface.co"
#define FD_HUB_USER_AGENT "malaiwah-fidelity-dataset/1.0"

typedef struct fd_hub_ref {
    char repo[200];     /* owner/name */
    char revision[256]; /* "main" when the reference names none */
} fd_hub_ref;

/* 1 when s starts with "hf://". */
int fd_hub_is_ref(const char *s);
/* hf://owner/name[@revision] (split at the last '@'); the Hub's repo-id rule
 * and a revision of [A-Za-z0-9._/-] with no "." / ".." segment. */
int fd_hub_parse_ref(const char *s, fd_hub_ref *r, fd_err *e);
/* {endpoint}/datasets/{repo}/resolve/{quote(rev,safe='')}/{quote(path,safe='/')} */
void fd_hub_resolve_url(const char *endpoint, const fd_hub_ref *r, const char *path, fd_buf *out);
/* (scheme, host, port) with default ports filled in; -1 when unparseable. */
typedef struct fd_origin { char scheme[16]; char host[256]; int port; } fd_origin;
int fd_url_origin(const char *url, fd_origin *o);
int fd_origin_equal(const fd_origin *a, const fd_origin *b);

/* The token: an explicit file (O_NOFOLLOW, regular, owned by the uid, mode
 * exactly 0600, non-empty), else HF_TOKEN, HUGGING_FACE_HUB_TOKEN,
 * ~/.cache/huggingface/token.  *out is NULL when there is none. */
int fd_hub_token_load(const char *token_file, char **out, fd_err *e);

/* common.redact: the literal secret (when >= 8 bytes) and the token shapes
 * hf_..., api_org_..., sk-..., token=..., "authorization: bearer ..." become
 * ***REDACTED***.  Returns a fresh string. */
char *fd_redact(const char *text, const char *secret);

/* One HTTP client session: endpoint, optional token, retry policy. */
typedef struct fd_hub_client {
    const char *endpoint;
    const char *token;      /* used only after a 401/403, only to the endpoint's origin */
    int progress;           /* bytes/s lines on stderr */
    double retry_spent;     /* seconds waited so far (budget 300 s) */
} fd_hub_client;

/* GET url into memory (at most max bytes). */
int fd_hub_get_mem(fd_hub_client *c, const char *url, size_t max, fd_buf *out, fd_err *e);
/* GET url appending to part_path, resuming with a Range request from its
 * current size; on success the file holds the whole body (not verified).
 * max > 0: the transfer is aborted (HUB-SIZE) as soon as the file would
 * pass max bytes. */
int fd_hub_get_file(fd_hub_client *c, const char *url, const char *part_path, const char *label, size_t max, fd_err *e);

typedef struct fd_fetch_opts {
    const char *cache;      /* NULL: $FIDELITY_CACHE, else ~/.cache/fidelity/datasets */
    const char *token_file;
    int allow_partial;      /* skip the capture tensors (capture/manifest.json is kept) */
    int manifest_only;
    int progress;
    int quiet;              /* no per-file lines on stderr */
    int anonymous;          /* never load or send a token (a public-readability proof) */
} fd_fetch_opts;

typedef struct fd_fetch_stats { size_t downloaded, reused, resumed; } fd_fetch_stats;

/* Fetches ref into <cache>/<owner__name>/<rev> and returns that directory
 * (malloc'd) in *root.  Every path is checked before any write; every file
 * is hashed before it is moved into place. */
int fd_hub_fetch(const char *ref, const fd_fetch_opts *o, char **root, fd_fetch_stats *st, fd_err *e);

/* For CLI arguments: a local path is returned as a copy; an hf:// reference
 * is fetched first.  On failure the message is already redacted. */
int fd_hub_resolve_arg(const char *arg, const fd_fetch_opts *o, char **local, fd_err *e);

#endif
