/* Internal helpers shared by the validator files: Python-like truthiness and
 * lookups over jv values. */
#ifndef FD_VALIDATE_UTIL_H
#define FD_VALIDATE_UTIL_H
#include "json.h"
#include "validate.h"

int py_truthy(const jv *v);
/* `d.get(k) or {}`: the member when it is a non-empty object, else an empty one. */
const jv *obj_or_empty(const jv *d, const char *k);
/* A string member when it is a non-empty string, else NULL (`d.get(k)` truthy str). */
const char *str_truthy(const jv *d, const char *k);
/* Python repr-ish rendering of a value for messages (into a fresh string). */
char *py_repr(const jv *v);
int is_int_value(const jv *v, int64_t *out);

void fd_validate_panel(const char *root, const jv *manifest, const jv *panel_doc, const jv *capture_manifest,
                       fd_report *r, int allow_partial);
void fd_validate_head(const jv *head, const jv *capture, const jv *dataset, fd_report *r);
void fd_validate_determinism(const jv *manifest, const jv *det, const jv *panel, fd_report *r);
void fd_validate_role(const char *root, const jv *dataset, const jv *scope, const jv *head, const jv *capture,
                      fd_report *r);
void fd_validate_scope_vocabulary(const jv *scope, fd_report *r);
void fd_validate_remap(const char *root, const jv *panel, fd_report *r);
void fd_verify_tensors(const char *root, const jv *capture, const jv *capture_manifest, const jv *head,
                       fd_report *r);
/* The checks by meaning a resealed dataset cannot satisfy by recomputing digests (validate_meaning.c). */
void fd_validate_meaning(const char *root, const jv *manifest, const jv *cm, const jv *pd, const jv *hd, const jv *rd,
                         int allow_partial, fd_report *r);
jv *fd_load_sub(const char *root, const char *relpath, fd_report *r, const char *rule);
void fd_check_sub_seal(const jv *doc, const char *relpath, fd_report *r);
void fd_report_ok(fd_report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
