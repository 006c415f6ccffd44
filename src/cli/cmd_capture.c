/* capture: the C glm_moe_dsa forward over a panel -> a sealed dataset
 * (capture/capture.h). */
#include "cli.h"
#include "engine/gguf_model.h"
#include "args.h"
#include <limits.h>
#include <stdint.h>
#include "capture/capture.h"
#include "engine/qconfig.h"
#include "format/writer.h"
#include "mpi/dist.h"
#include "util/fsio.h"
#include "util/utc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int usage(const char *why)
{
    if (why) fprintf(stderr, "fidelity capture: %s\n", why);
    fprintf(stderr, "usage: fidelity capture --model DIR --panel DIR --out DIR [--role root|quant] [--lane " FD_LANES "]\n"
                    "  [--dataset-id ID] [--dataset-name NAME] [--windows N] [--panel-role final] [--scope-file F]\n"
                    "  [--run-name R] [--cold-run C] [--weights-repository REPO] [--weights-revision SHA40] [--repository OWNER/NAME]\n"
                    "  [--declared-bits B] [--threads N]\n"
                    "  [--kernel scalar|avx2|avx512f|avx512bf16|amx|neon|neon-bf16] [--gemm-order tile|pair] [--memory-report FILE] [--progress] [--emit-k3-compat] [--force]\n"
                    "  [--sanity-prompt TEXT] [--sanity-expect WORD] [--no-sanity-check]\n"
                    "  [--schedule window-outer|layer-outer] [--memory-limit BYTES]\n"
                    "  [--panel-binding FILE --panel-binding-sha256 HEX [--panel-tokenizer-root DIR]] [--author HANDLE]\n"
                    "               (the panel must resolve to that `fidelity panel-binding` document; recorded\n"
                    "               as runtime capture_tool.resolved_panel_binding, as hf_capture.py does)\n"
                    "  [--score-from N]   (score rows N .. L-2 of each window; N = n_ctx/2 is llama.cpp's .kld panel)\n"
                    "  [--resume]   (continue an interrupted capture: its finished windows are kept in OUT.resume/,\n"
                    "               each verified against this run's inputs; the same capture_content_digest)\n"
                    "  defaults: --role quant when the checkpoint has a quantization_config, else root; --lane other;\n"
                    "  --dataset-name the model directory's name; --dataset-id fidelity--local.NAME.hidden\n");
    return FD_EXIT_USAGE;
}

/* Under mpirun: this rank's shard (docs/MPI.md); `fidelity merge` seals the
 * whole dataset from the shards.  Every rank exits 3 when any rank refused. */
static int capture_shard(const fd_capture_opts *o, const fd_dist *d)
{
    char stamp[64] = "";
    if (!d->rank) { /* one cold_run name for every shard of this launch */
        char ts[32];
        fd_utc_now(ts, sizeof ts, "%Y%m%dT%H%M%SZ");
        snprintf(stamp, sizeof stamp, "%s-%ld", ts, (long)getpid());
    }
    fd_dist_bcast(d, stamp, sizeof stamp, 0);
    stamp[sizeof stamp - 1] = 0;
    fd_capture_shard s = {.rank = d->rank, .ranks = d->size, .run_stamp = stamp};
    fd_err e = {0};
    jv *m = NULL;
    int rc = fd_capture_run_shard(o, &s, &m, &e);
    if (rc) printf("REFUSED [%s]: rank %d: %s\n", e.code, d->rank, e.msg);
    else if (s.idle) printf("SHARD rank %d: idle (fewer windows than ranks)\n", d->rank);
    else
        printf("SHARD %s -> %s\n  dataset_sha256          %s\n  capture_content_digest  %s\n", s.reused ? "REUSED" : "SEALED",
               s.path, jv_get_str(m, "dataset_sha256"), jv_get_str(jv_get(m, "capture"), "capture_content_digest"));
    fflush(stdout);
    fd_err all = {0};
    int bad = fd_dist_agree(d, rc, &all);
    if (!bad && !d->rank) printf("all shards sealed: `fidelity merge %s.shard-*-of-* --out %s` assembles the dataset\n", o->out, o->out);
    free(s.path);
    jv_free(m);
    return bad ? FD_EXIT_REFUSED : FD_EXIT_OK;
}

/* the last component of the model path (a trailing '/' ignored; "." and ".."
 * resolved): the default dataset name */
