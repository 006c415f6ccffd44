/* A JSON Schema (draft 2020-12) validator for exactly the keyword subset that
 * schema/fidelity-dataset.schema.json uses.  Any other keyword is refused when
 * the schema is compiled, so a schema that grows a keyword fails loudly
 * instead of silently validating nothing.  Semantics follow the Python
 * reference (registry/tools/_minischema.py, jsonschema): "integer" accepts
 * integral floats, booleans are neither integers nor numbers, const/enum use
 * JSON Schema equality (1 == 1.0, true != 1), pattern is an unanchored
 * re.search. */
#ifndef FD_SCHEMA_H
#define FD_SCHEMA_H
#include "json.h"

typedef struct fd_schema fd_schema;

/* Compiles (caches patterns) a schema document; the jv must outlive it.
 * Fails (code bad_schema) on an unsupported keyword, a malformed keyword
 * value, a bad pattern or an unresolvable $ref. */
fd_schema *fd_schema_new(const jv *root, fd_err *e);
void fd_schema_free(fd_schema *s);

/* Validates instance; calls cb(ctx, message) once per violation (cb may be
 * NULL), message like "dataset.role: 'x' is not one of ['root', 'quant',
 * 'derived']" (instance path dot-separated, [i] for array items, "<root>" for
 * the top).  Returns the number of violations (0 = valid), or -1 with e set on
 * an internal error (schema recursion too deep, regex engine failure). */
int fd_schema_validate(fd_schema *s, const jv *instance,
                       void (*cb)(void *ctx, const char *message), void *ctx, fd_err *e);

#endif
