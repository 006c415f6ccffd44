/* Random-init checkpoints of the architectures' fixture presets (fixture.h). */
#include "capture/fixture.h"
#include "capture/model_dir.h"
#include "capture/panel.h"
#include "engine/config.h"
#include "engine/model.h"
#include "engine/weights.h"
#include "format/json.h"
#include "util/bf16.h"
#include "util/buf.h"
#include "util/fsio.h"
#include "util/rng.h"
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The presets are the architectures' (engine/model.h fd_arch.presets). */
const fd_fixture_preset *fd_fixture_preset_find(const char *name)
{
    for (size_t i = 0; name && i < FD_N_ARCHS; i++)
        for (const fd_fixture_preset *p = FD_ARCHS[i]->presets; p && p->name; p++)
            if (!strcmp(p->name, name)) return p;
    return NULL;
}

void fd_fixture_preset_names(char *out, size_t cap)
{
    size_t n = 0;
    if (cap) out[0] = 0;
    for (size_t i = 0; i < FD_N_ARCHS && n < cap; i++) {
        char one[256];
        fd_arch_preset_names(FD_ARCHS[i], "|", one, sizeof one);
        if (*one) n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "|" : "", one);
    }
}

int fd_fixture_preset_dense(const fd_fixture_preset *p)
{
    return p->experts == 0;
}

/* ------------------------------------------------------------ tensors */

enum { INIT_NORMAL = FD_INIT_NORMAL, INIT_ONES = FD_INIT_ONES, INIT_ZEROS = FD_INIT_ZEROS };

typedef struct ftensor {
    char *name;
    const char *dtype;
    int ndim, init;
    uint64_t shape[5];
    int64_t imax; /* dtype I64: entries in [0, imax), distinct along a row */
} ftensor;

typedef struct tlist {
    ftensor *v;
    size_t n, cap;
} tlist;

static void add(tlist *l, const char *dtype, int init, int ndim, int64_t a, int64_t b, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));
static void add(tlist *l, const char *dtype, int init, int ndim, int64_t a, int64_t b, const char *fmt, ...)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = fd_xrealloc(l->v, l->cap * sizeof *l->v);
    }
    ftensor *t = &l->v[l->n++];
    memset(t, 0, sizeof *t);
    fd_buf nb = {0};
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    fd_buf_puts(&nb, tmp);
    t->name = fd_buf_cstr(&nb);
    t->dtype = dtype;
    t->init = init;
    t->ndim = ndim;
    t->shape[0] = (uint64_t)a;
    t->shape[1] = (uint64_t)b;
}

static void add_spec(void *ctx, const fd_tensor_spec *t)
{
    tlist *l = ctx;
    add(l, t->dtype, t->init, t->ndim > 2 ? 2 : t->ndim, 0, 0, "%s", t->name);
    l->v[l->n - 1].ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) l->v[l->n - 1].shape[d] = t->shape[d];
}

/* The architecture's own tensor list (engine/model.h) of the config the
 * fixture writes: the list the loader checks. */
static int build_tensors(const jv *config, tlist *l, size_t *ntrunk, fd_err *e)
{
    fd_glm_config c;
    if (fd_glm_config_from_json(config, &c, e)) {
        fd_err_prefix(e, "fixture config");
        return -1;
    }
    c.arch->tensors(&c, NULL, add_spec, l);
    for (size_t i = 0; i < l->n; i++) /* an expert-index table (model.h): bounded by the experts */
        if (!strcmp(l->v[i].dtype, "I64")) l->v[i].imax = c.n_routed_experts;
    *ntrunk = l->n;
    /* outside the trunk (a vision tower): written for transformers, skipped by the loader */
    if (c.arch->extra) c.arch->extra(&c, add_spec, l);
    fd_glm_config_free(&c);
    return 0;
}

static uint64_t numel(const ftensor *t)
{
    uint64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001b3ull; }
    return h;
}

/* One F32 value of init kind `init` from the tensor's generator state (the
 * fp32-kept modules of glm5_next and the router biases). */
