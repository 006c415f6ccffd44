/* capture --panel-binding FILE --panel-binding-sha256 HEX (panel_binding.h
 * fd_capture_panel_binding): what the Python tool's hf_capture.py does
 * before it spends anything.  The file's sha256 must be the one supplied;
 * it must be strict JSON; the panel the capture uses is resolved again
 * (resolve_panel, tokenizer files verified under the tokenizer root) and
 * must equal the file's document entirely; the binding's receipt file
 * digest must be the panel.receipt.json the capture loaded.  The evidence
 * {binding_file, binding_file_sha256, binding, tokenizer_equivalences} is
 * what hf_capture records as runtime capture_tool.resolved_panel_binding;
 * each tokenizer equivalence also becomes a disclosure
 * (fd_panel_binding_disclosures), and the binding's tokenizer and receipt
 * identities replace what the panel loader inferred
 * (fd_panel_binding_identity: hf_capture's bind_resolved_panel_tokenizer).
 * Every refusal carries code panel_binding_refused. */
#include "capture/panel_binding.h"
#include "capture/panel.h"
#include "format/sha.h"
#include "util/buf.h"
#include "format/validate_util.h"
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
    jv *got = NULL, *equivalences = NULL;
    int rc = 0;
    if (fd_resolve_panel_ex(panel_dir, role, tokenizer_root, &got, &equivalences, &re))
        rc = refuse(e, "panel binding REFUSED: %s", re.msg);
    else if (!jv_get(jv_get(got, "tokenizer"), "files_verified") ||
             jv_get(jv_get(got, "tokenizer"), "files_verified")->t != JV_BOOL ||
             !jv_get(jv_get(got, "tokenizer"), "files_verified")->u.b)
        rc = refuse(e, "panel binding REFUSED: tokenizer files were not verified");
    else
        rc = same_panel(want, got, P, path, e);
    if (!rc) {
        /* the equivalences panel.py admitted (never inside the binding, which
         * names the root's digests) are recorded beside it, as hf_capture does */
        jv *ev = jv_obj();
        jv_set(ev, "binding_file", jv_str(base_of(path)));
        jv_set(ev, "binding_file_sha256", jv_str(got_sha));
        jv_set(ev, "binding", got);
        jv_set(ev, "tokenizer_equivalences", equivalences);
        got = equivalences = NULL;
        *evidence = ev;
    }
    jv_free(equivalences);
    jv_free(got);
    jv_free(want);
    return rc;
}

/* Python's "%s" of a list of key names (['a', 'b']; the names are panel.py's
 * fixed allowlist, plain identifiers, so repr quotes them with ' as-is) */
static char *list_repr(const jv *v)
{
    if (!v || v->t != JV_ARR) return py_repr(v);
    fd_buf b = {0};
    fd_buf_putc(&b, '[');
    for (size_t i = 0; i < v->u.a.n; i++) {
        char *r = py_repr(v->u.a.v[i]);
        fd_buf_printf(&b, "%s%s", i ? ", " : "", r);
        free(r);
    }
    fd_buf_putc(&b, ']');
    return fd_buf_cstr(&b);
}

/* ...or "none" for an empty one (hf_capture's `keys or "none"`) */
static char *keys_text(const jv *v)
{
    if (v && v->t == JV_ARR && !v->u.a.n) return fd_xstrdup("none");
    return list_repr(v);
}

static jv *disclosure(const char *code, const char *detail)
{
    jv *d = jv_obj();
    jv_set(d, "code", jv_str(code));
    jv_set(d, "severity", jv_str("info"));
    jv_set(d, "affects_comparability", jv_bool(0));
    jv_set(d, "detail", jv_str(detail));
    return d;
}

