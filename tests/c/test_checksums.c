/* Unit tests for src/format/checksums.c: parse_checksums (Python
 * str.splitlines semantics, hostile lines), and write/verify on a temporary
 * tree (unlisted_file, missing_file, seal_failed, tensor_mismatch, symlink,
 * credential_in_tree).  Expected file text and digests: CPython hashlib. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "format/checksums.h"
#include "format/sha.h"
#include "util/fsio.h"

#define Z64 "0000000000000000000000000000000000000000000000000000000000000000"
#define A64 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define Z63 "000000000000000000000000000000000000000000000000000000000000000"

/* Parses text (n bytes, NUL-terminated copy) and checks the outcome: want_n
 * entries (joined "path|path|..." into want_paths), or want_n < 0 for a
 * seal_failed refusal. */
static int parse_case(const char *text, size_t n, int want_n, const char *want_paths, int line)
{
    int fails = 0;
    char *copy = malloc(n + 1);
    memcpy(copy, text, n);
    copy[n] = 0;
    fd_checksums c;
    fd_err e = {0};
    int rc = fd_checksums_parse(copy, n, &c, &e);
    if (want_n < 0) {
        CHECKF(rc != 0 && !strcmp(e.code, "seal_failed"), "line %d: checksums text was %s (code '%s'), want seal_failed",
               line, rc ? "refused" : "accepted", e.code);
    } else if (rc) {
        CHECKF(0, "line %d: checksums text refused: %s", line, e.msg);
    } else {
        fd_buf j = {0};
        for (size_t i = 0; i < c.paths.n; i++) fd_buf_printf(&j, "%s%s", i ? "|" : "", c.paths.v[i]);
        const char *got = j.n ? fd_buf_cstr(&j) : "";
        CHECKF((int)c.paths.n == want_n && !strcmp(got, want_paths) && c.digests.n == c.paths.n,
               "line %d: parsed %zu entries '%s', want %d '%s'", line, c.paths.n, got, want_n, want_paths);
        fd_buf_free(&j);
    }
    if (!rc) fd_checksums_free(&c);
    free(copy);
    return fails;
}
#define PARSE(text, n, paths) (fails += parse_case((text), sizeof(text) - 1, (n), (paths), __LINE__))

