/* PyYAML's implicit resolvers (resolver.py, YAML 1.1): the card reader types
 * plain scalars with them, and the emitter quotes any string they would
 * type, so a card means the same thing here and under yaml.safe_load. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "yaml_resolve.h"
#include <pcre2.h>
#include <string.h>

/* PyYAML resolver.py, verbatim patterns (the timestamp one without /x). */
const char *const FD_YAML_BOOL = "^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$";
const char *const FD_YAML_INT = "^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+"
                                  "|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$";
const char *const FD_YAML_FLOAT = "^(?:[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
                                    "|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN))$";
const char *const FD_YAML_NULL = "^(?:~|null|Null|NULL|)$";
const char *const FD_YAML_TS = "^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?"
                                 "(?:[Tt]|[ \\t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\\.[0-9]*)?"
                                 "(?:[ \\t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$";

/* The characters each resolver pattern can start with (read off the
 * patterns above): a scalar that starts with none of them cannot match, so
 * the pattern is not compiled for it.  Most plain scalars of a card are
 * words, which this settles without PCRE2. */
static int may_match(const char *pat, const char *s, size_t n)
{
    char c = n ? s[0] : 0;
    if (pat == FD_YAML_BOOL) return n && strchr("yYnNtTfFoO", c);
    if (pat == FD_YAML_INT) return n && strchr("-+0123456789", c);
    if (pat == FD_YAML_FLOAT) return n && strchr("-+.0123456789", c);
    if (pat == FD_YAML_NULL) return !n || strchr("~nN", c);
    if (pat == FD_YAML_TS) return n && c >= '0' && c <= '9';
    return 1; /* any other pattern: always ask PCRE2 */
}

int fd_yaml_rx(const char *pat, const char *s, size_t n)
{
    if (!may_match(pat, s, n)) return 0;
    int err;
    PCRE2_SIZE off;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    if (!c) return 0;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(c, NULL);
    int r = pcre2_match(c, (PCRE2_SPTR)s, n, 0, 0, md, NULL) >= 0;
    pcre2_match_data_free(md);
    pcre2_code_free(c);
    return r;
}

int fd_yaml_plain_is_typed(const char *s, size_t n)
{
    return fd_yaml_rx(FD_YAML_BOOL, s, n) || fd_yaml_rx(FD_YAML_INT, s, n) || fd_yaml_rx(FD_YAML_FLOAT, s, n) || fd_yaml_rx(FD_YAML_NULL, s, n) || fd_yaml_rx(FD_YAML_TS, s, n) ||
           (n == 2 && !memcmp(s, "<<", 2)) || (n == 1 && s[0] == '=');
}

