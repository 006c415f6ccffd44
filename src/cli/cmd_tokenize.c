/* tokenize: encode text files with a tokenizer.json into token ids (JSON
 * lists on stdout, or a .npy int32 / JSON file with --out), or decode id
 * files back into text.  The test and benchmark hook of src/tokenizer/. */
#include "cli.h"
#include "format/json.h"
#include "format/npy.h"
#include "tokenizer/tokenizer.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_INPUT ((size_t)1 << 32)

typedef struct {
    const char *tok, *out, *out_dir;
    int add_special, decode, skip_special, info, normalize, time;
    char **files;
    size_t nfiles;
} opts;

static int usage(void)
{
    fprintf(stderr,
            "usage: fidelity tokenize --tokenizer PATH [--add-special] [--out FILE.npy|FILE.json] [--time] FILE...\n"
            "       fidelity tokenize --tokenizer PATH --decode [--skip-special] [--out FILE] IDS.npy|IDS.json...\n"
            "       fidelity tokenize --tokenizer PATH --normalize FILE   (the normalizer's output, for tests)\n"
            "       fidelity tokenize --tokenizer PATH --info\n"
            "  PATH: a tokenizer.json or a directory holding one.  Encoding prints one JSON id list per FILE;\n"
            "  --out writes the ids of one FILE as .npy int32 (name ends in .npy) or a JSON list;\n"
            "  --out-dir DIR writes DIR/BASENAME.npy per FILE (decoding: DIR/BASENAME.txt).\n"
            "  Decoding a JSON list of id lists prints one JSON string per list and line.\n"
            "  Invalid UTF-8 input and unsupported tokenizer types are refused (exit 3).\n");
    return FD_EXIT_USAGE;
}

static int refused(const fd_err *e)
{
    printf("REFUSED [%s]: %s\n", e->code, e->msg);
    return FD_EXIT_REFUSED;
}

static int ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static void ids_json(fd_buf *b, const int32_t *ids, size_t n)
{
    fd_buf_putc(b, '[');
    for (size_t i = 0; i < n; i++) fd_buf_printf(b, i ? ",%d" : "%d", ids[i]);
    fd_buf_puts(b, "]\n");
}

static int write_ids(const char *path, const int32_t *ids, size_t n, fd_err *e)
{
    fd_buf b = {0};
    if (ends_with(path, ".npy")) {
        uint64_t shape[1] = {n};
        fd_npy_header(&b, "<i4", shape, 1);
        fd_buf_put(&b, ids, n * sizeof *ids);
    } else ids_json(&b, ids, n);
    int rc = fd_write_atomic(path, b.p ? b.p : "", b.n, e);
    fd_buf_free(&b);
    return rc;
}

