#include "capture/schedule.h"
#include "engine/model.h"
#include "util/buf.h"
#include "util/progress.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int fd_layer_outer(const fd_mm *m, fd_weights *W, const fd_glm_config *c, const fd_panel *P, fd_probe_plan *pp,
                   const char *head_tensor, uint16_t **hid, double *seconds, jv **probe_record, int progress,
                   fd_err *e)
{
    char head_prefix[96];
    snprintf(head_prefix, sizeof head_prefix, "%.*s", (int)(strrchr(head_tensor, '.') - head_tensor + 1), head_tensor);
    size_t n = P->n + (pp && pp->ids ? 1 : 0), H = (size_t)c->hidden_size;
    fd_fwd **st = fd_xcalloc(n + 1, sizeof *st);
    int rc = -1;
    char prefix[96];
    /* window i < P->n is panel window i; the probe's is the last (FORMAT §6: window N+1 of the pass) */
#define IDS(i) ((i) < P->n ? P->w[i].ids : pp->ids)
#define LEN(i) ((i) < P->n ? P->w[i].n_ids : pp->n)
    const fd_arch *a = c->arch;
    char embed[96], norm[96];
    fd_arch_prefix(a, "embed_tokens", embed, sizeof embed);
    fd_arch_prefix(a, "norm", norm, sizeof norm);
    if (fd_weights_map_prefix(W, embed, e)) goto out;
    for (size_t i = 0; i < n; i++) {
        double t0 = now_s();
        if (!(st[i] = fd_forward_begin(W, c, IDS(i), LEN(i), e))) goto out;
        if (i < P->n) seconds[i] = now_s() - t0;
    }
    fd_weights_unmap(W);
    double start = now_s();
    for (long long L = 0; L < c->num_hidden_layers; L++) {
        double t0 = now_s();
        fd_arch_layer_prefix(a, L, prefix, sizeof prefix);
        if (fd_weights_map_prefix(W, prefix, e)) goto out;
        uint64_t mapped = W->mapped_bytes;
        for (size_t i = 0; i < n; i++) {
            double t1 = now_s();
            if (fd_forward_layer(m, W, c, L, st[i], e)) goto out;
            if (i < P->n) seconds[i] += now_s() - t1;
        }
        fd_weights_unmap(W); /* the layer's pages leave the address space */
        if (progress) {
            fprintf(stderr, "{\"stage\":\"layer\",\"layer\":%lld,\"windows\":%zu,\"mapped_bytes\":%" PRIu64 ",\"seconds\":%.3f}\n",
                    L, n, mapped, now_s() - t0);
            fd_progress_line(stderr, "capture (layer-outer)", (uint64_t)L + 1, (uint64_t)c->num_hidden_layers, "layers", 0,
                             now_s() - start, 0);
        }
    }
    if (fd_weights_map_prefix(W, norm, e) || fd_weights_map_prefix(W, head_prefix, e)) goto out;
    for (size_t i = 0; i < n; i++) {
        uint16_t *out = fd_xmalloc(LEN(i) * H * 2 + 2);
        double t2 = now_s();
        if (fd_forward_end(W, c, st[i], out, e)) { free(out); goto out; }
        if (i < P->n) seconds[i] += now_s() - t2;
        fd_forward_free(st[i]);
        st[i] = NULL;
        if (i < P->n) { hid[i] = out; continue; }
        const fd_tensor *head = fd_weights_get(W, head_tensor);
        int pr = fd_probe_finish(pp, m, c, head, out + (LEN(i) - 1) * H, probe_record, e);
        free(out);
        if (pr) goto out;
    }
    rc = 0; /* the head stays mapped: the dataset copies it */
out:
#undef IDS
#undef LEN
    for (size_t i = 0; i < n; i++) fd_forward_free(st[i]);
    free(st);
    return rc;
}

/* ------------------------------------------------------------ pre-flight */

static uint64_t read_u64_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char b[64] = {0};
    size_t r = fread(b, 1, sizeof b - 1, f);
    fclose(f);
    if (!r || !strncmp(b, "max", 3)) return 0;
    unsigned long long v = strtoull(b, NULL, 10);
    return v >= (1ull << 60) ? 0 : (uint64_t)v; /* v1 "unlimited" is a huge number */
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
    return (uint64_t)kb * 1024;
}

