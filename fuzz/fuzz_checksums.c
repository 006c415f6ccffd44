/* libFuzzer target for fd_checksums_parse (on a NUL-terminated copy of the
 * input).  An accepted listing must hold sorted, unique paths that pass
 * check_relpath, each with a lowercase 64-hex digest. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "format/checksums.h"
#include "format/paths.h"
#include "format/sha.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    fd_checksums c;
    fd_err e = {0};
    if (fd_checksums_parse(text, size, &c, &e) == 0) {
        if (c.paths.n != c.digests.n) abort();
        for (size_t i = 0; i < c.paths.n; i++) {
            fd_err pe;
            if (!fd_is_hex64(c.digests.v[i]) || fd_check_relpath(c.paths.v[i], "fuzz", 0, &pe) ||
                (i && strcmp(c.paths.v[i - 1], c.paths.v[i]) >= 0) ||
                strcmp(fd_checksums_get(&c, c.paths.v[i]), c.digests.v[i])) {
                fprintf(stderr, "fuzz_checksums: accepted entry %zu '%s' breaks an invariant\n", i, c.paths.v[i]);
                abort();
            }
        }
        fd_checksums_free(&c);
    } else if (strcmp(e.code, "seal_failed")) {
        fprintf(stderr, "fuzz_checksums: refusal code '%s', want seal_failed\n", e.code);
        abort();
    }
    free(text);
    return 0;
}
