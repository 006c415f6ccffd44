/* Internal layout of a loaded tokenizer, shared by the files of this folder.
 * Everything here is filled by fd_tok_load and read-only afterwards. */
#ifndef FD_TOK_INTERNAL_H
#define FD_TOK_INTERNAL_H
#include <stddef.h>
#include <stdint.h>
#include "tokenizer.h"
#include "../util/buf.h"

#define PCRE2_CODE_UNIT_WIDTH 8
/* the largest gap above a vocab's entry count its ids may reach (model.c) */
#define FD_TOK_ID_SLACK 65536
#include <pcre2.h>

/* string -> int32 open-addressing map; keys point at storage owned elsewhere */
typedef struct tk_smap {
    struct tk_sslot { const char *k; uint32_t n; int32_t v; uint64_t h; } *slot;
    size_t cap, n;
} tk_smap;
uint64_t tk_hash(const void *p, size_t n);
void tk_smap_put(tk_smap *m, const char *k, size_t n, int32_t v); /* replaces */
int tk_smap_get(const tk_smap *m, const char *k, size_t n, int32_t *v); /* 1 if found */
void tk_smap_free(tk_smap *m);

/* (left id, right id) -> (rank, merged id) */
typedef struct tk_merges {
    struct tk_mslot { uint64_t k; int32_t rank, id; } *slot; /* k == UINT64_MAX: empty */
    size_t cap, n;
} tk_merges;
int tk_merges_get(const tk_merges *m, int32_t a, int32_t b, int32_t *rank, int32_t *id);

enum { TK_SPLIT, TK_BYTELEVEL, TK_DIGITS };
enum { TK_ISOLATED, TK_REMOVED, TK_MERGED_PREV, TK_MERGED_NEXT, TK_CONTIGUOUS };
typedef struct tk_pretok {
    int kind;
    pcre2_code *re;       /* TK_SPLIT; TK_BYTELEVEL with use_regex (the GPT-2 regex) */
    int behavior, invert; /* TK_SPLIT */
    int add_prefix_space; /* TK_BYTELEVEL */
    int individual;       /* TK_DIGITS individual_digits */
} tk_pretok;

typedef struct tk_added {
    char *content;   /* as written */
    char *pattern;   /* what is matched: content, normalized when `normalized` */
    size_t plen;
    int32_t id;
    int special, normalized, lstrip, rstrip, single_word;
} tk_added;

/* byte trie for leftmost-longest added-token matching */
typedef struct tk_trie {
    struct tk_tnode { int32_t first_child, next_sibling, token; unsigned char byte; } *node;
    size_t n, cap;
} tk_trie;

struct fd_tokenizer {
    char sha[65];
    int nfc;                       /* normalizer: NFC (else none) */
    tk_pretok *pre;                /* flattened Sequence */
    size_t npre;
    int bytelevel;                 /* a ByteLevel pre-tokenizer maps bytes to chars */
    /* model BPE */
    tk_smap vocab;                 /* model token -> id */
    char **model_tok;              /* id -> model token (NULL for holes) */
    size_t model_ntok;             /* max model id + 1 */
    tk_merges merges;
    int ignore_merges;
    int32_t unk_id;                /* -1: none */
    int fuse_unk;
    int32_t byte_id[256];          /* id of the byte-level char of each byte (-1 missing) */
    /* added tokens */
    tk_added *added;
    size_t nadded;
    tk_trie trie_raw, trie_norm;   /* non-normalized / normalized tokens */
    pcre2_code *re_word, *re_space; /* \w and \s for single_word / lstrip / rstrip */
    /* decoding */
    char **dec_tok;                /* id -> token string (added first, then model) */
    size_t *dec_len;
    unsigned char *dec_special;    /* 1: skipped by skip_special */
    size_t dec_n;
    int decoder_bytelevel;         /* else: tokens joined with " " (no decoder) */
    int64_t vocab_size;
    /* post-processor template, single sequence: ids before and after */
    int32_t *pre_ids, *post_ids;
    size_t npre_ids, npost_ids;
};

/* load helpers (tokenizer.c calls these) */
struct jv;
int tk_load_pretok(fd_tokenizer *t, const struct jv *pt, fd_err *e);
int tk_load_model(fd_tokenizer *t, const struct jv *model, fd_err *e);
int tk_load_added(fd_tokenizer *t, const struct jv *added, fd_err *e);
int tk_load_post(fd_tokenizer *t, const struct jv *post, fd_err *e);
int tk_trie_add(tk_trie *tr, const char *s, size_t n, int32_t token);
void tk_trie_free(tk_trie *tr);
/* longest token of trie starting at p (length into *mlen), -1 if none */
int32_t tk_trie_longest(const tk_trie *tr, const unsigned char *p, size_t n, size_t *mlen);

/* GPT-2 bytes_to_unicode: code point of each byte, and back (-1 if none) */
uint32_t tk_byte_to_cp(unsigned b);
int tk_cp_to_byte(uint32_t cp);

/* NFC of valid UTF-8 into out (appends) */
void tk_nfc(const char *s, size_t n, fd_buf *out);

/* Per-call scratch for the encode pipeline (never shared between calls, so
 * concurrent encodes need no lock). */
typedef struct tk_sym { int32_t c, prev, next, alive; } tk_sym;
typedef struct tk_heapent { int32_t rank, pos, id; } tk_heapent;
typedef struct tk_call {
    const fd_tokenizer *t;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    pcre2_jit_stack *jit;
    fd_buf prefix;                 /* ByteLevel add_prefix_space copy of a piece */
    fd_buf word;                   /* a pre-token as model chars */
    tk_sym *sym;
    size_t nsym, capsym;
    tk_heapent *heap;
    size_t nheap, capheap;
    /* word -> ids cache of this call: keys and ids live in the two buffers */
    struct tk_centry { uint64_t h; uint32_t koff, klen, ioff, icount; } *cache;
    size_t ccap, cn;
    fd_buf ckeys, cids;
    fd_buf *out;                   /* ids being appended (int32) */
} tk_call;
tk_call *tk_call_new(const fd_tokenizer *t);
void tk_call_free(tk_call *c);
/* pre-tokenizes one normalized, non-added segment and BPE-encodes each piece */
int tk_encode_segment(tk_call *c, const char *s, size_t n, fd_buf *ids, fd_err *e);
/* HF's AddedVocabulary split: calls seg() for each text run between added
 * tokens and appends each matched token's id to ids. */
typedef int (*tk_seg_fn)(tk_call *c, const char *s, size_t n, fd_buf *ids, fd_err *e);
int tk_split_added(tk_call *c, const tk_trie *tr, const char *s, size_t n, fd_buf *ids, tk_seg_fn seg, fd_err *e);
/* BPE of one pre-token (raw bytes), appending ids */
void tk_bpe_word(tk_call *c, const char *s, size_t n, fd_buf *ids);

#endif
