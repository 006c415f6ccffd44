/* fd_tok_load: reads tokenizer.json, checks every component's type (refusing
 * by name what is not implemented) and builds the read-only tables. */
#include "tok_internal.h"
#include "../format/json.h"
#include "../format/sha.h"
#include "../util/fsio.h"
#include <stdlib.h>
#include <string.h>

#define TK_MAX_FILE ((size_t)1 << 30)

static const char *type_of(const jv *v) { return jv_get_str(v, "type"); }

static int unsupported(fd_err *e, const char *path, const char *what, const char *type)
{
    return fd_fail(e, "tokenizer_unsupported", "", "%s: %s type '%s' is not supported", path, what,
                   type ? type : "(no type)");
}

/* null, NFC, or a Sequence of those (NFC is idempotent: any number of them is one). */
static int load_normalizer(fd_tokenizer *t, const jv *n, const char *path, fd_err *e)
{
    if (!n || n->t == JV_NULL) return 0;
    const char *ty = type_of(n);
    if (ty && !strcmp(ty, "NFC")) { t->nfc = 1; return 0; }
    if (ty && !strcmp(ty, "Sequence")) {
        const jv *l = jv_get(n, "normalizers");
        if (!l || l->t != JV_ARR) return fd_fail(e, "bad_tokenizer", "", "%s: normalizer Sequence without a normalizers list", path);
        for (size_t i = 0; i < l->u.a.n; i++)
            if (load_normalizer(t, l->u.a.v[i], path, e)) return -1;
        return 0;
    }
    return unsupported(e, path, "normalizer", ty);
}

static int load_decoder(fd_tokenizer *t, const jv *d, const char *path, fd_err *e)
{
    if (!d || d->t == JV_NULL) return 0;
    const char *ty = type_of(d);
    if (ty && !strcmp(ty, "ByteLevel")) { t->decoder_bytelevel = 1; return 0; }
    if (ty && !strcmp(ty, "Sequence")) {
        const jv *l = jv_get(d, "decoders");
        if (!l || l->t != JV_ARR) return fd_fail(e, "bad_tokenizer", "", "%s: decoder Sequence without a decoders list", path);
        if (l->u.a.n > 1) return unsupported(e, path, "decoder", "Sequence of more than one decoder");
        for (size_t i = 0; i < l->u.a.n; i++)
            if (load_decoder(t, l->u.a.v[i], path, e)) return -1;
        return 0;
    }
    return unsupported(e, path, "decoder", ty);
}

/* id -> string for decoding: added tokens override the model's. */
static void build_decode_table(fd_tokenizer *t)
{
    size_t n = t->model_ntok;
    for (size_t i = 0; i < t->nadded; i++)
        if ((size_t)t->added[i].id + 1 > n) n = (size_t)t->added[i].id + 1;
    t->dec_n = n;
    t->dec_tok = fd_xcalloc(n ? n : 1, sizeof *t->dec_tok);
    t->dec_len = fd_xcalloc(n ? n : 1, sizeof *t->dec_len);
    t->dec_special = fd_xcalloc(n ? n : 1, 1);
    for (size_t i = 0; i < t->model_ntok; i++) t->dec_tok[i] = t->model_tok[i];
    for (size_t i = 0; i < t->nadded; i++) t->dec_tok[t->added[i].id] = t->added[i].content;
    tk_smap specials = {0}, all = {0};
    for (size_t i = 0; i < t->nadded; i++)
        if (t->added[i].special) tk_smap_put(&specials, t->added[i].content, strlen(t->added[i].content), 1);
    int32_t v;
    for (size_t i = 0; i < n; i++) {
        if (!t->dec_tok[i]) continue;
        t->dec_len[i] = strlen(t->dec_tok[i]);
        t->dec_special[i] = (unsigned char)tk_smap_get(&specials, t->dec_tok[i], t->dec_len[i], &v);
    }
    /* get_vocab(with_added_tokens=True) is a map keyed by token string */
    for (size_t i = 0; i < t->model_ntok; i++)
        if (t->model_tok[i]) tk_smap_put(&all, t->model_tok[i], strlen(t->model_tok[i]), (int32_t)i);
    for (size_t i = 0; i < t->nadded; i++) tk_smap_put(&all, t->added[i].content, strlen(t->added[i].content), t->added[i].id);
    t->vocab_size = (int64_t)all.n;
    tk_smap_free(&specials);
    tk_smap_free(&all);
}

