/* README.md, the dataset card: YAML front matter and the prose, from the
 * manifest (writer_internal.h fd_dsw_write_card; docs/CARDS.md). */
#include "writer_internal.h"
#include "version.h"
#include "yaml.h"
#include "../util/buf.h"
#include "../util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* README.md: YAML front matter (license, tags, x_fidelity) + a short body.
 * The seal digests are null: the card is written before the seal exists. */
int fd_dsw_write_card(fd_dsw *w, const jv *m, fd_err *e)
{
    jv *front = jv_obj(), *tags = jv_arr(), *x = jv_obj(), *fdset = jv_obj(), *seal = jv_obj();
    char roletag[64];
    snprintf(roletag, sizeof roletag, "fidelity-%s", w->id.role);
    static const char *const base_tags[] = {"fidelity", "kl-divergence", "fidelity-provenance", "fidelity-dataset"};
    for (size_t i = 0; i < 4; i++) jv_push(tags, jv_str(base_tags[i]));
    jv_push(tags, jv_str(roletag));
    const jv *cap = jv_get(m, "capture"), *head = jv_get(m, "head");
    jv_set(x, "spec", jv_str("fidelity-provenance"));
    jv_set(x, "spec_version", jv_str("fidelity-provenance/v1"));
    jv_set(x, "role", jv_str("fidelity-dataset"));
    jv_set(x, "captured_model", str_or_null(w->id.weights_repository));
    jv_set(x, "form", jv_str(w->logit ? "logit" : "hidden"));
    jv_set(x, "lane", jv_str(w->id.lane));
    jv_set(fdset, "id", jv_str(w->id.dataset_id));
    jv_set(fdset, "role", jv_str(w->id.role));
    jv_set(fdset, "repository", str_or_null(w->id.repository));
    jv_set(fdset, "capture_content_digest", jv_copy(jv_get(cap, "capture_content_digest")));
    jv_set(x, "fidelity_dataset", fdset);
    jv_set(x, "panel", jv_copy(jv_get(jv_get(m, "panel"), "panel_id")));
    jv *hx = jv_obj();
    jv_set(hx, "policy", jv_str(w->logit ? "unknown" : "native"));
    jv_set(hx, "lm_head_tensor_content_sha256", jv_copy(jv_get(head, "tensor_content_sha256")));
    jv_set(hx, "replay_permitted", jv_bool(!w->logit));
    jv_set(x, "head", hx);
    jv_set(x, "scope_digest", jv_copy(jv_get(jv_get(m, "scope"), "scope_digest")));
    jv_set(seal, "manifest", jv_str("fidelity-dataset.json"));
    jv_set(seal, "dataset_sha256", jv_null());
    jv_set(seal, "checksums", jv_str("checksums.txt"));
    jv_set(seal, "checksums_sha256", jv_null());
    jv_set(seal, "note", jv_str("digests of the tree that holds this README; read them from fidelity-dataset.json"));
    jv_set(x, "seal", seal);
    jv_set(x, "measurements", jv_arr());
    jv_set(front, "license", jv_str(w->id.license ? w->id.license : "mit"));
    jv_set(front, "tags", tags);
    jv_set(front, "x_fidelity", x);
    fd_buf b = {0};
    fd_buf_puts(&b, "---\n");
    /* key order as written by hf_capture: license, tags, x_fidelity (sorted by luck) */
    fd_yaml_emit(front, &b);
    if (w->logit) {
        fd_buf_printf(&b, "---\n# %s\n\nA **%s** fidelity dataset in **logit form**: per scored position, the "
                      "log-probabilities over the full vocabulary (tensor `logits`, F32) on panel `%s`.\n\n%s\n\n"
                      "| | |\n|---|---|\n| records | %zu |\n| scored positions | %lld |\n| context length | %lld |\n"
                      "| vocab size | %lld |\n\nVerify with `fidelity verify DIR` or `sha256sum -c checksums.txt`.\n",
                      w->id.dataset_name, w->id.role, fd_dsw_panel_id(w), w->id.card_note ? w->id.card_note : "",
                      w->cap_records->u.a.n, (long long)fd_dsw_total_rows(w), (long long)w->id.context_length,
                      (long long)w->id.vocab);
    } else
        fd_buf_printf(&b, "---\n# %s\n\nA **%s** fidelity dataset in **hidden form**: the final hidden states "
                      "(after the final RMSNorm, before the lm_head) of `%s` on panel `%s`, with the head "
                      "shipped beside them so KL can be replayed offline.\n\n| | |\n|---|---|\n"
                      "| records | %zu |\n| scored positions | %lld |\n| context length | %lld |\n"
                      "| hidden width | %lld |\n| vocab size | %lld |\n\nVerify with `fidelity verify DIR` "
                      "or `sha256sum -c checksums.txt`.\n",
                      w->id.dataset_name, w->id.role, w->id.weights_repository ? w->id.weights_repository : "(unnamed)",
                      fd_dsw_panel_id(w), w->cap_records->u.a.n, (long long)fd_dsw_total_rows(w), (long long)w->id.context_length,
                      (long long)w->id.hidden, (long long)w->id.vocab);
    jv_free(front);
    int rc = fd_dsw_write_rel(w, "README.md", b.p, b.n, NULL, e);
    fd_buf_free(&b);
    return rc;
}
