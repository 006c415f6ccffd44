/* The BPE model section of tokenizer.json: vocab, merges (either "a b"
 * strings or [a, b] pairs) and the options; anything that would change the
 * ids and is not implemented is refused by name. */
#include "tok_internal.h"
#include "../format/json.h"
#include <stdlib.h>
#include <string.h>

void tk_merges_put(tk_merges *m, int32_t a, int32_t b, int32_t rank, int32_t id);

static int bad(fd_err *e, const char *why) { return fd_fail(e, "bad_tokenizer", "", "model: %s", why); }

/* null or "" (what Qwen writes) mean none; anything else changes tokenization */
static int empty_or_null(const jv *v) { return !v || v->t == JV_NULL || (v->t == JV_STR && v->u.s.n == 0); }

static int load_vocab(fd_tokenizer *t, const jv *vocab, fd_err *e)
{
    if (!vocab || vocab->t != JV_OBJ) return bad(e, "vocab is not an object");
    int64_t max = -1;
    for (size_t i = 0; i < vocab->u.o.n; i++) {
        const jv *v = vocab->u.o.m[i].v;
        if (v->t != JV_INT || v->u.i < 0 || v->u.i >= INT32_MAX) return bad(e, "a vocab id is not a non-negative int32");
        if (v->u.i > max) max = v->u.i;
    }
    /* the id tables are indexed by id: a sparse id far above the entry count
     * (a 10 KB file naming id 306,666,666 asked for 2.4 GB) is refused by name */
    if (max >= (int64_t)vocab->u.o.n + FD_TOK_ID_SLACK)
        return fd_fail(e, "bad_tokenizer", "", "model: vocab id %lld is %lld or more above the vocab's %zu entries (ids must be "
                       "dense up to a slack of %d)", (long long)max, (long long)FD_TOK_ID_SLACK, vocab->u.o.n, FD_TOK_ID_SLACK);
    t->model_ntok = (size_t)(max + 1);
    t->model_tok = fd_xcalloc(t->model_ntok ? t->model_ntok : 1, sizeof *t->model_tok);
    for (size_t i = 0; i < vocab->u.o.n; i++) {
        const jv_member *m = &vocab->u.o.m[i];
        size_t id = (size_t)m->v->u.i;
        if (t->model_tok[id]) return fd_fail(e, "bad_tokenizer", "", "model: vocab id %zu is given twice", id);
        t->model_tok[id] = fd_xstrndup(m->k, m->klen);
        tk_smap_put(&t->vocab, t->model_tok[id], m->klen, (int32_t)id);
    }
    return 0;
}

static int merge_parts(const jv *m, const char **a, size_t *an, const char **b, size_t *bn)
{
    if (m->t == JV_STR) {
        const char *sp = memchr(m->u.s.p, ' ', m->u.s.n);
        if (!sp || memchr(sp + 1, ' ', m->u.s.n - (size_t)(sp + 1 - m->u.s.p))) return -1;
        *a = m->u.s.p; *an = (size_t)(sp - m->u.s.p);
        *b = sp + 1; *bn = m->u.s.n - *an - 1;
        return 0;
    }
    if (m->t == JV_ARR && m->u.a.n == 2 && jv_is_str(m->u.a.v[0]) && jv_is_str(m->u.a.v[1])) {
        *a = m->u.a.v[0]->u.s.p; *an = m->u.a.v[0]->u.s.n;
        *b = m->u.a.v[1]->u.s.p; *bn = m->u.a.v[1]->u.s.n;
        return 0;
    }
    return -1;
}

static int load_merges(fd_tokenizer *t, const jv *merges, fd_err *e)
{
    if (!merges || merges->t != JV_ARR) return bad(e, "merges is not a list");
    fd_buf cat = {0};
    for (size_t r = 0; r < merges->u.a.n; r++) {
        const char *a, *b;
        size_t an, bn;
        int32_t ia, ib, inew;
        if (merge_parts(merges->u.a.v[r], &a, &an, &b, &bn)) {
            fd_buf_free(&cat);
            return fd_fail(e, "bad_tokenizer", "", "model: merge %zu is neither \"a b\" nor [a, b]", r);
        }
        cat.n = 0;
        fd_buf_put(&cat, a, an);
        fd_buf_put(&cat, b, bn);
        if (!tk_smap_get(&t->vocab, a, an, &ia) || !tk_smap_get(&t->vocab, b, bn, &ib) ||
            !tk_smap_get(&t->vocab, cat.p, cat.n, &inew)) {
            fd_buf_free(&cat);
            return fd_fail(e, "bad_tokenizer", "", "model: merge %zu uses a token that is not in the vocab", r);
        }
        tk_merges_put(&t->merges, ia, ib, (int32_t)r, inew);
    }
    fd_buf_free(&cat);
    return 0;
}

static void byte_table(fd_tokenizer *t)
{
    for (unsigned b = 0; b < 256; b++) {
        uint32_t cp = tk_byte_to_cp(b);
        char u[2];
        size_t n = 1;
        if (cp < 0x80) u[0] = (char)cp;
        else { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
        int32_t id;
        t->byte_id[b] = tk_smap_get(&t->vocab, u, n, &id) ? id : -1;
    }
}

int tk_load_model(fd_tokenizer *t, const jv *model, fd_err *e)
{
    if (!model || model->t != JV_OBJ) return bad(e, "missing");
    const char *ty = jv_get_str(model, "type");
    if (ty && strcmp(ty, "BPE")) return fd_fail(e, "tokenizer_unsupported", "", "model type '%s' is not supported", ty);
    if (!ty && !jv_get(model, "merges")) return fd_fail(e, "tokenizer_unsupported", "", "model without a type and without merges (not BPE) is not supported");
    const jv *drop = jv_get(model, "dropout");
    if (drop && drop->t != JV_NULL && !(jv_is_num(drop) && (drop->t == JV_INT ? drop->u.i == 0 : drop->u.f == 0.0)))
        return fd_fail(e, "tokenizer_unsupported", "", "model BPE dropout is not supported (it is random)");
    const jv *bf = jv_get(model, "byte_fallback");
    if (bf && bf->t == JV_BOOL && bf->u.b) return fd_fail(e, "tokenizer_unsupported", "", "model BPE byte_fallback=true is not supported");
    if (!empty_or_null(jv_get(model, "continuing_subword_prefix")))
        return fd_fail(e, "tokenizer_unsupported", "", "model BPE continuing_subword_prefix is not supported");
    if (!empty_or_null(jv_get(model, "end_of_word_suffix")))
        return fd_fail(e, "tokenizer_unsupported", "", "model BPE end_of_word_suffix is not supported");
    const jv *im = jv_get(model, "ignore_merges"), *fu = jv_get(model, "fuse_unk");
    t->ignore_merges = im && im->t == JV_BOOL && im->u.b;
    t->fuse_unk = fu && fu->t == JV_BOOL && fu->u.b;
    if (load_vocab(t, jv_get(model, "vocab"), e) || load_merges(t, jv_get(model, "merges"), e)) return -1;
    const jv *unk = jv_get(model, "unk_token");
    if (unk && unk->t == JV_STR && !tk_smap_get(&t->vocab, unk->u.s.p, unk->u.s.n, &t->unk_id))
        return bad(e, "unk_token is not in the vocab");
    byte_table(t);
    return 0;
}
