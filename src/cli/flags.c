/* The flags of every command, checked from the command table before the
 * command runs: an unknown flag gets the nearest known one (did-you-mean),
 * a flag missing its value is named, and a flag that takes one of a fixed
 * set of values refuses anything else, listing the set.  The spec is a
 * space-separated list of "--name" (a switch), "--name=" (takes a value) and
 * "--name=a|b|c" (takes one of those values); "--name=@fixture-presets" takes
 * one of the model-fixture presets of this build (capture/fixture.h). */
#include "cli.h"
#include "capture/fixture.h"
#include <stdio.h>
#include <string.h>

enum { MAX_FLAGS = 96, MAX_NAME = 64, MAX_VALUES = 1024 }; /* values: the fixture presets list is over 256 bytes */

typedef struct {
    char name[MAX_NAME];
    int takes;                 /* 0 switch, 1 value */
    char values[MAX_VALUES];   /* "a|b|c" or "" */
} flag;

/* Splits spec into flags; returns how many (at most cap). */
static size_t parse_spec(const char *spec, flag *f, size_t cap)
{
    size_t n = 0;
    const char *p = spec ? spec : "";
    while (*p && n < cap) {
        while (*p == ' ') p++;
        if (!*p) break;
        size_t len = strcspn(p, " ");
        size_t nl = strcspn(p, "= ");
        memset(&f[n], 0, sizeof f[n]);
        snprintf(f[n].name, sizeof f[n].name, "%.*s", (int)(nl < MAX_NAME ? nl : MAX_NAME - 1), p);
        if (nl < len) {
            f[n].takes = 1;
            size_t vl = len - nl - 1;
            snprintf(f[n].values, sizeof f[n].values, "%.*s", (int)(vl < MAX_VALUES ? vl : MAX_VALUES - 1), p + nl + 1);
            if (!strcmp(f[n].values, "@fixture-presets"))
                fd_fixture_preset_names(f[n].values, sizeof f[n].values);
        }
        n++;
        p += len;
    }
    return n;
}

/* 1 when v is one of the '|'-separated values */
static int one_of(const char *v, const char *values)
{
    size_t vl = strlen(v);
    for (const char *p = values; *p;) {
        size_t l = strcspn(p, "|");
        if (l == vl && !strncmp(p, v, l)) return 1;
        p += l + (p[l] == '|');
    }
    return 0;
}

static int refuse_value(const char *cmd, const flag *f, const char *v)
{
    const char *cands[64];
    char split[MAX_VALUES];
    size_t nc = 0;
    snprintf(split, sizeof split, "%s", f->values);
    for (char *p = split; *p && nc < 64;) {
        size_t l = strcspn(p, "|");
        int last = !p[l];
        p[l] = 0;
        cands[nc++] = p;
        if (last) break;
        p += l + 1;
    }
    const char *near = strlen(v) >= 3 ? fd_cli_suggest(v, cands, nc) : NULL;
    fprintf(stderr, "fidelity %s: %s must be one of %s, not '%s'", cmd, f->name, f->values, v);
    if (near) fprintf(stderr, "; did you mean %s?", near);
    fprintf(stderr, "\n");
    return FD_EXIT_USAGE;
}

int fd_cli_check_flags(const char *cmd, const char *spec, int argc, char **argv)
{
    if (!spec) return FD_EXIT_OK;
    flag f[MAX_FLAGS];
    size_t n = parse_spec(spec, f, MAX_FLAGS);
    const char *names[MAX_FLAGS];
    for (size_t k = 0; k < n; k++) names[k] = f[k].name;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--")) break; /* the rest is positional */
        /* an option: "--x" or "-x" (a lone "-" and negative numbers are positional) */
        if (s[0] != '-' || !(s[1] == '-' || (s[1] >= 'a' && s[1] <= 'z') || (s[1] >= 'A' && s[1] <= 'Z'))) continue;
        char name[MAX_NAME + 1];
        const char *eq = strchr(s, '=');
        size_t nl = eq ? (size_t)(eq - s) : strlen(s);
        snprintf(name, sizeof name, "%.*s", (int)(nl < MAX_NAME ? nl : MAX_NAME), s);
        const flag *hit = NULL;
        for (size_t k = 0; k < n && !hit; k++)
            if (nl < MAX_NAME && !strcmp(f[k].name, name)) hit = &f[k];
        if (!hit) {
            const char *near = fd_cli_suggest(name, names, n);
            if (near) fprintf(stderr, "fidelity %s: unknown option %s; did you mean %s?\n", cmd, s, near);
            else fprintf(stderr, "fidelity %s: unknown option %s (fidelity %s --help lists them)\n", cmd, s, cmd);
            return FD_EXIT_USAGE;
        }
        if (!hit->takes) {
            if (eq) { fprintf(stderr, "fidelity %s: %s takes no value\n", cmd, hit->name); return FD_EXIT_USAGE; }
            continue;
        }
        const char *v = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "fidelity %s: %s needs a value\n", cmd, hit->name); return FD_EXIT_USAGE; }
        if (!eq) i++;
        if (hit->values[0] && !one_of(v, hit->values)) return refuse_value(cmd, hit, v);
    }
    return FD_EXIT_OK;
}
