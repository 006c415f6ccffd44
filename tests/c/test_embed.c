/* fd_op_embed (engine/ops/ops.h): the one embedding lookup of every
 * architecture's begin hook (glm_moe_dsa, glm5_next, deepseek_v3/v32,
 * llama/qwen3/qwen3_moe).  Rows are the table's bf16 bits (an F32 table
 * rounded to nearest even as from_pretrained casts it); the refusals keep
 * the text the four begin hooks had: bad_usage for no tokens,
 * checkpoint_mismatch for a missing / mis-shaped table, bad_token naming
 * the id, its position and the vocab. */
#include "check.h"
#include "engine/ops/ops.h"
#include "util/bf16.h"
#include <stdlib.h>
#include <string.h>

enum { V = 7, H = 5 };

static fd_tensor table(const char *name, const char *dtype, const void *data)
{
    fd_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    snprintf(t.dtype, sizeof t.dtype, "%s", dtype);
    t.ndim = 2;
    t.shape[0] = t.lshape[0] = V;
    t.shape[1] = t.lshape[1] = H;
    t.numel = V * H;
    t.nbytes = t.numel * (strcmp(dtype, "F32") ? 2 : 4);
    t.data = data;
    return t;
}

static int refused(const fd_weights *w, const char *name, const int64_t *ids, size_t S, const char *code,
                   const char *msg)
{
    int fails = 0;
    fd_err e;
    fd_err_clear(&e);
    uint16_t *x = fd_op_embed(w, name, V, H, ids, S, &e);
    CHECKF(!x, "%s: no rows", code);
    CHECKF(!strcmp(e.code, code), "code %s, want %s", e.code, code);
    CHECKF(strstr(e.msg, msg) != NULL, "message \"%s\" lacks \"%s\"", e.msg, msg);
    free(x);
    return fails;
}

int test_embed(void)
{
    int fails = 0;
    uint16_t bf[V * H];
    float f32[V * H];
    for (int i = 0; i < V * H; i++) {
        f32[i] = (float)(i * 37 % 23 - 11) * 0.1234567f + 1e-7f * (float)i;
        bf[i] = (uint16_t)(0x3f80 + i * 13);
    }
    fd_tensor t[2] = {table("a.embed_tokens.weight", "BF16", bf), table("b.embed_tokens.weight", "F32", f32)};
    fd_weights w;
    memset(&w, 0, sizeof w);
    w.t = t;
    w.n = 2;
    const int64_t ids[4] = {3, 0, 6, 3};

    fd_err e;
    fd_err_clear(&e);
    uint16_t *x = fd_op_embed(&w, "a.embed_tokens.weight", V, H, ids, 4, &e);
    CHECK(x != NULL, "bf16 table: rows");
    for (size_t s = 0; x && s < 4; s++)
        for (size_t i = 0; i < H; i++)
            CHECKF(x[s * H + i] == bf[ids[s] * H + (int64_t)i], "bf16 row %zu col %zu", s, i);
    free(x);
    x = fd_op_embed(&w, "b.embed_tokens.weight", V, H, ids, 4, &e);
    CHECK(x != NULL, "f32 table: rows");
    for (size_t s = 0; x && s < 4; s++)
        for (size_t i = 0; i < H; i++)
            CHECKF(x[s * H + i] == fd_f32_to_bf16(f32[ids[s] * H + (int64_t)i]), "f32 row %zu col %zu", s, i);
    free(x);

    const int64_t high[3] = {1, 2, V}, neg[2] = {0, -1};
    fails += refused(&w, "a.embed_tokens.weight", ids, 0, "bad_usage", "empty token sequence");
    fails += refused(&w, "a.embed_tokens.weight", high, 3, "bad_token",
                     "token id 7 at position 2 is outside the vocab (7)");
    fails += refused(&w, "a.embed_tokens.weight", neg, 2, "bad_token",
                     "token id -1 at position 1 is outside the vocab (7)");
    fails += refused(&w, "c.embed_tokens.weight", ids, 4, "checkpoint_mismatch",
                     "tensor c.embed_tokens.weight is missing");
    fd_err_clear(&e);
    CHECK(!fd_op_embed(&w, "a.embed_tokens.weight", V + 1, H, ids, 4, &e) && !strcmp(e.code, "checkpoint_mismatch"),
          "a table of another shape is refused");
    return fails;
}
