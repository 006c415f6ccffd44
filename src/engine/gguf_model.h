/* A GGUF model (llama.cpp's file, one file or a split set) opened as an
 * engine checkpoint (docs/QUANT-FORMATS.md "GGUF capture"):
 *
 *   config   the architecture's hyperparameters from the GGUF metadata
 *            (its fd_gguf_arch.config hook builds the config.json document
 *            its parse hook reads; a key missing or contradicting another,
 *            or a tensor's shape, is refused bad_gguf_config naming it)
 *   tensors  the architecture's ONE tensor list (fd_arch.tensors, per-expert
 *            spelling) mapped onto llama.cpp's names by the architecture's
 *            table (fd_gguf_arch.map): each HF tensor is a view of a GGUF
 *            tensor (rows row0.. of a stacked expert tensor, Q/K rows
 *            un-permuted, kv_b_proj rebuilt from attn_k_b / attn_v_b, a
 *            projection the converter split in two concatenated back)
 *   data     BF16 / F32 views of whole rows are read in place; every other
 *            view is dequantized row by row inside the Linear repack
 *            (fd_tensor_row_bf16: ggml decoder -> float32 -> bf16 RNE), never
 *            as a copy of the model; the head (lm_head, or embed_tokens when
 *            tied) too when quantized: the candidate's own head, written to
 *            the dataset as bf16 a block of rows at a time.
 * Refusals: unsupported_gguf_architecture (general.architecture with no
 * table), bad_gguf_config, checkpoint_mismatch (a GGUF tensor missing,
 * mis-shaped or left unmapped), gguf_unsupported_type, and the reader's. */
#ifndef FD_ENGINE_GGUF_MODEL_H
#define FD_ENGINE_GGUF_MODEL_H
#include "engine/config.h"
#include "engine/weights.h"
#include "format/gguf.h"
#include "format/json.h"

/* How an HF tensor is read from the GGUF tensor(s). */
enum {
    FD_GG_ROWS = 0,    /* rows [row0, row0 + N) of the GGUF tensor (ne reversed = HF shape) */
    FD_GG_PERMUTE = 1, /* llama.cpp's q/k permute undone: HF row h*hd + i*hd/2 + j is GGUF row h*hd + 2j + i */
    FD_GG_KV_B = 2,    /* kv_b_proj [nh*(dn+dv), rkv] from attn_k_b [nh][rkv][dn] (transposed) and attn_v_b [nh][dv][rkv] */
    /* llama.cpp's linear-attention value-head reorder (_LinearAttentionVReorderBase:
     * grouped by key head -> tiled) undone: HF index (g*r + j)*hd + d (key head
     * g, its j-th value head) is GGUF index (j*nk + g)*hd + d, after the first
     * `first` rows (fd_gguf_arch.vheads gives nk, r, value head dim, first);
     * a 1-D or conv view is rebuilt at open as F32 (size-1 dims squeezed, as
     * the converter stores them) */
    FD_GG_V_QKV = 3,   /* rows, hd = the value head dim, after the q and k rows (in_proj_qkv, conv1d) */
    FD_GG_V_HD = 4,    /* rows, hd = the value head dim (in_proj_z) */
    FD_GG_V_ONE = 5,   /* rows / elements, hd = 1 (in_proj_a / in_proj_b, A_log, dt_bias) */
    FD_GG_V_COLS = 6,  /* columns, hd = the value head dim (out_proj) */
    /* rows [0, n1) from the GGUF tensor gguf, rows [n1, n1 + n2) from gguf2
     * (same row length; each dequantized in its own ggml type): a projection
     * the converter split in two along its rows (qwen4exp's index_qk_proj ->
     * indexer.q_proj + indexer.k_proj), concatenated back exactly */
    FD_GG_CAT2 = 7,
    /* a reshape: the same elements in the same order, the shapes equal once
     * their size-1 dims are dropped (glm5-next's conv1d [1, C, 1, K] for
     * [C, 1, K]); BF16 / F32 only, read in place */
    FD_GG_RESHAPE = 8,
};
#define FD_GG_IS_V(k) ((k) >= FD_GG_V_QKV && (k) <= FD_GG_V_COLS)

