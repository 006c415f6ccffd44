/* write-fixture: a synthetic but complete root dataset (random tokens,
 * hidden states and head from a seeded generator), for tests and the demo
 * until a real capture is run.  demo: write one and verify it. */
#include "cli.h"
#include "args.h"
#include "format/json.h"
#include "format/validate.h"
#include "format/writer.h"
#include "capture/fixture.h"
#include "format/digest.h"
#include "engine/archtable.h"
#include "engine/config.h"
#include "engine/gguf_model.h"
#include "engine/model.h"
#include "util/bf16.h"
#include "util/rng.h"
#include "util/fsio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    const char *out, *lane, *role, *engine_tag, *dataset_id, *cold_run;
    long records, tokens, hidden, vocab, declared;
    unsigned long long seed, head_seed, noise_seed;
    double perturb, declared_bits;
    int fixed_time, force, have_head_seed, k3_compat;
} fixture_args;

static int parse_long(const char *s, long lo, long hi, long *out)
{
    long long v;
    if (fd_arg_int(s, lo, hi, &v)) return -1;
    *out = (long)v;
    return 0;
}

static int write_fixture(const fixture_args *a, fd_err *e)
{
    fd_ds_identity id = {0};
    char name[256], dsid[256];
    const char *role = a->role ? a->role : "root";
    snprintf(dsid, sizeof dsid, "fidelity--fixture.synthetic-s%llu-n%llu.%s", a->seed, a->noise_seed, role);
    snprintf(name, sizeof name, "synthetic fixture %s (seed %llu, perturbation %g)", role, a->seed, a->perturb);
    id.dataset_id = a->dataset_id ? a->dataset_id : dsid;
    id.dataset_name = name;
    id.role = role;
    id.lane = a->lane ? a->lane : "other";
    id.declared_records = a->declared;
    if (a->declared > a->records) id.subset_detail = "a synthetic shard: the first windows only";
    jv *scope = NULL, *fp = NULL, *bits = a->declared_bits > 0 ? jv_float(a->declared_bits) : NULL;
    id.declared_bits = bits;
    if (strcmp(role, "root")) { /* a quantized candidate: routed experts int4 */
        scope = fd_scope_block("moe.experts", "int4", 4);
        fd_buf d = {0};
        fd_err se;
        fd_scope_digest(scope, &d, &se);
        jv_set(scope, "scope_digest", jv_strn(d.p, d.n));
        fd_buf_free(&d);
        id.scope = scope;
        id.codec = "rtn-int4";
    }
    if (a->engine_tag) {
        fp = jv_obj();
        jv_set(fp, "schema", jv_str("malaiwah.stack-fingerprint.v1"));
        jv_set(fp, "engine", jv_str(a->engine_tag));
        jv_set(fp, "device", jv_str("cpu"));
        jv_set(fp, "torch_version", jv_str(a->engine_tag));
        id.stack_fingerprint = fp;
    }
    id.weights_repository = "fidelity/synthetic-fixture";
    id.panel_id = "panel--fidelity.synthetic";
    id.hidden = a->hidden;
    id.vocab = a->vocab;
    id.context_length = a->tokens;
    id.force = a->force;
    id.emit_k3_compat = a->k3_compat;
    if (a->fixed_time) { id.created_utc = "2026-01-01T00:00:00Z"; id.cold_run = "20260101T000000Z-0"; }
    if (a->cold_run) id.cold_run = id.run_name = a->cold_run;
    fd_dsw *w = fd_dsw_begin(a->out, &id, e); /* keeps pointers into id until finish */
    if (!w) { jv_free(scope); jv_free(fp); jv_free(bits); return -1; }
    /* independent streams: tokens and base hidden states from --seed, the head
     * from --head-seed, the candidate perturbation from --noise-seed */
    uint64_t s = a->seed * 3 + 1, hs = a->seed * 3 + 2, ns = a->noise_seed * 7 + 5;
    size_t rows = (size_t)a->tokens - 1;
    int64_t *ids = fd_xmalloc((size_t)a->tokens * sizeof *ids);
    uint16_t *hid = fd_xmalloc(rows * (size_t)a->hidden * 2);
    int rc = 0;
    for (long r = 0; r < a->records && !rc; r++) {
        for (long i = 0; i < a->tokens; i++) ids[i] = (int64_t)(fd_rng_next(&s) % (uint64_t)a->vocab);
        for (size_t i = 0; i < rows * (size_t)a->hidden; i++) {
            double v = fd_rng_unit(&hs) * 2.0, n = fd_rng_unit(&ns);
            hid[i] = fd_f32_to_bf16((float)(v + a->perturb * n));
        }
        char wid[32], doc[32];
        snprintf(wid, sizeof wid, "final-%04ld", r);
        snprintf(doc, sizeof doc, "doc-%04ld", r);
        fd_ds_window win = {.ids = ids, .n_ids = (size_t)a->tokens, .window_id = wid, .role = "final",
                            .domain = "synthetic", .document_id = doc, .scored_rows = rows};
        rc = fd_dsw_add_window(w, &win, hid, e);
    }
    free(ids);
    free(hid);
    uint16_t *head = rc ? NULL : fd_xmalloc((size_t)a->vocab * (size_t)a->hidden * 2);
    uint64_t hd = (a->have_head_seed ? a->head_seed : a->seed) * 3 + 3;
    double scale = 4.0 / (a->hidden > 0 ? __builtin_sqrt((double)a->hidden) : 1.0);
    for (size_t i = 0; head && i < (size_t)a->vocab * (size_t)a->hidden; i++)
        head[i] = fd_f32_to_bf16((float)(scale * fd_rng_unit(&hd)));
    if (!rc) rc = fd_dsw_set_head(w, head, e);
    free(head);
    jv *m = NULL;
    if (rc) fd_dsw_abort(w);
    else rc = fd_dsw_finish(w, &m, e);
    jv_free(scope);
    jv_free(fp);
    jv_free(bits);
    if (rc) return -1;
    printf("SEALED DATASET -> %s\n  dataset_sha256          %s\n  capture_content_digest  %s\n", a->out,
           jv_get_str(m, "dataset_sha256"), jv_get_str(jv_get(m, "capture"), "capture_content_digest"));
    jv_free(m);
    return 0;
}

