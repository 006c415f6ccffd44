/* compare: one reference against one or more candidates. */
#include "cli.h"
#include "args.h"
#include <limits.h>
#include <stdint.h>
#include "compare/compare.h"
#include "kernels/gemm.h"
#include "format/json.h"
#include "mpi/dist.h"
#include "report/report.h"
#include "util/fsio.h"
#include "hub_args.h"
#include "compare/submission.h"
#include "compare/tokstats.h"
#include "compare/paired.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int usage(void)
{
    fprintf(stderr,
            "usage: fidelity compare --reference A --candidate B [--candidate C ...] --out DIR [--force]\n"
            "  (DIR appears only when every receipt is written; an existing DIR is refused\n"
            "   as destination_exists unless --force replaces it)\n"
            "  [--self-compare] [--force-compute] [--allow-cross-lane] [--allow-partial] [--own-heads]\n"
            "  [--disclose-head-substitution [--head PATH]] [--verify-tensors|--no-verify-tensors]\n"
            "  [--reference-label L] [--candidate-label L ...] [--threads N] [--chunk-positions N]\n"
            "  [--vocab-chunk N] [--kernel scalar|avx2|avx512f|avx512bf16|neon|neon-bf16] [--js] [--no-bootstrap] [--json] [--progress]\n"
            "  [--emit-k3-compat]   (kimi-k3 views of both datasets in DIR/k3-compat/ and k3-summary.json per receipt)\n"
            "  [--report FILE.html]   (also write the HTML report of these receipts: fidelity report)\n"
            "  [--emit-submission --submission-provenance FILE [--measurer HANDLE]]   (registry submission per candidate)\n"
            "  [--cache DIR] [--token-file PATH]   (hf://owner/name[@rev] datasets)\n"
            "  [--csv]   (DIR[/NN-LABEL]/tokenwise.csv: context,row,position,token_id,kl,reverse_kl,delta_p,...)\n"
            "  [--paired [--tie-tolerance NATS]]   (exactly two candidates A, B: B - A per context, bootstrap CI,\n"
            "                                       wins, sign test; DIR/paired-receipt.json, docs/COMPARE-IMPL.md)\n");
    return FD_EXIT_USAGE;
}

/* a finite number >= 0 (nats) */
static int parse_tol(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v) || v < 0) return 0;
    *out = v;
    return 1;
}

static int parse_size(const char *s, size_t *out)
{
    unsigned long long v;
    if (fd_arg_uint(s, 1, SIZE_MAX, &v)) return -1;
    *out = (size_t)v;
    return 0;
}

/* One sealed submission-receipt.json beside each comparison receipt; the
 * comparison receipts stand whatever the submission's verdict. */
static int emit_submissions(const fd_cmp_result *res, const char *provenance, const char *measurer, FILE *hf)
{
    fd_err e = {0};
    jv *prov = provenance ? jv_parse_file(provenance, &e) : jv_obj();
    if (!prov || prov->t != JV_OBJ) {
        printf("REFUSED [missing_provenance]: %s: %s (SC-4)\n", provenance, prov ? "not a JSON object" : e.msg);
        jv_free(prov);
        return -1;
    }
    int bad = 0;
    for (size_t i = 0; i < res->n && !bad; i++) {
        jv *sub = NULL;
        fd_buf b = {0}, path = {0};
        const char *rp = res->receipt_paths[i], *slash = strrchr(rp, '/');
        fd_buf_printf(&path, "%.*s%ssubmission-receipt.json", slash ? (int)(slash - rp) : 0, rp, slash ? "/" : "");
        if (fd_submission_build(res->receipts[i], prov, measurer, &sub, &e) || jv_dump(sub, &JV_PRETTY, &b, &e) ||
            (fd_buf_putc(&b, '\n'), fd_write_atomic(path.p, b.p, b.n, &e))) {
            printf("REFUSED [%s]: %s (%s); no submission written, the comparison receipt stands\n", e.code, e.msg, e.rule);
            bad = 1;
        } else fprintf(hf, "SUBMISSION -> %s (receipt_sha256 %s)\n", path.p, jv_get_str(sub, "receipt_sha256"));
        jv_free(sub);
        fd_buf_free(&b);
        fd_buf_free(&path);
    }
    jv_free(prov);
    return bad ? -1 : 0;
}

