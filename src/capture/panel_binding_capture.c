/* capture --panel-binding FILE --panel-binding-sha256 HEX (panel_binding.h
 * fd_capture_panel_binding): what the Python tool's hf_capture.py does
 * before it spends anything.  The file's sha256 must be the one supplied;
 * it must be strict JSON; the panel the capture uses is resolved again
 * (resolve_panel, tokenizer files verified under the tokenizer root) and
 * must equal the file's document entirely; the binding's receipt file
 * digest must be the panel.receipt.json the capture loaded.  The evidence
 * {binding_file, binding_file_sha256, binding, tokenizer_equivalences} is
 * what hf_capture records as runtime capture_tool.resolved_panel_binding.
 * Every refusal carries code panel_binding_refused. */
#include "capture/panel_binding.h"
#include "capture/panel.h"
#include "format/sha.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BINDING_MAX ((size_t)64 << 20)
#define refuse(e, ...) fd_fail((e), "panel_binding_refused", "", __VA_ARGS__)

static const char *base_of(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* the binding's panel id / receipt digest against the resolved ones, by name */
static int same_panel(const jv *want, const jv *got, const fd_panel *P, const char *path, fd_err *e)
{
    const char *wid = jv_get_str(jv_get(want, "panel"), "id"), *gid = jv_get_str(jv_get(got, "panel"), "id");
    if (!wid || !gid || strcmp(wid, gid))
        return refuse(e, "panel binding REFUSED: %s binds panel '%s', but the panel used (%s) is '%s'", path,
                      wid ? wid : "(none)", P->dir, gid ? gid : "(none)");
    const char *rf = jv_get_str(jv_get(got, "receipt"), "receipt_file_sha256");
    if (!P->have_receipt || !rf || strcmp(rf, P->panel_receipt_sha256))
        return refuse(e, "panel binding REFUSED: receipt_file_sha256 mismatch: binding %s, observed %s", rf ? rf : "(none)",
                      P->have_receipt ? P->panel_receipt_sha256 : "(no panel.receipt.json)");
    if (!jv_equal(want, got))
        return refuse(e, "panel binding REFUSED: local panel/tokenizer bytes do not equal the complete --panel-binding "
                         "contract %s", path);
    return 0;
}

int fd_capture_panel_binding(const char *path, const char *want_sha, const char *panel_dir, const char *role,
                             const char *tokenizer_root, const fd_panel *P, jv **evidence, fd_err *e)
{
    *evidence = NULL;
    fd_buf raw = {0};
    fd_err re = {0};
    if (!fd_is_file(path) || fd_read_file(path, BINDING_MAX, &raw, &re)) {
        fd_buf_free(&raw);
        return refuse(e, "cannot read strict --panel-binding JSON: %s: %s", path,
                      re.msg[0] ? re.msg : "not a regular file");
    }
    char got_sha[65];
    fd_sha256_hex(raw.p, raw.n, got_sha);
    if (strcmp(got_sha, want_sha)) {
        fd_buf_free(&raw);
        return refuse(e, "--panel-binding-sha256 mismatch: supplied %s, observed %s", want_sha, got_sha);
    }
    jv *want = jv_parse(raw.p, raw.n, &re);
    fd_buf_free(&raw);
    if (!want) return refuse(e, "cannot read strict --panel-binding JSON: %s: %s", path, re.msg);
    jv *got = NULL;
    size_t equivalences = 0;
    int rc = 0;
    if (fd_resolve_panel_ex(panel_dir, role, tokenizer_root, &got, &equivalences, &re))
        rc = refuse(e, "panel binding REFUSED: %s", re.msg);
    else if (!jv_get(jv_get(got, "tokenizer"), "files_verified") ||
             jv_get(jv_get(got, "tokenizer"), "files_verified")->t != JV_BOOL ||
             !jv_get(jv_get(got, "tokenizer"), "files_verified")->u.b)
        rc = refuse(e, "panel binding REFUSED: tokenizer files were not verified");
    else if (!(rc = same_panel(want, got, P, path, e)) && equivalences)
        /* hf_capture records each admitted .reference equivalence as a
         * tokenizer_equivalences entry (and a disclosure); that record is not
         * implemented here, so such a binding is refused rather than recorded
         * as if the files had matched byte for byte */
        rc = refuse(e, "panel binding REFUSED: %zu tokenizer file(s) verified only through a .reference equivalence; "
                       "recording tokenizer_equivalences is not implemented in this build", equivalences);
    if (!rc) {
        jv *ev = jv_obj();
        jv_set(ev, "binding_file", jv_str(base_of(path)));
        jv_set(ev, "binding_file_sha256", jv_str(got_sha));
        jv_set(ev, "binding", got);
        jv_set(ev, "tokenizer_equivalences", jv_arr());
        got = NULL;
        *evidence = ev;
    }
    jv_free(got);
    jv_free(want);
    return rc;
}
