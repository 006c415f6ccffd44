/* `fidelity capture`: runs the C forward of the checkpoint's architecture (engine/model.h)
 * over a token panel and writes a sealed dataset (FORMAT.md §6 mechanics):
 * one window per forward, the hook is the input of lm_head (the final
 * RMSNorm output), scored rows are hidden[:-1][mask[:-1] & mask[1:]]
 * (windows must have all-ones masks: padding is refused, as the forward
 * implements no padding), the head is lm_head.weight (embed_tokens when
 * tied) copied verbatim (BF16 only: anything else would be a lossy cast).
 *
 * Checkpoint identity: sha256 of the canonical JSON (separators ",",":",
 * sorted keys as written) {"algorithm": FD_CKPT_ALGORITHM, "files":
 * [{"name","sha256","size"}...]} over config.json and every *.safetensors
 * file directly in the model directory, sorted by name (byte order). */
#ifndef FD_CAPTURE_CAPTURE_H
#define FD_CAPTURE_CAPTURE_H
#include "engine/ops/matmul.h"
#include "format/json.h"
#include "util/err.h"

#define FD_CKPT_ALGORITHM                                                                               \
    "sha256 of the canonical JSON {algorithm, files}; files = config.json and every *.safetensors file " \
    "of the checkpoint directory, sorted by name, each {name, sha256 of the file bytes, size in bytes}"

typedef struct fd_capture_opts {
    const char *model, *panel, *out, *role, *lane, *dataset_id, *dataset_name;
    const char *panel_role;         /* default "final" */
    const char *scope_file;         /* required unless role is root */
    const char *run_name, *cold_run, *weights_repository;
    const char *weights_revision;   /* the 40-hex commit of the weights (weights.model_revision) */
    const char *repository;         /* dataset.repository: the owner/name it will be published to */
    long windows;                   /* <= 0: all */
    double declared_bits;           /* weights.declared_bits; <= 0: not declared */
    int force;
    int emit_k3_compat;             /* compat/ kimi-k3 view inside the seal (src/format/k3compat.h) */
    size_t score_from;              /* 0: every row; N: rows N .. L-2 of each window (llama.cpp: n_ctx/2) */
    int progress;                   /* per-window JSON lines on stderr */
    int resume;                     /* continue from OUT.resume/ (capture/resume.h) */
    int threads;                    /* <= 0: one per online CPU (no effect on any bit) */
    const char *kernel;             /* GEMM path override (no effect on any bit) */
    fd_order order;                 /* bf16 product order (engine/ops/matmul.h); 0: tile */
    const char *sanity_prompt;      /* NULL: "The capital of France is" */
    const char *sanity_expect;      /* NULL/blank: the probe records, never refuses on content */
    int no_sanity_check;            /* skip the probe (recorded as skipped, caveat disclosure) */
    const char *schedule;           /* NULL/"window-outer" | "layer-outer" (same bits) */
    unsigned long long memory_limit; /* bytes for the pre-flight; 0: detect (RLIMIT_AS, cgroup, MemAvailable) */
    const char *memory_report;      /* JSON {peak_rss_bytes, checkpoint_bytes, ...} written after the seal */
    /* --panel-binding FILE --panel-binding-sha256 HEX [--panel-tokenizer-root DIR]: the
     * panel-binding document the panel must resolve to (tokenizer files
     * verified under the root, default --model), recorded as runtime
     * capture_tool.resolved_panel_binding (capture/panel_binding.h) */
    const char *panel_binding, *panel_binding_sha256, *panel_tokenizer_root;
    const char *author;             /* dataset.author handle/name (the Python tool's --author); NULL: "fidelity", no handle */
} fd_capture_opts;

/* files: the [{name, sha256, size}] list (owned by the caller). */
int fd_checkpoint_identity(const char *dir, char hex[65], char config_sha[65], jv **files, fd_err *e);
/* hex = sha256 of the canonical {algorithm, files} (the identity's digest of a file list). */
int fd_checkpoint_files_digest(const jv *files, char hex[65], fd_err *e);
/* A --scope-file document reduced to policy/head_policy/kv_cache_dtype/
 * assignments with a recomputed scope_digest. */
jv *fd_capture_scope_load(const char *path, fd_err *e);
int fd_capture_run(const fd_capture_opts *o, jv **manifest, fd_err *e);

/* One rank's share of a distributed capture (capture/shard.h, docs/MPI.md):
 * the windows [lo, hi) of T = min(ranks, windows) contiguous shares into
 * o->out + ".shard-R-of-T".  A shard that already verifies and belongs to
 * this run is reused; a rank beyond T has nothing to do (idle). */
typedef struct fd_capture_shard {
    int rank, ranks;            /* in */
    const char *run_stamp;      /* in: the cold_run recorded when --cold-run is absent (rank 0's) */
    char *path;                 /* out (caller frees): the shard written or reused; NULL when idle */
    int reused, idle;           /* out */
} fd_capture_shard;
int fd_capture_run_shard(const fd_capture_opts *o, fd_capture_shard *s, jv **manifest, fd_err *e);

#endif
