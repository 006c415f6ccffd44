/* panel build --upstream-layout (panel_internal.h): the panel receipt the
 * Python tool's panel.resolve_panel accepts for a build
 * (malaiwah.token-panel-build-receipt.v1, the shape its
 * engines/tools/build_panel_from_v5_suite.py writes): the pinned tokenizer
 * with its bound file digests (tokenizer.files_sha256), the window
 * parameters and final_* counts, both suite token aggregates, and the modern
 * self-blank seal (sha256 of the canonical JSON with receipt_sha256 "").
 * The builder is named honestly: this binary's name and version. */
#include "capture/panel.h"
#include "capture/panel_internal.h"
#include "format/version.h"
#include "tokenizer/tokenizer.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$ (the Python tool's HF_REPO) */
static int is_repo(const char *s)
{
    const char *slash = strchr(s, '/');
    if (!slash || strchr(slash + 1, '/') || slash == s || !slash[1] || strlen(s) > 200) return 0;
    for (const char *p = s; *p; p++) {
        if (p == slash) continue;
        int alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
        if (!alnum && (p == s || p == slash + 1 || (*p != '.' && *p != '_' && *p != '-'))) return 0;
    }
    return 1;
}

static int is_rev40(const char *s)
{
    if (strlen(s) != 40) return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f'))) return 0;
    return 1;
}

int fd_panel_upstream_check(const fd_panel_build_opts *o, fd_err *e)
{
    if (!o->tokenizer || !o->tokenizer_file)
        return fd_fail(e, "bad_usage", "", "--upstream-layout needs text inputs and --tokenizer (the receipt binds the "
                                           "tokenizer file the windows were cut with)");
    if (!o->tokenizer_repository || !is_repo(o->tokenizer_repository))
        return fd_fail(e, "bad_usage", "", "--upstream-layout: --tokenizer-repository must have owner/name form (got '%s')",
                       o->tokenizer_repository ? o->tokenizer_repository : "");
    if (!o->tokenizer_revision || !is_rev40(o->tokenizer_revision))
        return fd_fail(e, "bad_usage", "", "--upstream-layout: --tokenizer-revision must be an immutable lowercase "
                                           "40-hex commit, not a branch name (got '%s')",
                       o->tokenizer_revision ? o->tokenizer_revision : "");
    if (o->tokenizer_id && strcmp(o->tokenizer_id, o->tokenizer_repository))
        return fd_fail(e, "bad_usage", "", "--upstream-layout: the tokenizer id is its repository; --tokenizer-id '%s' "
                                           "differs from --tokenizer-repository '%s'", o->tokenizer_id, o->tokenizer_repository);
    return 0;
}

static jv *tokenizer_block(const fd_panel_build_opts *o, int64_t vocab, size_t np, const int64_t *prefix)
{
    jv *tok = jv_obj(), *files = jv_obj(), *pre = jv_arr();
    char *name = fd_panel_basename(o->tokenizer_file);
    jv_set(files, name, jv_str(fd_tok_sha256(o->tokenizer)));
    free(name);
    for (size_t i = 0; i < np; i++) jv_push(pre, jv_int(prefix[i]));
    jv_set(tok, "id", jv_str(o->tokenizer_repository));
    jv_set(tok, "repository", jv_str(o->tokenizer_repository));
    jv_set(tok, "revision", jv_str(o->tokenizer_revision));
    jv_set(tok, "vocab_size", jv_int(vocab));
    jv_set(tok, "minimum_token_id", jv_int(0));
    jv_set(tok, "maximum_token_id_exclusive", jv_int(vocab));
    jv_set(tok, "add_special_tokens", jv_bool(np > 0));
    jv_set(tok, "chat_template_applied", jv_bool(0));
    jv_set(tok, "template_prefix_ids", pre);
    jv_set(tok, "files_sha256", files);
    return tok;
}

int fd_panel_upstream_receipt(const char *dir, const jv *doc, const fd_panel_build_opts *o, int64_t vocab, size_t L,
                              size_t nwin, size_t np, const int64_t *prefix, const char *rule, fd_err *e)
{
    jv *r = jv_obj(), *params = jv_obj();
    int64_t positions = (int64_t)L - 1, scored = (int64_t)nwin * positions;
    jv_set(r, "schema", jv_str(FD_PANEL_UPSTREAM_RECEIPT_SCHEMA));
    jv_set(r, "format_version", jv_int(1));
    jv_set(r, "receipt_sha256", jv_str(""));
    jv_set(r, "tool", jv_str("fidelity panel build"));
    jv_set(r, "tool_version", jv_str("fidelity " FD_VERSION " (" FD_ENGINE_NAME ")"));
    jv_set(r, "panel_id", jv_copy(jv_get(doc, "panel_id")));
    jv_set(r, "panel_name", jv_copy(jv_get(doc, "name")));
    jv_set(r, "suite_token_hash_sha256", jv_copy(jv_get(doc, "suite_token_hash_sha256")));
    jv_set(r, "panel_token_sha256_legacy", jv_copy(jv_get(doc, "panel_token_sha256_legacy")));
    jv_set(r, "token_panel_schema", jv_str(FD_PANEL_SCHEMA));
    jv_set(r, "derivation", jv_str("tokenized from text by this tool"));
    jv_set(r, "selection_rule", jv_str(rule));
    jv_set(params, "context_length", jv_int((int64_t)L));
    jv_set(params, "prediction_positions_per_window", jv_int(positions));
    jv_set(params, "windows_total", jv_int((int64_t)nwin));
    jv_set(params, "scored_positions_total", jv_int(scored));
    jv_set(params, "score_from", jv_int(0));
    jv_set(params, "windowed", jv_bool(0));
    jv_set(params, "mask", jv_str("all ones over the full context"));
    jv_set(r, "parameters", params);
    jv_set(r, "final_windows", jv_int((int64_t)nwin));
    jv_set(r, "final_prediction_positions", jv_int(scored));
    jv_set(r, "tokenizer", tokenizer_block(o, vocab, np, prefix));
    jv_set(r, "sources", jv_copy(jv_get(jv_get(doc, "provenance"), "inputs")));
    char seal[65];
    fd_buf b = {0};
    int rc = jv_seal(r, "receipt_sha256", seal, e);
    if (!rc) {
        jv_set(r, "receipt_sha256", jv_str(seal));
        rc = jv_dump(r, &JV_PRETTY, &b, e);
    }
    if (!rc) {
        fd_buf_putc(&b, '\n');
        char *path = fd_path_join(dir, "panel.receipt.json");
        rc = fd_write_atomic(path, b.p, b.n, e);
        free(path);
    }
    fd_buf_free(&b);
    jv_free(r);
    return rc;
}
