/* fd_tok_encode: the pipeline of HF's encode for one sequence:
 * UTF-8 check -> non-normalized added tokens -> normalizer -> normalized
 * added tokens -> pre-tokenizers -> BPE -> post-processor template. */
#include "tok_internal.h"
#include "../format/json.h"
#include <stdlib.h>
#include <string.h>

static int check_utf8(const char *s, size_t n, fd_err *e)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    for (const unsigned char *q = p; q < end;) {
        if (*q < 0x80) { q++; continue; }
        int k = fd_utf8_len(q, end);
        if (!k) return fd_fail(e, "invalid_utf8", "", "input is not valid UTF-8 at byte offset %zu (byte 0x%02X)", (size_t)(q - p), *q);
        q += k;
    }
    return 0;
}

static int after_norm(tk_call *c, const char *s, size_t n, fd_buf *ids, fd_err *e)
{
    return tk_split_added(c, &c->t->trie_norm, s, n, ids, tk_encode_segment, e);
}

static int normalize_then(tk_call *c, const char *s, size_t n, fd_buf *ids, fd_err *e)
{
    if (!c->t->nfc) return after_norm(c, s, n, ids, e);
    fd_buf nb = {0};
    tk_nfc(s, n, &nb);
    int rc = after_norm(c, nb.p ? nb.p : "", nb.n, ids, e);
    fd_buf_free(&nb);
    return rc;
}

int fd_tok_encode(const fd_tokenizer *t, const char *text, size_t len, int add_special,
                  int32_t **ids, size_t *n, fd_err *e)
{
    *ids = NULL;
    *n = 0;
    if (check_utf8(text, len, e)) return -1;
    fd_buf out = {0};
    if (add_special) fd_buf_put(&out, t->pre_ids, t->npre_ids * sizeof(int32_t));
    tk_call *c = tk_call_new(t);
    int rc = tk_split_added(c, &t->trie_raw, text, len, &out, normalize_then, e);
    tk_call_free(c);
    if (rc) { fd_buf_free(&out); return -1; }
    if (add_special) fd_buf_put(&out, t->post_ids, t->npost_ids * sizeof(int32_t));
    *n = out.n / sizeof(int32_t);
    *ids = out.p ? (int32_t *)(void *)out.p : fd_xmalloc(sizeof(int32_t));
    return 0;
}

int fd_tok_normalize(const fd_tokenizer *t, const char *text, size_t len, char **out, size_t *out_len, fd_err *e)
{
    if (check_utf8(text, len, e)) return -1;
    fd_buf b = {0};
    if (t->nfc) tk_nfc(text, len, &b);
    else fd_buf_put(&b, text, len);
    *out_len = b.n;
    *out = fd_buf_cstr(&b);
    return 0;
}