/* One row of an architecture's name table: HF name pattern -> GGUF name
 * pattern.  "%L" in both stands for the decoder layer (model.layers.N. /
 * blk.N.), "%E" in hf for a routed expert index (the GGUF tensor is the
 * stacked [E, rows, cols] one and the view starts at row E*rows). */
typedef struct fd_gguf_name {
    const char *hf, *gguf;
    int kind;          /* FD_GG_* */
    const char *gguf2; /* FD_GG_KV_B: the attn_v_b pattern; FD_GG_CAT2: the second part's */
} fd_gguf_name;

typedef struct fd_gguf_arch {
    const char *const *names;        /* general.architecture spellings, NULL-terminated */
    const fd_gguf_name *map;         /* the name table, {NULL}-terminated */
    /* The config.json document of the file's metadata (arch: the
     * general.architecture spelling, the metadata keys' prefix); NULL with
     * bad_gguf_config naming the key. */
    jv *(*config)(const fd_gguf_set *s, const char *arch, fd_err *e);
    /* GGUF tensors the config hook reads (llama's rope_freqs.weight), not
     * weights: neither mapped nor unexpected; NULL-terminated or NULL */
    const char *const *aux;
    /* `quantize --format gguf` (capture/quantize_gguf.c): the metadata the
     * converter writes for a config, what config() reads back; -1 with
     * gguf_write_unsupported for a config the format cannot say; NULL: the
     * architecture has no GGUF writer */
    int (*write_kv)(const fd_glm_config *c, fd_gguf_kvw *w, fd_err *e);
    /* the aux tensor NAME (one of aux) the converter writes for a config,
     * as F32 values (*data, caller frees, *n of them); 0 with *data NULL
     * when this config has none; NULL: no aux tensor is ever written */
    int (*write_aux)(const fd_glm_config *c, const char *name, float **data, uint64_t *n, fd_err *e);
} fd_gguf_arch;

/* An architecture whose converter rewrites tensors (fd_arch.gguf_stored):
 * the value-head reorder's parameters and what is read as stored. */
typedef struct fd_gguf_stored {
    /* FD_GG_V_* views: p = {key heads, value heads per key head, value head
     * dim, rows before the value rows of in_proj_qkv / conv1d} */
    void (*vheads)(const fd_glm_config *c, uint64_t p[4]);
    /* the converter's rewrites without a bit-exact inverse that the forward
     * reads as stored (fd_weights.gstored = this text, disclosed as
     * gguf_converter_rewrite_as_stored) */
    const char *what;
} fd_gguf_stored;

/* 1 when the HF name hf matches the table pattern p, binding %L / %E from
 * its digits; fd_gguf_name_expand writes p with %L replaced by L. */
int fd_gguf_name_match(const char *p, const char *hf, long long *L, long long *E);
void fd_gguf_name_expand(const char *p, long long L, char *out, size_t cap);

/* FD_GG_V_* (gguf_vheads.c): the GGUF index of HF index i (gp as
 * fd_tensor.gp); fd_gguf_vview checks GGUF tensor g against the view t of
 * that kind and sets v's gkind / gp (a Linear: dequantized row by row) or
 * rebuilds it whole as F32 (v->data owned, dtype F32): NULL, or why not. */
struct fd_tensor_spec;
uint64_t fd_gguf_vidx(const uint64_t gp[4], uint64_t i);
const char *fd_gguf_vview(const fd_gguf_stored *a, const fd_glm_config *c, const struct fd_tensor_spec *t, const fd_gguf_tensor *g,
                          int kind, fd_tensor *v);

/* llama.cpp's DeepseekV2Model name table (deepseek2, deepseek32, glm-dsa;
 * gguf_ds2map.c). */
extern const fd_gguf_name FD_GGUF_DS2_MAP[];

/* For the write_kv hooks: the keys TextModel.set_gguf_parameters of the
 * converter writes for every architecture (block_count, context_length,
 * embedding_length, feed_forward_length, attention.head_count,
 * attention.head_count_kv = kv_heads, rope.freq_base,
 * attention.layer_norm_rms_epsilon). */
void fd_gguf_kv_text_model(fd_gguf_kvw *w, const fd_glm_config *c, int64_t kv_heads);

/* For the config hooks: -1 with bad_gguf_config "metadata key
 * ARCH.rope.scaling.type is T: WHY" when the key is there and is not the
 * string "none" (the architecture reads no RoPE scaling from a GGUF). */