static int default_name(const char *model, char *out, size_t cap)
{
    char *real = realpath(model, NULL);
    const char *p = real ? real : model;
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') n--;
    size_t b = n;
    while (b > 0 && p[b - 1] != '/') b--;
    int ok = n > b && n - b < cap;
    if (ok) snprintf(out, cap, "%.*s", (int)(n - b), p + b);
    free(real);
    return ok ? 0 : -1;
}

/* the flags into o; 0, or usage's exit code */
static int parse_flags(int argc, char **argv, fd_capture_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **dst = !strcmp(s, "--model") ? &o->model : !strcmp(s, "--panel") ? &o->panel
                         : !strcmp(s, "--out") ? &o->out : !strcmp(s, "--role") ? &o->role
                         : !strcmp(s, "--lane") ? &o->lane : !strcmp(s, "--dataset-id") ? &o->dataset_id
                         : !strcmp(s, "--dataset-name") ? &o->dataset_name : !strcmp(s, "--panel-role") ? &o->panel_role
                         : !strcmp(s, "--scope-file") ? &o->scope_file : !strcmp(s, "--run-name") ? &o->run_name
                         : !strcmp(s, "--cold-run") ? &o->cold_run : !strcmp(s, "--memory-report") ? &o->memory_report
                         : !strcmp(s, "--weights-repository") ? &o->weights_repository
                         : !strcmp(s, "--weights-revision") ? &o->weights_revision : !strcmp(s, "--repository") ? &o->repository
                         : !strcmp(s, "--kernel") ? &o->kernel : !strcmp(s, "--schedule") ? &o->schedule : !strcmp(s, "--sanity-prompt") ? &o->sanity_prompt
                         : !strcmp(s, "--sanity-expect") ? &o->sanity_expect
                         : !strcmp(s, "--panel-binding") ? &o->panel_binding
                         : !strcmp(s, "--panel-binding-sha256") ? &o->panel_binding_sha256
                         : !strcmp(s, "--panel-tokenizer-root") ? &o->panel_tokenizer_root
                         : !strcmp(s, "--author") ? &o->author : NULL;
        if (dst) {
            if (!v) return usage("an option is missing its value");
            *dst = v;
            i++;
        } else if (!strcmp(s, "--windows")) {
            long long n;
            if (!v) return usage("--windows needs a value");
            if (fd_arg_int(v, 1, LONG_MAX, &n)) return usage("--windows must be a positive integer");
            o->windows = (long)n;
            i++;
        } else if (!strcmp(s, "--score-from")) {
            long long n;
            if (!v) return usage("--score-from needs a value");
            if (fd_arg_int(v, 0, INT32_MAX, &n)) return usage("--score-from must be a non-negative integer");
            o->score_from = (size_t)n;
            i++;
        } else if (!strcmp(s, "--threads")) {
            long long t;
            if (!v) return usage("--threads needs a value");
            if (fd_arg_int(v, 1, 4096, &t)) return usage("--threads must be an integer in 1..4096");
            o->threads = (int)t;
            i++;
        } else if (!strcmp(s, "--declared-bits")) {
            if (!v) return usage("--declared-bits needs a value");
            if (fd_arg_real(v, 0, 64, &o->declared_bits) || !(o->declared_bits > 0)) return usage("--declared-bits must be in (0, 64]");
            i++;
        } else if (!strcmp(s, "--gemm-order")) {
            if (!v || fd_order_parse(v, &o->order)) return usage("--gemm-order must be tile or pair");
            i++;
        } else if (!strcmp(s, "--force")) o->force = 1;
        else if (!strcmp(s, "--emit-k3-compat")) o->emit_k3_compat = 1;
        else if (!strcmp(s, "--no-sanity-check")) o->no_sanity_check = 1;
        else if (!strcmp(s, "--memory-limit") && v) {
            unsigned long long n;
            if (fd_arg_uint(v, 1, UINT64_MAX, &n)) return usage("--memory-limit must be a positive number of bytes");
            o->memory_limit = n;
            i++;
        }
        else if (!strcmp(s, "--progress")) o->progress = 1;
        else if (!strcmp(s, "--resume")) o->resume = 1;
        else {
            fprintf(stderr, "fidelity capture: unknown argument %s\n", s);
            return usage(NULL);
        }
    }
    return 0;
}