/* ids from a .npy (int32/int64, 1-D) or a JSON list of ints */
static int read_ids(const char *path, int32_t **ids, size_t *n, fd_err *e)
{
    fd_buf b = {0};
    if (fd_read_file(path, MAX_INPUT, &b, e)) return -1;
    *ids = NULL;
    *n = 0;
    int rc = -1;
    if (ends_with(path, ".npy")) {
        char descr[16];
        uint64_t shape[4];
        int nd;
        size_t off;
        if (fd_npy_parse((const unsigned char *)b.p, b.n, descr, shape, &nd, &off, e)) goto out;
        int w = !strcmp(descr, "<i4") ? 4 : !strcmp(descr, "<i8") ? 8 : 0;
        if (!w || nd != 1 || (b.n - off) / (size_t)w < shape[0]) { fd_fail(e, "bad_ids", "", "%s: not a 1-D <i4/<i8 array", path); goto out; }
        *n = (size_t)shape[0];
        *ids = fd_xmalloc(*n * sizeof **ids + 1);
        for (size_t i = 0; i < *n; i++) {
            int64_t v = 0;
            if (w == 4) { int32_t x; memcpy(&x, b.p + off + 4 * i, 4); v = x; }
            else memcpy(&v, b.p + off + 8 * i, 8);
            (*ids)[i] = v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
        }
        rc = 0;
    } else {
        jv *v = jv_parse(b.p ? b.p : "", b.n, e);
        if (!v) goto out;
        if (v->t != JV_ARR) { jv_free(v); fd_fail(e, "bad_ids", "", "%s: not a JSON list of ids", path); goto out; }
        *ids = fd_xmalloc(v->u.a.n * sizeof **ids + 1);
        for (size_t i = 0; i < v->u.a.n; i++) {
            const jv *x = v->u.a.v[i];
            if (x->t != JV_INT) { jv_free(v); free(*ids); *ids = NULL; fd_fail(e, "bad_ids", "", "%s: item %zu is not an integer", path, i); goto out; }
            (*ids)[i] = x->u.i < INT32_MIN || x->u.i > INT32_MAX ? -1 : (int32_t)x->u.i;
        }
        *n = v->u.a.n;
        jv_free(v);
        rc = 0;
    }
out:
    fd_buf_free(&b);
    return rc;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* DIR/BASENAME.EXT for --out-dir, else --out */
static char *out_path(const opts *o, const char *in, const char *ext)
{
    if (!o->out_dir) return o->out ? fd_xstrdup(o->out) : NULL;
    const char *base = strrchr(in, '/');
    fd_buf b = {0};
    fd_buf_printf(&b, "%s/%s%s", o->out_dir, base ? base + 1 : in, ext);
    return fd_buf_cstr(&b);
}

static int encode_files(const fd_tokenizer *t, const opts *o)
{
    fd_err e = {0};
    double secs = 0, bytes = 0;
    for (size_t i = 0; i < o->nfiles; i++) {
        fd_buf text = {0};
        if (fd_read_file(o->files[i], MAX_INPUT, &text, &e)) return refused(&e);
        int32_t *ids;
        size_t n;
        double t0 = now();
        int rc = fd_tok_encode(t, text.p ? text.p : "", text.n, o->add_special, &ids, &n, &e);
        secs += now() - t0;
        bytes += (double)text.n;
        fd_buf_free(&text);
        if (rc) { fd_err_prefix(&e, o->files[i]); return refused(&e); }
        char *dst = out_path(o, o->files[i], ".npy");
        if (dst) rc = write_ids(dst, ids, n, &e);
        else {
            fd_buf b = {0};
            ids_json(&b, ids, n);
            fwrite(b.p, 1, b.n, stdout);
            fd_buf_free(&b);
        }
        free(ids);
        free(dst);
        if (rc) return refused(&e);
    }
    if (o->time) fprintf(stderr, "encoded %.0f bytes in %.6f s: %.2f MB/s\n", bytes, secs, secs > 0 ? bytes / 1e6 / secs : 0.0);
    return FD_EXIT_OK;
}

static int emit_text(const char *out, const char *s, size_t n, fd_err *e)
{
    if (out) return fd_write_atomic(out, s, n, e);
    fwrite(s, 1, n, stdout);
    return 0;
}

/* a JSON list of id lists: one JSON string per list and line */
static int decode_lists(const fd_tokenizer *t, const opts *o, const char *path, fd_err *e)
{
    jv *v = jv_parse_file(path, e);
    if (!v) return -1;
    int rc = 0;
    for (size_t i = 0; !rc && i < v->u.a.n; i++) {
        const jv *l = v->u.a.v[i];
        if (l->t != JV_ARR) { rc = fd_fail(e, "bad_ids", "", "%s: item %zu is not a list of ids", path, i); break; }
        int32_t *ids = fd_xmalloc(l->u.a.n * sizeof *ids + 1);
        for (size_t k = 0; k < l->u.a.n; k++)
            ids[k] = l->u.a.v[k]->t == JV_INT && l->u.a.v[k]->u.i >= 0 && l->u.a.v[k]->u.i <= INT32_MAX ? (int32_t)l->u.a.v[k]->u.i : -1;
        char *text;
        size_t len;
        rc = fd_tok_decode(t, ids, l->u.a.n, o->skip_special, &text, &len, e);
        free(ids);
        if (rc) break;
        jv *s = jv_strn(text, len);
        fd_buf b = {0};
        rc = jv_dump(s, &JV_CANON, &b, e);
        fd_buf_putc(&b, '\n');
        if (!rc) fwrite(b.p, 1, b.n, stdout);
        fd_buf_free(&b);
        jv_free(s);
        free(text);
    }
    jv_free(v);
    return rc;
}

static int is_list_of_lists(const char *path)
{
    fd_err ign;
    int fd = fd_open_regular(path, 0, NULL, &ign);   /* a FIFO is left to the reader, which refuses it */
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) { if (fd >= 0) close(fd); return 0; }
    int c, k = 0;
    while ((c = fgetc(f)) != EOF && (c == ' ' || c == '\n' || c == '[') && (c != '[' || ++k < 2)) {}
    fclose(f);
    return k == 2;
}

