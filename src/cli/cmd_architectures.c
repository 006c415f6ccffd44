/* architectures list|show NAME|prepare: the supported architectures and
 * weight formats (engine/archtable.h), and a run plan (run.sh +
 * workflow.json with a memory plan) for a local model directory. */
#include "cli.h"
#include "cli/arch_prepare.h"
#include "capture/panel.h"
#include "capture/schedule.h"
#include "engine/archtable.h"
#include "engine/model.h"
#include "engine/config.h"
#include "engine/gguf_model.h"
#include "engine/qconfig.h"
#include "engine/weights.h"
#include "format/json.h"
#include "format/sha.h"
#include "format/version.h"
#include "util/fsio.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every refusal of this command carries the Python tool's one code
 * (coverage.run_cli: "REFUSED [capture_workflow]: ..."); the specific
 * reason (unsupported_model_type, unsupported_quantization,
 * insufficient_memory, destination_exists, ...) is the message's first word. */
#define WF_CODE "capture_workflow"

static int usage(void)
{
    fprintf(stderr, "usage: fidelity architectures list [--json]\n"
                    "       fidelity architectures show NAME [--json]   (a model_type or a format id)\n"
                    "       fidelity architectures prepare --model DIR --panel DIR --out DIR [--lane L]\n"
                    "           [--dataset-id ID] [--dataset-name NAME] [--reference DATASET] [--windows N]\n"
                    "           [--memory-limit BYTES] [--weights-revision SHA40] [--repository OWNER/NAME] [--force]\n"
                    "           [--architecture MODEL_TYPE] [--model-repository OWNER/NAME] [--author HANDLE]\n"
                    "           [--tokenizer-root DIR]\n"
                    "       the Python tool's spellings are accepted: --model-dir (--model), --model-revision\n"
                    "       (--weights-revision), --dataset-repository (--repository); panel-binding.json is written\n"
                    "       and bound into each capture when the panel resolves (panel-binding)\n");
    return FD_EXIT_USAGE;
}

static jv *arch_json(const fd_arch *arch)
{
    const fd_arch_info *a = &arch->info;
    char presets[512];
    fd_arch_preset_names(arch, ", ", presets, sizeof presets);
    jv *o = jv_obj();
    jv_set(o, "model_type", jv_str(a->model_type));
    jv_set(o, "hf_class", jv_str(a->hf_class));
    jv_set(o, "summary", jv_str(a->summary));
    jv_set(o, "fixture_presets", jv_str(presets));
    jv_set(o, "doc", jv_str(a->doc));
    jv *f = jv_arr();
    for (size_t i = 0; i < FD_N_FORMATS; i++)
        if (fd_arch_has_format(a, FD_FORMATS[i].id)) jv_push(f, jv_str(FD_FORMATS[i].id));
    jv_set(o, "formats", f);
    jv *g = jv_arr();
    const fd_arch *x = fd_arch_of(a->model_type);
    for (const char *const *n = x && x->gguf ? x->gguf->names : NULL; n && *n; n++) jv_push(g, jv_str(*n));
    jv_set(o, "gguf_architectures", g);
    return o;
}

/* llama.cpp's general.architecture spellings of a model_type, or "-" */
static void gguf_names(const fd_arch_info *a, char *out, size_t cap)
{
    const fd_arch *x = fd_arch_of(a->model_type);
    size_t n = 0;
    out[0] = 0;
    for (const char *const *g = x && x->gguf ? x->gguf->names : NULL; g && *g && n < cap; g++)
        n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? ", " : "", *g);
    if (!n) snprintf(out, cap, "-");
}

static jv *format_json(const fd_format_info *f)
{
    jv *o = jv_obj();
    jv_set(o, "id", jv_str(f->id));
    jv_set(o, "name", jv_str(f->name));
    jv_set(o, "declared_by", jv_str(f->declared_by));
    jv_set(o, "capture_role", jv_str(f->role));
    jv_set(o, "doc", jv_str(f->doc));
    return o;
}

