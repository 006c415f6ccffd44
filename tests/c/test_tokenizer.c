/* Unit tests for src/tokenizer/: concurrent encodes of one loaded tokenizer
 * give the single-thread ids (no shared mutable state), NFC on known
 * strings, and the decoder's lossy UTF-8 (one U+FFFD per maximal invalid
 * subpart).  Uses the committed tests/tok tokenizers; run from the repo root. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "tokenizer/tokenizer.h"
#include "util/fsio.h"

typedef struct { const fd_tokenizer *t; const fd_buf *text; int32_t *ids; size_t n; int rc; } job;

static void *run_job(void *p)
{
    job *j = p;
    fd_err e;
    j->rc = fd_tok_encode(j->t, j->text->p, j->text->n, 1, &j->ids, &j->n, &e);
    return NULL;
}

static int concurrent(void)
{
    int fails = 0;
    fd_err e;
    fd_tokenizer *t = fd_tok_load("tests/tok/tokenizers/tiny", &e);
    CHECKF(t != NULL, "load tiny: %s", e.msg);
    fd_buf text = {0};
    CHECK(fd_read_file("tests/tok/corpus/specials.txt", 1 << 24, &text, &e) == 0, "read specials.txt");
    if (!t || !text.p) { fd_tok_free(t); fd_buf_free(&text); return fails + 1; }
    job ref = {t, &text, NULL, 0, 0};
    run_job(&ref);
    CHECK(ref.rc == 0 && ref.n > 1000, "single-thread encode");
    enum { N = 4 };
    job jobs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) { jobs[i] = (job){t, &text, NULL, 0, -1}; pthread_create(&th[i], NULL, run_job, &jobs[i]); }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        CHECKF(jobs[i].rc == 0 && jobs[i].n == ref.n && !memcmp(jobs[i].ids, ref.ids, ref.n * sizeof *ref.ids),
               "thread %d gives the single-thread ids", i);
        free(jobs[i].ids);
    }
    free(ref.ids);
    /* NFC: e + combining acute -> é; Hangul jamo compose; a second acute is
     * blocked; canonical reordering puts U+0301 (230) before U+0315 (232) */
    static const char *const nfc[][2] = {{"e\xCC\x81", "\xC3\xA9"}, {"\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8", "\xEA\xB0\x81"},
                                         {"e\xCC\x81\xCC\x81", "\xC3\xA9\xCC\x81"}, {"a\xCC\x95\xCC\x81", "\xC3\xA1\xCC\x95"}, {"o\xCC\x82\xCC\xA3", "\xE1\xBB\x99"}, {"abc", "abc"}};
    for (size_t i = 0; i < sizeof nfc / sizeof *nfc; i++) {
        char *out;
        size_t n;
        CHECK(fd_tok_normalize(t, nfc[i][0], strlen(nfc[i][0]), &out, &n, &e) == 0, "normalize");
        CHECKF(n == strlen(nfc[i][1]) && !memcmp(out, nfc[i][1], n), "NFC case %zu", i);
        free(out);
    }
    /* byte tokens E4 B8 then 'a': the truncated sequence is one U+FFFD */
    /* tiny's ids 0..255 are the bytes: E4 B8 'a' decodes to U+FFFD 'a' */
    static const int32_t lossy[3] = {0xE4, 0xB8, 'a'};
    char *s;
    size_t sn;
    CHECK(fd_tok_decode(t, lossy, 3, 0, &s, &sn, &e) == 0, "decode");
    CHECKF(sn == 4 && !memcmp(s, "\xEF\xBF\xBD" "a", 4), "E4 B8 a decodes to U+FFFD a (%zu bytes)", sn);
    free(s);
    fd_buf_free(&text);
    fd_tok_free(t);
    return fails;
}

int test_tokenizer(void) { return concurrent(); }
