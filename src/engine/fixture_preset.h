/* What a `fidelity fixture --preset` is (capture/fixture.h writes it): the
 * dims of a random-init checkpoint and the hook that spells its config.json.
 * The presets belong to their architecture: each fd_arch (engine/model.h)
 * points to its own list (engine/arch/<model_type>/<model_type>_fixture.c),
 * written with designated initialisers and ended by an entry whose name is
 * NULL; capture/fixture.c finds them through FD_ARCHS and writes the
 * tensors of the architecture's one tensor list. */
#ifndef FD_ENGINE_FIXTURE_PRESET_H
#define FD_ENGINE_FIXTURE_PRESET_H
#include <stddef.h>
#include <stdint.h>
#include "format/json.h"

#define FD_FIXTURE_MAX_LAYERS 64

/* The token ids every fixture's tokenizer gives the specials (capture/fixture.c). */
enum { FD_FIXTURE_TOK_PAD = 0, FD_FIXTURE_TOK_BOS = 1, FD_FIXTURE_TOK_EOS = 2 };

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
    const void *ext;           /* the architecture's own preset part (its _fixture.c); may be NULL */
    const char *experts_name;  /* the routed experts' name part, what `demo` quantizes; NULL: "mlp.experts" */
    /* config.json of the preset, keys sorted as save_pretrained writes them */
    jv *(*config)(const struct fd_fixture_preset *p, int bos, int eos, int pad);
} fd_fixture_preset;

/* Helpers of the architectures' config hooks: a JSON list with one string
 * per char of types (yes where the char is one, else no); the number of
 * leading 'D' (dense) layers of p->mlp_types. */
jv *fd_fixture_layer_list(const char *types, char one, const char *yes, const char *no);
int64_t fd_fixture_first_dense(const fd_fixture_preset *p);

#endif