/* what the command line of compare sets */
typedef struct cargs {
    fd_cmp_opts o;
    const char **cands, **labels;
    size_t nlabels;
    int json, emit_submission, paired;
    const char *report, *provenance, *measurer;
    fd_fetch_opts hub;
    double tie;
} cargs;

/* the flags into a; 0, or the usage exit code */
static int parse_args(int argc, char **argv, cargs *a)
{
    fd_cmp_opts *o = &a->o;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        size_t n;
        if (fd_cli_hub_flag(argc, argv, &i, &a->hub)) continue;
        if (!strcmp(s, "--reference") && v) { o->reference = v; i++; }
        else if (!strcmp(s, "--candidate") && v) { a->cands[o->ncand++] = v; i++; }
        else if (!strcmp(s, "--out") && v) { o->out = v; i++; }
        else if (!strcmp(s, "--reference-label") && v) { o->reference_label = v; i++; }
        else if (!strcmp(s, "--candidate-label") && v) { a->labels[a->nlabels++] = v; i++; }
        else if (!strcmp(s, "--head") && v) { o->head = v; i++; }
        else if (!strcmp(s, "--report") && v) { a->report = v; i++; }
        else if (!strcmp(s, "--submission-provenance") && v) { a->provenance = v; i++; }
        else if (!strcmp(s, "--measurer") && v) { a->measurer = v; i++; }
        else if (!strcmp(s, "--emit-submission")) a->emit_submission = 1;
        else if (!strcmp(s, "--kernel") && v) { o->kernel = v; i++; }
        else if (!strcmp(s, "--created-utc") && v) { o->created_utc = v; i++; }
        else if (!strcmp(s, "--threads") && v && !parse_size(v, &n) && n <= 4096) { o->threads = (int)n; i++; }
        else if (!strcmp(s, "--chunk-positions") && v && !parse_size(v, &n)) { o->position_block = n; i++; }
        else if (!strcmp(s, "--vocab-chunk") && v && !parse_size(v, &n)) { o->vocab_chunk = n; i++; }
        else if (!strcmp(s, "--self-compare")) o->self_compare = 1;
        else if (!strcmp(s, "--force-compute")) o->force_compute = 1;
        else if (!strcmp(s, "--force")) o->force = 1;
        else if (!strcmp(s, "--allow-cross-lane")) o->allow_cross_lane = 1;
        else if (!strcmp(s, "--allow-partial")) o->allow_partial = 1;
        else if (!strcmp(s, "--own-heads")) o->own_heads = 1;
        else if (!strcmp(s, "--disclose-head-substitution")) o->disclose_head_substitution = 1;
        else if (!strcmp(s, "--verify-tensors")) o->verify_tensors = 1;
        else if (!strcmp(s, "--no-verify-tensors")) o->verify_tensors = 0;
        else if (!strcmp(s, "--no-bootstrap")) o->no_bootstrap = 1;
        else if (!strcmp(s, "--js")) o->js = 1;
        else if (!strcmp(s, "--emit-k3-compat")) o->emit_k3_compat = 1;
        else if (!strcmp(s, "--json")) a->json = 1;
        else if (!strcmp(s, "--progress")) o->progress = 1;
        else if (!strcmp(s, "--paired")) a->paired = 1;
        else if (!strcmp(s, "--csv")) o->csv = 1;
        else if (!strcmp(s, "--tie-tolerance") && v && parse_tol(v, &a->tie)) { i++; }
        else {
            /* unknown flags never get here (main.c checks every flag from the
             * command table, with did-you-mean): this is a bad value */
            fprintf(stderr, "fidelity compare: bad value for %s\n", s);
            return usage();
        }
    }
    if (a->paired && o->ncand != 2) {
        fprintf(stderr, "fidelity compare: --paired needs exactly two candidates (A, then B)\n");
        return usage();
    }
    if (!o->reference || !o->ncand || !o->out || (o->head && !o->disclose_head_substitution) || a->nlabels > o->ncand) {
        if (o->head && !o->disclose_head_substitution) fprintf(stderr, "fidelity compare: --head needs --disclose-head-substitution\n");
        const char *missing = !o->reference ? "--reference" : !o->ncand ? "--candidate" : !o->out ? "--out" : NULL;
        if (missing) fprintf(stderr, "fidelity compare: %s is required\n", missing);
        if (a->nlabels > o->ncand) fprintf(stderr, "fidelity compare: %zu --candidate-label for %zu candidates\n", a->nlabels, o->ncand);
        return usage();
    }
    fd_path probe;
    if (o->kernel && *o->kernel && fd_path_select(o->kernel, &probe)) {
        fprintf(stderr, "fidelity compare: kernel path '%s' is unknown or not supported by this CPU "
                        "(scalar|avx2|avx512f|avx512bf16|neon|neon-bf16)\n", o->kernel);
        return FD_EXIT_USAGE;
    }
    return 0;
}