static int parse_fixture(int argc, char **argv, fixture_args *a, const char *cmd)
{
    *a = (fixture_args){.records = 3, .tokens = 16, .hidden = 64, .vocab = 256, .seed = 1};
    double d;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long t;
        if (!strcmp(s, "--out") && v) { a->out = v; i++; }
        else if (!strcmp(s, "--records") && v && !parse_long(v, 1, 100000, &a->records)) i++;
        else if (!strcmp(s, "--tokens") && v && !parse_long(v, 2, 1 << 20, &a->tokens)) i++;
        else if (!strcmp(s, "--hidden") && v && !parse_long(v, 1, 1 << 16, &a->hidden)) i++;
        else if (!strcmp(s, "--vocab") && v && !parse_long(v, 1, 1 << 22, &a->vocab)) i++;
        else if (!strcmp(s, "--seed") && v && !parse_long(v, 0, 1L << 62, &t)) { a->seed = (unsigned long long)t; i++; }
        else if (!strcmp(s, "--head-seed") && v && !parse_long(v, 0, 1L << 62, &t)) { a->head_seed = (unsigned long long)t; a->have_head_seed = 1; i++; }
        else if (!strcmp(s, "--noise-seed") && v && !parse_long(v, 0, 1L << 62, &t)) { a->noise_seed = (unsigned long long)t; i++; }
        else if (!strcmp(s, "--perturb") && v && !fd_arg_real(v, 0, 100, &d) && d < 100) { a->perturb = d; i++; }
        else if (!strcmp(s, "--declared-bits") && v && !fd_arg_real(v, 0, 64, &d) && d > 0) { a->declared_bits = d; i++; }
        else if (!strcmp(s, "--declared-records") && v && !parse_long(v, 1, 100000, &a->declared)) i++;
        else if (!strcmp(s, "--lane") && v) { a->lane = v; i++; }
        else if (!strcmp(s, "--role") && v) { a->role = v; i++; }
        else if (!strcmp(s, "--engine-tag") && v) { a->engine_tag = v; i++; }
        else if (!strcmp(s, "--dataset-id") && v) { a->dataset_id = v; i++; }
        else if (!strcmp(s, "--cold-run") && v) { a->cold_run = v; i++; }
        else if (!strcmp(s, "--fixed-time")) a->fixed_time = 1;
        else if (!strcmp(s, "--force")) a->force = 1;
        else if (!strcmp(s, "--emit-k3-compat")) a->k3_compat = 1;
        else { fprintf(stderr, "fidelity %s: bad or unknown option %s\n", cmd, s); return -1; }
    }
    if (a->lane && !fd_lane_valid(a->lane)) {
        fprintf(stderr, "fidelity %s: --lane must be one of %s\n", cmd, FD_LANES);
        return -1;
    }
    if (a->role && strcmp(a->role, "root") && strcmp(a->role, "quant") && strcmp(a->role, "derived")) {
        fprintf(stderr, "fidelity %s: --role must be root, quant or derived\n", cmd);
        return -1;
    }
    return 0;
}

