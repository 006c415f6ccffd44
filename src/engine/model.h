/* One interface per architecture (issue 17): everything the rest of the
 * program knows about a model_type goes through an fd_arch, and the static
 * table FD_ARCHS (engine/archtable.c: one line per architecture) is the only
 * place that lists them.  An architecture lives in its own folder
 * (engine/arch/<model_type>/) and calls only the shared ops (engine/ops/,
 * engine/ops/ops.h); docs/ARCHITECTURE.md "A new architecture" says which file
 * to copy.
 *
 *   parse     config.json -> the common fd_glm_config fields + the
 *             architecture's private part (c->ext); refusals bad_config
 *             naming the field
 *   tensors   THE tensor list of a config: the loader's check
 *             (engine/weights.c), the fixture writer (capture/fixture.c) and
 *             the GGUF name map all read it
 *   begin / layer / end
 *             the forward one decoder layer at a time (window-outer runs
 *             them back to back for one window, layer-outer interleaves the
 *             windows: engine/model.c fd_forward_*, capture/schedule.c); the
 *             state a window keeps between layers is the architecture's
 *   gguf      llama.cpp's spelling of the architecture (engine/gguf_model.h):
 *             its general.architecture names, the HF -> GGUF tensor-name
 *             table and the config built from the metadata; NULL: no GGUF
 *   stream    the residual stream between layers (FIDELITY_FORWARD_INJECT)
 *   state_bytes / wide
 *             the memory pre-flight's per-window state and widest
 *             activation row, per architecture (capture/schedule.c)
 *   renames / skipped (optional)
 *             the checkpoint's other spellings of the trunk: NULL-ended
 *             pairs (stored, logical) of name pieces the loader's check
 *             replaces (each pair's first occurrence, pairs in order; a
 *             piece starting with '^' only at the start of the name) before
 *             it looks (a name present in two spellings is refused), and
 *             the prefixes of what is not the text trunk (a vision tower)
 *             that it reports ignored
 *   extra (optional)
 *             the tensors outside the trunk that transformers' checkpoint
 *             holds (under the skipped prefixes): the fixture writes them so
 *             that transformers loads it cleanly; the loader never reads them
 *   presets   the `fidelity fixture --preset` checkpoints of the
 *             architecture (engine/fixture_preset.h; its <arch>_fixture.c),
 *             ended by an entry whose name is NULL; capture/fixture.c finds
 *             them through FD_ARCHS */
#ifndef FD_ENGINE_MODEL_H
#define FD_ENGINE_MODEL_H
#include <stddef.h>
#include <stdint.h>
#include "engine/archtable.h"
#include "engine/config.h"
#include "engine/fixture_preset.h"
#include "engine/ops/matmul.h"
#include "engine/weights.h"
#include "format/json.h"
#include "util/err.h"

/* How a fixture initialises a tensor (transformers' _init_weights). */
enum { FD_INIT_NORMAL, FD_INIT_ONES, FD_INIT_ZEROS, FD_INIT_DT_BIAS, FD_INIT_A_LOG };

/* One expected tensor.  dtype: what a bf16 checkpoint saved by transformers
 * holds (the fixture writes it); f32only: the loader accepts F32 only.
 * dtype "I64": a table of expert indices (deepseek_v4's tid2eid), stored I64
 * or I32, every entry in [0, n_routed_experts) (the loader refuses it by
 * name otherwise; the fixture writes distinct experts along each row). */
typedef struct fd_tensor_spec {
    const char *name;
    const char *dtype;      /* "BF16" | "F32" */
    int init;               /* FD_INIT_* */
    int f32only;
    int ndim;
    uint64_t shape[5];
} fd_tensor_spec;
typedef void (*fd_tensor_fn)(void *ctx, const fd_tensor_spec *t);

