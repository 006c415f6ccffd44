/* Internal to the JSON unit (json.h): json.c (values), json_parse.c (the
 * strict parser), json_dump.c (the serialiser and the seal). */
#ifndef FD_FORMAT_JSON_INTERNAL_H
#define FD_FORMAT_JSON_INTERNAL_H
#include "format/json.h"

/* a new value of type t (zeroed) */
jv *jvi_mk(jv_type t);
/* key order: bytewise, then by length (the sorted members of an object) */
int jvi_keycmp(const char *a, size_t an, const char *b, size_t bn);
/* binary search of object o: the member index of key k, or -(insertion point)-1 */
long jvi_find(const jv *o, const char *k, size_t kn);

#endif
