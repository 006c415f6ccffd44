/* The tiny check harness shared by the C unit tests (tests/c/test_*.c).
 * Each test function keeps a local `int fails = 0;`, uses CHECK* on it and
 * returns it; every failed check prints one `FAIL: <file>:<line> <what>`
 * line.  check_count (defined in main.c) counts every check evaluated. */
#ifndef FD_TEST_CHECK_H
#define FD_TEST_CHECK_H
#include <stdio.h>
#include <string.h>

extern long check_count;

#define CHECK(cond, msg)                                                      \
    do {                                                                      \
        check_count++;                                                        \
        if (!(cond)) {                                                        \
            printf("FAIL: %s:%d %s\n", __FILE__, __LINE__, (msg));            \
            fails++;                                                          \
        }                                                                     \
    } while (0)

/* Like CHECK, with a printf-style message. */
#define CHECKF(cond, ...)                                                     \
    do {                                                                      \
        check_count++;                                                        \
        if (!(cond)) {                                                        \
            printf("FAIL: %s:%d ", __FILE__, __LINE__);                       \
            printf(__VA_ARGS__);                                              \
            printf("\n");                                                     \
            fails++;                                                          \
        }                                                                     \
    } while (0)

/* String equality (NULL-safe), showing both values on failure. */
#define CHECK_STR(got, want, msg)                                             \
    do {                                                                      \
        const char *got_ = (got), *want_ = (want);                            \
        CHECKF(got_ && want_ && strcmp(got_, want_) == 0, "%s: got '%s', want '%s'", (msg), \
               got_ ? got_ : "(null)", want_ ? want_ : "(null)");             \
    } while (0)

#endif