jv *fd_panel_binding_disclosures(const jv *evidence)
{
    const jv *eqs = jv_get(evidence, "tokenizer_equivalences");
    if (!eqs || eqs->t != JV_ARR || !eqs->u.a.n) return NULL;
    jv *out = jv_arr();
    for (size_t i = 0; i < eqs->u.a.n; i++) {
        const jv *q = eqs->u.a.v[i];
        const char *name = jv_get_str(q, "name"), *rs = jv_get_str(q, "root_sha256"), *cs = jv_get_str(q, "candidate_sha256"),
                   *why = jv_get_str(q, "reason");
        int64_t rb = 0, cb = 0;
        jv_get_i64(q, "root_bytes", &rb);
        jv_get_i64(q, "candidate_bytes", &cb);
        fd_buf d = {0};
        if (jv_get(q, "keys_dropped_from_root")) {
            char *kr = keys_text(jv_get(q, "keys_dropped_from_root")), *kc = keys_text(jv_get(q, "keys_dropped_from_candidate")),
                 *al = list_repr(jv_get(q, "loader_keys_allowlist"));
            fd_buf_printf(&d, "%s differs from the reference root's bound file (root sha256 %s, %lld bytes; candidate sha256 "
                              "%s, %lld bytes) only by loader-only keys (dropped from root: %s; from candidate: %s; allowlist "
                              "%s); canonical JSON is otherwise identical. Reason: %s.",
                          name, rs, (long long)rb, cs, (long long)cb, kr, kc, al, why);
            free(kr);
            free(kc);
            free(al);
            jv_push(out, disclosure("tokenizer_config_loader_keys_ignored", fd_buf_cstr(&d)));
        } else {
            fd_buf_printf(&d, "%s differs from the reference root's bound file (root sha256 %s, %lld bytes; candidate sha256 "
                              "%s, %lld bytes) and is admitted as per-model provenance. Reason: %s.",
                          name, rs, (long long)rb, cs, (long long)cb, why);
            jv_push(out, disclosure("tokenizer_file_provenance_admitted", fd_buf_cstr(&d)));
        }
        fd_buf_free(&d);
    }
    return out;
}

int fd_panel_binding_identity(const jv *evidence, const fd_panel *P, jv **tokenizer, const char **receipt_sha256, fd_err *e)
{
    *tokenizer = NULL;
    *receipt_sha256 = NULL;
    const jv *b = jv_get(evidence, "binding"), *tok = jv_get(b, "tokenizer"), *rc = jv_get(b, "receipt");
    if (!b || b->t != JV_OBJ) return refuse(e, "panel binding REFUSED: verified binding is not an object");
    if (!tok || tok->t != JV_OBJ) return refuse(e, "panel binding REFUSED: verified binding has no tokenizer identity");
    if (!rc || rc->t != JV_OBJ) return refuse(e, "panel binding REFUSED: verified binding has no receipt identity");
    const char *mode = jv_get_str(rc, "receipt_seal_mode");
    if (!mode || (strcmp(mode, "self-blank") && strcmp(mode, "legacy-field-absent"))) {
        char *r = py_repr(jv_get(rc, "receipt_seal_mode"));
        int x = refuse(e, "panel binding REFUSED: unsupported receipt_seal_mode %s", r);
        free(r);
        return x;
    }
    const char *declared = jv_get_str(rc, "declared_receipt_sha256"), *file = jv_get_str(rc, "receipt_file_sha256");
    if (!declared || !fd_is_hex64(declared))
        return refuse(e, "panel binding REFUSED: declared_receipt_sha256 is not canonical lowercase SHA-256");
    if (!file || !fd_is_hex64(file))
        return refuse(e, "panel binding REFUSED: receipt_file_sha256 is not canonical lowercase SHA-256");
    if (!P->have_receipt) return refuse(e, "panel binding REFUSED: load_panel did not hash panel.receipt.json");
    if (strcmp(file, P->panel_receipt_sha256))
        return refuse(e, "panel binding REFUSED: receipt_file_sha256 mismatch: binding %s, observed %s", file,
                      P->panel_receipt_sha256);
    *tokenizer = jv_copy(tok);
    *receipt_sha256 = declared;
    return 0;
}
