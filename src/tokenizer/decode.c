/* fd_tok_decode: ids -> token strings (added tokens first, unknown ids
 * skipped, specials skipped on request) -> the ByteLevel decoder (GPT-2
 * chars back to bytes; a token with any other char is taken as its UTF-8)
 * -> lossy UTF-8 exactly as Rust's String::from_utf8_lossy. */
#include "tok_internal.h"
#include <stdlib.h>
#include <string.h>

static uint32_t utf8_cp(const unsigned char *p, size_t *k)
{
    if (p[0] < 0x80) { *k = 1; return p[0]; }
    if (p[0] < 0xE0) { *k = 2; return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F); }
    if (p[0] < 0xF0) { *k = 3; return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F); }
    *k = 4;
    return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 | (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
}

/* A token's bytes: every char through the GPT-2 table, or if any char is
 * outside it, the token's own UTF-8 (HF's ByteLevel decoder). */
static void bytelevel_token(const char *s, size_t n, const int16_t *back, fd_buf *out)
{
    size_t start = out->n;
    for (size_t i = 0; i < n;) {
        size_t k;
        uint32_t cp = utf8_cp((const unsigned char *)s + i, &k);
        if (cp >= 324 || back[cp] < 0) { out->n = start; fd_buf_put(out, s, n); return; }
        fd_buf_putc(out, (char)back[cp]);
        i += k;
    }
}

/* Replaces each maximal invalid subpart with U+FFFD (Rust's Utf8Chunks). */
static void lossy(const unsigned char *p, size_t n, fd_buf *out)
{
    static const char FFFD[] = "\xEF\xBF\xBD";
    for (size_t i = 0; i < n;) {
        unsigned b = p[i];
        if (b < 0x80) { fd_buf_putc(out, (char)b); i++; continue; }
        size_t w = b >= 0xC2 && b <= 0xDF ? 2 : b >= 0xE0 && b <= 0xEF ? 3 : b >= 0xF0 && b <= 0xF4 ? 4 : 0;
        if (!w) { fd_buf_put(out, FFFD, 3); i++; continue; }
        unsigned lo = 0x80, hi = 0xBF;
        if (b == 0xE0) lo = 0xA0;
        else if (b == 0xED) hi = 0x9F;
        else if (b == 0xF0) lo = 0x90;
        else if (b == 0xF4) hi = 0x8F;
        size_t k = 1;
        if (i + 1 < n && p[i + 1] >= lo && p[i + 1] <= hi) {
            k = 2;
            while (k < w && i + k < n && (p[i + k] & 0xC0) == 0x80) k++;
        }
        if (k == w) fd_buf_put(out, p + i, w);
        else fd_buf_put(out, FFFD, 3);
        i += k;
    }
}

int fd_tok_decode(const fd_tokenizer *t, const int32_t *ids, size_t n, int skip_special,
                  char **text, size_t *len, fd_err *e)
{
    (void)e;
    int16_t back[324];
    for (uint32_t cp = 0; cp < 324; cp++) back[cp] = -1;
    for (unsigned b = 0; b < 256; b++) back[tk_byte_to_cp(b)] = (int16_t)b;
    fd_buf raw = {0}, out = {0};
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || (size_t)id >= t->dec_n || !t->dec_tok[id]) continue;
        if (skip_special && t->dec_special[id]) continue;
        if (t->decoder_bytelevel) bytelevel_token(t->dec_tok[id], t->dec_len[id], back, &raw);
        else {
            if (!first) fd_buf_putc(&raw, ' ');
            fd_buf_put(&raw, t->dec_tok[id], t->dec_len[id]);
        }
        first = 0;
    }
    if (t->decoder_bytelevel) lossy((const unsigned char *)raw.p, raw.n, &out);
    else fd_buf_put(&out, raw.p, raw.n);
    fd_buf_free(&raw);
    *len = out.n;
    *text = fd_buf_cstr(&out);
    return 0;
}