typedef struct fd_arch {
    fd_arch_info info;      /* model_type, class, formats (`fidelity architectures`) */
    const char *prefix;     /* the text trunk: PREFIX embed_tokens., layers.N., norm. */
    int (*parse)(const jv *doc, fd_glm_config *c, fd_err *e);
    void (*free_ext)(void *ext);
    /* w: the checkpoint whose spelling of the experts is read (w->fused
     * set); NULL: the spelling transformers saves (per expert) */
    void (*tensors)(const fd_glm_config *c, fd_weights *w, fd_tensor_fn f, void *ctx);
    void *(*begin)(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
    int (*layer)(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e);
    int (*end)(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out_bf16, fd_err *e);
    void (*free_state)(void *st);
    /* the residual stream a window keeps between layers (bf16, *n
     * elements): what layer L reads and replaces; FIDELITY_FORWARD_INJECT
     * (engine/driver.c) writes it before layer L.  NULL: not injectable */
    uint16_t *(*stream)(const fd_glm_config *c, void *st, size_t *n);
    uint64_t (*state_bytes)(const fd_glm_config *c, uint64_t S);
    uint64_t (*wide)(const fd_glm_config *c);
    const struct fd_gguf_arch *gguf;
    const char *const *renames;
    const char *const *skipped; /* prefixes ignored by name (a vision tower, an MTP head); NULL: none */
    void (*extra)(const fd_glm_config *c, fd_tensor_fn f, void *ctx);
    const fd_fixture_preset *presets; /* ends with {.name = NULL}; NULL: none */
    /* the module the end step reads in place of PREFIX norm. (what the
     * layer-outer schedule maps for it: qwen4_exp's hyper_connection_mixer);
     * NULL: norm */
    const char *final_name;
    /* the GGUF converter's rewrites read as stored (engine/gguf_model.h
     * fd_gguf_stored: qwen35's ssm_a, 1 + w norms, value-head reorder); NULL: none */
    const struct fd_gguf_stored *gguf_stored;
} fd_arch;

/* the architectures (their folders), listed once in archtable.c */
extern const fd_arch FD_ARCH_GLM_MOE_DSA, FD_ARCH_GLM5_NEXT;
extern const fd_arch FD_ARCH_DEEPSEEK_V3, FD_ARCH_DEEPSEEK_V32, FD_ARCH_DEEPSEEK_V4, FD_ARCH_KIMI_K25, FD_ARCH_KIMI_LINEAR;
extern const fd_arch FD_ARCH_LLAMA, FD_ARCH_QWEN3, FD_ARCH_QWEN3_MOE;
extern const fd_arch FD_ARCH_QWEN3_5, FD_ARCH_QWEN3_5_TEXT, FD_ARCH_QWEN3_5_MOE, FD_ARCH_QWEN3_5_MOE_TEXT;
extern const fd_arch FD_ARCH_MINIMAX_M2;
extern const fd_arch FD_ARCH_QWEN4_EXP, FD_ARCH_QWEN4_EXP_TEXT;
extern const fd_arch *const FD_ARCHS[];
extern const size_t FD_N_ARCHS;

/* The forward of c->arch, one window: out_bf16 = S x hidden_size bf16, the
 * final-norm rows (the lm_head input). */
int fd_forward_hidden(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S,
                      uint16_t *out_bf16, fd_err *e);
/* The same one layer at a time (the layer-outer schedule): begin, every
 * layer in order and end give exactly fd_forward_hidden's bits, whatever
 * other windows run in between. */
typedef struct fd_fwd fd_fwd;
fd_fwd *fd_forward_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e);
int fd_forward_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, fd_fwd *f, fd_err *e);
int fd_forward_end(const fd_weights *w, const fd_glm_config *c, fd_fwd *f, uint16_t *out_bf16, fd_err *e);
void fd_forward_free(fd_fwd *f);

/* NULL when no architecture has this model_type. */
const fd_arch *fd_arch_of(const char *model_type);
/* The tensor-name prefixes of the architecture: "<prefix>layers.L.",
 * "<prefix>embed_tokens.", "<prefix>norm." into out (cap bytes). */
void fd_arch_layer_prefix(const fd_arch *a, long long L, char *out, size_t cap);
void fd_arch_prefix(const fd_arch *a, const char *what, char *out, size_t cap);
/* The names of the architecture's fixture presets, sep between them, into
 * out (cap bytes; "" when it has none). */
void fd_arch_preset_names(const fd_arch *a, const char *sep, char *out, size_t cap);

#endif