static int print_json(const jv *v)
{
    fd_buf b = {0};
    fd_err e;
    int rc = jv_dump(v, &JV_PRETTY, &b, &e);
    if (!rc) printf("%.*s\n", (int)b.n, b.p);
    fd_buf_free(&b);
    return rc ? FD_EXIT_REFUSED : FD_EXIT_OK;
}

static int cmd_list(int json)
{
    if (json) {
        jv *o = jv_obj(), *a = jv_arr(), *f = jv_arr();
        jv_set(o, "schema", jv_str("fidelity.architectures.v1"));
        for (size_t i = 0; i < FD_N_ARCHS; i++) jv_push(a, arch_json(FD_ARCHS[i]));
        for (size_t i = 0; i < FD_N_FORMATS; i++) jv_push(f, format_json(&FD_FORMATS[i]));
        jv_set(o, "architectures", a);
        jv_set(o, "formats", f);
        int rc = print_json(o);
        jv_free(o);
        return rc;
    }
    printf("architectures (config.json model_type)\n");
    for (size_t i = 0; i < FD_N_ARCHS; i++) {
        const fd_arch_info *a = &FD_ARCHS[i]->info;
        char presets[512], g[128];
        fd_arch_preset_names(FD_ARCHS[i], ", ", presets, sizeof presets);
        gguf_names(a, g, sizeof g);
        printf("  %-12s %s\n  %-12s   %s; formats: %s; GGUF general.architecture: %s; fixtures: %s; %s\n", a->model_type,
               a->hf_class, "", a->summary, a->formats, g, presets[0] ? presets : "-", a->doc);
    }
    printf("weight formats (read as shipped; capture role)\n");
    for (size_t i = 0; i < FD_N_FORMATS; i++)
        printf("  %-12s %-6s %s\n  %-12s   declared by %s; %s\n", FD_FORMATS[i].id, FD_FORMATS[i].role, FD_FORMATS[i].name,
               "", FD_FORMATS[i].declared_by, FD_FORMATS[i].doc);
    return FD_EXIT_OK;
}

static int unsupported(const char *name)
{
    char names[256];
    fd_arch_names(names, sizeof names);
    printf("REFUSED [" WF_CODE "]: unsupported_model_type: Unknown architecture: model_type \"%s\" is not supported "
           "(%s); formats: ", name, names);
    for (size_t i = 0; i < FD_N_FORMATS; i++) printf("%s%s", i ? ", " : "", FD_FORMATS[i].id);
    printf("\n");
    return FD_EXIT_REFUSED;
}

static int cmd_show(const char *name, int json)
{
    const fd_arch *arch = fd_arch_of(name);
    const fd_arch_info *a = arch ? &arch->info : NULL;
    const fd_format_info *f = a ? NULL : fd_format_find(name);
    if (!a && !f) return unsupported(name);
    char presets[512] = "";
    if (arch) fd_arch_preset_names(arch, ", ", presets, sizeof presets);
    if (json) {
        jv *o = a ? arch_json(arch) : format_json(f);
        jv_set(o, "kind", jv_str(a ? "architecture" : "format"));
        int rc = print_json(o);
        jv_free(o);
        return rc;
    }
    char g[128];
    if (a) gguf_names(a, g, sizeof g);
    if (a)
        printf("architecture   %s\n  hf class     %s\n  summary      %s\n  fixtures     %s\n  doc          %s\n"
               "  gguf arch    %s\n  formats      ", a->model_type, a->hf_class, a->summary, presets, a->doc, g);
    else
        printf("format         %s\n  name         %s\n  declared by  %s\n  capture role %s\n  doc          %s\n"
               "  architectures ", f->id, f->name, f->declared_by, f->role, f->doc);
    int first = 1;
    for (size_t i = 0; i < (a ? FD_N_FORMATS : FD_N_ARCHS); i++)
        if (a ? fd_arch_has_format(a, FD_FORMATS[i].id) : fd_arch_has_format(&FD_ARCHS[i]->info, f->id)) {
            printf("%s%s", first ? "" : ", ", a ? FD_FORMATS[i].id : FD_ARCHS[i]->info.model_type);
            first = 0;
        }
    printf("\n");
    return FD_EXIT_OK;
}

/* ------------------------------------------------------------ prepare */

