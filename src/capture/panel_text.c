/* Text sources for `panel build --tokenizer`: raw text files, JSONL and
 * JSON corpora, tokenized into documents (capture/panel.h). */
#include "capture/panel.h"
#include "tokenizer/tokenizer.h"
#include "format/sha.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_MAX ((size_t)1 << 32)

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static void push(fd_panel_docs *d, int64_t *ids, size_t n, const char *domain, const char *docid, size_t input)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->v = fd_xrealloc(d->v, d->cap * sizeof *d->v);
    }
    d->v[d->n++] = (fd_panel_doc){ids, n, domain ? fd_xstrdup(domain) : NULL, docid ? fd_xstrdup(docid) : NULL, input};
}

static int encode(const fd_tokenizer *t, const char *path, const char *where, const char *p, size_t n, int64_t **ids,
                  size_t *count, fd_err *e)
{
    int32_t *v = NULL;
    size_t k = 0;
    if (fd_tok_encode(t, p, n, 0, &v, &k, e)) {
        fd_err_prefix(e, where);
        fd_err_prefix(e, path);
        return -1;
    }
    *ids = fd_xmalloc((k ? k : 1) * sizeof **ids);
    for (size_t i = 0; i < k; i++) (*ids)[i] = v[i];
    *count = k;
    free(v);
    return 0;
}

/* One corpus item: a string, or {"text", "domain"?, "id"/"document_id"?}. */
static int item(const fd_tokenizer *t, const char *path, const jv *it, size_t row, const char *domain, const char *base,
                size_t input, fd_panel_docs *out, fd_err *e)
{
    const char *text = it->t == JV_STR ? it->u.s.p : jv_get_str(it, "text");
    size_t tn = it->t == JV_STR ? it->u.s.n : (jv_get(it, "text") ? jv_get(it, "text")->u.s.n : 0);
    if (!text)
        return fd_fail(e, "bad_input", "", "%s: item %zu is neither a string nor an object with a \"text\" string", path, row);
    const char *dm = it->t == JV_OBJ && jv_get_str(it, "domain") ? jv_get_str(it, "domain") : domain;
    const char *id = it->t == JV_OBJ ? jv_get_str(it, "document_id") : NULL;
    if (!id && it->t == JV_OBJ) id = jv_get_str(it, "id");
    char where[64], dflt[600];
    snprintf(where, sizeof where, "item %zu", row);
    snprintf(dflt, sizeof dflt, "%s#%zu", base, row);
    int64_t *ids;
    size_t n;
    if (encode(t, path, where, text, tn, &ids, &n, e)) return -1;
    push(out, ids, n, dm, id ? id : dflt, input);
    return 0;
}

int fd_panel_text_docs(const fd_tokenizer *t, const char *path, const char *domain, size_t input, fd_panel_docs *out,
                       char sha[65], fd_err *e)
{
    fd_buf b = {0};
    if (fd_read_file(path, TEXT_MAX, &b, e)) return -1;
    fd_sha256_hex(b.p, b.n, sha);
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    int rc = 0;
    if (ends_with(path, ".jsonl")) {
        size_t row = 0;
        for (size_t i = 0; i < b.n && !rc;) {
            size_t j = i;
            while (j < b.n && b.p[j] != '\n') j++;
            size_t k = j;
            while (k > i && (b.p[k - 1] == '\r' || b.p[k - 1] == ' ' || b.p[k - 1] == '\t')) k--;
            if (k > i) {
                jv *it = jv_parse(b.p + i, k - i, e);
                if (!it) {
                    char m[sizeof e->msg];
                    snprintf(m, sizeof m, "%s", e->msg);
                    rc = fd_fail(e, "bad_input", "", "%s: line %zu is not JSON: %s", path, row + 1, m);
                } else rc = item(t, path, it, row, domain, base, input, out, e);
                jv_free(it);
            }
            row++;
            i = j + 1;
        }
    } else if (ends_with(path, ".json")) {
        jv *doc = jv_parse(b.p, b.n, e);
        if (!doc || doc->t != JV_ARR) {
            rc = fd_fail(e, "bad_input", "", "%s: a .json corpus must be a list of strings or {\"text\": ...} objects", path);
        } else {
            for (size_t r = 0; r < doc->u.a.n && !rc; r++) rc = item(t, path, doc->u.a.v[r], r, domain, base, input, out, e);
        }
        jv_free(doc);
    } else {
        int64_t *ids;
        size_t n;
        rc = encode(t, path, "text", b.p ? b.p : "", b.n, &ids, &n, e);
        if (!rc) push(out, ids, n, domain, base, input);
    }
    fd_buf_free(&b);
    return rc;
}

int fd_panel_template_prefix(const fd_tokenizer *t, int64_t **ids, size_t *n, fd_err *e)
{
    int32_t *with = NULL, *without = NULL;
    size_t nw = 0, nn = 0;
    *ids = NULL;
    *n = 0;
    int rc = fd_tok_encode(t, "a", 1, 1, &with, &nw, e);
    if (!rc) rc = fd_tok_encode(t, "a", 1, 0, &without, &nn, e);
    if (!rc) {
        /* the prefix is what the template puts before the text's own ids */
        size_t at = nw;
        for (size_t s = 0; s + nn <= nw; s++)
            if (!memcmp(with + s, without, nn * sizeof *with)) { at = s; break; }
        if (at == nw) rc = fd_fail(e, "tokenizer_unsupported", "", "the post-processor template does not keep the text's ids");
        else {
            *ids = fd_xmalloc((at ? at : 1) * sizeof **ids);
            for (size_t i = 0; i < at; i++) (*ids)[i] = with[i];
            *n = at;
        }
    }
    free(with);
    free(without);
    return rc;
}

void fd_panel_docs_free(fd_panel_docs *d)
{
    for (size_t i = 0; i < d->n; i++) { free(d->v[i].ids); free(d->v[i].domain); free(d->v[i].document_id); }
    free(d->v);
    memset(d, 0, sizeof *d);
}
