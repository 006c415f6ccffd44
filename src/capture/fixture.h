/* `fidelity fixture`: a random-init glm_moe_dsa checkpoint directory that
 * transformers (5.16) and `fidelity inspect-model` load (MODEL-GLM.md §1, §2,
 * §6), plus a deterministic synthetic token panel in the upstream panel
 * format.  Everything is a function of (preset, seed): two runs with the same
 * seed write identical bytes.
 *
 * DIR/config.json            model_type glm_moe_dsa, every field 5.16 reads,
 *                            sorted keys, indent 2 (save_pretrained's look)
 * DIR/generation_config.json bos/eos/pad ids
 * DIR/model.safetensors      BF16 weights (e_score_correction_bias F32 zeros),
 *                            the safetensors library's exact layout (model_dir.h);
 *                            experts per-expert (the on-disk spelling)
 * DIR/tokenizer.json         byte-level: ids 0..3 = <pad> <bos> <eos> <unk>
 *                            (special added tokens), id 4+b = byte b spelled with
 *                            GPT-2's bytes_to_unicode; BPE model, no merges,
 *                            ByteLevel pre-tokenizer/decoder (no regex split,
 *                            no prefix space), no normalizer / post-processor
 * DIR/tokenizer_config.json  PreTrainedTokenizerFast with the special tokens
 * DIR/panel/                 `fidelity panel build` output (panel.h), role
 *                            "final", domain "synthetic", panel_id
 *                            "fixture-PRESET-seedN"; each window is <bos>
 *                            followed by byte tokens of seeded pseudo-text
 *
 * Initialisation (transformers' _init_weights): every Linear weight and the
 * embedding ~ normal(0, 0.02) — splitmix64 (util/rng.h) seeded per tensor from
 * (seed, FNV-1a of the name), Box–Muller, rounded to bf16; RMSNorm weights 1;
 * the indexer's LayerNorm k_norm weight 1, bias 0; router bias 0 (F32).
 *
 * Written into DIR.partial-PID, self-checked with the engine's config and
 * weight loader, then renamed into place; an existing DIR is refused
 * (destination_exists) unless force. */
#ifndef FD_CAPTURE_FIXTURE_H
#define FD_CAPTURE_FIXTURE_H
#include <stddef.h>
#include <stdint.h>
#include "util/err.h"

#define FD_FIXTURE_MAX_LAYERS 64

typedef struct fd_fixture_preset {
    const char *name;
    int64_t vocab, hidden, inter, moe_inter, layers, heads;
    int64_t q_lora, kv_lora, dn, dr, dv;
    int64_t idx_heads, idx_dim, idx_topk;
    int64_t experts, top_k, shared;
    int64_t max_pos;
    double rope_theta, routed_scaling;
    const char *mlp_types;     /* one char a layer: D dense, S sparse */
    const char *indexer_types; /* one char a layer: F full, S shared */
    size_t panel_windows, panel_len;
    const struct fd_next_preset *next; /* glm5_next presets (fixture_next.h); NULL: glm_moe_dsa */
    /* another architecture's config.json (e.g. fixture_deepseek.h); NULL: glm_moe_dsa / next */
    struct jv *(*config)(const struct fd_fixture_preset *p, int bos, int eos, int pad);
} fd_fixture_preset;

/* NULL when the name is not a preset. */
const fd_fixture_preset *fd_fixture_preset_find(const char *name);
/* "tiny|flash-0.1b|small|flash-0.1b-next|deepseek-v3-tiny|deepseek-v32-tiny|kimi-k25-tiny|kimi-linear-tiny|llama-tiny|llama-small|qwen3-tiny|
 * qwen3-moe-tiny" */
const char *fd_fixture_preset_names(void);

typedef struct fd_fixture_result {
    size_t tensors;
    uint64_t params;          /* elements, router biases excluded */
    uint64_t bias_elems;      /* F32 e_score_correction_bias elements */
    uint64_t weight_bytes;    /* model.safetensors size */
    size_t panel_windows, panel_len;
    char suite_token_hash_sha256[65];
} fd_fixture_result;

int fd_fixture_write(const fd_fixture_preset *p, uint64_t seed, const char *out, int force, fd_fixture_result *r,
                     fd_err *e);

#endif