static int decode_files(const fd_tokenizer *t, const opts *o)
{
    fd_err e = {0};
    for (size_t i = 0; i < o->nfiles; i++) {
        if (!ends_with(o->files[i], ".npy") && is_list_of_lists(o->files[i])) {
            if (decode_lists(t, o, o->files[i], &e)) return refused(&e);
            continue;
        }
        int32_t *ids;
        size_t n, len;
        char *text;
        if (read_ids(o->files[i], &ids, &n, &e)) return refused(&e);
        int rc = fd_tok_decode(t, ids, n, o->skip_special, &text, &len, &e);
        free(ids);
        if (rc) return refused(&e);
        char *dst = out_path(o, o->files[i], ".txt");
        rc = emit_text(dst, text, len, &e);
        free(dst);
        free(text);
        if (rc) return refused(&e);
    }
    return FD_EXIT_OK;
}

static int normalize_file(const fd_tokenizer *t, const opts *o)
{
    fd_err e = {0};
    fd_buf text = {0};
    char *out;
    size_t n;
    if (fd_read_file(o->files[0], MAX_INPUT, &text, &e)) return refused(&e);
    int rc = fd_tok_normalize(t, text.p ? text.p : "", text.n, &out, &n, &e);
    fd_buf_free(&text);
    if (rc) return refused(&e);
    rc = emit_text(o->out, out, n, &e);
    free(out);
    return rc ? refused(&e) : FD_EXIT_OK;
}

int cmd_tokenize(int argc, char **argv)
{
    opts o = {0};
    o.files = calloc((size_t)argc + 1, sizeof *o.files);
    int bad = 0;
    for (int i = 1; i < argc && !bad; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--tokenizer") && v) { o.tok = v; i++; }
        else if (!strcmp(s, "--out") && v) { o.out = v; i++; }
        else if (!strcmp(s, "--out-dir") && v) { o.out_dir = v; i++; }
        else if (!strcmp(s, "--add-special")) o.add_special = 1;
        else if (!strcmp(s, "--decode")) o.decode = 1;
        else if (!strcmp(s, "--skip-special")) o.skip_special = 1;
        else if (!strcmp(s, "--normalize")) o.normalize = 1;
        else if (!strcmp(s, "--info")) o.info = 1;
        else if (!strcmp(s, "--time")) o.time = 1;
        else if (!strcmp(s, "--")) { while (++i < argc) o.files[o.nfiles++] = argv[i]; }
        else if (s[0] == '-' && s[1]) { fprintf(stderr, "fidelity tokenize: bad or unknown option %s\n", s); bad = 1; }
        else o.files[o.nfiles++] = argv[i];
    }
    if (bad || !o.tok || (!o.info && !o.nfiles) || (o.out && o.nfiles > 1) || (o.out && o.out_dir) || (o.normalize && o.nfiles != 1)) {
        free(o.files);
        return usage();
    }
    fd_err e = {0};
    fd_tokenizer *t = fd_tok_load(o.tok, &e);
    int rc;
    if (!t) rc = refused(&e);
    else if (o.info) {
        printf("{\"sha256\":\"%s\",\"vocab_size\":%lld}\n", fd_tok_sha256(t), (long long)fd_tok_vocab_size(t));
        rc = FD_EXIT_OK;
    } else if (o.normalize) rc = normalize_file(t, &o);
    else rc = o.decode ? decode_files(t, &o) : encode_files(t, &o);
    fd_tok_free(t);
    free(o.files);
    return rc;
}
