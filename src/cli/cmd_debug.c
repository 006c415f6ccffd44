/* debug-json: the differential-test hook.  Each stdin line is one JSON
 * document; each output line holds the sha256 of its canonical, pretty
 * (file form, with final newline), ensure_ascii canonical and json.dumps()
 * default serialisations, and its receipt_sha256 seal (or '-' when the
 * document is not an object).  A document we refuse prints "ERR code". */
#include "cli.h"
#include "args.h"
#include "format/json.h"
#include "format/sha.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void digest_of(const jv *v, const jv_style *st, int final_nl, char hex[65], int *bad)
{
    fd_buf b = {0};
    fd_err e;
    if (jv_dump(v, st, &b, &e)) { *bad = 1; fd_buf_free(&b); return; }
    if (final_nl) fd_buf_putc(&b, '\n');
    fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
}

int cmd_debug_json(int argc, char **argv)
{
    (void)argv;
    if (argc != 1) { fprintf(stderr, "usage: fidelity debug-json < lines.jsonl\n"); return FD_EXIT_USAGE; }
    char *line = NULL;
    size_t cap = 0;
    ssize_t k;
    while ((k = getline(&line, &cap, stdin)) >= 0) {
        if (k > 0 && line[k - 1] == '\n') k--;
        fd_err e;
        jv *v = jv_parse_lenient(line, (size_t)k, &e);
        if (!v) { printf("ERR %s\n", e.code); continue; }
        char h[4][65], seal[65] = "-";
        int bad = 0;
        digest_of(v, &JV_CANON, 0, h[0], &bad);
        digest_of(v, &JV_PRETTY, 1, h[1], &bad);
        digest_of(v, &JV_CANON_ASCII, 0, h[2], &bad);
        digest_of(v, &JV_DEFAULT, 0, h[3], &bad);
        if (!bad && v->t == JV_OBJ && jv_seal(v, "receipt_sha256", seal, &e)) bad = 1;
        if (bad) printf("ERR bad_json\n");
        else printf("%s %s %s %s %s\n", h[0], h[1], h[2], h[3], seal);
        jv_free(v);
    }
    free(line);
    return 0;
}

#include "kernels/selftest.h"
#include "kernels/gemm.h"

/* kernel-selftest [--products N] [--seed S]: the bitwise proof of the kernels. */
int cmd_kernel_selftest(int argc, char **argv)
{
    unsigned long long products = 100000000ull, seed = 20261202ull;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--products") && i + 1 < argc && !fd_arg_uint(argv[i + 1], 1, UINT64_MAX, &products)) i++;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc && !fd_arg_uint(argv[i + 1], 0, UINT64_MAX, &seed)) i++;
        else { fprintf(stderr, "usage: fidelity kernel-selftest [--products N] [--seed S]\n"); return FD_EXIT_USAGE; }
    }
    printf("kernel-selftest: paths supported here:");
    for (int p = 0; p < FD_PATH_COUNT; p++)
        if (fd_path_supported((fd_path)p)) printf(" %s", fd_path_name((fd_path)p));
    printf("\n");
    int rc = fd_kernel_selftest(products, seed, stdout);
    printf("kernel-selftest: %s\n", rc ? "FAILED" : "all paths bit-identical to the canonical definition");
    return rc ? FD_EXIT_REFUSED : FD_EXIT_OK;
}

#include "compare/side.h"

/* debug-logits DATASET CONTEXT_INDEX OUT.f32 [--kernel K]: the canonical fp32
 * logits of every scored row of one context through the dataset's own head,
 * raw little-endian [rows x vocab] (a test oracle hook). */
int cmd_debug_logits(int argc, char **argv)
{
    if (argc < 4) { fprintf(stderr, "usage: fidelity debug-logits DATASET CONTEXT_INDEX OUT.f32 [--kernel scalar|avx2|avx512f|avx512bf16|amx|neon|neon-bf16]\n"); return FD_EXIT_USAGE; }
    const char *kernel = argc >= 6 && !strcmp(argv[4], "--kernel") ? argv[5] : NULL;
    fd_side s;
    fd_err e = {0};
    fd_path path;
    if (fd_path_select(kernel, &path)) { fprintf(stderr, "unknown or unsupported kernel\n"); return FD_EXIT_USAGE; }
    if (fd_side_open(argv[1], "x", 0, 1, &s, &e)) { printf("REFUSED [%s]: %s\n", e.code, e.msg); return FD_EXIT_REFUSED; }
    long long ci = -1;
    const fd_ctx *c = fd_arg_int(argv[2], 0, INT64_MAX, &ci) ? NULL : fd_side_find(&s, ci);
    uint16_t *head = NULL;
    fd_map m = {0};
    int rc = FD_EXIT_REFUSED;
    if (!c) printf("REFUSED [missing_context]: no such context\n");
    else if (fd_read_head(s.head_path, s.head_key, s.vocab, s.hidden, &head, &e) ||
             fd_map_hidden(c->path, "hidden_states", c->rows, s.hidden, &m, &e))
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
    else {
        fd_packed_head ph;
        fd_pack_head(head, (size_t)s.vocab, (size_t)s.hidden, &ph);
        uint32_t *hid = fd_xmalloc((size_t)c->rows * ph.kp * 4 + 4);
        for (int64_t r = 0; r < c->rows; r++) fd_pack_hidden(m.data + (size_t)r * (size_t)s.hidden * 2, (size_t)s.hidden, hid + (size_t)r * ph.kp);
        float *out = fd_xmalloc((size_t)c->rows * ph.tiles * FD_TILE * 4);
        unsigned csr = fd_ftz_daz_enter();
        fd_gemm_for(path)(hid, (size_t)c->rows, ph.kp, ph.w, ph.tiles, out, ph.tiles * FD_TILE);
        fd_ftz_daz_leave(csr);
        FILE *f = fopen(argv[3], "wb");
        for (int64_t r = 0; f && r < c->rows; r++) fwrite(out + (size_t)r * ph.tiles * FD_TILE, 4, (size_t)s.vocab, f);
        if (f && !fclose(f)) rc = FD_EXIT_OK;
        free(hid);
        free(out);
        fd_packed_head_free(&ph);
    }
    fd_unmap(&m);
    free(head);
    fd_side_close(&s);
    return rc;
}

