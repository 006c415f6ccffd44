/* hf:// references, resolve URLs, origins and output redaction. */
#include <stdlib.h>
#include "check.h"
#include "hub/hub.h"

int test_hub(void)
{
    int fails = 0;
    fd_hub_ref r;
    fd_err e;
    CHECK(!fd_hub_parse_ref("hf://owner/name", &r, &e), "plain ref");
    CHECK_STR(r.repo, "owner/name", "repo");
    CHECK_STR(r.revision, "main", "default revision");
    CHECK(!fd_hub_parse_ref("hf://o.w-n_er/na.me@v1.0", &r, &e), "ref with revision");
    CHECK_STR(r.revision, "v1.0", "revision");
    CHECK(!fd_hub_parse_ref("hf://o/n@refs/pr/3", &r, &e), "slash revision");
    static const char *const bad[] = {"hf://", "hf://a", "hf://a/b/c", "hf://a/b@", "hf:///b", "hf://a/", "hf://a/b@..",
                                      "hf://a/b@x/../y", "hf://a/b@/x", "hf://a/b@x y", "hf://-a/b", "hf://a/b.git",
                                      "hf://a--x/b", "hf://a/b..c", "hf://a b/c", "https://a/b", "hf://a/b@x%2F"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECKF(fd_hub_parse_ref(bad[i], &r, &e) == -1 && !strcmp(e.code, "hub_error") && !strcmp(e.rule, "HUB-REF"),
               "%s must be refused", bad[i]);
    }
    fd_buf u = {0};
    fd_hub_parse_ref("hf://o/n@refs/pr/3", &r, &e);
    fd_hub_resolve_url("https://huggingface.co/", &r, "capture/hidden 0000.safetensors", &u);
    CHECK_STR(u.p, "https://huggingface.co/datasets/o/n/resolve/refs%2Fpr%2F3/capture/hidden%200000.safetensors",
              "resolve URL quoting (revision safe='', path safe='/')");
    fd_buf_free(&u);
    fd_origin a, b;
    CHECK(!fd_url_origin("HTTPS://Example.COM/x", &a) && !strcmp(a.host, "example.com") && a.port == 443, "https default port");
    CHECK(!fd_url_origin("https://example.com:443/y?q", &b) && fd_origin_equal(&a, &b), "explicit default port is the same origin");
    CHECK(!fd_url_origin("http://example.com/x", &b) && !fd_origin_equal(&a, &b), "scheme change is another origin");
    CHECK(!fd_url_origin("https://user@example.com:8443", &b) && b.port == 8443 && !fd_origin_equal(&a, &b), "port change");
    CHECK(!fd_url_origin("http://[::1]:80/", &b) && !strcmp(b.host, "[::1]") && b.port == 80, "IPv6 literal");
    CHECK(fd_url_origin("example.com/x", &b) == -1 && fd_url_origin("http://h:0/", &b) == -1 &&
          fd_url_origin("http://:80/", &b) == -1 && fd_url_origin("ftp://h/", &b) == -1, "unparseable origins");
    static const char *const red[][3] = {
        {"Bearer hf_abcdefghijklmnopqrstuvwxyz here", NULL, "Bearer ***REDACTED*** here"},
        {"x api_org_ABCDEFGHIJKLMNOPQRSTUV y", NULL, "x ***REDACTED*** y"},
        {"key sk-abc_def-ghijklmnopqrstuvw.", NULL, "key ***REDACTED***."},
        {"url?TOKEN=abcdefghijklmnopqrstuvwxyz012", NULL, "url?***REDACTED***"},
        {"Authorization: Bearer abcdefghijklmnopqrstuvwx", NULL, "***REDACTED***"},
        {"hf_short stays", NULL, "hf_short stays"},
        {"xhf_abcdefghijklmnopqrstuvwxyz stays", NULL, "xhf_abcdefghijklmnopqrstuvwxyz stays"},
        {"secret s3cr3tvalue! and s3cr3tvalue!", "s3cr3tvalue!", "secret ***REDACTED*** and ***REDACTED***"},
        {"short secret abc", "abc", "short secret abc"},
    };
    for (size_t i = 0; i < sizeof red / sizeof *red; i++) {
        char *out = fd_redact(red[i][0], red[i][1]);
        CHECK_STR(out, red[i][2], red[i][0]);
        free(out);
    }
    return fails;
}
