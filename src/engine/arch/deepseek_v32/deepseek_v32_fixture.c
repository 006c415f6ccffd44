/* The deepseek_v32 fixture preset (engine/fixture_preset.h); its
 * config.json is deepseek_v3's with the DSA indexer
 * (engine/arch/deepseek_v3/deepseek_v3_fixture.c). */
#include "engine/arch/deepseek_v3/ds3.h"

static jv *config(const fd_fixture_preset *p, int bos, int eos, int pad)
{
    return fd_ds3_fixture_config(p, bos, eos, pad, 1);
}

/* deepseek-v32-tiny: deepseek-v3-tiny with the DSA indexer (4 heads of 16,
 * top-8 of the 64 keys) */
const fd_fixture_preset FD_DEEPSEEK_V32_PRESETS[] = {
    {.name = "deepseek-v32-tiny", .vocab = 260, .hidden = 64, .inter = 128, .moe_inter = 32, .layers = 4, .heads = 4,
     .q_lora = 32, .kv_lora = 16, .dn = 8, .dr = 8, .dv = 16, .idx_heads = 4, .idx_dim = 16, .idx_topk = 8,
     .experts = 16, .top_k = 4, .shared = 1, .max_pos = 256, .rope_theta = 10000.0, .routed_scaling = 2.5,
     .mlp_types = "DSSS", .indexer_types = "FFFF", .panel_windows = 4, .panel_len = 64, .config = config},
    {.name = NULL},
};