#include "format/ggml_quants.h"
#include "format/gguf.h"
#include "util/fsio.h"

/* debug-gguf-dequant --tensor FILE.gguf NAME OUT.f32 [OUT.bf16]: one tensor
 * of a GGUF model (a split set from its first file) decoded row by row. */
static int dequant_tensor(int argc, char **argv)
{
    fd_gguf_set s;
    fd_err e = {0};
    if (fd_gguf_set_open(argv[2], &s, &e)) { printf("REFUSED [%s]: %s\n", e.code, e.msg); return FD_EXIT_REFUSED; }
    const fd_gguf_tensor *t = fd_gguf_set_find(&s, argv[3]);
    int rc = FD_EXIT_REFUSED;
    if (!t) {
        printf("REFUSED [missing_tensor]: %s: no tensor '%s'\n", argv[2], argv[3]);
        fd_gguf_set_close(&s);
        return rc;
    }
    uint64_t row = 0, n = t->ne[0], rows = n ? t->nelem / n : 0;
    fd_ggml_row_bytes(fd_ggml_type_of(t->type), n, &row);
    float *f = fd_xmalloc(n * 4 + 4);
    uint16_t *h = fd_xmalloc(n * 2 + 2);
    fd_buf bf = {0}, bh = {0}; /* the whole tensor, then written under a temporary name and renamed */
    int bad = 0;
    for (uint64_t r = 0; r < rows && !bad; r++) {
        const uint8_t *src = t->data + r * row;
        if (fd_ggml_dequant_row_f32(t->type, src, n, f, &e) || fd_ggml_dequant_row_bf16(t->type, src, n, h, &e)) {
            printf("REFUSED [%s]: tensor '%s': %s\n", e.code, t->name, e.msg);
            bad = 1;
        } else {
            fd_buf_put(&bf, f, n * 4);
            fd_buf_put(&bh, h, n * 2);
        }
    }
    if (!bad && (fd_write_atomic(argv[4], bf.p, bf.n, &e) || (argc == 6 && fd_write_atomic(argv[5], bh.p, bh.n, &e)))) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        bad = 1;
    }
    if (!bad) rc = FD_EXIT_OK;
    fd_buf_free(&bf);
    fd_buf_free(&bh);
    free(f);
    free(h);
    fd_gguf_set_close(&s);
    return rc;
}

/* debug-gguf-dequant TYPE IN.bin OUT.f32 [OUT.bf16]: IN.bin is whole blocks
 * of the ggml type TYPE (Q4_K, IQ2_XS, ...); OUT.f32 gets the float32
 * decode, OUT.bf16 the bf16 rounding, both raw little-endian (a test hook
 * against gguf.quants.dequantize). */
