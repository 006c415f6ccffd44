/* A glm_moe_dsa checkpoint directory: model.safetensors, or the shards named
 * by model.safetensors.index.json (every shard validated by the safetensors
 * reader and memory-mapped read-only), as a name -> tensor map, checked
 * against the tensor set the config implies (MODEL-GLM.md §2):
 *   missing    expected names absent from the checkpoint
 *   unexpected names the model would not load (MTP layers >= num_hidden_layers
 *              are ignored by name, as transformers does, and counted apart)
 *   misshaped  present with the wrong shape or dtype (BF16 or F32 weights;
 *              e_score_correction_bias F32)
 *   badquant   a quantized Linear weight the checkpoint's quantization_config
 *              (engine/qconfig.h) does not account for: a scale tensor missing
 *              or mis-shaped, a dtype of the other format, a quantized tensor
 *              the config excludes or that is no Linear, a Linear the config
 *              converts left unquantized (refused as bad_quantized_tensor)
 * Quantized weights (FP8 block, NVFP4; engine/qformat.h) stay in the mapping
 * and are dequantized row by row by fd_tensor_row_bf16; their scale tensors
 * are companions, not unexpected names.
 * MoE expert weights are accepted per-expert (mlp.experts.N.{gate,up,down}_proj
 * .weight) or fused (mlp.experts.gate_up_proj [E,2Im,H] / down_proj [E,H,Im]),
 * chosen per layer: fused when mlp.experts.gate_up_proj is present. */
#ifndef FD_ENGINE_WEIGHTS_H
#define FD_ENGINE_WEIGHTS_H
#include <stddef.h>
#include <stdint.h>
#include "engine/config.h"
#include "engine/qconfig.h"
#include "format/safetensors.h"
#include "util/strv.h"

typedef struct fd_tensor {
    const char *name;        /* owned by the map (a packed weight: its logical name, X.weight) */
    const char *sname;       /* the name stored in the file (X.weight_packed for compressed-tensors) */
    const char *qname;       /* the name quantization_config speaks of: X.weight before the
                              * architecture's renames (fd_weights_check); NULL: name */
    const char *file;        /* shard file name */
    char dtype[16];          /* "BF16", "F32", ... */
    int ndim;
    uint64_t shape[FD_ST_MAX_DIMS];
    uint64_t numel, nbytes;
    const void *data;        /* into the read-only mapping; NULL while a lazy map is not mapped */
    size_t shard;            /* index into fd_weights.shards */
    uint64_t off;            /* file offset of the first data byte */
    /* set by fd_weights_check for a quantized Linear weight */
    fd_qkind qfmt;           /* FD_Q_NONE: plain BF16/F32 */
    uint64_t lshape[FD_ST_MAX_DIMS]; /* logical (dequantized) shape; = shape when plain */
    const struct fd_tensor *scale;   /* weight_scale_inv (fp8) / weight_scale (nvfp4) */
    const struct fd_tensor *iscale;  /* nvfp4 input_scale or NULL (recorded, not applied) */
    float scale2;            /* nvfp4 weight_scale_2 */
    int bm, bn;              /* fp8 block */
    /* a GGUF view (qfmt FD_Q_GGUF, engine/gguf_model.h): data = the GGUF
     * tensor's first byte, gdata2 = attn_v_b's (FD_GG_KV_B) */
    uint32_t gtype, gtype2;  /* ggml type ids (gtype2: attn_v_b's, FD_GG_KV_B; the second part's, FD_GG_CAT2) */
    int gkind;               /* FD_GG_* */
    uint64_t grow0;          /* first GGUF row of the view */
    uint64_t gp[4];          /* FD_GG_PERMUTE: heads; FD_GG_KV_B: heads, qk_nope_head_dim, v_head_dim;
                              * FD_GG_V_*: key heads, value heads per key head, rows per head, first permuted row;
                              * FD_GG_CAT2: the rows of the first part */
    const unsigned char *gdata2;
    fd_ct_scheme ct;         /* compressed-tensors pack-quantized scheme */
    const struct fd_tensor *zero; /* its weight_zero_point (asymmetric) / qzeros (GPTQ, AWQ) / biases (MLX) or NULL */
    const struct fd_tensor *gidx; /* GPTQ g_idx */
} fd_tensor;

typedef struct fd_wshard {
    char *name, *path;
    fd_st_file st;
    void *map;
    size_t maplen;
} fd_wshard;

