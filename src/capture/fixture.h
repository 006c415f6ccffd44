/* `fidelity fixture`: a random-init checkpoint directory of one of the
 * architectures' presets (engine/fixture_preset.h; e.g. glm_moe_dsa's tiny,
 * MODEL-GLM.md §1, §2, §6) that transformers and `fidelity inspect-model`
 * load, plus a deterministic synthetic token panel in the upstream panel
 * format.  Everything is a function of (preset, seed): two runs with the same
 * seed write identical bytes.
 *
 * DIR/config.json            the preset's config hook (its architecture's
 *                            <arch>_fixture.c): every field transformers
 *                            reads, sorted keys, indent 2 (save_pretrained's look)
 * DIR/generation_config.json bos/eos/pad ids
 * DIR/model.safetensors      the architecture's tensor list (engine/model.h):
 *                            BF16 weights (F32 where it says so: e.g.
 *                            e_score_correction_bias zeros), the
 *                            safetensors library's exact layout (model_dir.h);
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
#include "engine/fixture_preset.h"
#include "util/err.h"

/* NULL when the name is not a preset of any architecture (engine/model.h
 * FD_ARCHS, each fd_arch's presets). */
const fd_fixture_preset *fd_fixture_preset_find(const char *name);
/* Every preset of the table, '|'-separated in table order
 * ("tiny|flash-0.1b|small|flash-0.1b-next|deepseek-v3-tiny|..."), into out
 * (cap bytes). */
void fd_fixture_preset_names(char *out, size_t cap);
/* 1 for a preset without routed experts (`fidelity demo` has nothing to quantize) */
int fd_fixture_preset_dense(const fd_fixture_preset *p);

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
