/* architectures prepare: the Python tool's flag-value checks and its
 * panel-binding.json (arch_prepare.h). */
#include "cli/arch_prepare.h"
#include "capture/panel_binding.h"
#include "engine/archtable.h"
#include "format/sha.h"
#include <string.h>

/* [A-Za-z0-9][A-Za-z0-9_.-]* with at most max characters */
static int word(const char *s, size_t len, size_t max)
{
    if (!len || len > max) return 0;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && (!i || (c != '_' && c != '.' && c != '-'))) return 0;
    }
    return 1;
}

/* coverage.REPO_ID: word/word */
static int repo_id(const char *s)
{
    const char *sl = strchr(s, '/');
    return sl && word(s, (size_t)(sl - s), 256) && word(sl + 1, strlen(sl + 1), 256);
}

static int sha40(const char *s)
{
    return strlen(s) == 40 && strspn(s, "0123456789abcdef") == 40;
}

int fd_prep_check_values(const char *architecture, const char *model_repository, const char *dataset_repository,
                         const char *model_revision, const char *author, const char *dataset_id, fd_err *e)
{
    if (architecture && !fd_arch_find(architecture))
        return fd_fail(e, "unsupported_model_type", "", "Unknown architecture: %s (use `fidelity architectures list`)",
                       architecture);
    if (model_repository && !repo_id(model_repository))
        return fd_fail(e, "bad_value", "", "model repository must be owner/repository (got '%s')", model_repository);
    if (dataset_repository && !repo_id(dataset_repository))
        return fd_fail(e, "bad_value", "", "dataset repository must be owner/repository (got '%s')", dataset_repository);
    if (model_revision && !sha40(model_revision))
        return fd_fail(e, "bad_value", "", "model revision must be a full lowercase 40-character commit (got '%s')",
                       model_revision);
    if (author && !word(author, strlen(author), 96))
        return fd_fail(e, "bad_value", "", "author must be your actual HF handle; no maintainer identity is inferred "
                       "(got '%s')", author);
    if (dataset_id && (strncmp(dataset_id, "fidelity--", 10) || !word(dataset_id + 10, strlen(dataset_id + 10), 4096)))
        return fd_fail(e, "bad_value", "", "dataset ID must begin fidelity-- and contain only letters, digits, dots, "
                       "underscores or hyphens (got '%s')", dataset_id);
    return 0;
}

/* json.dumps(sort_keys=True, indent=2): ensure_ascii, "," and ": " */
static const jv_style PY_INDENT2 = {2, 1, ",", ": "};

int fd_prep_panel_binding(const char *panel_dir, const char *tokenizer_root, fd_buf *raw, char sha[65], fd_err *e)
{
    jv *b = NULL;
    if (fd_resolve_panel(panel_dir, "final", tokenizer_root, &b, e)) return -1;
    const jv *fv = jv_get(jv_get(b, "tokenizer"), "files_verified");
    int rc = 0;
    if (!fv || fv->t != JV_BOOL || !fv->u.b)
        rc = fd_fail(e, "tokenizer_files_unverified", "", "The panel's tokenizer files were not verified under %s",
                     tokenizer_root);
    if (!rc) rc = jv_dump(b, &PY_INDENT2, raw, e);
    if (!rc) {
        fd_buf_putc(raw, '\n');
        fd_sha256_hex(raw->p, raw->n, sha);
    }
    jv_free(b);
    return rc;
}
