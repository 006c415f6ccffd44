/* Unit tests for src/engine/qformat.c, qconfig.c and the scope classes of
 * src/capture/qscope.c: e4m3 / e2m1 codes (ties, saturation, signs) as
 * torch / ModelOpt give them, the two exclusion rules, the Linear names. */
#include <math.h>
#include <stdint.h>
#include "check.h"
#include "capture/qscope.h"
#include "engine/qconfig.h"
#include "engine/qformat.h"

static int e4m3(void)
{
    int fails = 0;
    for (int b = 0; b < 256; b++) {
        float f = fd_e4m3_to_f32((uint8_t)b);
        if ((b & 0x7f) == 0x7f) CHECKF(isnan(f), "code %02x is NaN", b);
        else CHECKF(fd_f32_to_e4m3(f) == b, "code %02x round-trips (%g -> %02x)", b, f, fd_f32_to_e4m3(f));
    }
    CHECK(fd_e4m3_to_f32(0x7e) == 448.0f && fd_e4m3_to_f32(0x01) == 0x1p-9f, "448 max, 2^-9 min subnormal");
    CHECK(fd_f32_to_e4m3(464.0f) == 0x7e, "464 ties to the even code 448");
    CHECK(fd_f32_to_e4m3(470.0f) == 0x7f && fd_f32_to_e4m3(INFINITY) == 0x7f, "past 464 (and inf): NaN, as torch");
    CHECK(fd_f32_to_e4m3(1.0625f) == 0x38 && fd_f32_to_e4m3(1.1875f) == 0x3a, "mantissa ties to even");
    CHECK(fd_f32_to_e4m3(-0.0f) == 0x80 && fd_f32_to_e4m3(0x1p-10f) == 0x00, "-0 keeps its sign; 2^-10 ties to 0");
    return fails;
}

static int e2m1(void)
{
    int fails = 0;
    static const struct { float x; uint8_t code; } T[] = {
        {0.25f, 0}, {0.26f, 1}, {0.75f, 2}, {1.25f, 2}, {1.75f, 4}, {2.5f, 4}, {3.5f, 6}, {5.0f, 6}, {5.1f, 7},
        {100.0f, 7}, {-0.1f, 8}, {-0.0f, 0}, {-6.0f, 15}, {-2.5f, 12}};
    for (size_t i = 0; i < sizeof T / sizeof *T; i++)
        CHECKF(fd_f32_to_e2m1(T[i].x) == T[i].code, "e2m1(%g) = %u, want %u", T[i].x, fd_f32_to_e2m1(T[i].x), T[i].code);
    CHECK(fd_e2m1_to_f32(8) == 0.0f && !signbit(fd_e2m1_to_f32(8)), "code 8 reads as +0 (ModelOpt's table)");
    /* packing: low nibble = even element */
    float x[16] = {6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -6};
    uint8_t p[8], s[1];
    fd_nvfp4_quantize(x, 1, 16, 6.0f / 2688.0f, p, s);
    CHECKF(p[0] == 0x27 && p[7] == 0xf0 && fd_e4m3_to_f32(s[0]) == 448.0f, "packed %02x %02x scale %02x", p[0], p[7], s[0]);
    return fails;
}

static int rules(void)
{
    int fails = 0;
    fd_qconfig q = {.kind = FD_Q_FP8_BLOCK};
    fd_strv_push(&q.exclude, "model.layers.*.self_attn.indexer.weights_proj");
    fd_strv_push(&q.exclude, "lm_head");
    CHECK(fd_q_excluded(&q, "model.layers.17.self_attn.indexer.weights_proj.weight"), "fp8: digits read as *");
    CHECK(!fd_q_excluded(&q, "model.layers.17.self_attn.indexer.wk.weight"), "fp8: wk converted");
    CHECK(fd_q_excluded(&q, "lm_head.weight"), "fp8: lm_head");
    q.kind = FD_Q_NVFP4;
    fd_strv_push(&q.exclude, "model.layers.*.mlp.shared_experts*");
    fd_strv_push(&q.exclude, "model.layers.0");
    CHECK(fd_q_excluded(&q, "model.layers.3.mlp.shared_experts.up_proj.weight"), "nvfp4: fnmatch");
    CHECK(fd_q_excluded(&q, "model.layers.0.mlp.experts.1.up_proj.weight"), "nvfp4: a parent module");
    CHECK(!fd_q_excluded(&q, "model.layers.3.mlp.experts.1.up_proj.weight"), "nvfp4: experts converted");
    CHECK(!fd_q_excluded(&q, "model.layers.01.mlp.experts.1.up_proj.weight"), "nvfp4: layers.0 is no prefix of layers.01");
    fd_qconfig_free(&q);
    CHECK(fd_q_is_linear_weight("model.layers.1.mlp.experts.0.down_proj.weight"), "expert down_proj is a Linear");
    CHECK(!fd_q_is_linear_weight("model.layers.1.mlp.gate.weight"), "the router is not");
    CHECK(!fd_q_is_linear_weight("model.layers.1.input_layernorm.weight"), "norms are not");
    CHECK_STR(fd_tensor_class("model.layers.78.mlp.experts.0.up_proj.weight", 78), "mtp", "layer >= L is mtp");
    CHECK_STR(fd_tensor_class("model.layers.3.mlp.gate.e_score_correction_bias", 78), "moe.router", "router bias");
    CHECK_STR(fd_tensor_class("model.layers.3.self_attn.q_a_layernorm.weight", 78), "attn.other", "attn layernorm");
    CHECK_STR(fd_tensor_class("model.layers.3.post_attention_layernorm.weight", 78), "norm", "norm");
    return fails;
}

int test_qformat(void) { return e4m3() + e2m1() + rules(); }
