/* libFuzzer target for `validate --receipt` (fd_validate_receipt): any JSON
 * document is checked (schema, seal, SC/BIAS rules and the meaning checks).
 * A non-object or a missing schema tag is given the receipt's schema tag so
 * the input reaches the rules.  Invariant: no crash, no sanitizer report,
 * and an input that validates clean must be sealed (receipt_sha256
 * recomputes). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compare/compare.h"

/* the schema is compiled once per process (the harness's own state, not the library's) */
static fd_receipt_schema *schema;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fd_err e = {0};
    if (!schema && !(schema = fd_receipt_schema_new(&e))) abort();
    jv *r = jv_parse((const char *)data, size, &e);
    if (!r) return 0;
    if (r->t != JV_OBJ) { jv_free(r); return 0; }
    if (!jv_get(r, "schema")) jv_set(r, "schema", jv_str("malaiwah.fidelity-comparison-receipt.v1"));
    int findings = fd_validate_receipt_with(schema, r, NULL, NULL);
    if (findings == 0) {
        char seal[65];
        const char *claimed = jv_get_str(r, "receipt_sha256");
        if (jv_seal(r, "receipt_sha256", seal, &e) || !claimed || strcmp(seal, claimed)) {
            fprintf(stderr, "fuzz_receipt: a receipt whose seal does not recompute validated clean\n");
            abort();
        }
    }
    jv_free(r);
    return 0;
}
