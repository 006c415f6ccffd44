/* hf:// references, resolve URLs, origins and output redaction. */
#include <stdlib.h>
#include "check.h"
#include "hub/hub.h"
#include "compare/submission.h"
#include "card/card.h"
#include "format/writer.h"

/* SC-3/SC-5/SC-4 order and codes of the submission refusals. */
static int submission_refusals(void)
{
    int fails = 0;
    fd_err e;
    jv *out = NULL, *prov = fd_provenance_template();
    const char *blocking = "{\"comparison_kind\":\"measurement\",\"disclosures\":[{\"code\":\"preview_capture\","
                           "\"severity\":\"blocking\"}]}";
    jv *r = jv_parse(blocking, strlen(blocking), &e);
    CHECK(fd_submission_build(r, prov, NULL, &out, &e) == -1 && !strcmp(e.code, "not_a_measurement") &&
          !strcmp(e.rule, "SC-5") && strstr(e.msg, "preview_capture"), "SC-5 blocking disclosure");
    jv_free(r);
    const char *floor = "{\"comparison_kind\":\"run_to_run_floor\",\"disclosures\":[]}";
    r = jv_parse(floor, strlen(floor), &e);
    CHECK(fd_submission_build(r, prov, NULL, &out, &e) == -1 && !strcmp(e.rule, "SC-3"), "SC-3 first");
    jv_free(r);
    const char *clean = "{\"comparison_kind\":\"measurement\",\"disclosures\":[]}";
    r = jv_parse(clean, strlen(clean), &e);
    CHECK(fd_submission_build(r, prov, NULL, &out, &e) == -1 && !strcmp(e.rule, "SC-4") &&
          strstr(e.msg, "10 required field(s)"), "SC-4 lists every empty field");
    jv_free(r);
    jv_free(prov);
    return fails;
}

/* The emitter writes what PyYAML writes for floats and quotes what PyYAML
 * would type; the reader types like safe_load. */
static int yaml_round_trip(void)
{
    int fails = 0;
    fd_err e;
    const char *doc = "{\"a\":1e-05,\"b\":1e+16,\"c\":\"0x1F\",\"d\":\"1_000\",\"e\":\"2026-01-02\",\"f\":\"yes\","
                      "\"g\":\"~\",\"h\":\"<<\",\"i\":\"plain text\",\"j\":0.5}";
    jv *v = jv_parse(doc, strlen(doc), &e);
    fd_buf y = {0};
    fd_yaml_emit(v, &y);
    CHECK(strstr(y.p, "a: 1.0e-05\n") && strstr(y.p, "b: 1.0e+16\n"), "floats get PyYAML's .0 before a bare exponent");
    CHECK(strstr(y.p, "c: '0x1F'") && strstr(y.p, "d: '1_000'") && strstr(y.p, ": '2026-01-02'") &&
          strstr(y.p, "f: 'yes'") && strstr(y.p, "g: '~'") && strstr(y.p, "h: '<<'") && strstr(y.p, "i: plain text"),
          "strings PyYAML would type are quoted");
    jv *back = fd_yaml_parse(y.p, y.n, &e);
    CHECK(back && jv_equal(back, v), "emit then parse is the identity");
    jv_free(back);
    fd_buf_free(&y);
    jv_free(v);
    static const char *const typed[][2] = {{"a: 0x1F", "31"}, {"a: 0o", NULL}, {"a: 017", "15"}, {"a: 1_000", "1000"},
                                           {"a: Yes", "true"}, {"a: off", "false"}, {"a: ~", "null"}, {"a: 1.5", "1.5"}};
    for (size_t i = 0; i < sizeof typed / sizeof *typed; i++) {
        jv *p = fd_yaml_parse(typed[i][0], strlen(typed[i][0]), &e);
        fd_buf b = {0};
        if (p) jv_dump(jv_get(p, "a"), &JV_CANON, &b, &e);
        if (typed[i][1]) CHECKF(p && b.p && !strcmp(b.p, typed[i][1]), "%s -> %s", typed[i][0], typed[i][1]);
        else CHECKF(p && jv_get(p, "a")->t == JV_STR, "%s stays a string", typed[i][0]);
        fd_buf_free(&b);
        jv_free(p);
    }
    static const char *const bad[] = {"a: &x 1\nb: *x\n", "a: 1\na: 2\n", "a: !!python/object:os.system x\n",
                                      "a: .inf\n", "a: 2026-01-02\n", "? [1]\n: 2\n", "a: [\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        jv *p = fd_yaml_parse(bad[i], strlen(bad[i]), &e);
        CHECKF(!p && !strcmp(e.code, "card_invalid"), "refused: %s", bad[i]);
        jv_free(p);
    }
    return fails;
}

int test_hub(void)
{
    int fails = submission_refusals() + yaml_round_trip();
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