int cmd_debug_gguf_dequant(int argc, char **argv)
{
    if (argc >= 5 && argc <= 6 && !strcmp(argv[1], "--tensor")) return dequant_tensor(argc, argv);
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: fidelity debug-gguf-dequant TYPE IN.bin OUT.f32 [OUT.bf16]\n"
                        "       fidelity debug-gguf-dequant --tensor FILE.gguf NAME OUT.f32 [OUT.bf16]\n");
        return FD_EXIT_USAGE;
    }
    const fd_ggml_type *t = fd_ggml_type_named(argv[1]);
    if (!t) { printf("REFUSED [gguf_unknown_type]: %s is not a ggml type\n", argv[1]); return FD_EXIT_REFUSED; }
    fd_buf in = {0};
    fd_err e = {0};
    int rc = FD_EXIT_REFUSED;
    if (fd_read_file(argv[2], (size_t)1 << 30, &in, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        fd_buf_free(&in);
        return rc;
    }
    if (in.n % t->tsize) {
        printf("REFUSED [bad_gguf]: %s: %zu bytes is not a whole number of %s blocks of %u bytes\n", argv[2], in.n, t->name,
               t->tsize);
        fd_buf_free(&in);
        return rc;
    }
    uint64_t n = in.n / t->tsize * t->blck;
    float *f = fd_xmalloc(n * 4 + 4);
    uint16_t *h = fd_xmalloc(n * 2 + 2);
    if (fd_ggml_dequant_row_f32(t->id, in.p, n, f, &e) || fd_ggml_dequant_row_bf16(t->id, in.p, n, h, &e))
        printf("REFUSED [%s]: %s: %s\n", e.code, argv[2], e.msg);
    else if (fd_write_atomic(argv[3], f, n * 4, &e) || (argc == 5 && fd_write_atomic(argv[4], h, n * 2, &e)))
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
    else rc = FD_EXIT_OK;
    free(f);
    free(h);
    fd_buf_free(&in);
    return rc;
}

#include "kernels/kl.h"
#include "util/buf.h"
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* debug-kl REF.f32 CAND.f32 VOCAB: the canonical per-position reduction
 * (docs/NUMERICS.md §2, and the JS pass) over raw little-endian fp32 logit
 * rows, through every KL path this host supports; one line per path and
 * row: "PATH ROW kl rkl entropy js top1" with the doubles as C99 hex floats
 * (a test oracle hook: the exact-arithmetic tests feed it extreme logits).
 * A non-finite logit prints "PATH ROW non_finite". */
int cmd_debug_kl(int argc, char **argv)
{
    unsigned long long vocab = 0;
    if (argc != 4 || fd_arg_uint(argv[3], 1, 1ull << 24, &vocab)) {
        fprintf(stderr, "usage: fidelity debug-kl REF.f32 CAND.f32 VOCAB\n");
        return FD_EXIT_USAGE;
    }
    float *row[2] = {NULL, NULL};
    size_t nb[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        int fd = open(argv[1 + k], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        FILE *f = NULL;
        if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size <= (1 << 30)) f = fdopen(fd, "rb");
        if (!f) {
            if (fd >= 0) close(fd);
            printf("REFUSED [unreadable]: %s: not a readable regular file of at most 1 GiB\n", argv[1 + k]);
            free(row[0]);
            return FD_EXIT_REFUSED;
        }
        size_t cap = (size_t)st.st_size + 1; /* one byte more: a file that grew is refused below */
        row[k] = fd_xmalloc(cap);
        nb[k] = fread(row[k], 1, cap, f);
        fclose(f);
        if (nb[k] != (size_t)st.st_size) {
            printf("REFUSED [unreadable]: %s changed size while read\n", argv[1 + k]);
            free(row[0]); free(row[1]);
            return FD_EXIT_REFUSED;
        }
    }
    size_t rows = nb[0] / 4 / (size_t)vocab;
    if (nb[0] != nb[1] || nb[0] % (4 * (size_t)vocab) || !rows) {
        printf("REFUSED [bad_shape]: the two files must hold the same whole number of %llu-column fp32 rows\n", vocab);
        free(row[0]); free(row[1]);
        return FD_EXIT_REFUSED;
    }
    fd_ref_chunk *ch = fd_xmalloc(sizeof *ch);
    for (int p = 0; p < FD_PATH_COUNT; p++) {
        if (!fd_path_supported((fd_path)p)) continue;
        const fd_kl_ops *ops = fd_kl_ops_for((fd_path)p);
        for (size_t r = 0; r < rows; r++) {
            const float *lr = row[0] + r * vocab, *lc = row[1] + r * vocab;
            fd_ref_state rs = {0};
            fd_pair_state ps = {0};
            int bad = 0;
            for (size_t v0 = 0; v0 < vocab && !bad; v0 += FD_KL_CHUNK) {
                size_t n = vocab - v0 < FD_KL_CHUNK ? vocab - v0 : FD_KL_CHUNK;
                bad = ops->ref_chunk(&rs, ch, lr + v0, n, v0) || ops->pair_chunk(&ps, &rs, ch, lr + v0, lc + v0, n, v0);
            }
            if (bad) { printf("%s %zu non_finite\n", fd_path_name((fd_path)p), r); continue; }
            fd_kl_result res;
            fd_kl_finish(&rs, &ps, &res);
            double js = 0;
            for (size_t v0 = 0; v0 < vocab; v0 += FD_KL_CHUNK) {
                size_t n = vocab - v0 < FD_KL_CHUNK ? vocab - v0 : FD_KL_CHUNK;
                js += ops->js_chunk(&rs, &ps, lr + v0, lc + v0, n);
            }
            printf("%s %zu %a %a %a %a %d\n", fd_path_name((fd_path)p), r, res.kl, res.rkl, res.entropy, js, res.top1_match);
        }
    }
    free(ch); free(row[0]); free(row[1]);
    return FD_EXIT_OK;
}
