/* What writer.c shares with writer_blocks.c (the manifest blocks): the
 * writer's private state and the few helpers both use.  Not an API. */
#ifndef FD_FORMAT_WRITER_INTERNAL_H
#define FD_FORMAT_WRITER_INTERNAL_H
#include "writer.h"
#include "json.h"

struct fd_dsw {
    char *out, *tmp;
    fd_ds_identity id;
    char created[32], cold_run[64];
    jv *cap_records, *panel_records;
    int64_t total_size;
    int have_head, logit;
    char head_file_sha[65], head_content_sha[65];
};

static inline jv *str_or_null(const char *s) { return s ? jv_str(s) : jv_null(); }
static inline const char *semantic_point(const fd_dsw *w)
{
    return w->id.semantic_point ? w->id.semantic_point : "lm_head_output_before_sampling";
}

/* REL under the staging folder, written atomically; hex (or NULL): its sha256 */
int fd_dsw_write_rel(fd_dsw *w, const char *rel, const void *p, size_t n, char hex[65], fd_err *e);

/* rows scored over every window; the panel id (a synthetic one when none was given) */
int64_t fd_dsw_total_rows(const fd_dsw *w);
const char *fd_dsw_panel_id(const fd_dsw *w);

/* the blocks (writer_blocks.c), each mirroring dsmanifest.py + hf_capture.py key for key */
jv *fd_dsw_coverage_block(const fd_dsw *w);
jv *fd_dsw_panel_binding_doc(const fd_dsw *w);
jv *fd_dsw_runtime_doc_new(const fd_dsw *w);
jv *fd_dsw_head_doc_new(const fd_dsw *w);
jv *fd_dsw_capture_doc_new(const fd_dsw *w, const jv *coverage, const char *content_digest);
jv *fd_dsw_seal_block(const char *checksums_sha);
jv *fd_dsw_top_manifest(const fd_dsw *w, const jv *panel_doc, const jv *runtime_doc, jv *coverage,
                        const char *content_digest);
jv *fd_dsw_validation_doc(const fd_dsw *w);
/* README.md (the dataset card) from the manifest (writer_card.c) */
int fd_dsw_write_card(fd_dsw *w, const jv *m, fd_err *e);

#endif
