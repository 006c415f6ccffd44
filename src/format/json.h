/* JSON values with Python json semantics: ints and floats stay distinct,
 * integers of any size are kept exactly, object keys are held sorted by code
 * point (so every dump is sort_keys=True); a duplicate object key, NaN/Infinity
 * and invalid UTF-8 / lone surrogates are refused (docs/FORMAT-IMPL.md). */
#ifndef FD_JSON_H
#define FD_JSON_H
#include <stddef.h>
#include <stdint.h>
#include "../util/buf.h"
#include "../util/err.h"

typedef enum { JV_NULL, JV_BOOL, JV_INT, JV_BIGINT, JV_FLOAT, JV_STR, JV_ARR, JV_OBJ } jv_type;

typedef struct jv jv;
typedef struct jv_member {
    char *k;
    size_t klen;
    jv *v;
} jv_member;

struct jv {
    jv_type t;
    union {
        int b;
        int64_t i;
        double f;
        struct { char *p; size_t n; } s;      /* JV_STR bytes, JV_BIGINT digits */
        struct { jv **v; size_t n, cap; } a;
        struct { jv_member *m; size_t n, cap; } o; /* sorted by key bytes */
    } u;
};

jv *jv_parse(const char *text, size_t n, fd_err *e);
/* As jv_parse, but a duplicate key keeps the last value as Python's json does
 * (only the debug-json oracle hook: tests/py/json_diff.py against CPython). */
jv *jv_parse_lenient(const char *text, size_t n, fd_err *e);
/* Length of the strict UTF-8 sequence at p (0 if invalid); p < end. */
int fd_utf8_len(const unsigned char *p, const unsigned char *end);
/* Reads and parses a file; errors name the path (code bad_json / missing_file). */
/* A JSON document file: regular files only, at most FD_JSON_MAX_FILE bytes
 * (fd_read_file: a FIFO or device is refused, never waited on). */
#define FD_JSON_MAX_FILE ((size_t)512 << 20)
jv *jv_parse_file(const char *path, fd_err *e);
void jv_free(jv *v);
jv *jv_copy(const jv *v);
int jv_equal(const jv *a, const jv *b);

jv *jv_null(void);
jv *jv_bool(int b);
jv *jv_int(int64_t i);
jv *jv_float(double f);
jv *jv_str(const char *s);
jv *jv_strn(const char *s, size_t n);
jv *jv_arr(void);
jv *jv_obj(void);

/* Take ownership of v.  jv_obj_set replaces an existing key. */
void jv_push(jv *arr, jv *v);
void jv_set(jv *obj, const char *key, jv *v);
jv *jv_get(const jv *obj, const char *key);       /* NULL if absent / not object */
int jv_del(jv *obj, const char *key);             /* 1 if removed */

/* Typed accessors; NULL/def when absent or of another type. */
const char *jv_get_str(const jv *obj, const char *key);
int jv_get_i64(const jv *obj, const char *key, int64_t *out); /* 0 ok */
int jv_is_str(const jv *v);
int jv_is_int(const jv *v);
int jv_is_num(const jv *v);

typedef struct jv_style {
    int indent;          /* <0: single line; >=0: Python indent= (newlines) */
    int ensure_ascii;
    const char *item_sep;  /* "," or ", " */
    const char *key_sep;   /* ":" or ": " */
} jv_style;

extern const jv_style JV_CANON;        /* separators=(",",":"), ensure_ascii=False */
extern const jv_style JV_CANON_ASCII;  /* separators=(",",":"), ensure_ascii=True  */
extern const jv_style JV_PRETTY;       /* indent=2, ensure_ascii=False (no final \n) */
extern const jv_style JV_DEFAULT;      /* json.dumps() defaults: ", " ": " ascii */

/* Appends the serialisation; fails (code bad_json) only on NaN/Inf floats. */
int jv_dump(const jv *v, const jv_style *st, fd_buf *out, fd_err *e);
/* Canonical seal digest: set `field` to "" in a shallow copy, sha256 of the
 * canonical JSON, lowercase hex into hex[65]. */
int jv_seal(const jv *obj, const char *field, char hex[65], fd_err *e);

#endif