/* the defaults a quantizer need not type (role, lane, name, id; dname / did hold the last two) and the
 * enumerated values checked before any work; 0, or usage's exit code */
static int defaults(fd_capture_opts *o, char dname[128], char did[192])
{
    fd_qconfig q = {0};
    fd_err qe = {0};
    /* an unreadable or unsupported quantization_config counts as present: the
     * capture then refuses it by name instead of asking for --scope-file */
    int quantized = fd_gguf_is_model(o->model) /* a GGUF's tensor types decide (the capture refuses by name) */
                    || fd_qconfig_load(o->model, &q, &qe) || q.kind != FD_Q_NONE;
    fd_qconfig_free(&q);
    /* what a quantizer need not type (issue 22 item 7): the role from the
     * checkpoint's quantization_config, lane other, the name from the model
     * directory and the id from the name; each default is said on stderr */
    if (!o->role) {
        o->role = quantized ? "quant" : "root";
        fprintf(stderr, "fidelity capture: --role %s (default: %s)\n", o->role,
                quantized ? "the checkpoint has a quantization_config" : "no quantization_config in the checkpoint");
    }
    if (!o->lane) {
        o->lane = "other";
        fprintf(stderr, "fidelity capture: --lane other (default)\n");
    }
    if (!o->dataset_name) {
        if (default_name(o->model, dname, 128)) return usage("--dataset-name is required (no name in the model path)");
        o->dataset_name = dname;
        fprintf(stderr, "fidelity capture: --dataset-name %s (default: the model directory's name)\n", o->dataset_name);
    }
    if (!o->dataset_id) {
        snprintf(did, 192, "fidelity--local.%s.hidden", o->dataset_name);
        for (char *c = did; *c; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' || *c == '-' || *c == '_'))
                *c = '-';
        o->dataset_id = did;
        fprintf(stderr, "fidelity capture: --dataset-id %s (default: from the dataset name)\n", o->dataset_id);
    }
    /* every enumerated value checked before any work (issue 16.10) */
    if (strcmp(o->role, "root") && strcmp(o->role, "quant")) return usage("--role must be root or quant");
    if (!fd_lane_valid(o->lane)) return usage("--lane must be one of " FD_LANES " (the dataset schema's lane enum)");
    if (strcmp(o->role, "root") && !o->scope_file && !quantized)
        return usage("--scope-file is required unless --role root or the checkpoint has a quantization_config");
    return 0;
}

int cmd_capture(int argc, char **argv)
{
    fd_capture_opts o = {0};
    fd_sigbus_refuses();   /* the checkpoint is memory-mapped */
    o.progress = isatty(2); /* per-window lines only on a terminal, or with --progress */
    int urc = parse_flags(argc, argv, &o);
    if (urc) return urc;
    if (!o.model || !o.panel || !o.out) return usage("--model, --panel and --out are required");
    /* "--out DIR/" names DIR: its staging and journal are DIR.partial-*, DIR.resume */
    char outbuf[4096];
    size_t ol = strlen(o.out);
    while (ol > 1 && o.out[ol - 1] == '/') ol--;
    if (ol >= sizeof outbuf) return usage("--out is too long");
    snprintf(outbuf, sizeof outbuf, "%.*s", (int)ol, o.out);
    o.out = outbuf;
    if (o.schedule && strcmp(o.schedule, "window-outer") && strcmp(o.schedule, "layer-outer"))
        return usage("--schedule must be window-outer or layer-outer");
    /* --kernel: refused (exit 3) by fd_mm_init, the first step of the run,
     * naming the paths: it also depends on this CPU */
    char dname[128], did[192];
    if ((urc = defaults(&o, dname, did))) return urc;
    fd_err e = {0};
    jv *m = NULL;
    fd_dist d;
    if (fd_dist_open(&d, NULL, NULL, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        return FD_EXIT_REFUSED;
    }
    if (d.launched) {
        int rc = capture_shard(&o, &d);
        fd_dist_close(&d);
        return rc;
    }
    if (fd_capture_run(&o, &m, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        return FD_EXIT_REFUSED;
    }
    printf("SEALED DATASET -> %s\n  dataset_sha256          %s\n  capture_content_digest  %s\n", o.out,
           jv_get_str(m, "dataset_sha256"), jv_get_str(jv_get(m, "capture"), "capture_content_digest"));
    jv_free(m);
    return FD_EXIT_OK;
}