static float f32_init(int init, uint64_t *s)
{
    double u1 = (double)((fd_rng_next(s) >> 11) + 1) * (1.0 / 9007199254740992.0);
    if (init == FD_INIT_ONES) return 1.0f;
    if (init == FD_INIT_ZEROS) return 0.0f;
    if (init == FD_INIT_DT_BIAS) {
        double lo = log(1e-3), hi = log(1e-1);
        float dt = expf((float)(lo + (hi - lo) * u1));
        if (dt < 1e-4f) dt = 1e-4f;
        return dt + logf(-expm1f(-dt));
    }
    double u2 = (double)(fd_rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(0.02 * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

enum { CHUNK = 1 << 15 };

/* Streams one tensor's bytes into the writer; buf is CHUNK bf16 words of
 * scratch owned by the caller (no state outlives the call). */
static int put_tensor_buf(fd_stm_writer *w, const ftensor *t, uint64_t seed, uint16_t *buf, fd_err *e)
{
    uint64_t n = numel(t);
    uint64_t s = seed ^ fnv1a(t->name);
    (void)fd_rng_next(&s);
    if (!strcmp(t->dtype, "I64")) { /* an integer table (tid2eid): per row of the last dim, distinct draws in [0, imax) */
        uint64_t cols = t->ndim ? t->shape[t->ndim - 1] : 1, m = t->imax > 0 ? (uint64_t)t->imax : 1;
        int64_t row[64];
        for (uint64_t i = 0; i < n; i += cols)
            for (uint64_t j = 0; j < cols; j++) {
                int64_t v;
                int again;
                do { /* distinct within the row when the row fits (cols <= imax), else any */
                    v = (int64_t)(fd_rng_next(&s) % m);
                    again = 0;
                    for (uint64_t q = 0; q < j && q < 64 && cols <= m; q++) again |= row[q] == v;
                } while (again);
                if (j < 64) row[j] = v;
                if (fd_stm_put(w, &v, 8, e)) return -1;
            }
        return 0;
    }
    if (!strcmp(t->dtype, "F32")) { /* fp32-kept modules and router biases */
        for (uint64_t i = 0; i < n; i++) {
            float z = f32_init(t->init, &s);
            if (fd_stm_put(w, &z, 4, e)) return -1;
        }
        return 0;
    }
    uint16_t fill = t->init == INIT_ONES ? fd_f32_to_bf16(1.0f) : 0;
    int have_spare = 0;
    double spare = 0.0;
    const double two_pi = 6.283185307179586;
    for (uint64_t done = 0; done < n;) {
        size_t k = n - done < CHUNK ? (size_t)(n - done) : CHUNK;
        for (size_t i = 0; i < k; i++) {
            if (t->init == FD_INIT_A_LOG) { /* log(uniform(1, 16)), transformers' A_log init */
                double u = (double)(fd_rng_next(&s) >> 11) * (1.0 / 9007199254740992.0);
                buf[i] = fd_f32_to_bf16((float)log(1.0 + 15.0 * u));
                continue;
            }
            if (t->init != INIT_NORMAL) { buf[i] = fill; continue; }
            double z;
            if (have_spare) { z = spare; have_spare = 0; }
            else {
                /* u1 in (0, 1], u2 in [0, 1) from 53-bit draws */
                double u1 = (double)((fd_rng_next(&s) >> 11) + 1) * (1.0 / 9007199254740992.0);
                double u2 = (double)(fd_rng_next(&s) >> 11) * (1.0 / 9007199254740992.0);
                double r = sqrt(-2.0 * log(u1));
                z = r * cos(two_pi * u2);
                spare = r * sin(two_pi * u2);
                have_spare = 1;
            }
            buf[i] = fd_f32_to_bf16((float)(0.02 * z));
        }
        if (fd_stm_put(w, buf, k * 2, e)) return -1;
        done += k;
    }
    return 0;
}

static int write_weights(const char *path, const tlist *l, uint64_t seed, fd_err *e)
{
    fd_stm_tensor *tv = fd_xcalloc(l->n, sizeof *tv);
    for (size_t i = 0; i < l->n; i++) {
        tv[i].name = l->v[i].name;
        tv[i].dtype = l->v[i].dtype;
        tv[i].ndim = l->v[i].ndim;
        for (int d = 0; d < l->v[i].ndim; d++) tv[i].shape[d] = l->v[i].shape[d];
    }
    fd_stm_writer w;
    int rc = fd_stm_begin(&w, path, tv, l->n, e);
    free(tv);
    if (rc) return -1;
    uint16_t *buf = fd_xcalloc(CHUNK, sizeof *buf);
    for (size_t k = 0; k < l->n && !rc; k++) rc = put_tensor_buf(&w, &l->v[w.order[k]], seed, buf, e);
    free(buf);
    if (rc) { fd_stm_abort(&w); return -1; }
    return fd_stm_finish(&w, e);
}

/* ------------------------------------------------------------ JSON files */

enum { TOK_PAD = FD_FIXTURE_TOK_PAD, TOK_BOS = FD_FIXTURE_TOK_BOS, TOK_EOS = FD_FIXTURE_TOK_EOS, TOK_UNK = 3, TOK_BYTE0 = 4 };

static jv *generation_doc(void)
{
    jv *o = jv_obj();
    jv_set(o, "_from_model_config", jv_bool(1));
    jv_set(o, "bos_token_id", jv_int(TOK_BOS));
    jv_set(o, "eos_token_id", jv_int(TOK_EOS));
    jv_set(o, "pad_token_id", jv_int(TOK_PAD));
    jv_set(o, "transformers_version", jv_str("5.16.1"));
    return o;
}

static const char *const SPECIALS[4] = {"<pad>", "<bos>", "<eos>", "<unk>"};

/* GPT-2 bytes_to_unicode: the code point that spells byte b. */
static unsigned byte_cp(unsigned b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255)) return b;
    unsigned n = 0;
    for (unsigned x = 0; x < b; x++)
        if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) n++;
    return 256 + n;
}