/* the table and the per-candidate summaries into hf; 1 when a receipt is advisory */
static int print_results(const fd_cmp_result *res, FILE *hf)
{
    int advisory = 0;
    fprintf(hf, "%-28s %-10s %-14s %-14s %-8s %s\n", "candidate", "class", "mean KL", "p99", "top-1", "receipt");
    for (size_t i = 0; i < res->n; i++) {
        const jv *r = res->receipts[i], *kl = jv_get(r, "kl"), *t1 = jv_get(r, "top1_agreement");
        advisory |= !strcmp(res->classes[i], "advisory");
        fprintf(hf, "%-28s %-10s %-14.6e %-14.6e %-8.4f %s\n", jv_get_str(jv_get(r, "candidate"), "label"), res->classes[i],
                jv_get(kl, "mean")->u.f, jv_get(kl, "p99")->u.f, t1 && t1->t == JV_FLOAT ? t1->u.f : 0.0, res->receipt_paths[i]);
    }
    /* the summary in llama-perplexity --kl-divergence's shape, then the receipt path */
    for (size_t i = 0; i < res->n; i++) {
        const jv *r = res->receipts[i], *ts = jv_get(jv_get(r, "x_fidelity"), "token_statistics");
        fprintf(hf, "\n###### %s vs %s (Q = candidate, base = reference) ######\n",
                jv_get_str(jv_get(r, "candidate"), "label"), jv_get_str(jv_get(r, "reference"), "label"));
        if (ts && ts->t == JV_OBJ) fd_tok_stats_print(ts, hf);
        else {
            const char *why = jv_get_str(jv_get(r, "x_fidelity"), "token_statistics_note");
            fprintf(hf, "(%s)\n", why ? why : "no token statistics");
        }
        fprintf(hf, "receipt: %s\n", res->receipt_paths[i]);
    }
    return advisory;
}

/* --paired: OUT/paired-receipt.json from the two receipts into *pr; FD_EXIT_REFUSED (printed) or 0 */
static int write_paired(const cargs *a, const fd_cmp_result *res, FILE *hf, jv **pr, fd_err *e)
{
    int rc = 0;
    fd_buf pp = {0};
    fd_buf_printf(&pp, "%s/paired-receipt.json", a->o.out);
    fd_paired_opts po = {res->receipt_paths[0], res->receipt_paths[1], a->o.reference, a->tie, a->o.no_bootstrap,
                         a->o.created_utc};
    fd_buf b = {0};
    if (fd_paired_build(&po, pr, e) || jv_dump(*pr, &JV_PRETTY, &b, e) ||
        (fd_buf_putc(&b, '\n'), fd_write_atomic(pp.p, b.p, b.n, e))) {
        printf("REFUSED [%s]: %s (%s); no paired receipt written, the comparison receipts stand\n", e->code, e->msg,
               e->rule[0] ? e->rule : "paired");
        jv_free(*pr);
        *pr = NULL;
        rc = FD_EXIT_REFUSED;
    } else {
        fputc('\n', hf);
        fd_paired_print(*pr, hf);
        fprintf(hf, "paired receipt: %s\n", pp.p);
    }
    fd_buf_free(&b);
    fd_buf_free(&pp);
    return rc;
}

/* --json: the receipt (one candidate), an array of them, or {receipts, paired} on stdout */
static void print_json(const fd_cmp_result *res, int paired, const jv *pr, fd_err *e)
{
    fd_buf b = {0};
    jv *arr = NULL;
    if (paired) {
        jv *rs = jv_arr();
        arr = jv_obj();
        for (size_t i = 0; i < res->n; i++) jv_push(rs, jv_copy(res->receipts[i]));
        jv_set(arr, "receipts", rs);
        jv_set(arr, "paired", jv_copy(pr));
    } else if (res->n > 1) {
        arr = jv_arr();
        for (size_t i = 0; i < res->n; i++) jv_push(arr, jv_copy(res->receipts[i]));
    }
    if (!jv_dump(arr ? arr : res->receipts[0], &JV_CANON, &b, e)) printf("%s\n", b.p);
    fd_buf_free(&b);
    jv_free(arr);
}