typedef struct prep {
    const char *model, *panel, *out, *lane, *dataset_id, *dataset_name, *reference, *weights_revision, *repository;
    const char *architecture, *model_repository, *author, *tokenizer_root; /* the Python tool's additions */
    long windows;
    uint64_t memory_limit;
    int force;
} prep;

static char *absolute(const char *p)
{
    if (p[0] == '/') return fd_xstrdup(p);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return fd_xstrdup(p);
    return fd_path_join(cwd, p);
}

static void shell_quote(fd_buf *b, const char *s)
{
    fd_buf_putc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'') fd_buf_puts(b, "'\\''");
        else fd_buf_putc(b, *s);
    }
    fd_buf_putc(b, '\'');
}

static uint64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb << 10;
}

static void slug(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b && b[1] ? b + 1 : path;
    size_t n = 0;
    for (; *b && n + 1 < cap; b++) {
        char c = *b;
        out[n++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ? c : '-';
    }
    out[n] = 0;
    if (!n) snprintf(out, cap, "model");
}

static jv *step(const char *name, const char *const *argv)
{
    jv *s = jv_obj(), *a = jv_arr();
    jv_set(s, "name", jv_str(name));
    for (size_t i = 0; argv[i]; i++) jv_push(a, jv_str(argv[i]));
    jv_set(s, "argv", a);
    return s;
}

static jv *estimate_json(const fd_mem_estimate *m, int fits)
{
    jv *o = jv_obj();
    jv_set(o, "weights_mapped_bytes", jv_int((int64_t)m->weights));
    jv_set(o, "working_bytes", jv_int((int64_t)m->working));
    jv_set(o, "total_bytes", jv_int((int64_t)m->total));
    jv_set(o, "fits", jv_bool(fits));
    return o;
}

static int write_file(const char *dir, const char *name, const void *p, size_t n, int mode, fd_err *e)
{
    char *full = fd_path_join(dir, name);
    int rc = fd_write_atomic(full, p, n, e);
    if (!rc && chmod(full, (mode_t)mode)) rc = fd_fail(e, "unwritable", "", "%s: %s", full, strerror(errno));
    free(full);
    return rc;
}

/* everything prepare loads and decides, freed by plan_free */
typedef struct plan {
    fd_glm_config c;
    fd_qconfig q;
    fd_weights W;
    fd_panel P;
    int wopen, qopen, popen_;
    const fd_format_info *fmt;
    const char *model_type;
    const fd_arch_info *arch;
    char *model, *panel, *out; /* absolute */
    /* the memory plan */
    uint64_t limit;
    const char *limit_source, *schedule;
    fd_mem_estimate est[2];
    int fits[2];
    /* the run */
    int root;
    char codec[64], defid[192], defname[192], limit_s[32];
    const char *id, *name, *lane;
    fd_buf runs;
    /* panel-binding.json (when the panel resolves) */
    fd_buf braw;
    char bsha[65], *bpath, *tok_root;
    const char *bnote; /* why there is none */
    fd_err berr;
} plan;

static void plan_free(plan *p)
{
    if (p->popen_) fd_panel_free(&p->P);
    if (p->wopen) fd_weights_close(&p->W);
    if (p->qopen) fd_qconfig_free(&p->q);
    fd_glm_config_free(&p->c);
    fd_buf_free(&p->runs);
    fd_buf_free(&p->braw);
    free(p->bpath);
    free(p->tok_root);
    free(p->model);
    free(p->panel);
    free(p->out);
}

/* the format, the tensors and the panel (config.json already parsed) */
static int plan_load(const prep *a, plan *p, fd_err *e)
{
    p->model_type = p->c.arch->info.model_type;
    p->arch = &p->c.arch->info;
    if (fd_qconfig_load(a->model, &p->q, e)) return -1;
    p->qopen = 1;
    p->fmt = fd_format_find(p->q.kind == FD_Q_FP8_BLOCK ? "fp8-block" : p->q.kind == FD_Q_NVFP4 ? "nvfp4"
                            : p->q.kind == FD_Q_CT_PACK ? "ct-pack" : p->q.kind == FD_Q_GPTQ ? "gptq"
                            : p->q.kind == FD_Q_AWQ ? "awq" : p->q.kind == FD_Q_MLX ? "mlx" : "bf16");
    if (!fd_arch_has_format(p->arch, p->fmt->id))
        return fd_fail(e, "unsupported_quantization", "", "%s: model_type %s in format %s is not in the table (%s: %s)",
                       a->model, p->model_type, p->fmt->id, p->model_type, p->arch->formats);
    if (fd_weights_open_lazy(a->model, &p->W, e)) return -1;
    p->wopen = 1;
    if (fd_weights_check(&p->W, &p->c, e)) return -1;
    if (fd_panel_load(a->panel, "final", a->windows, p->c.vocab_size, &p->P, e)) return -1;
    p->popen_ = 1;
    if (!p->P.n) return fd_fail(e, "bad_panel", "", "%s: no window with role final", a->panel);
    return 0;
}

/* the memory plan: capture's own pre-flight estimate for both schedules
 * against one limit (--memory-limit, else MemAvailable here) */
static int plan_memory(const prep *a, plan *p, fd_err *e)
{
    p->limit = a->memory_limit;
    p->limit_source = "--memory-limit";
    if (!p->limit) {
        p->limit = mem_available();
        p->limit_source = p->limit ? "MemAvailable" : "none found";
    }
    for (int lo = 0; lo < 2; lo++) {
        fd_err pe = {0};
        p->fits[lo] = !fd_memory_preflight(&p->W, &p->c, &p->P, lo, p->limit, &p->est[lo], &pe);
        if (!p->fits[lo] && strcmp(pe.code, "insufficient_memory")) { *e = pe; return -1; }
    }
    if (!p->fits[0] && !p->fits[1])
        return fd_fail(e, "insufficient_memory", "",
                       "%s: neither schedule fits: window-outer needs about %llu MB, layer-outer about %llu MB, and %s "
                       "allows %llu MB (plan for another machine with --memory-limit BYTES)",
                       a->model, (unsigned long long)(p->est[0].total >> 20), (unsigned long long)(p->est[1].total >> 20),
                       p->limit_source, (unsigned long long)(p->limit >> 20));
    p->schedule = p->fits[0] ? "window-outer" : "layer-outer";
    return 0;
}

/* role, codec, the dataset's id and name, the runs folder */
static void plan_names(const prep *a, plan *p)
{
    char sl[96];
    p->root = !strcmp(p->fmt->role, "root");
    snprintf(p->codec, sizeof p->codec, "bf16");
    slug(p->model, sl, sizeof sl);
    if (!p->root) fd_q_codec(&p->q, p->codec, sizeof p->codec);
    snprintf(p->defid, sizeof p->defid, "fidelity--local.%s.%s", sl, p->root ? "root" : "quant");
    snprintf(p->defname, sizeof p->defname, "%s (%s)", sl, p->root ? "root" : p->codec);
    p->id = a->dataset_id ? a->dataset_id : p->defid;
    p->name = a->dataset_name ? a->dataset_name : p->defname;
    p->lane = a->lane ? a->lane : "other";
    fd_buf_printf(&p->runs, "%s/runs", p->out);
    snprintf(p->limit_s, sizeof p->limit_s, "%llu", (unsigned long long)a->memory_limit);
}

/* the steps, as argv (workflow.json; plan_shell writes them as run.sh) */
static jv *plan_steps(const prep *a, const plan *p)
{
    jv *steps = jv_arr();
    const char *labels[2] = {p->root ? "root-cold-1" : "quant-1", "root-cold-2"};
    char *ds[2] = {NULL, NULL}, *vj[2] = {NULL, NULL};
    int ncap = p->root ? 2 : 1;
    for (int k = 0; k < ncap; k++) {
        ds[k] = fd_path_join(p->runs.p, labels[k]);
        fd_buf v = {0};
        fd_buf_printf(&v, "%s.verify.json", ds[k]);
        vj[k] = fd_buf_cstr(&v);
        const char *argv[56];
        size_t n = 0;
        const char *head[] = {"fidelity", "capture", "--model", p->model, "--panel", p->panel, "--out", ds[k], "--role",
                              p->root ? "root" : "quant", "--lane", p->lane, "--dataset-id", p->id, "--dataset-name",
                              p->name, "--run-name", labels[k], "--cold-run", labels[k], "--schedule", p->schedule};
        for (size_t i = 0; i < sizeof head / sizeof *head; i++) argv[n++] = head[i];
        if (a->memory_limit) { argv[n++] = "--memory-limit"; argv[n++] = p->limit_s; }
        if (a->weights_revision) { argv[n++] = "--weights-revision"; argv[n++] = a->weights_revision; }
        if (a->repository) { argv[n++] = "--repository"; argv[n++] = a->repository; }
        if (a->model_repository) { argv[n++] = "--weights-repository"; argv[n++] = a->model_repository; }
        if (a->author) { argv[n++] = "--author"; argv[n++] = a->author; }
        if (p->bpath) {
            const char *bind[] = {"--panel-binding", p->bpath, "--panel-binding-sha256", p->bsha, "--panel-tokenizer-root",
                                  p->tok_root};
            for (size_t i = 0; i < 6; i++) argv[n++] = bind[i];
        }
        argv[n] = NULL;
        char nm[64];
        snprintf(nm, sizeof nm, "capture %s", labels[k]);
        jv_push(steps, step(nm, argv));
    }
    for (int k = 0; k < ncap; k++) {
        const char *argv[] = {"fidelity", "verify", ds[k], "--json", vj[k], NULL};
        char nm[64];
        snprintf(nm, sizeof nm, "verify %s", labels[k]);
        jv_push(steps, step(nm, argv));
    }
    char *cmp = fd_path_join(p->runs.p, p->root ? "root-repro" : "compare");
    if (p->root) {
        const char *argv[] = {"fidelity", "compare", "--reference", ds[0], "--candidate", ds[1], "--self-compare",
                              "--force-compute", "--reference-label", labels[0], "--candidate-label", labels[1],
                              "--out", cmp, NULL};
        jv_push(steps, step("self-compare (reproduction confirmation, exactly 0.0)", argv));
    } else {
        const char *argv[] = {"fidelity", "compare", "--reference", a->reference ? a->reference : "${REFERENCE}",
                              "--candidate", ds[0], "--out", cmp, NULL};
        jv_push(steps, step("compare against the reference root", argv));
    }
    for (int k = 0; k < 2; k++) { free(ds[k]); free(vj[k]); }
    free(cmp);
    return steps;
}

/* run.sh: the steps as shell, each word quoted */
static void plan_shell(const prep *a, const plan *p, const jv *steps, fd_buf *sh)
{
    fd_buf_printf(sh, "#!/bin/sh\n# generated by `fidelity architectures prepare` (%s %s)\n", FD_ENGINE_NAME, FD_VERSION);
    fd_buf_printf(sh, "# model_type %s, format %s (%s), role %s; %zu panel windows of %zu tokens\n", p->model_type,
                  p->fmt->id, p->codec, p->root ? "root" : "quant", p->P.n, p->P.context_length);
    fd_buf_printf(sh, "# memory plan: window-outer ~%llu MB, layer-outer ~%llu MB; limit %llu MB (%s) -> %s\n",
                  (unsigned long long)(p->est[0].total >> 20), (unsigned long long)(p->est[1].total >> 20),
                  (unsigned long long)(p->limit >> 20), p->limit_source, p->schedule);
    fd_buf_printf(sh, "set -eu\nFIDELITY=\"${FIDELITY:-fidelity}\"\n");
    if (!p->root && !a->reference)
        fd_buf_printf(sh, ": \"${REFERENCE:?set REFERENCE to the root dataset (a directory or hf://owner/name)}\"\n");
    fd_buf_printf(sh, "mkdir -p ");
    shell_quote(sh, p->runs.p);
    fd_buf_putc(sh, '\n');
    for (size_t i = 0; i < steps->u.a.n; i++) {
        const jv *s = steps->u.a.v[i], *argv = jv_get(s, "argv");
        fd_buf_printf(sh, "\n# %s\n\"$FIDELITY\"", jv_get_str(s, "name"));
        for (size_t j = 1; j < argv->u.a.n; j++) {
            const char *w = argv->u.a.v[j]->u.s.p;
            fd_buf_putc(sh, ' ');
            if (!strcmp(w, "${REFERENCE}")) fd_buf_puts(sh, "\"$REFERENCE\"");
            else shell_quote(sh, w);
        }
        fd_buf_putc(sh, '\n');
    }
}

/* workflow.json's model and panel blocks */
static jv *plan_inputs_json(const plan *p, const char *cfg_sha, jv **panel_out)
{
    uint64_t all = 0;
    for (size_t i = 0; i < p->W.n; i++) all += p->W.t[i].nbytes;
    jv *mj = jv_obj();
    jv_set(mj, "dir", jv_str(p->model));
    jv_set(mj, "config_sha256", jv_str(cfg_sha));
    jv_set(mj, "tensors", jv_int((int64_t)p->W.n));
    jv_set(mj, "tensor_bytes", jv_int((int64_t)all));
    jv_set(mj, "num_hidden_layers", jv_int(p->c.num_hidden_layers));
    jv_set(mj, "hidden_size", jv_int(p->c.hidden_size));
    jv_set(mj, "vocab_size", jv_int(p->c.vocab_size));
    jv *pj = jv_obj();
    jv_set(pj, "dir", jv_str(p->panel));
    jv_set(pj, "panel_id", jv_str(p->P.panel_id));
    jv_set(pj, "windows", jv_int((int64_t)p->P.n));
    jv_set(pj, "context_length", jv_int((int64_t)p->P.context_length));
    jv_set(pj, "suite_token_hash_sha256", jv_str(p->P.suite_token_hash_sha256));
    *panel_out = pj;
    return mj;
}

/* workflow.json (takes steps); NULL with e set when config.json cannot be hashed */
static jv *plan_workflow(const prep *a, const plan *p, jv *steps, fd_err *e)
{
    char cfg_sha[65];
    char *cfg = fd_path_join(a->model, "config.json");
    int hrc = fd_sha256_file(cfg, cfg_sha, e);
    free(cfg);
    if (hrc) { jv_free(steps); return NULL; }
    jv *wf = jv_obj(), *pj;
    jv_set(wf, "schema", jv_str("fidelity.workflow.v1"));
    char gen[96];
    snprintf(gen, sizeof gen, "%s %s architectures prepare", FD_ENGINE_NAME, FD_VERSION);
    jv_set(wf, "generated_by", jv_str(gen));
    jv_set(wf, "architecture", arch_json(p->c.arch));
    jv *fj = format_json(p->fmt);
    jv_set(fj, "codec", jv_str(p->codec));
    jv_set(wf, "format", fj);
    jv *mj = plan_inputs_json(p, cfg_sha, &pj);
    jv_set(wf, "model", mj);
    jv_set(wf, "panel", pj);
    jv *mp = jv_obj();
    jv_set(mp, "limit_bytes", p->limit ? jv_int((int64_t)p->limit) : jv_null());
    jv_set(mp, "limit_source", jv_str(p->limit_source));
    jv_set(mp, "window_outer", estimate_json(&p->est[0], p->fits[0]));
    jv_set(mp, "layer_outer", estimate_json(&p->est[1], p->fits[1]));
    jv_set(mp, "schedule", jv_str(p->schedule));
    jv_set(mp, "estimator", jv_str("capture's memory pre-flight (capture/schedule.c fd_memory_preflight)"));
    jv_set(wf, "memory_plan", mp);
    jv_set(wf, "role", jv_str(p->root ? "root" : "quant"));
    jv_set(wf, "runs_dir", jv_str(p->runs.p));
    jv_set(wf, "reference", a->reference ? jv_str(a->reference) : jv_null());
    /* the Python tool's workflow keys (qfs.capture-workflow.v1) where this plan has them */
    jv_set(wf, "model_repository", a->model_repository ? jv_str(a->model_repository) : jv_null());
    jv_set(wf, "model_revision", a->weights_revision ? jv_str(a->weights_revision) : jv_null());
    jv_set(wf, "dataset_repository", a->repository ? jv_str(a->repository) : jv_null());
    jv_set(wf, "author", a->author ? jv_str(a->author) : jv_null());
    jv_set(wf, "config_sha256", jv_str(cfg_sha));
    jv_set(wf, "panel_binding_sha256", p->bpath ? jv_str(p->bsha) : jv_null());
    jv_set(wf, "panel_binding_note", p->bpath ? jv_null() : jv_str(p->bnote));
    jv_set(wf, "steps", steps);
    return wf;
}

/* run.sh and workflow.json written beside the destination, renamed into place */
static int plan_write(const plan *p, const fd_buf *sh, const fd_buf *wj, fd_err *e)
{
    struct stat st;
    fd_buf t = {0};
    fd_buf_printf(&t, "%s.partial-%ld", p->out, (long)getpid());
    char *tmp = fd_buf_cstr(&t);
    fd_rmtree(tmp);
    int rc = -1;
    if (fd_mkdirs(tmp, e) || write_file(tmp, "run.sh", sh->p, sh->n, 0755, e) ||
        write_file(tmp, "workflow.json", wj->p, wj->n, 0644, e) ||
        (p->bpath && write_file(tmp, "panel-binding.json", p->braw.p, p->braw.n, 0644, e)))
        goto out;
    if (lstat(p->out, &st) == 0 && fd_rmtree(p->out)) { fd_fail(e, "unwritable", "", "%s: cannot replace it", p->out); goto out; }
    if (rename(tmp, p->out)) { fd_fail(e, "unwritable", "", "%s: %s", p->out, strerror(errno)); goto out; }
    rc = 0;
out:
    if (rc) fd_rmtree(tmp);
    free(tmp);
    return rc;
}

static void plan_print(const prep *a, const plan *p)
{
    printf("PREPARED %s\n", p->out);
    printf("  architecture        %s (%s)\n", p->model_type, p->arch->hf_class);
    printf("  format              %s (%s), role %s\n", p->fmt->id, p->codec, p->root ? "root" : "quant");
    printf("  panel               %s: %zu windows x %zu tokens\n", p->P.panel_id, p->P.n, p->P.context_length);
    printf("  memory plan         window-outer ~%llu MB%s, layer-outer ~%llu MB%s; limit %llu MB (%s)\n",
           (unsigned long long)(p->est[0].total >> 20), p->fits[0] ? "" : " (does not fit)",
           (unsigned long long)(p->est[1].total >> 20), p->fits[1] ? "" : " (does not fit)",
           (unsigned long long)(p->limit >> 20), p->limit_source);
    printf("  schedule            %s\n", p->schedule);
    if (p->bpath) printf("  panel binding       %s (sha256 %s), bound into each capture\n", p->bpath, p->bsha);
    else printf("  panel binding       none: %s\n", p->bnote);
    printf("  run                 sh %s/run.sh%s\n", p->out, !p->root && !a->reference ? "   (REFERENCE=<root dataset>)" : "");
}

/* panel-binding.json when the panel resolves (an explicit --tokenizer-root must) */
static int plan_binding(const prep *a, plan *p, fd_err *e)
{
    p->tok_root = absolute(a->tokenizer_root ? a->tokenizer_root : a->model);
    if (fd_prep_panel_binding(a->panel, p->tok_root, &p->braw, p->bsha, &p->berr)) {
        if (a->tokenizer_root) { *e = p->berr; return -1; }
        p->bnote = p->berr.msg;
        return 0;
    }
    p->bpath = fd_path_join(p->out, "panel-binding.json");
    return 0;
}

static int cmd_prepare(const prep *a)
{
    fd_err e = {0};
    struct stat st;
    if (fd_prep_check_values(a->architecture, a->model_repository, a->repository, a->weights_revision, a->author,
                             a->dataset_id, &e)) {
        printf("REFUSED [" WF_CODE "]: %s: %s\n", e.code, e.msg);
        return FD_EXIT_REFUSED;
    }
    if (!a->force && lstat(a->out, &st) == 0) {
        printf("REFUSED [" WF_CODE "]: destination_exists: Refusing to overwrite a recipe directory: %s (pass --force "
               "to replace it)\n", a->out);
        return FD_EXIT_REFUSED;
    }
    plan p;
    memset(&p, 0, sizeof p);
    if (fd_glm_config_load(a->model, &p.c, &e)) {
        printf("REFUSED [" WF_CODE "]: %s: %s: %s\n", e.code, a->model, e.msg);
        return FD_EXIT_REFUSED;
    }
    p.model = absolute(a->model);
    p.panel = absolute(a->panel);
    p.out = absolute(a->out);
    int rc = FD_EXIT_REFUSED;
    fd_buf sh = {0}, wj = {0};
    jv *wf = NULL;
    if (a->architecture && strcmp(a->architecture, p.c.arch->info.model_type)) {
        fd_fail(&e, "unsupported_model_type", "", "Model config does not belong to the selected architecture: %s (--architecture %s)",
                p.c.arch->info.model_type, a->architecture);
        goto refused;
    }
    if (plan_load(a, &p, &e) || plan_memory(a, &p, &e) || plan_binding(a, &p, &e)) goto refused;
    plan_names(a, &p);
    jv *steps = plan_steps(a, &p);
    plan_shell(a, &p, steps, &sh);
    wf = plan_workflow(a, &p, steps, &e);
    if (!wf || jv_dump(wf, &JV_PRETTY, &wj, &e)) goto refused;
    fd_buf_putc(&wj, '\n');
    if (plan_write(&p, &sh, &wj, &e)) goto refused;
    plan_print(a, &p);
    rc = FD_EXIT_OK;
    goto done;
refused:
    printf("REFUSED [" WF_CODE "]: %s: %s\n", e.code, e.msg);
done:
    plan_free(&p);
    jv_free(wf);
    fd_buf_free(&sh);
    fd_buf_free(&wj);
    return rc;
}

int cmd_architectures(int argc, char **argv)
{
    const char *action = argc > 1 ? argv[1] : "list";
    int json = 0;
    if (!strcmp(action, "list") || !strcmp(action, "show")) {
        const char *name = NULL;
        for (int i = 2; i < argc; i++) {
            if (!strcmp(argv[i], "--json")) json = 1;
            else if (argv[i][0] == '-' || name || !strcmp(action, "list")) return usage();
            else name = argv[i];
        }
        if (!strcmp(action, "list")) return cmd_list(json);
        if (!name) return usage();
        return cmd_show(name, json);
    }
    if (strcmp(action, "prepare")) return usage();
    prep a = {0};
    for (int i = 2; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **slot = !strcmp(s, "--model") || !strcmp(s, "--model-dir") ? &a.model : !strcmp(s, "--panel") ? &a.panel
                          : !strcmp(s, "--out") ? &a.out : !strcmp(s, "--lane") ? &a.lane
                          : !strcmp(s, "--dataset-id") ? &a.dataset_id : !strcmp(s, "--dataset-name") ? &a.dataset_name
                          : !strcmp(s, "--reference") ? &a.reference
                          : !strcmp(s, "--weights-revision") || !strcmp(s, "--model-revision") ? &a.weights_revision
                          : !strcmp(s, "--repository") || !strcmp(s, "--dataset-repository") ? &a.repository
                          : !strcmp(s, "--architecture") ? &a.architecture : !strcmp(s, "--model-repository") ? &a.model_repository
                          : !strcmp(s, "--author") ? &a.author : !strcmp(s, "--tokenizer-root") ? &a.tokenizer_root : NULL;
        if (slot && v) { *slot = v; i++; }
        else if (!strcmp(s, "--force")) a.force = 1;
        else if ((!strcmp(s, "--windows") || !strcmp(s, "--memory-limit")) && v) {
            char *end;
            errno = 0;
            unsigned long long x = strtoull(v, &end, 10);
            if (!*v || *end || !x || errno || v[0] == '-') { fprintf(stderr, "fidelity architectures: %s must be a positive integer\n", s); return FD_EXIT_USAGE; }
            if (!strcmp(s, "--windows")) a.windows = x > LONG_MAX ? LONG_MAX : (long)x;
            else a.memory_limit = x;
            i++;
        } else { fprintf(stderr, "fidelity architectures prepare: unknown or incomplete option %s\n", s); return usage(); }
    }
    if (!a.model || !a.panel || !a.out) return usage();
    return cmd_prepare(&a);
}