/* field 0 of /proc/self/statm: the address space; field 1: resident */
static uint64_t statm(int field)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long long v[2] = {0, 0};
    if (f) {
        if (fscanf(f, "%llu %llu", &v[0], &v[1]) != 2) v[0] = v[1] = 0;
        fclose(f);
    }
    return (uint64_t)v[field] * 4096;
}

int fd_memory_preflight(fd_weights *W, const fd_glm_config *c, const fd_panel *P, int layer_outer,
                        uint64_t explicit_limit, fd_mem_estimate *est, fd_err *e)
{
    memset(est, 0, sizeof *est);
    uint64_t all = 0, layer = 0, S = 0;
    for (size_t i = 0; i < W->n; i++) all += W->t[i].nbytes;
    char prefix[96], embed[96];
    for (long long L = 0; L < c->num_hidden_layers; L++) {
        fd_arch_layer_prefix(c->arch, L, prefix, sizeof prefix);
        uint64_t b = fd_weights_prefix_bytes(W, prefix);
        if (b > layer) layer = b;
    }
    for (size_t i = 0; i < P->n; i++) S = P->w[i].n_ids > S ? P->w[i].n_ids : S;
    /* layer-outer maps the embedding (begin), then one layer at a time,
     * then the final norm and the head (end; the head stays mapped for the
     * dataset): the peak is the largest of the three */
    char norm[96];
    fd_arch_prefix(c->arch, "embed_tokens", embed, sizeof embed);
    fd_arch_prefix(c->arch, "norm", norm, sizeof norm);
    uint64_t emb = fd_weights_prefix_bytes(W, embed), head = fd_weights_prefix_bytes(W, norm);
    head += c->tie_word_embeddings ? emb : fd_weights_prefix_bytes(W, "lm_head.");
    uint64_t peak = layer;
    if (emb > peak) peak = emb;
    if (head > peak) peak = head;
    uint64_t n = layer_outer ? P->n + 1 : 1; /* windows alive at once (+ the probe's) */
    /* a layer's packed bf16 copy (a quantized layer grows to its bf16 size),
     * per window alive its state between layers (the architecture's:
     * residual stream, selection bitmap, output rows), and the largest
     * per-layer temporaries: a few rows of the widest activation per
     * position, and 4 MB for the allocator */
    uint64_t wide = c->arch->wide(c);
    uint64_t packed = 0;
    for (size_t i = 0; i < W->n; i++) /* the largest layer at its bf16 (logical) size */
        if (W->t[i].qfmt != FD_Q_NONE) { packed = layer * 4; break; }
    if (!packed) packed = layer;
    est->weights = layer_outer ? peak : all;
    est->working = packed + n * c->arch->state_bytes(c, S) + 2 * S * wide * 2 + ((uint64_t)4 << 20);
    int as = 0; /* the limit is on the address space (then what the process has mapped counts), else on memory */
    if (explicit_limit) {
        est->limit = explicit_limit;
        snprintf(est->limit_source, sizeof est->limit_source, "--memory-limit");
    } else {
        struct rlimit rl;
        if (!getrlimit(RLIMIT_AS, &rl) && rl.rlim_cur != RLIM_INFINITY) {
            est->limit = (uint64_t)rl.rlim_cur;
            as = 1;
            snprintf(est->limit_source, sizeof est->limit_source, "RLIMIT_AS (ulimit -v)");
        } else if (layer_outer) {
            uint64_t cg = read_u64_file("/sys/fs/cgroup/memory.max");
            if (!cg) cg = read_u64_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
            uint64_t av = mem_available();
            if (cg && (!av || cg < av)) {
                est->limit = cg;
                snprintf(est->limit_source, sizeof est->limit_source, "cgroup memory limit");
            } else if (av) {
                est->limit = av;
                snprintf(est->limit_source, sizeof est->limit_source, "MemAvailable");
            }
        }
    }
    uint64_t base = statm(as ? 0 : 1);
    est->total = est->weights + est->working + base;
    if (est->limit && est->total > est->limit)
        return fd_fail(e, "insufficient_memory", "",
                       "%s: the %s schedule needs about %" PRIu64 " MB (weights mapped %" PRIu64 " MB, working %" PRIu64
                       " MB, process %" PRIu64 " MB) and %s allows %" PRIu64 " MB%s",
                       W->root, layer_outer ? "layer-outer" : "window-outer", est->total >> 20, est->weights >> 20,
                       est->working >> 20, base >> 20, est->limit_source, est->limit >> 20,
                       layer_outer ? "" : "; --schedule layer-outer maps one layer at a time");
    return 0;
}