static void utf8(unsigned cp, char out[4])
{
    memset(out, 0, 4);
    if (cp < 0x80) out[0] = (char)cp;
    else { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); }
}

static jv *byte_level(void)
{
    jv *o = jv_obj();
    jv_set(o, "type", jv_str("ByteLevel"));
    jv_set(o, "add_prefix_space", jv_bool(0));
    jv_set(o, "trim_offsets", jv_bool(1));
    jv_set(o, "use_regex", jv_bool(0));
    return o;
}

static jv *piece(const char *kind, const char *id, int type_id)
{
    jv *in = jv_obj(), *o = jv_obj();
    jv_set(in, "id", jv_str(id));
    jv_set(in, "type_id", jv_int(type_id));
    jv_set(o, kind, in);
    return o;
}

/* encode(add_special_tokens=True) puts <bos> first, as GLM/Llama-3 templates do */
static jv *bos_template(void)
{
    jv *o = jv_obj(), *single = jv_arr(), *pair = jv_arr(), *sp = jv_obj(), *b = jv_obj(), *ids = jv_arr(),
       *toks = jv_arr();
    jv_set(o, "type", jv_str("TemplateProcessing"));
    jv_push(single, piece("SpecialToken", "<bos>", 0));
    jv_push(single, piece("Sequence", "A", 0));
    jv_push(pair, piece("SpecialToken", "<bos>", 0));
    jv_push(pair, piece("Sequence", "A", 0));
    jv_push(pair, piece("Sequence", "B", 1));
    jv_set(o, "single", single);
    jv_set(o, "pair", pair);
    jv_set(b, "id", jv_str("<bos>"));
    jv_push(ids, jv_int(TOK_BOS));
    jv_set(b, "ids", ids);
    jv_push(toks, jv_str("<bos>"));
    jv_set(b, "tokens", toks);
    jv_set(sp, "<bos>", b);
    jv_set(o, "special_tokens", sp);
    return o;
}

static jv *tokenizer_doc(void)
{
    jv *o = jv_obj();
    jv_set(o, "version", jv_str("1.0"));
    jv_set(o, "truncation", jv_null());
    jv_set(o, "padding", jv_null());
    jv *added = jv_arr();
    for (int i = 0; i < 4; i++) {
        jv *a = jv_obj();
        jv_set(a, "id", jv_int(i));
        jv_set(a, "content", jv_str(SPECIALS[i]));
        jv_set(a, "single_word", jv_bool(0));
        jv_set(a, "lstrip", jv_bool(0));
        jv_set(a, "rstrip", jv_bool(0));
        jv_set(a, "normalized", jv_bool(0));
        jv_set(a, "special", jv_bool(1));
        jv_push(added, a);
    }
    jv_set(o, "added_tokens", added);
    jv_set(o, "normalizer", jv_null());
    jv_set(o, "pre_tokenizer", byte_level());
    jv_set(o, "post_processor", bos_template());
    jv_set(o, "decoder", byte_level());
    jv *m = jv_obj();
    jv_set(m, "type", jv_str("BPE"));
    jv_set(m, "dropout", jv_null());
    jv_set(m, "unk_token", jv_str("<unk>"));
    jv_set(m, "continuing_subword_prefix", jv_null());
    jv_set(m, "end_of_word_suffix", jv_null());
    jv_set(m, "fuse_unk", jv_bool(0));
    jv_set(m, "byte_fallback", jv_bool(0));
    jv_set(m, "ignore_merges", jv_bool(0));
    jv *v = jv_obj();
    for (int i = 0; i < 4; i++) jv_set(v, SPECIALS[i], jv_int(i));
    for (unsigned b = 0; b < 256; b++) {
        char s[5] = {0};
        utf8(byte_cp(b), s);
        jv_set(v, s, jv_int(TOK_BYTE0 + (int64_t)b));
    }
    jv_set(m, "vocab", v);
    jv_set(m, "merges", jv_arr());
    jv_set(o, "model", m);
    return o;
}

