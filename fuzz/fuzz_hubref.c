/* libFuzzer target for the hf:// reference parser, the URL origin parser and
 * the output redactor.  An accepted reference must give a resolve URL on the
 * endpoint's own origin with no "." / ".." revision segment; redaction must
 * leave no registered secret behind. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hub/hub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    fd_hub_ref r;
    fd_err e;
    if (!fd_hub_parse_ref(s, &r, &e)) {
        const char *slash = strchr(r.repo, '/');
        if (!slash || strchr(slash + 1, '/') || !r.revision[0]) abort();
        for (const char *p = r.revision; *p;) { /* no "." or ".." segment: the revision names a cache directory */
            size_t l = strcspn(p, "/");
            if (!l || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.')) abort();
            p += l + (p[l] ? 1 : 0);
        }
        fd_buf u = {0};
        fd_hub_resolve_url("https://huggingface.co", &r, "capture/manifest.json", &u);
        fd_origin a, b;
        if (fd_url_origin(u.p, &a) || fd_url_origin("https://huggingface.co", &b) || !fd_origin_equal(&a, &b)) {
            fprintf(stderr, "fuzz_hubref: '%s' resolves off the endpoint: %s\n", s, u.p);
            abort();
        }
        fd_buf_free(&u);
    } else if (strcmp(e.rule, "HUB-REF")) abort();
    fd_origin o;
    fd_url_origin(s, &o);
    const char *secret = "s3cr3t-token-value";
    char *red = fd_redact(s, secret);
    if (strstr(red, secret)) abort();
    free(red);
    free(s);
    return 0;
}