int cmd_write_fixture(int argc, char **argv)
{
    fixture_args a;
    if (parse_fixture(argc, argv, &a, "write-fixture") || !a.out) {
        fprintf(stderr, "usage: fidelity write-fixture --out DIR [--records N] [--tokens L] [--hidden H] "
                        "[--vocab V] [--seed S] [--head-seed S] [--noise-seed S] [--perturb EPS] [--role root|quant|derived] "
                        "[--lane " FD_LANES "] [--engine-tag T] [--declared-records N] [--declared-bits B] [--dataset-id ID] [--fixed-time] [--emit-k3-compat] [--force]\n");
        return FD_EXIT_USAGE;
    }
    fd_err e = {0};
    if (write_fixture(&a, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        return FD_EXIT_REFUSED;
    }
    return FD_EXIT_OK;
}

/* demo: the three steps on a real (tiny, random-init) glm_moe_dsa checkpoint
 * generated locally: capture the root twice (two cold runs), quantize the
 * routed experts to int8 and int4 with the toy RTN quantizer, capture both,
 * quantize them again as published FP8-block and NVFP4 checkpoints and, where the
 * architecture has a GGUF writer, as a GGUF with Q4_0 experts, and capture those
 * as shipped, verify every dataset, compare the candidates in one pass, and
 * force-compute the self-compare of the two root runs (exactly 0.0). */

/* 1 when the checkpoint's architecture has a GGUF writer (quantize --format gguf). */
static int has_gguf_writer(const char *model)
{
    fd_glm_config c;
    memset(&c, 0, sizeof c);
    fd_err e;
    fd_err_clear(&e);
    if (fd_glm_config_load(model, &c, &e)) return 0;
    int ok = c.arch && c.arch->gguf && c.arch->gguf->write_kv;
    fd_glm_config_free(&c);
    return ok;
}
static int run_cmd(int (*fn)(int, char **), char **argv)
{
    int argc = 0;
    while (argv[argc]) argc++;
    return fn(argc, argv);
}

static char *joinp(const char *a, const char *b)
{
    fd_buf p = {0};
    fd_buf_printf(&p, "%s/%s", a, b);
    return fd_buf_cstr(&p);
}

/* "KL ordering (mean, ascending): a < b < ..." from the receipts of a
 * multi-candidate compare (OUT/NN-LABEL/comparison-receipt.json). */
static void print_kl_order(const char *out, const char *const *labels, int N)
{
    enum { MAXC = 16 };
    double kl[MAXC];
    int idx[MAXC], n = 0;
    char dirs[MAXC][64];
    for (int i = 0; i < N && i < MAXC; i++) {
        snprintf(dirs[i], sizeof dirs[i], "%02d-%s", i + 1, labels[i]);
        char *d = joinp(out, dirs[i]), *p = joinp(d, "comparison-receipt.json");
        fd_err e = {0};
        jv *r = jv_parse_file(p, &e);
        const jv *m = r ? jv_get(jv_get(r, "kl"), "mean") : NULL;
        if (m && jv_is_num(m)) { kl[n] = m->t == JV_FLOAT ? m->u.f : (double)m->u.i; idx[n++] = i; }
        jv_free(r);
        free(d);
        free(p);
    }
    for (int i = 1; i < n; i++) /* insertion sort by KL */
        for (int j = i; j > 0 && kl[j] < kl[j - 1]; j--) {
            double t = kl[j]; kl[j] = kl[j - 1]; kl[j - 1] = t;
            int u = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = u;
        }
    printf("KL ordering (mean, ascending):");
    for (int i = 0; i < n; i++) printf("%s %s %.3e", i ? " <" : "", dirs[idx[i]] + 3, kl[i]);
    printf("\n");
}

/* 1 when the checkpoint's architecture reads the format (`fidelity architectures`). */
static int reads_format(const char *model, const char *format_id)
{
    fd_glm_config c;
    memset(&c, 0, sizeof c);
    fd_err e;
    fd_err_clear(&e);
    if (fd_glm_config_load(model, &c, &e)) return 0;
    int ok = c.arch && fd_arch_has_format(&c.arch->info, format_id);
    fd_glm_config_free(&c);
    return ok;
}

/* The demo's packed-integer rows (quantize --format compressed-tensors | gptq | mlx on the routed
 * experts), each where the architecture reads the format.  The group is the largest of 128 / 64 / 32
 * dividing the experts' inputs (hidden, moe_inter); mlx at most 64, mlx-lm's default. */
enum { DEMO_PACKED = 3 };
static const char *const PACKED_ROWS[DEMO_PACKED][4] = {
    /* --format, architecture format id, dataset tag, compare label */
    {"compressed-tensors", "ct-pack", "ct-w4a16", "ct-w4a16-experts"},
    {"gptq", "gptq", "gptq-w4", "gptq-w4-experts"},
    {"mlx", "mlx", "mlx-4bit", "mlx-4bit-experts"},
};

static int demo_packed_rows(const char *base, const char *model, const char *panel, const char *preset,
                            const char *xmd, const char *windows, int *done, char **dsets)
{
    const fd_fixture_preset *fp = fd_fixture_preset_find(preset);
    int g = 128;
    while (g > 32 && fp && (fp->hidden % g || fp->moe_inter % g)) g /= 2;
    for (int i = 0; i < DEMO_PACKED; i++) {
        done[i] = reads_format(model, PACKED_ROWS[i][1]);
        if (!done[i]) {
            printf("== (no %s row: %s's architecture does not read it)\n", PACKED_ROWS[i][0], preset);
            continue;
        }
        char gs[16], id[96], name[128], qd[64];
        snprintf(gs, sizeof gs, "%d", PACKED_ROWS[i][0][0] == 'm' && g > 64 ? 64 : g);
        snprintf(id, sizeof id, "fidelity--demo.%s.%s", preset, PACKED_ROWS[i][2]);
        snprintf(name, sizeof name, "demo %s experts, group %s (%s)", PACKED_ROWS[i][0], gs, preset);
        snprintf(qd, sizeof qd, "model-%s", PACKED_ROWS[i][2]);
        char *q = joinp(base, qd);
        dsets[i] = joinp(base, PACKED_ROWS[i][2]);
        printf("== step 2d: the routed experts as %s 4-bit, group %s (quantize --format %s), captured as shipped\n",
               PACKED_ROWS[i][0], gs, PACKED_ROWS[i][0]);
        char *qz[] = {"quantize", "--format", (char *)PACKED_ROWS[i][0], "--group-size", gs, "--match", (char *)xmd,
                      "--src", (char *)model, "--dst", q, NULL};
        char *cq[] = {"capture", "--model", q, "--panel", (char *)panel, "--out", dsets[i], "--role", "quant",
                      "--lane", "other", "--dataset-id", id, "--dataset-name", name,
                      windows ? "--windows" : NULL, (char *)windows, NULL};
        int rc = run_cmd(cmd_quantize, qz);
        if (!rc) rc = run_cmd(cmd_capture, cq);
        free(q);
        if (rc) return rc;
    }
    return FD_EXIT_OK;
}

int cmd_demo(int argc, char **argv)
{
    const char *base = "build/demo", *preset = "tiny", *windows = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) base = argv[++i];
        else if (!strcmp(argv[i], "--preset") && i + 1 < argc) preset = argv[++i];
        else if (!strcmp(argv[i], "--windows") && i + 1 < argc) windows = argv[++i];
        else preset = NULL;
        if (!preset || !fd_fixture_preset_find(preset)) {
            char names[1024];
            fd_fixture_preset_names(names, sizeof names);
            fprintf(stderr, "usage: fidelity demo [--out DIR] [--preset %s] [--windows N]\n", names);
            return FD_EXIT_USAGE;
        }
        if (fd_fixture_preset_dense(fd_fixture_preset_find(preset))) { /* the demo quantizes routed experts */
            fprintf(stderr, "fidelity demo: preset %s is dense: it has no routed experts for the demo to quantize "
                            "(a preset with experts: tiny, flash-0.1b, small, ...)\n", preset);
            return FD_EXIT_USAGE;
        }
    }
    char ids[6][96], names[6][96];
    static const char *const TAGS[6][2] = {{"root", "root"}, {"int8", "RTN int8"}, {"int4", "RTN int4"},
                                           {"fp8", "FP8 experts"}, {"nvfp4", "NVFP4 experts"},
                                           {"gguf-q4_0", "GGUF Q4_0 experts"}};
    for (int i = 0; i < 6; i++) {
        snprintf(ids[i], sizeof ids[i], "fidelity--demo.%s.%s", preset, TAGS[i][0]);
        snprintf(names[i], sizeof names[i], "demo %s (%s)", TAGS[i][1], preset);
    }
    fd_err e = {0};
    fd_rmtree(base);
    if (fd_mkdirs(base, &e)) { printf("REFUSED [%s]: %s\n", e.code, e.msg); return FD_EXIT_REFUSED; }
    char *model = joinp(base, "model"), *panel = joinp(base, "model/panel"), *q8 = joinp(base, "model-int8");
    char *q4 = joinp(base, "model-int4"), *s8 = joinp(base, "scope-int8.json"), *s4 = joinp(base, "scope-int4.json");
    char *root = joinp(base, "root"), *root2 = joinp(base, "root-cold-run-2"), *c8 = joinp(base, "int8");
    char *c4 = joinp(base, "int4"), *out = joinp(base, "compare"), *sc = joinp(base, "self-compare");
    char *qf8 = joinp(base, "model-fp8"), *qn4 = joinp(base, "model-nvfp4"), *cf8 = joinp(base, "fp8");
    char *cn4 = joinp(base, "nvfp4"), *report = joinp(base, "report.html");
    char *gq4 = joinp(base, "model-q4_0.gguf"), *cg4 = joinp(base, "gguf-q4_0");
    int rc = FD_EXIT_OK, pdone[DEMO_PACKED] = {0};
    char *pds[DEMO_PACKED] = {0};
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    printf("== the model: a random-init checkpoint, generated here (fidelity fixture --preset %s)\n", preset);
    char *fx[] = {"fixture", "--preset", (char *)preset, "--seed", "1", "--out", model, NULL};
    if ((rc = run_cmd(cmd_model_fixture, fx))) goto out;
    printf("== step 1: capture the reference, twice (two cold runs)\n");
    char *cr1[] = {"capture", "--model", model, "--panel", panel, "--out", root, "--role", "root", "--lane", "other",
                   "--dataset-id", ids[0], "--dataset-name", names[0], "--cold-run", "cold-1", "--run-name", "cold-1", windows ? "--windows" : NULL, (char *)windows, NULL};
    char *cr2[] = {"capture", "--model", model, "--panel", panel, "--out", root2, "--role", "root", "--lane", "other",
                   "--dataset-id", ids[0], "--dataset-name", names[0], "--cold-run", "cold-2", "--run-name", "cold-2", windows ? "--windows" : NULL, (char *)windows, NULL};
    if ((rc = run_cmd(cmd_capture, cr1)) || (rc = run_cmd(cmd_capture, cr2))) goto out;
    printf("== step 2: quantize the routed experts (RTN int8, int4) and capture both\n");
    /* the routed experts in the preset's spelling (mlp.experts, minimax_m2's block_sparse_moe.experts) */
    const fd_fixture_preset *fp = fd_fixture_preset_find(preset);
    char xm[64], xmd[72];
    snprintf(xm, sizeof xm, "%s", fp && fp->experts_name ? fp->experts_name : "mlp.experts");
    snprintf(xmd, sizeof xmd, "%s.", xm);
    char *qz8[] = {"quantize", "--src", model, "--dst", q8, "--bits", "8", "--match", xm, "--emit-scope", s8, NULL};
    char *qz4[] = {"quantize", "--src", model, "--dst", q4, "--bits", "4", "--match", xm, "--emit-scope", s4, NULL};
    if ((rc = run_cmd(cmd_quantize, qz8)) || (rc = run_cmd(cmd_quantize, qz4))) goto out;
    char *cq8[] = {"capture", "--model", q8, "--panel", panel, "--out", c8, "--role", "quant", "--lane", "other", "--scope-file", s8,
                   "--dataset-id", ids[1], "--dataset-name", names[1], windows ? "--windows" : NULL, (char *)windows, NULL};
    char *cq4[] = {"capture", "--model", q4, "--panel", panel, "--out", c4, "--role", "quant", "--lane", "other", "--scope-file", s4,
                   "--dataset-id", ids[2], "--dataset-name", names[2], windows ? "--windows" : NULL, (char *)windows, NULL};
    if ((rc = run_cmd(cmd_capture, cq8)) || (rc = run_cmd(cmd_capture, cq4))) goto out;
    printf("== step 2b: the routed experts as published quantized checkpoints (FP8 e4m3 128x128 blocks, NVFP4),\n"
           "   captured as shipped: the engine dequantizes inside the kernels, the scope is read from the checkpoint\n");
    char *qzf8[] = {"quantize", "--format", "fp8-block", "--match", xmd, "--src", model, "--dst", qf8, NULL};
    char *qzn4[] = {"quantize", "--format", "nvfp4", "--match", xmd, "--src", model, "--dst", qn4, NULL};
    if ((rc = run_cmd(cmd_quantize, qzf8)) || (rc = run_cmd(cmd_quantize, qzn4))) goto out;
    char *cqf8[] = {"capture", "--model", qf8, "--panel", panel, "--out", cf8, "--role", "quant", "--lane", "other",
                    "--dataset-id", ids[3], "--dataset-name", names[3], windows ? "--windows" : NULL, (char *)windows, NULL};
    char *cqn4[] = {"capture", "--model", qn4, "--panel", panel, "--out", cn4, "--role", "quant", "--lane", "other",
                    "--dataset-id", ids[4], "--dataset-name", names[4], windows ? "--windows" : NULL, (char *)windows, NULL};
    if ((rc = run_cmd(cmd_capture, cqf8)) || (rc = run_cmd(cmd_capture, cqn4))) goto out;
    int gguf = has_gguf_writer(model);
    if (gguf) {
        printf("== step 2c: the routed experts Q4_0 in a GGUF as llama.cpp's converter lays it out (quantize --format gguf),\n"
               "   captured from the file: ggml's blocks decoded row by row inside the kernels\n");
        char *qzg[] = {"quantize", "--format", "gguf", "--type", "q4_0", "--match", xmd, "--src", model, "--dst", gq4, NULL};
        char *cqg[] = {"capture", "--model", gq4, "--panel", panel, "--out", cg4, "--role", "quant", "--lane", "other",
                       "--dataset-id", ids[5], "--dataset-name", names[5], windows ? "--windows" : NULL, (char *)windows, NULL};
        if ((rc = run_cmd(cmd_quantize, qzg)) || (rc = run_cmd(cmd_capture, cqg))) goto out;
    } else
        printf("== (no GGUF row: %s's architecture has no GGUF writer yet)\n", preset);
    if ((rc = demo_packed_rows(base, model, panel, preset, xmd, windows, pdone, pds))) goto out;
    /* the candidates, in compare order */
    const char *cands[5 + DEMO_PACKED] = {c8, c4, cf8, cn4}, *labels[5 + DEMO_PACKED] = {"rtn-int8", "rtn-int4",
                                                                                          "fp8-experts", "nvfp4-experts"};
    int nc = 4;
    if (gguf) { cands[nc] = cg4; labels[nc++] = "gguf-q4_0-experts"; }
    for (int i = 0; i < DEMO_PACKED; i++)
        if (pdone[i]) { cands[nc] = pds[i]; labels[nc++] = PACKED_ROWS[i][3]; }
    printf("== verify every dataset\n");
    for (int i = -2; i < nc; i++) {
        char *v[] = {"verify", (char *)(i == -2 ? root : i == -1 ? root2 : cands[i]), NULL};
        if ((rc = run_cmd(cmd_verify, v)) != FD_EXIT_OK && rc != FD_EXIT_WARN) goto out;
    }
    printf("== step 3: compare offline, weights absent (all %d candidates in one pass)\n", nc);
    char *cmp[9 + 4 * (5 + DEMO_PACKED)] = {"compare", "--reference", root, "--out", out, "--report", report};
    for (int i = 0, k = 7; i < nc; i++) {
        cmp[k++] = "--candidate";
        cmp[k++] = (char *)cands[i];
        cmp[k++] = "--candidate-label";
        cmp[k++] = (char *)labels[i];
    }
    if ((rc = run_cmd(cmd_compare, cmp)) != FD_EXIT_OK && rc != FD_EXIT_WARN) goto out;
    print_kl_order(out, labels, nc);
    printf("== self-compare of the two cold runs (SC-1, force-computed): exactly 0.0\n");
    char *self[] = {"compare", "--reference", root, "--candidate", root2, "--self-compare", "--force-compute", "--out", sc, NULL};
    rc = run_cmd(cmd_compare, self);
    if (rc == FD_EXIT_OK || rc == FD_EXIT_WARN) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        printf("== done in %.1f s (measured on this machine)\n"
               "   report: %s   (open it in a browser: the candidates against the reference)\n"
               "   next: measure your own model (README \"Measure your own model\"):\n"
               "     fidelity panel build --out ./panel --tokenizer ./my-bf16/tokenizer.json --context-length 512 --windows 64 texts.jsonl\n"
               "     fidelity capture --model ./my-bf16 --panel ./panel --out ./root\n"
               "     fidelity capture --model ./my-quant --panel ./panel --out ./quant\n"
               "     fidelity compare --reference ./root --candidate ./quant --out ./cmp --report ./cmp.html\n",
               dt, report);
    }
out:
    free(report);
    free(model); free(panel); free(q8); free(q4); free(s8); free(s4); free(root); free(root2);
    free(c8); free(c4); free(out); free(sc); free(qf8); free(qn4); free(cf8); free(cn4); free(gq4); free(cg4);
    for (int i = 0; i < DEMO_PACKED; i++) free(pds[i]);
    return rc;
}