static jv *tokenizer_config_doc(void)
{
    jv *o = jv_obj();
    jv_set(o, "bos_token", jv_str("<bos>"));
    jv_set(o, "clean_up_tokenization_spaces", jv_bool(0));
    jv_set(o, "eos_token", jv_str("<eos>"));
    jv_set(o, "model_max_length", jv_int(1000000));
    jv_set(o, "pad_token", jv_str("<pad>"));
    jv_set(o, "tokenizer_class", jv_str("PreTrainedTokenizerFast"));
    jv_set(o, "unk_token", jv_str("<unk>"));
    return o;
}

static int write_json(const char *dir, const char *rel, jv *doc, const jv_style *st, fd_err *e)
{
    fd_buf b = {0};
    int rc = jv_dump(doc, st, &b, e);
    jv_free(doc);
    if (!rc) {
        fd_buf_putc(&b, '\n');
        char *path = fd_path_join(dir, rel);
        rc = fd_write_atomic(path, b.p, b.n, e);
        free(path);
    }
    fd_buf_free(&b);
    return rc;
}

/* ------------------------------------------------------------ panel */

/* Token ids of pseudo-text: lowercase words of 1-9 letters, spaces,
 * occasional ". " / ", " / newline; window = <bos> + L-1 byte tokens. */
static void panel_tokens(const fd_fixture_preset *p, uint64_t seed, fd_buf *json)
{
    uint64_t s = seed ^ 0x70616e656c000000ull; /* "panel" */
    (void)fd_rng_next(&s);
    fd_buf_putc(json, '[');
    for (size_t w = 0; w < p->panel_windows; w++) {
        fd_buf_printf(json, "%s[%d", w ? "," : "", TOK_BOS);
        size_t n = 1;
        while (n < p->panel_len) {
            unsigned wl = 1 + (unsigned)(fd_rng_next(&s) % 9);
            for (unsigned i = 0; i < wl && n < p->panel_len; i++, n++)
                fd_buf_printf(json, ",%d", TOK_BYTE0 + 'a' + (int)(fd_rng_next(&s) % 26));
            if (n >= p->panel_len) break;
            unsigned r = (unsigned)(fd_rng_next(&s) % 16);
            const char *sep = r == 0 ? ". " : r == 1 ? ", " : r == 2 ? "\n" : " ";
            for (const char *c = sep; *c && n < p->panel_len; c++, n++)
                fd_buf_printf(json, ",%d", TOK_BYTE0 + (unsigned char)*c);
        }
        fd_buf_putc(json, ']');
    }
    fd_buf_putc(json, ']');
}

static int write_panel(const fd_fixture_preset *p, uint64_t seed, const char *dir, fd_fixture_result *r, fd_err *e)
{
    fd_buf js = {0}, pid = {0};
    panel_tokens(p, seed, &js);
    char *in = fd_path_join(dir, "panel-tokens.json");
    char *out = fd_path_join(dir, "panel");
    int rc = fd_write_atomic(in, js.p, js.n, e);
    if (!rc) {
        fd_buf_printf(&pid, "fixture-%s-seed%llu", p->name, (unsigned long long)seed);
        fd_buf_cstr(&pid);
        fd_panel_build_opts o;
        memset(&o, 0, sizeof o);
        o.out = out;
        o.vocab_size = p->vocab;
        o.role = "final";
        o.domain = "synthetic";
        o.panel_id = pid.p;
        fd_panel_build_result br;
        char *inputs[1] = {in};
        rc = fd_panel_build(&o, inputs, 1, &br, e);
        if (!rc) {
            r->panel_windows = br.windows;
            r->panel_len = br.context_length;
            memcpy(r->suite_token_hash_sha256, br.suite_token_hash_sha256, 65);
        } else fd_err_prefix(e, "panel");
        unlink(in);
    }
    free(in);
    free(out);
    fd_buf_free(&js);
    fd_buf_free(&pid);
    return rc;
}

/* ------------------------------------------------------------ driver */