static int load_doc(fd_tokenizer *t, const jv *doc, const char *path, fd_err *e)
{
    if (doc->t != JV_OBJ) return fd_fail(e, "bad_tokenizer", "", "%s: not a JSON object", path);
    const jv *tr = jv_get(doc, "truncation"), *pad = jv_get(doc, "padding");
    if (tr && tr->t != JV_NULL) return fd_fail(e, "tokenizer_unsupported", "", "%s: truncation settings are not supported", path);
    if (pad && pad->t != JV_NULL) return fd_fail(e, "tokenizer_unsupported", "", "%s: padding settings are not supported", path);
    if (load_normalizer(t, jv_get(doc, "normalizer"), path, e)) return -1;
    if (tk_load_pretok(t, jv_get(doc, "pre_tokenizer"), e)) goto prefixed;
    if (tk_load_model(t, jv_get(doc, "model"), e)) goto prefixed;
    if (tk_load_added(t, jv_get(doc, "added_tokens"), e)) goto prefixed;
    if (load_decoder(t, jv_get(doc, "decoder"), path, e)) return -1;
    if (tk_load_post(t, jv_get(doc, "post_processor"), e)) goto prefixed;
    build_decode_table(t);
    return 0;
prefixed:
    fd_err_prefix(e, path);
    return -1;
}

fd_tokenizer *fd_tok_load(const char *path, fd_err *e)
{
    char *file = fd_is_dir(path) ? fd_path_join(path, "tokenizer.json") : fd_xstrdup(path);
    fd_buf b = {0};
    fd_tokenizer *t = NULL;
    jv *doc = NULL;
    if (fd_read_file(file, TK_MAX_FILE, &b, e)) goto out;
    doc = jv_parse(b.p ? b.p : "", b.n, e);
    if (!doc) {
        char why[sizeof e->msg];
        memcpy(why, e->msg, sizeof why);
        fd_fail(e, "bad_tokenizer", "", "%s: not valid JSON: %s", file, why);
        goto out;
    }
    t = fd_xcalloc(1, sizeof *t);
    t->unk_id = -1;
    fd_sha256_hex(b.p ? b.p : "", b.n, t->sha);
    if (load_doc(t, doc, file, e)) { fd_tok_free(t); t = NULL; }
out:
    jv_free(doc);
    fd_buf_free(&b);
    free(file);
    return t;
}

void fd_tok_free(fd_tokenizer *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->npre; i++) pcre2_code_free(t->pre[i].re);
    free(t->pre);
    tk_smap_free(&t->vocab);
    for (size_t i = 0; i < t->model_ntok; i++) free(t->model_tok[i]);
    free(t->model_tok);
    free(t->merges.slot);
    for (size_t i = 0; i < t->nadded; i++) { free(t->added[i].content); free(t->added[i].pattern); }
    free(t->added);
    tk_trie_free(&t->trie_raw);
    tk_trie_free(&t->trie_norm);
    pcre2_code_free(t->re_word);
    pcre2_code_free(t->re_space);
    free(t->dec_tok);
    free(t->dec_len);
    free(t->dec_special);
    free(t->pre_ids);
    free(t->post_ids);
    free(t);
}

int64_t fd_tok_vocab_size(const fd_tokenizer *t) { return t->vocab_size; }
const char *fd_tok_sha256(const fd_tokenizer *t) { return t->sha; }
