/* Foreign captures in and out of the fidelity-dataset format
 * (docs/ADAPTERS.md): the llama.cpp .kld base file both ways, kimi-k3
 * artifacts in. */
#ifndef FD_ADAPT_H
#define FD_ADAPT_H
#include <stdint.h>
#include "util/err.h"

typedef struct fd_adapt_opts {
    const char *in, *out;
    const char *dataset_id, *name, *role, *lane;
    const char *head;            /* safetensors BF16 [vocab, hidden]: the head DECLARED to
                                    have produced the logits (optional) */
    const char *tokenizer_id, *weights_repository, *panel_id;
    int64_t vocab;               /* > 0: the file's n_vocab must equal it */
    int force;
    const char *created_utc;     /* NULL: now (tests pin it) */
    int64_t limit;               /* k3: > 0 keeps the first N contexts */
    int emit_k3_compat;          /* also write the compat/ view inside the seal */
} fd_adapt_opts;

/* .kld -> a sealed logit-form dataset (lossy_codec declared, score_from =
 * n_ctx/2).  Prints nothing; *summary receives a one-line description. */
int fd_adapt_llamacpp_kld(const fd_adapt_opts *o, char summary[512], fd_err *e);

/* A kimi-k3 artifact directory (suite-manifest.json, reference-hidden/ or
 * ref/, lm-head/) -> a sealed derived dataset; source is "k3v1" or
 * "k3v0-window" (recorded, same reader). */
int fd_adapt_k3(const fd_adapt_opts *o, const char *source, char summary[512], fd_err *e);

typedef struct fd_export_opts {
    const char *dataset, *out;
    int window;                  /* 16 (llama.cpp) or 24 (ik_llama.cpp) */
    int verify_tensors, force;
    const char *kernel;          /* NULL: the default by CPU features */
} fd_export_opts;

/* A hidden-form dataset + its head -> a llama.cpp --kl-divergence-base file. */
int fd_export_llamacpp_kld(const fd_export_opts *o, char summary[512], fd_err *e);

#endif