static int self_check(const char *dir, fd_fixture_result *r, fd_err *e)
{
    fd_glm_config c;
    if (fd_glm_config_load(dir, &c, e)) return -1;
    fd_weights w;
    memset(&w, 0, sizeof w);
    int rc = fd_weights_open(dir, &w, e);
    if (!rc) rc = fd_weights_check(&w, &c, e);
    if (!rc && (w.params != r->params || w.bias_elems != r->bias_elems))
        rc = fd_fail(e, "internal_error", "", "%s: the loader counts %llu + %llu elements, the writer %llu + %llu", dir,
                     (unsigned long long)w.params, (unsigned long long)w.bias_elems, (unsigned long long)r->params,
                     (unsigned long long)r->bias_elems);
    fd_weights_close(&w);
    fd_glm_config_free(&c);
    if (rc) fd_err_prefix(e, "self-check of the written checkpoint");
    return rc;
}

int fd_fixture_write(const fd_fixture_preset *p, uint64_t seed, const char *out, int force, fd_fixture_result *r,
                     fd_err *e)
{
    memset(r, 0, sizeof *r);
    if (!out || !*out) return fd_fail(e, "bad_usage", "", "--out is required");
    size_t L = strlen(p->mlp_types);
    if ((int64_t)L != p->layers || strlen(p->indexer_types) != L || L > FD_FIXTURE_MAX_LAYERS)
        return fd_fail(e, "internal_error", "", "preset %s: layer schedules do not match", p->name);
    struct stat st;
    if (lstat(out, &st) == 0 && !force)
        return fd_fail(e, "destination_exists", "", "%s already exists (pass --force to replace it)", out);

    tlist l = {0};
    jv *config = p->config(p, TOK_BOS, TOK_EOS, TOK_PAD);
    size_t ntrunk = 0;
    if (build_tensors(config, &l, &ntrunk, e)) {
        jv_free(config);
        free(l.v);
        return -1;
    }
    r->tensors = l.n;
    for (size_t i = 0; i < ntrunk; i++) {
        /* the F32 router biases (minimax_m2's is a BF16 weight like any other) */
        if (strstr(l.v[i].name, "e_score_correction_bias") && !strcmp(l.v[i].dtype, "F32")) r->bias_elems += numel(&l.v[i]);
        else r->params += numel(&l.v[i]);
    }

    fd_buf tmp = {0}, old = {0};
    fd_buf_printf(&tmp, "%s.partial-%ld", out, (long)getpid());
    fd_buf_cstr(&tmp);
    fd_rmtree(tmp.p);
    int rc = fd_mkdirs(tmp.p, e);
    char *wp = fd_path_join(tmp.p, "model.safetensors");
    if (!rc) rc = write_json(tmp.p, "config.json", config, &JV_PRETTY, e);
    else jv_free(config);
    if (!rc) rc = write_json(tmp.p, "generation_config.json", generation_doc(), &JV_PRETTY, e);
    if (!rc) rc = write_json(tmp.p, "tokenizer.json", tokenizer_doc(), &JV_PRETTY, e);
    if (!rc) rc = write_json(tmp.p, "tokenizer_config.json", tokenizer_config_doc(), &JV_PRETTY, e);
    if (!rc) rc = write_weights(wp, &l, seed, e);
    if (!rc && stat(wp, &st) == 0) r->weight_bytes = (uint64_t)st.st_size;
    if (!rc) rc = write_panel(p, seed, tmp.p, r, e);
    if (!rc) rc = self_check(tmp.p, r, e);
    if (!rc) {
        /* into place: an existing destination is moved aside first, then removed */
        int moved = 0;
        if (lstat(out, &st) == 0) {
            fd_buf_printf(&old, "%s.old-%ld", out, (long)getpid());
            fd_buf_cstr(&old);
            fd_rmtree(old.p);
            if (rename(out, old.p)) rc = fd_fail(e, "unwritable", "", "%s: %s", out, strerror(errno));
            else moved = 1;
        }
        if (!rc && rename(tmp.p, out)) {
            rc = fd_fail(e, "unwritable", "", "%s: %s", out, strerror(errno));
            if (moved) (void)rename(old.p, out);
        } else if (!rc && moved) fd_rmtree(old.p);
    }
    if (rc) fd_rmtree(tmp.p);
    free(wp);
    for (size_t i = 0; i < l.n; i++) free(l.v[i].name);
    free(l.v);
    fd_buf_free(&tmp);
    fd_buf_free(&old);
    return rc;
}