typedef struct fd_wregion {  /* one mapped byte range of a shard (lazy mode) */
    void *map;
    size_t len;
} fd_wregion;

typedef struct fd_weights {
    char *root;
    fd_wshard *shards;
    size_t nshards;
    fd_tensor *t;            /* sorted by name (byte order) */
    size_t n;
    /* filled by fd_weights_check */
    fd_qconfig q;            /* the checkpoint's quantization_config */
    fd_strv renamed;         /* owned logical names of packed weights */
    fd_strv missing, unexpected, misshaped, ignored, badquant;
    size_t nquant;           /* quantized weights */
    uint64_t qbytes;         /* their bytes and their scales' */
    size_t nexpected;
    uint64_t params;         /* elements of expected tensors present, router biases excluded */
    uint64_t bias_elems;     /* e_score_correction_bias elements (fp32 buffers) */
    uint64_t bytes;          /* bytes of expected tensors present */
    unsigned char *fused;    /* [num_hidden_layers]: 1 fused expert spelling */
    int lazy;                /* opened with fd_weights_open_lazy */
    fd_wregion *regions;     /* what fd_weights_map_prefix mapped */
    size_t nregions;
    uint64_t mapped_bytes;   /* their total length */
    /* a GGUF model (engine/gguf_model.h) */
    struct fd_gguf_set *gguf;
    jv *gcfg;                /* the config.json document built from its metadata */
    fd_strv gnames;          /* the views' names */
    int ghead_q;             /* the head is a quantized (non-BF16/F32) GGUF tensor: read row by row */
    uint32_t ghead_type;
    double gnominal, geffective; /* bits per weight (docs/QUANT-FORMATS.md "GGUF") */
    char gmajor[16];         /* the predominant quantized type, lowercase ("q4_k"), "" when none */
    /* the converter's non-invertible rewrites read as stored (fd_gguf_arch.stored:
     * ssm_a = A, zero-centred norm weights = the multiplier 1 + w); NULL otherwise */
    const char *gstored;
    float **gown;            /* small views rebuilt at open (permuted 1-D / conv tensors), owned */
    size_t ngown;
} fd_weights;

int fd_weights_open(const char *dir, fd_weights *w, fd_err *e);
/* As fd_weights_open, but nothing is mapped: every tensor's data is NULL
 * until fd_weights_map_prefix maps the tensors whose names start with a
 * prefix (one page-aligned range per shard, from the first to the last such
 * tensor), and fd_weights_unmap releases every mapped range.  The address
 * space held is then one group of tensors (a decoder layer) at a time: the
 * layer-outer schedule of a checkpoint larger than memory. */
int fd_weights_open_lazy(const char *dir, fd_weights *w, fd_err *e);
int fd_weights_map_prefix(fd_weights *w, const char *prefix, fd_err *e);
void fd_weights_unmap(fd_weights *w);
/* Bytes of the tensors under a prefix (what fd_weights_map_prefix would hold). */
uint64_t fd_weights_prefix_bytes(const fd_weights *w, const char *prefix);
/* n bytes from the start of a tensor's data, mapped or not. */
int fd_weights_read(const fd_weights *w, const fd_tensor *t, void *buf, size_t n, fd_err *e);
/* Fills the lists; -1 with checkpoint_mismatch when any list is non-empty. */
int fd_weights_check(fd_weights *w, const fd_glm_config *c, fd_err *e);
/* non_finite when a small F32 tensor or a 1-D float tensor holds a NaN or
 * infinity (weights_finite.c; the big BF16 matrices are not scanned). */
int fd_weights_check_finite(const fd_weights *w, fd_err *e);
const fd_tensor *fd_weights_get(const fd_weights *w, const char *name);
/* Row `row` (of the leading dims flattened) of a 2-D/3-D weight as bf16:
 * plain BF16 copied, F32 rounded to nearest even, FP8 block / NVFP4
 * dequantized (qformat.h).  K = logical columns. */
void fd_tensor_row_bf16(const fd_tensor *t, uint64_t row, uint64_t K, uint16_t *out);
void fd_weights_close(fd_weights *w);
/* A GGUF view's row / element as bf16 (engine/gguf_model.c). */
void fd_gguf_row_bf16(const fd_tensor *t, uint64_t row, uint64_t K, uint16_t *out);
uint16_t fd_gguf_elem_bf16(const fd_tensor *t, uint64_t i);

#endif
