/* panel-binding --panel DIR --tokenizer-root DIR [--role final] --out FILE:
 * the Python tool's ResolvedPanel contract (capture/panel_binding.h),
 * written once as canonical JSON + "\n", and its sha256. */
#include "cli.h"
#include "capture/panel_binding.h"
#include "format/sha.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr, "usage: fidelity panel-binding --panel DIR --tokenizer-root DIR [--role final] --out FILE\n");
    return FD_EXIT_USAGE;
}

int cmd_panel_binding(int argc, char **argv)
{
    const char *panel = NULL, *tok = NULL, *role = "final", *out = NULL;
    for (int i = 1; i < argc; i += 2) { /* every option takes one value */
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = !strcmp(s, "--panel") ? &panel : !strcmp(s, "--tokenizer-root") ? &tok
                          : !strcmp(s, "--role") ? &role : !strcmp(s, "--out") ? &out : NULL;
        if (!slot || !v) { fprintf(stderr, "fidelity panel-binding: unknown or incomplete option %s\n", s); return usage(); }
        *slot = v;
    }
    if (!panel || !tok || !out) return usage();
    struct stat st;
    if (lstat(out, &st) == 0) {
        printf("REFUSED [destination_exists]: %s exists\n  remedy: a binding is written once; delete it deliberately\n", out);
        return FD_EXIT_REFUSED;
    }
    jv *b = NULL;
    fd_err e;
    if (fd_resolve_panel(panel, role, tok, &b, &e)) {
        printf("REFUSED [%s]: %s\n  remedy: --tokenizer-root must hold every tokenizer file the panel receipt lists "
               "(the root release's checkpoint directory)\n", e.code, e.msg);
        return FD_EXIT_REFUSED;
    }
    const jv *t = jv_get(b, "tokenizer");
    const jv *fv = jv_get(t, "files_verified");
    if (!fv || fv->t != JV_BOOL || !fv->u.b) {
        printf("REFUSED [tokenizer_files_unverified]: the tokenizer files the panel receipt lists did not all verify "
               "under --tokenizer-root %s\n", tok);
        jv_free(b);
        return FD_EXIT_REFUSED;
    }
    fd_buf raw = {0};
    int rc = jv_dump(b, &JV_CANON, &raw, &e);
    fd_buf_putc(&raw, '\n');
    /* written once: O_EXCL on a temp name beside it, then link() (fails if out appeared meanwhile) */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.partial-%ld", out, (long)getpid());
    int fd = rc ? -1 : open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    int ok = fd >= 0 && write(fd, raw.p, raw.n) == (ssize_t)raw.n && !fsync(fd);
    if (fd >= 0 && close(fd)) ok = 0;
    if (ok && link(tmp, out)) ok = 0;
    int err = errno;
    if (fd >= 0) unlink(tmp);
    if (!ok) {
        printf("REFUSED [%s]: %s: %s\n", err == EEXIST ? "destination_exists" : "unwritable", out, strerror(err));
        fd_buf_free(&raw);
        jv_free(b);
        return FD_EXIT_REFUSED;
    }
    char digest[65];
    fd_sha256_hex(raw.p, raw.n, digest);
    const jv *p = jv_get(b, "panel");
    printf("panel binding written\n");
    printf("  panel               %s (%s)\n", jv_get_str(p, "id") ? jv_get_str(p, "id") : "?",
           jv_get_str(p, "suite_token_hash_sha256"));
    printf("  tokenizer           %s @ %s, %zu files verified\n", jv_get_str(t, "repository"), jv_get_str(t, "revision"),
           jv_get(t, "files")->u.a.n);
    printf("  file                %s\n", out);
    printf("  sha256              %s\n", digest);
    printf("  capture with        --panel-binding %s --panel-binding-sha256 %s\n", out, digest);
    fd_buf_free(&raw);
    jv_free(b);
    return FD_EXIT_OK;
}
