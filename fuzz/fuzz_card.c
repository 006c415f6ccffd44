/* libFuzzer target for the card front-matter reader (fd_card_split + the
 * libyaml parser).  An accepted front matter must be a mapping that the
 * emitter writes and the reader reads back to the same value. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "card/card.h"
#include "format/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = 0;
    jv *front = NULL;
    size_t body = 0;
    fd_err e;
    if (!fd_card_split(s, size, &front, &body, &e) && front) {
        if (front->t != JV_OBJ || body > size) abort();
        fd_buf y = {0};
        fd_yaml_emit(front, &y);
        fd_err e2;
        jv *back = fd_yaml_parse(y.p ? y.p : "", y.n, &e2);
        if (!back || !jv_equal(back, front)) {
            fprintf(stderr, "fuzz_card: emitted front matter does not read back:\n%s\n(%s)\n", y.p ? y.p : "",
                    back ? "differs" : e2.msg);
            abort();
        }
        jv_free(back);
        fd_buf_free(&y);
    }
    jv_free(front);
    free(s);
    return 0;
}