/* rank 0's outputs after the comparison: text, --paired, --json, --emit-submission, --report */
static int outputs(cargs *a, fd_cmp_result *res, fd_err *e)
{
    int rc = FD_EXIT_OK;
    /* human text: stdout, or stderr under --json, whose stdout is one JSON document
     * (the receipt with one candidate, an array of them with several) */
    FILE *hf = a->json ? stderr : stdout;
    int advisory = print_results(res, hf);
    jv *pr = NULL;
    if (a->paired) rc = write_paired(a, res, hf, &pr, e);
    if (a->json && rc != FD_EXIT_REFUSED) print_json(res, a->paired, pr, e);
    jv_free(pr);
    if (rc != FD_EXIT_REFUSED) rc = advisory ? FD_EXIT_WARN : FD_EXIT_OK;
    if (a->emit_submission && emit_submissions(res, a->provenance, a->measurer, hf)) rc = FD_EXIT_REFUSED;
    if (a->report) { /* the receipts are written; the candidates supply their declared bits */
        fd_rpt_opts ro = {.receipts = (const char **)res->receipt_paths, .nreceipts = res->n,
                          .datasets = a->cands, .ndatasets = a->o.ncand};
        if (fd_rpt_write(&ro, a->report, e)) {
            printf("REFUSED [%s]: %s\n", e->code, e->msg);
            rc = FD_EXIT_REFUSED;
        } else fprintf(hf, "REPORT -> %s\n", a->report);
    }
    return rc;
}

int cmd_compare(int argc, char **argv)
{
    cargs a;
    memset(&a, 0, sizeof a);
    fd_cmp_opts *o = &a.o;
    o->verify_tensors = 1;
    a.cands = fd_xcalloc((size_t)argc, sizeof *a.cands);
    a.labels = fd_xcalloc((size_t)argc, sizeof *a.labels);
    a.tie = FD_PAIRED_TIE_DEFAULT;
    int rc = FD_EXIT_OK;
    char **local = fd_xcalloc((size_t)argc + 1, sizeof *local);
    o->progress = isatty(2);
    o->kernel = getenv("FIDELITY_KERNEL");
    if ((rc = parse_args(argc, argv, &a))) goto done;
    /* hf:// sides are fetched (verified, per repo and revision) before anything else */
    a.hub.allow_partial = o->allow_partial;
    if (fd_cli_hub_resolve(o->reference, &a.hub, &local[0])) { rc = FD_EXIT_REFUSED; goto done; }
    o->reference = local[0];
    for (size_t i = 0; i < o->ncand; i++) {
        if (fd_cli_hub_resolve(a.cands[i], &a.hub, &local[i + 1])) { rc = FD_EXIT_REFUSED; goto done; }
        a.cands[i] = local[i + 1];
    }
    o->candidates = a.cands;
    o->candidate_labels = a.labels;
    fd_cmp_result res;
    fd_err e = {0};
    /* under mpirun the records are sharded across the ranks and rank 0
     * writes everything; every rank exits with rank 0's status */
    fd_dist dist;
    if (fd_dist_open(&dist, NULL, NULL, &e)) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        rc = FD_EXIT_REFUSED;
        goto done;
    }
    o->dist = &dist;
    if (dist.rank) o->progress = 0;
    if (fd_compare(o, &res, &e)) {
        if (!dist.rank) printf("REFUSED [%s]: %s (gate %s)\n", e.code, e.msg, e.rule[0] ? e.rule : "-");
        rc = FD_EXIT_REFUSED;
    } else if (dist.rank) fd_cmp_result_free(&res);
    else {
        if (dist.launched) fprintf(stderr, "compare: %d ranks (records sharded, gathered on rank 0)\n", dist.size);
        rc = outputs(&a, &res, &e);
        fd_cmp_result_free(&res);
    }
    fd_dist_bcast(&dist, &rc, sizeof rc, 0);
    fd_dist_close(&dist);
done:
    for (int i = 0; i <= argc; i++) free(local[i]);
    free(local);
    free(a.cands);
    free(a.labels);
    return rc;
}

