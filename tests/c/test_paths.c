/* Unit tests for src/format/paths.c (normpath, PATH-1/PATH-3) and the
 * credential-name rule of checksums.c.  normpath expectations come from
 * CPython 3.11 posixpath.normpath; the relpath table follows
 * dsformat.check_relpath (FORMAT.md §3, tests/py/ref_check.py safe_rel). */
#include <string.h>
#include "check.h"
#include "format/checksums.h"
#include "format/paths.h"

static int normpath(void)
{
    int fails = 0;
    static const char *const cases[][2] = {
        {"", "."}, {".", "."}, {"./", "."}, {"a", "a"}, {"a/", "a"}, {"a//b", "a/b"}, {"a/./b", "a/b"},
        {"a/../b", "b"}, {"../a", "../a"}, {"../../a/b", "../../a/b"}, {"../a/../..", "../.."}, {"a/..", "."},
        {"a/b/../..", "."}, {"/", "/"}, {"//", "//"}, {"///", "/"}, {"////a", "/a"}, {"/..", "/"},
        {"/../a", "/a"}, {"//a//b", "//a/b"}, {"/a/./b/../c/", "/a/c"}, {"a/b/c/../../../..", ".."},
        {"...", "..."}, {"..foo", "..foo"}, {"a/..b", "a/..b"}, {"./.", "."}, {"x/./././y", "x/y"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char out[256];
        int rc = fd_normpath(cases[i][0], out, sizeof out);
        CHECKF(rc == 0 && !strcmp(out, cases[i][1]), "normpath('%s') = '%s' (rc %d), want '%s'", cases[i][0],
               rc ? "" : out, rc, cases[i][1]);
    }
    char small[4];
    CHECK(fd_normpath("abcdef", small, sizeof small) != 0, "normpath into a too-small buffer fails");
    CHECK(fd_normpath("ab", small, sizeof small) == 0 && !strcmp(small, "ab"), "normpath fits exactly");
    char one[1];
    CHECK(fd_normpath("", one, sizeof one) != 0, "normpath '.' into 1 byte fails");

    char j[256];
    CHECK(fd_join_norm("capture", "../panel/x.json", j, sizeof j) == 0 && !strcmp(j, "panel/x.json"),
          "join_norm capture + ../panel/x.json");
    CHECK(fd_join_norm("", "a/./b", j, sizeof j) == 0 && !strcmp(j, "a/b"), "join_norm with an empty base");
    CHECK(fd_join_norm("capture", "../../x", j, sizeof j) == 0 && !strcmp(j, "../x"), "join_norm escaping");
    fd_dirname("capture/manifest.json", j, sizeof j);
    CHECK_STR(j, "capture", "dirname");
    fd_dirname("manifest.json", j, sizeof j);
    CHECK_STR(j, "", "dirname of a bare name");
    CHECK(fd_starts("capture/x", "capture/") && !fd_starts("captur", "capture/"), "fd_starts");
    return fails;
}

static int relpath(void)
{
    int fails = 0;
    static const struct { const char *p; int allow_parent, ok; } cases[] = {
        {"a", 0, 1},
        {"a/b.json", 0, 1},
        {"./a", 0, 1},
        {"a/.", 0, 1},
        {"...", 0, 1},
        {"a/..b", 0, 1},
        {"..foo", 0, 1},          /* not a '..' segment (safe_rel accepts it) */
        {"a/b:c", 0, 1},          /* ':' only refused in the first segment */
        {"a\\b", 0, 1},
        {"", 0, 0},
        {"/abs", 0, 0},
        {"/", 0, 0},
        {"\\x", 0, 0},
        {"c:/x", 0, 0},
        {"c:", 0, 0},
        {"C:\\x", 0, 0},
        {"x://y", 0, 0},
        {"a/x://y", 0, 0},
        {"http://host/x", 0, 0},
        {"..", 0, 0},
        {"../x", 0, 0},
        {"a/../b", 0, 0},
        {"a/..", 0, 0},
        {"panel/../../x", 0, 0},
        {".", 0, 0},
        {"./", 0, 0},
        {"./.", 0, 0},
        {"compat/../x", 0, 0},
        /* allow_parent (compat/ and runtime_manifest) */
        {"compat/../x", 1, 1},
        {"../runtime/capture-runtime.json", 1, 1},
        {"../x", 1, 1},
        {"/abs", 1, 0},
        {"c:/x", 1, 0},
        {"x://y", 1, 0},
        {".", 1, 0},
        {"compat/..", 1, 0},
        {"", 1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fd_err e = {0};
        int rc = fd_check_relpath(cases[i].p, "test.field", cases[i].allow_parent, &e);
        CHECKF((rc == 0) == cases[i].ok, "check_relpath('%s', allow_parent=%d) %s, want %s (%s)", cases[i].p,
               cases[i].allow_parent, rc ? "refused" : "accepted", cases[i].ok ? "accepted" : "refused", e.msg);
        if (rc) {
            CHECKF(!strcmp(e.code, "path_escape"), "check_relpath('%s') code '%s', want path_escape", cases[i].p, e.code);
            CHECKF(strstr(e.msg, "test.field") != NULL, "check_relpath('%s') message names the owner: %s", cases[i].p,
                   e.msg);
        }
    }
    fd_err e = {0};
    CHECK(fd_check_relpath(NULL, "x", 0, &e) != 0, "check_relpath(NULL) refused");
    return fails;
}

static int credentials(void)
{
    int fails = 0;
    static const struct { const char *p; int cred; } cases[] = {
        {".hf_token", 1}, {"hf_token", 1}, {".env", 1}, {"a/.env", 1}, {".netrc", 1}, {".npmrc", 1},
        {".git-credentials", 1}, {"id_rsa", 1}, {"x/id_ed25519", 1}, {"credentials.json", 1},
        {"panel/service-account.json", 1}, {".ssh/config", 1}, {"a/.ssh/known_hosts", 1}, {".aws/config", 1},
        {".gnupg/pubring.kbx", 1}, {".git/HEAD", 1}, {"x/.git/objects/ab/cd", 1}, {".secrets/x", 1},
        {".git", 1}, {".ssh", 1}, {"cert.pem", 1}, {"a/b.key", 1}, {"x.p12", 1}, {"x.pfx", 1}, {".pem", 1},
        {"env", 0}, {".env.example", 0}, {"id_rsa.pub", 0}, {"keys.txt", 0}, {"a.keys", 0}, {"pem", 0},
        {"my.ssh/x", 0}, {".sshx/y", 0}, {"capture/t.safetensors", 0}, {".gitignore", 0}, {"README.md", 0},
        {"x.pem.txt", 0}, {"credentials.json.bak", 0}, {"ssh/id", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        CHECKF(!!fd_looks_like_credential(cases[i].p) == cases[i].cred, "looks_like_credential('%s') != %d",
               cases[i].p, cases[i].cred);
    return fails;
}

/* A user label as one confined path component (compare's NN-LABEL). */
static int component(void)
{
    int fails = 0;
    static const struct { const char *in, *out; } cases[] = {
        {"rtn-int8", "rtn-int8"}, {"../../x", "_._.._x"}, {"x/../../../y", "x_.._.._.._y"}, {"/abs", "_abs"},
        {".", "_"}, {"..", "_."}, {".hidden", "_hidden"}, {"", "_"}, {"a b\nc", "a_b_c"}, {"a+b_c.d-e", "a+b_c.d-e"},
        {"\xc3\xa9", "__"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char got[96];
        fd_path_component(cases[i].in, got, sizeof got);
        CHECKF(!strcmp(got, cases[i].out), "path_component('%s') = '%s', want '%s'", cases[i].in, got, cases[i].out);
    }
    char longs[300], got[96];
    memset(longs, 'a', sizeof longs - 1);
    longs[sizeof longs - 1] = 0;
    fd_path_component(longs, got, sizeof got);
    CHECK(strlen(got) == 80, "path_component caps a component at 80 bytes");
    return fails;
}

int test_paths(void)
{
    return normpath() + relpath() + credentials() + component();
}