int fd_gguf_cfg_rope_none(const fd_gguf_set *s, const char *arch, const char *why, fd_err *e);

/* For the config hooks: frees the document d and returns NULL; the
 * contradicts form first refuses bad_gguf_config "metadata key ARCH.KEY is
 * GOT but WHY gives WANT". */
jv *fd_gguf_cfg_fail(jv *d);
jv *fd_gguf_cfg_contradicts(jv *d, const fd_gguf_set *s, const char *arch, const char *key, int64_t got, int64_t want,
                            const char *why, fd_err *e);

/* Metadata readers for the config hooks: "<arch>.<key>"; a missing key or
 * one of the wrong type is refused bad_gguf_config naming it (the _opt forms
 * return 1 when absent). */
int fd_gguf_cfg_int(const fd_gguf_set *s, const char *arch, const char *key, int64_t *out, fd_err *e);
int fd_gguf_cfg_int_opt(const fd_gguf_set *s, const char *arch, const char *key, int64_t *out, fd_err *e);
int fd_gguf_cfg_num(const fd_gguf_set *s, const char *arch, const char *key, double *out, fd_err *e);
int fd_gguf_cfg_num_opt(const fd_gguf_set *s, const char *arch, const char *key, double *out, fd_err *e);

/* A per-block metadata array "<arch>.<key>" of at least n elements, floats
 * (want_float) or integers / bools; NULL with bad_gguf_config naming the key
 * when missing or of another type (gguf_cfgarr.c). */
const fd_gguf_kv *fd_gguf_cfg_array(const fd_gguf_set *s, const char *arch, const char *key, int64_t n, int want_float,
                                    fd_err *e);
/* Element i of an array fd_gguf_cfg_array accepted, as a double. */
double fd_gguf_cfg_elem(const fd_gguf_kv *kv, uint64_t i);

/* The disclosure of a KDA model read from llama.cpp's converter (glm5-next,
 * kimi-linear): what the converter rewrote and how the forward takes it. */
#define FD_GGUF_KDA_STORED                                                                                              \
    "llama.cpp's converter stores the KDA ssm_a = -exp(float32(A_log)) in place of A_log (no bit-exact inverse): the " \
    "forward takes exp(A_log) = -ssm_a where transformers computes exp(A_log); kv_b_proj's split into attn_k_b / "    \
    "attn_v_b, the conv1d reshape and the expert stacking are undone exactly"

/* The shortest decimal (up to 9 significant digits) whose float32 rounding
 * is the float32 metadata value v: the config.json number the converter
 * read (1e-06 for 9.999999974752427e-07); v itself when none is shorter. */
double fd_gguf_f32_decimal(double v);
/* The rows (ne[1]) of GGUF tensor name, 0 when absent or not 2-D. */
int64_t fd_gguf_rows(const fd_gguf_set *s, const char *name);

/* 1 when path names a GGUF file (a regular file whose first 4 bytes are "GGUF"). */
int fd_gguf_is_model(const char *path);
/* Opens path (a GGUF file or a split set's first file) as c and w, then
 * fd_weights_check.  On failure both are left closed. */
int fd_gguf_model_open(const char *path, fd_glm_config *c, fd_weights *w, fd_err *e);
/* 0 when fd_gguf_model_open would open path (config, every tensor mapped,
 * the loader's check), without decoding a quantized head; else the refusal. */
int fd_gguf_model_probe(const char *path, fd_err *e);
/* The GGUF tokenizer identity: with a tokenizer.huggingface.json string
 * (the tokenizer.json bytes, as `quantize --format gguf` embeds them) the
 * identity of a directory holding that tokenizer.json,
 * local/tokenizer-<16 hex of its sha256>; else local/gguf-tokenizer-<16 hex
 * of sha256 over every tokenizer.* metadata entry in key order: key NUL,
 * type u32 LE, the value's bytes as stored>; local/no-tokenizer-vocab-N when
 * none. */
void fd_gguf_tokenizer_identity(const fd_weights *w, int64_t vocab, char *out, size_t cap);
/* The checkpoint identity of a GGUF model: every file of the set {name,
 * sha256, size}; config_sha = sha256 of the canonical config.json document
 * built from the metadata. */
int fd_gguf_identity(const fd_weights *w, jv **files, char config_sha[65], fd_err *e);

#endif