static int parsing(void)
{
    int fails = 0;
    PARSE("", 0, "");
    PARSE("\n\n", 0, "");
    PARSE(Z64 "  a\n" A64 "  b/c\n", 2, "a|b/c");
    PARSE(A64 "  b\n" Z64 "  a", 2, "a|b");                    /* final newline optional, sorted */
    PARSE("\n\n" Z64 "  a\n\n\n", 1, "a");                      /* blank lines skipped */
    PARSE("\r\n" Z64 "  a\r\n\r\n", 1, "a");
    PARSE(Z64 "  a\r\n" Z64 "  b\r\n", 2, "a|b");              /* CRLF */
    PARSE(Z64 "  a\r" Z64 "  b\r", 2, "a|b");                  /* CR */
    PARSE(Z64 "  a\x1c" Z64 "  b", 2, "a|b");                  /* \x1c is a line break */
    PARSE(Z64 "  a\x1d" Z64 "  b\x1e", 2, "a|b");
    PARSE(Z64 "  a\v" Z64 "  b\f", 2, "a|b");
    PARSE(Z64 "  a\xc2\x85" Z64 "  b", 2, "a|b");             /* U+0085 */
    PARSE(Z64 "  a\xe2\x80\xa8" Z64 "  b\xe2\x80\xa9", 2, "a|b"); /* U+2028, U+2029 */
    PARSE(Z64 "  a b \n", 1, "a b ");                          /* spaces kept in paths */
    PARSE(Z64 "   a\n", 1, " a");
    PARSE(Z64 "  \xc3\xa9t\xc3\xa9.bin\n", 1, "\xc3\xa9t\xc3\xa9.bin");
    PARSE(Z64 "  ..foo\n", 1, "..foo");                        /* a name, not a '..' segment */
    PARSE(Z64 "  a\n" Z64 "  a/b\n" Z64 "  a.b\n", 3, "a|a.b|a/b");
    /* refusals */
    PARSE(Z64 "  \n", -1, "");                                 /* 66 chars: no path */
    PARSE(Z64 " a\n", -1, "");                                 /* one space */
    PARSE(Z64 " \ta\n", -1, "");
    PARSE(Z63 "A  a\n", -1, "");                              /* uppercase hex digit */
    PARSE(Z63 "g  a\n", -1, "");
    PARSE(Z64 "A  a\n", -1, "");                              /* 65 hex chars */
    PARSE("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA  a\n", -1, ""); /* uppercase hex */
    PARSE("short  a\n", -1, "");
    PARSE(Z64 "  a\n" A64 "  a\n", -1, "");                    /* duplicate path */
    PARSE(Z64 "  a\r\n" A64 "  a\n", -1, "");                  /* duplicate after CRLF strip */
    PARSE(Z64 "  ../x\n", -1, "");
    PARSE(Z64 "  /abs\n", -1, "");
    PARSE(Z64 "  a/../b\n", -1, "");
    PARSE(Z64 "  panel/../../x\n", -1, "");
    PARSE(Z64 "  http://x/y\n", -1, "");
    PARSE(Z64 "  c:/x\n", -1, "");
    PARSE(Z64 "  .\n", -1, "");
    PARSE(Z64 "  ./\n", -1, "");
    PARSE(Z64 "  \\x\n", -1, "");
    PARSE(Z64 "  a\n" Z64 "\n", -1, "");                       /* a later bad line */
    PARSE(Z64 "  a\xff\n", -1, "");                            /* not UTF-8 */
    PARSE(Z64 "  a\xc0\xaf\n", -1, "");                        /* overlong (2 bytes) */
    /* Python's strict UTF-8 decode refuses these too */
    PARSE(Z64 "  a\xed\xa0\x80\n", -1, "");                    /* encoded surrogate U+D800 */
    PARSE(Z64 "  a\xe0\x80\xaf\n", -1, "");                    /* overlong '/' (3 bytes) */
    PARSE(Z64 "  a\xf4\x90\x80\x80\n", -1, "");                /* above U+10FFFF */
    {
        const char nul[] = Z64 "  a\0b\n";
        fails += parse_case(nul, sizeof nul - 1, -1, "", __LINE__);
    }
    /* fd_checksums_get */
    const char *t = Z64 "  b\n" A64 "  a\n";
    fd_checksums c;
    fd_err e = {0};
    if (fd_checksums_parse(t, strlen(t), &c, &e) == 0) {
        CHECK_STR(fd_checksums_get(&c, "a"), A64, "checksums_get a");
        CHECK_STR(fd_checksums_get(&c, "b"), Z64, "checksums_get b");
        CHECK(fd_checksums_get(&c, "c") == NULL, "checksums_get of an unlisted path");
        fd_checksums_free(&c);
    } else CHECK(0, "parse for checksums_get");
    /* The API takes (text, n): it must not read past n when the buffer is
     * not NUL-terminated.  Run in a child so an ASan report fails this check
     * instead of aborting the whole run. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        const char *line = Z64 "  a\n";
        size_t n = strlen(line);
        char *exact = malloc(n);
        memcpy(exact, line, n);
        fd_checksums cc;
        fd_err ee;
        int rc = fd_checksums_parse(exact, n, &cc, &ee);
        if (!rc) fd_checksums_free(&cc);
        free(exact);
        _exit(rc == 0 ? 0 : 3);
    }
    int status = 0;
    if (pid > 0) waitpid(pid, &status, 0);
    CHECKF(pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "fd_checksums_parse on an unterminated %zu-byte buffer: child %s %d (reads past n?)",
           strlen(Z64 "  a\n"), WIFEXITED(status) ? "exited" : "signalled",
           WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return fails;
}

/* ----------------------------------------------------------- temp tree */

static void put(const char *root, const char *rel, const void *p, size_t n)
{
    char *full = fd_path_join(root, rel);
    char *slash = strrchr(full, '/');
    *slash = 0;
    fd_err e;
    fd_mkdirs(full, &e);
    *slash = '/';
    FILE *f = fopen(full, "wb");
    if (f) {
        fwrite(p, 1, n, f);
        fclose(f);
    }
    free(full);
}

static void del(const char *root, const char *rel)
{
    char *full = fd_path_join(root, rel);
    if (unlink(full)) rmdir(full);
    free(full);
}

static void flip(const char *root, const char *rel, long at)
{
    char *full = fd_path_join(root, rel);
    FILE *f = fopen(full, "r+b");
    if (f) {
        fseek(f, at, SEEK_SET);
        int c = fgetc(f);
        fseek(f, at, SEEK_SET);
        fputc(c ^ 1, f);
        fclose(f);
    }
    free(full);
}

static int verify_code(const char *root, int allow_partial, const char *want, int line)
{
    int fails = 0;
    fd_err e = {0};
    int rc = fd_checksums_verify(root, allow_partial, &e);
    if (!want) CHECKF(rc == 0, "line %d: verify failed: %s: %s", line, e.code, e.msg);
    else CHECKF(rc != 0 && !strcmp(e.code, want), "line %d: verify %s (code '%s'), want %s", line,
                rc ? "failed" : "passed", rc ? e.code : "", want);
    return fails;
}
#define VERIFY(root, partial, want) (fails += verify_code((root), (partial), (want), __LINE__))

static int write_code(const char *root, const char *want, int line)
{
    int fails = 0;
    fd_err e = {0};
    char hex[65];
    int rc = fd_checksums_write(root, hex, &e);
    CHECKF(rc != 0 && !strcmp(e.code, want), "line %d: checksums_write %s (code '%s'), want %s", line,
           rc ? "failed" : "passed", rc ? e.code : "", want);
    return fails;
}
#define WRITE_REFUSED(root, want) (fails += write_code((root), (want), __LINE__))

static const char EXPECTED_TEXT[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  .hidden\n"
    "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03  a.txt\n"
    "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880  capture/t.bin\n"
    "ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356  panel/x.json\n"
    "370a8c04b8a65bb4494275eec227f1b694db04c76da6b0b8ae88ed1ab19790a3  sub/checksums.txt\n";

static int tree(void)
{
    int fails = 0;
    char root[] = "/tmp/fd-unit-checksums.XXXXXX";
    if (!mkdtemp(root)) { CHECK(0, "mkdtemp"); return fails; }
    unsigned char bytes[256];
    for (int i = 0; i < 256; i++) bytes[i] = (unsigned char)i;
    put(root, ".hidden", "", 0);
    put(root, "a.txt", "hello\n", 6);
    put(root, "capture/t.bin", bytes, sizeof bytes);
    put(root, "panel/x.json", "{}\n", 3);
    put(root, "sub/checksums.txt", "nested\n", 7);
    put(root, "fidelity-dataset.json", "{}", 2); /* excluded at the root only */

    fd_strv files = {0};
    fd_err e = {0};
    CHECK(fd_tree_files(root, &files, &e) == 0 && files.n == 5, "tree_files lists the five covered files");
    fd_strv_free(&files);

    char hex[65] = "";
    CHECK(fd_checksums_write(root, hex, &e) == 0, "checksums_write");
    CHECK_STR(hex, "6acb1d3ea2ec86777936ab303e65d86558806d8f772fd075ebc268d7a0e18446", "checksums.txt sha256");
    char *cpath = fd_path_join(root, "checksums.txt");
    fd_buf text = {0};
    CHECK(fd_read_file(cpath, 1 << 20, &text, &e) == 0, "read checksums.txt");
    CHECKF(text.n == sizeof EXPECTED_TEXT - 1 && !memcmp(text.p, EXPECTED_TEXT, text.n),
           "checksums.txt text differs from Python's:\n%s", text.p ? text.p : "");
    fd_buf_free(&text);
    VERIFY(root, 0, NULL);
    VERIFY(root, 1, NULL);

    /* extra file */
    put(root, "b.txt", "x", 1);
    VERIFY(root, 0, "unlisted_file");
    VERIFY(root, 1, "unlisted_file");
    del(root, "b.txt");
    put(root, "capture/extra.bin", "x", 1);
    VERIFY(root, 1, "unlisted_file");
    del(root, "capture/extra.bin");
    VERIFY(root, 0, NULL);

    /* removed file */
    del(root, "a.txt");
    VERIFY(root, 0, "missing_file");
    VERIFY(root, 1, "missing_file"); /* allow_partial covers capture/ only */
    put(root, "a.txt", "hello\n", 6);
    del(root, "capture/t.bin");
    VERIFY(root, 0, "missing_file");
    VERIFY(root, 1, NULL);
    put(root, "capture/t.bin", bytes, sizeof bytes);
    VERIFY(root, 0, NULL);

    /* flipped byte */
    flip(root, "a.txt", 0);
    VERIFY(root, 0, "seal_failed");
    flip(root, "a.txt", 0);
    flip(root, "capture/t.bin", 100);
    VERIFY(root, 0, "tensor_mismatch");
    VERIFY(root, 1, "tensor_mismatch");
    flip(root, "a.txt", 3); /* both: any capture/ mismatch makes it tensor_mismatch */
    VERIFY(root, 0, "tensor_mismatch");
    flip(root, "a.txt", 3);
    flip(root, "capture/t.bin", 100);
    VERIFY(root, 0, NULL);
    /* a file edited without changing its size, root-level manifest is not covered */
    put(root, "fidelity-dataset.json", "{\"changed\":1}", 13);
    VERIFY(root, 0, NULL);

    /* edited checksums.txt */
    FILE *f = fopen(cpath, "ab");
    if (f) { fputs("garbage line\n", f); fclose(f); }
    VERIFY(root, 0, "seal_failed");
    CHECK(fd_checksums_write(root, hex, &e) == 0, "rewrite checksums.txt");
    VERIFY(root, 0, NULL);
    unlink(cpath);
    VERIFY(root, 0, "seal_failed"); /* checksums.txt missing */
    CHECK(fd_checksums_write(root, hex, &e) == 0, "rewrite checksums.txt again");
    VERIFY(root, 0, NULL);

    /* symlinks: a file link and a directory link */
    char *lnk = fd_path_join(root, "link.txt");
    CHECK(symlink("a.txt", lnk) == 0, "make a symlink");
    VERIFY(root, 0, "symlink");
    WRITE_REFUSED(root, "symlink");
    unlink(lnk);
    free(lnk);
    lnk = fd_path_join(root, "panel/dirlink");
    CHECK(symlink("/tmp", lnk) == 0, "make a directory symlink");
    VERIFY(root, 0, "symlink");
    unlink(lnk);
    free(lnk);
    lnk = fd_path_join(root, "dangling");
    CHECK(symlink("/nonexistent/fd-unit", lnk) == 0, "make a dangling symlink");
    VERIFY(root, 0, "symlink");
    unlink(lnk);
    free(lnk);
    VERIFY(root, 0, NULL);

    /* credential-like names anywhere in the tree */
    static const char *const creds[] = {".env", "id_rsa", ".ssh/config", "panel/.netrc", "capture/k.pem",
                                        "sub/.git/HEAD", ".hf_token", "x/credentials.json"};
    for (size_t i = 0; i < sizeof creds / sizeof *creds; i++) {
        put(root, creds[i], "secret", 6);
        fd_err ce = {0};
        int rc = fd_checksums_write(root, hex, &ce);
        CHECKF(rc != 0 && !strcmp(ce.code, "credential_in_tree"), "a file at '%s': write %s (code '%s'), want credential_in_tree",
               creds[i], rc ? "failed" : "passed", ce.code);
        memset(&ce, 0, sizeof ce);
        rc = fd_checksums_verify(root, 0, &ce);
        CHECKF(rc != 0 && !strcmp(ce.code, "credential_in_tree"), "a file at '%s': verify %s (code '%s'), want credential_in_tree",
               creds[i], rc ? "failed" : "passed", ce.code);
        del(root, creds[i]);
        char dir[256];
        snprintf(dir, sizeof dir, "%s", creds[i]);
        for (char *s = strrchr(dir, '/'); s; s = strrchr(dir, '/')) { *s = 0; del(root, dir); }
    }
    VERIFY(root, 0, NULL);

    /* names that merely start with dots are ordinary files: what write lists,
     * verify must accept */
    static const char *const dotty[] = {"..foo", "...", "panel/..bar"};
    for (size_t i = 0; i < sizeof dotty / sizeof *dotty; i++) {
        put(root, dotty[i], "x", 1);
        fd_err de = {0};
        CHECKF(fd_checksums_write(root, hex, &de) == 0, "write with a file '%s': %s", dotty[i], de.msg);
        memset(&de, 0, sizeof de);
        int rc = fd_checksums_verify(root, 0, &de);
        CHECKF(rc == 0, "verify of a tree holding '%s' (written by checksums_write) failed: %s: %s", dotty[i],
               de.code, de.msg);
        del(root, dotty[i]);
    }
    CHECK(fd_checksums_write(root, hex, &e) == 0, "rewrite checksums.txt after the dot names");
    VERIFY(root, 0, NULL);

    /* an empty tree gives an empty checksums.txt */
    char empty[] = "/tmp/fd-unit-empty.XXXXXX";
    if (mkdtemp(empty)) {
        CHECK(fd_checksums_write(empty, hex, &e) == 0, "checksums_write of an empty tree");
        CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty checksums.txt");
        VERIFY(empty, 0, NULL);
        fd_rmtree(empty);
    }
    free(cpath);
    fd_rmtree(root);
    return fails;
}

int test_checksums(void)
{
    return parsing() + tree();
}