/* paired A B: the paired analysis of two comparison receipts of one reference */
static int paired_usage(FILE *f, int code)
{
    fprintf(f, "usage: fidelity paired RECEIPT_A RECEIPT_B --out FILE [--reference DATASET] [--tie-tolerance NATS]\n"
               "  [--no-bootstrap] [--json] [--created-utc T]\n"
               "       fidelity paired --check PAIRED_RECEIPT   (seal and meaning of a paired receipt)\n"
               "  B - A per context of two comparison receipts against the same reference (tokenwise-kld.npy beside\n"
               "  each), context-cluster bootstrap CI, wins (tie tolerance, default 1e-6 nats), sign test by document\n"
               "  (--reference: the panel's document_id; else per context), largest differences; a sealed\n"
               "  fidelity.paired-comparison-receipt.v1 (docs/COMPARE-IMPL.md \"Paired A-vs-B\").\n"
               "\nEXAMPLES\n"
               "  fidelity compare --reference R --candidate A --candidate B --out cmp --paired\n"
               "  fidelity paired cmpA/comparison-receipt.json cmpB/comparison-receipt.json --out p.json --reference R\n");
    return code;
}

int cmd_paired(int argc, char **argv)
{
    fd_paired_opts po = {0};
    po.tie_tolerance = FD_PAIRED_TIE_DEFAULT;
    const char *out = NULL, *pos[2] = {0}, *check = NULL;
    int npos = 0, json = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(s, "--help") || !strcmp(s, "-h")) return paired_usage(stdout, FD_EXIT_OK);
        if (!strcmp(s, "--out") && v) { out = v; i++; }
        else if (!strcmp(s, "--check") && v) { check = v; i++; }
        else if (!strcmp(s, "--reference") && v) { po.reference = v; i++; }
        else if (!strcmp(s, "--created-utc") && v) { po.created_utc = v; i++; }
        else if (!strcmp(s, "--tie-tolerance") && v && parse_tol(v, &po.tie_tolerance)) i++;
        else if (!strcmp(s, "--no-bootstrap")) po.no_bootstrap = 1;
        else if (!strcmp(s, "--json")) json = 1;
        else if (s[0] != '-' && npos < 2) pos[npos++] = s;
        else { fprintf(stderr, "fidelity paired: bad or unknown option %s\n", s); return paired_usage(stderr, FD_EXIT_USAGE); }
    }
    if (check && !npos && !out) {
        fd_err ce = {0};
        jv *doc = jv_parse_file(check, &ce);
        if (!doc || fd_paired_check(doc, &ce)) {
            printf("REFUSED [%s]: %s: %s\n", ce.code, check, ce.msg);
            jv_free(doc);
            return FD_EXIT_REFUSED;
        }
        printf("OK %s: %s, sealed %s\n", check, FD_PAIRED_SCHEMA, jv_get_str(doc, "receipt_sha256"));
        jv_free(doc);
        return FD_EXIT_OK;
    }
    if (npos != 2 || !out || check) {
        fprintf(stderr, "fidelity paired: %s\n", check ? "--check takes one paired receipt and nothing else"
                                                 : npos != 2 ? "two receipts (A, then B) are required" : "--out FILE is required");
        return paired_usage(stderr, FD_EXIT_USAGE);
    }
    po.receipt_a = pos[0];
    po.receipt_b = pos[1];
    fd_err e = {0};
    jv *pr = NULL;
    fd_buf b = {0};
    if (fd_paired_build(&po, &pr, &e) || jv_dump(pr, &JV_PRETTY, &b, &e) || (fd_buf_putc(&b, '\n'), fd_write_atomic(out, b.p, b.n, &e))) {
        printf("REFUSED [%s]: %s\n", e.code, e.msg);
        jv_free(pr);
        fd_buf_free(&b);
        return FD_EXIT_REFUSED;
    }
    FILE *hf = json ? stderr : stdout;
    fd_paired_print(pr, hf);
    fprintf(hf, "paired receipt: %s\n", out);
    if (json) {
        fd_buf c = {0};
        if (!jv_dump(pr, &JV_CANON, &c, &e)) printf("%s\n", c.p);
        fd_buf_free(&c);
    }
    jv_free(pr);
    fd_buf_free(&b);
    return FD_EXIT_OK;
}
