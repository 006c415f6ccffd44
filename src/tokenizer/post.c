/* Post-processors, for a single sequence with add_special_tokens: what ids
 * go before and after the encoded text.  ByteLevel only trims offsets, so it
 * changes no id. */
#include "tok_internal.h"
#include "../format/json.h"
#include <stdlib.h>
#include <string.h>

static void append(int32_t **v, size_t *n, const int32_t *x, size_t k, int front)
{
    if (!k) return;
    *v = fd_xrealloc(*v, (*n + k + 1) * sizeof **v);
    if (front) { memmove(*v + k, *v, *n * sizeof **v); memcpy(*v, x, k * sizeof *x); }
    else memcpy(*v + *n, x, k * sizeof *x);
    *n += k;
}

static int special_ids(const jv *specials, const char *name, int32_t **ids, size_t *n, fd_err *e)
{
    const jv *sp = jv_get(specials, name), *l = jv_get(sp, "ids");
    if (!l || l->t != JV_ARR) return fd_fail(e, "bad_tokenizer", "", "post_processor template names special token '%s' without ids", name);
    *ids = fd_xcalloc(l->u.a.n + 1, sizeof **ids);
    *n = l->u.a.n;
    for (size_t i = 0; i < l->u.a.n; i++) {
        const jv *x = l->u.a.v[i];
        if (x->t != JV_INT || x->u.i < 0 || x->u.i >= INT32_MAX) { free(*ids); return fd_fail(e, "bad_tokenizer", "", "post_processor special token '%s' has a bad id", name); }
        (*ids)[i] = (int32_t)x->u.i;
    }
    return 0;
}

static int template(fd_tokenizer *t, const jv *p, fd_err *e)
{
    const jv *single = jv_get(p, "single"), *specials = jv_get(p, "special_tokens");
    if (!single || single->t != JV_ARR) return fd_fail(e, "bad_tokenizer", "", "post_processor TemplateProcessing without a single template");
    int32_t *before = NULL, *after = NULL;
    size_t nb = 0, na = 0;
    int seen_a = 0;
    for (size_t i = 0; i < single->u.a.n; i++) {
        const jv *it = single->u.a.v[i], *sp = jv_get(it, "SpecialToken"), *sq = jv_get(it, "Sequence");
        if (sq) {
            const char *id = jv_get_str(sq, "id");
            if (seen_a || !id || strcmp(id, "A")) { free(before); free(after);
                return fd_fail(e, "tokenizer_unsupported", "", "post_processor single template other than one sequence A is not supported"); }
            seen_a = 1;
            continue;
        }
        const char *name = jv_get_str(sp, "id");
        int32_t *ids = NULL;
        size_t k = 0;
        if (!name) { free(before); free(after); return fd_fail(e, "bad_tokenizer", "", "post_processor template item %zu is neither SpecialToken nor Sequence", i); }
        if (special_ids(specials, name, &ids, &k, e)) { free(before); free(after); return -1; }
        if (seen_a) append(&after, &na, ids, k, 0); else append(&before, &nb, ids, k, 0);
        free(ids);
    }
    if (!seen_a) { free(before); free(after); return fd_fail(e, "tokenizer_unsupported", "", "post_processor single template without sequence A is not supported"); }
    /* a later processor wraps the result of an earlier one */
    append(&t->pre_ids, &t->npre_ids, before, nb, 1);
    append(&t->post_ids, &t->npost_ids, after, na, 0);
    free(before);
    free(after);
    return 0;
}

static int cls_sep(fd_tokenizer *t, const jv *p, fd_err *e)
{
    const jv *cls = jv_get(p, "cls"), *sep = jv_get(p, "sep");
    if (!cls || !sep || cls->t != JV_ARR || sep->t != JV_ARR || cls->u.a.n != 2 || sep->u.a.n != 2 ||
        !jv_is_int(cls->u.a.v[1]) || !jv_is_int(sep->u.a.v[1]))
        return fd_fail(e, "bad_tokenizer", "", "post_processor cls/sep are not [token, id] pairs");
    int32_t c = (int32_t)cls->u.a.v[1]->u.i, s = (int32_t)sep->u.a.v[1]->u.i;
    append(&t->pre_ids, &t->npre_ids, &c, 1, 1);
    append(&t->post_ids, &t->npost_ids, &s, 1, 0);
    return 0;
}

int tk_load_post(fd_tokenizer *t, const jv *p, fd_err *e)
{
    if (!p || p->t == JV_NULL) return 0;
    const char *ty = jv_get_str(p, "type");
    if (ty && !strcmp(ty, "ByteLevel")) return 0;
    if (ty && !strcmp(ty, "TemplateProcessing")) return template(t, p, e);
    if (ty && (!strcmp(ty, "RobertaProcessing") || !strcmp(ty, "BertProcessing"))) return cls_sep(t, p, e);
    if (ty && !strcmp(ty, "Sequence")) {
        const jv *l = jv_get(p, "processors");
        if (!l || l->t != JV_ARR) return fd_fail(e, "bad_tokenizer", "", "post_processor Sequence without a processors list");
        for (size_t i = 0; i < l->u.a.n; i++)
            if (tk_load_post(t, l->u.a.v[i], e)) return -1;
        return 0;
    }
    return fd_fail(e, "tokenizer_unsupported", "", "post_processor type '%s' is not supported", ty ? ty : "(no type)");
}
