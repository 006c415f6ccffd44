/* Unit tests for the compressed-tensors pack-quantized decoder
 * (engine/qformat.c fd_ct_row_bf16): every case of the committed vectors
 * tests/vectors/packed/ct_pack.safetensors (made by compressed-tensors'
 * own pack_to_int32 + PackedQuantizationCompressor.decompress,
 * tests/py/packed_oracle.py) decodes to the reference's bf16 bit for bit,
 * likewise GPTQ/AWQ (gq, gq23), compressed-tensors unpacked (ct_dense) and
 * MLX affine (mlx.safetensors, made by mlx.core.dequantize);
 * the fp16 conversion against every fp16 value and the rounding edges. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"
#include "engine/qconfig.h"
#include "engine/qformat.h"
#include "format/safetensors.h"

/* One vectors file: its safetensors header and all its bytes. */
typedef struct {
    fd_st_file f;
    uint8_t *file;
} vecs;

static void vecs_close(vecs *v)
{
    free(v->file);
    fd_st_close(&v->f);
}

/* Opens and reads path into v; returns the failed checks (0: v is usable,
 * and vecs_close frees it; else nothing is held). */
static int vecs_open(vecs *v, const char *path)
{
    int fails = 0;
    fd_err e = {0};
    v->file = NULL;
    CHECKF(!fd_st_open(path, &v->f, &e), "%s opens: %s", path, e.msg);
    if (fails) return fails;
    FILE *fp = fopen(path, "rb");
    v->file = malloc((size_t)v->f.file_size);
    CHECKF(fp && v->file && fread(v->file, 1, (size_t)v->f.file_size, fp) == v->f.file_size, "%s: read", path);
    if (fp) fclose(fp);
    if (fails) vecs_close(v);
    return fails;
}

/* Case c's tensor "cNN.<part>", NULL when absent. */
static const fd_st_tensor *part_t(const vecs *v, int c, const char *part)
{
    char nm[64];
    snprintf(nm, sizeof nm, "c%02d.%s", c, part);
    return fd_st_find(&v->f, nm);
}

/* The bytes of t (NULL for NULL). */
static const uint8_t *bytes_of(const vecs *v, const fd_st_tensor *t)
{
    return t ? v->file + 8 + v->f.header_len + t->start : NULL;
}

/* The bytes of case c's part, NULL when absent or (dtype given) of another dtype. */
static const uint8_t *part_d(const vecs *v, int c, const char *part, const char *dtype)
{
    const fd_st_tensor *t = part_t(v, c, part);
    return t && (!dtype || !strcmp(t->dtype, dtype)) ? bytes_of(v, t) : NULL;
}

/* A decoder under test: row i of a K-wide matrix as bf16. */
typedef void (*row_fn)(const void *ctx, uint64_t K, uint64_t i, uint16_t *row);

/* How many of the N x K values fn gives differ from the bf16 matrix at exp;
 * *first: the first one's index (when any). */
static uint64_t rows_differ(row_fn fn, const void *ctx, const uint8_t *exp, uint64_t N, uint64_t K, uint64_t *first)
{
    uint16_t *row = malloc(K * 2);
    uint64_t bad = 0;
    for (uint64_t i = 0; i < N; i++) {
        fn(ctx, K, i, row);
        for (uint64_t j = 0; j < K; j++) {
            uint16_t want;
            memcpy(&want, exp + (i * K + j) * 2, 2);
            if (row[j] != want && !bad++ && first) *first = i * K + j;
        }
    }
    free(row);
    return bad;
}

/* The scale dtype code of fd_ct_row / fd_mlx_row: bf16 0, fp16 1, fp32 2. */
static int scale_code(const fd_st_tensor *st)
{
    return !strcmp(st->dtype, "BF16") ? 0 : !strcmp(st->dtype, "F16") ? 1 : 2;
}

static void ct_row(const void *ctx, uint64_t K, uint64_t i, uint16_t *row) { fd_ct_row_bf16(ctx, K, i, row); }

/* compressed-tensors pack-quantized: ct_pack.safetensors */
static int vectors(void)
{
    vecs v;
    int fails = vecs_open(&v, "tests/vectors/packed/ct_pack.safetensors"), ncase = 0;
    if (fails) return fails;
    for (int c = 0; c < 100; c++) {
        const uint8_t *sp = part_d(&v, c, "scheme", "I32");
        if (!sp) break;
        int32_t s[6];
        memcpy(s, sp, sizeof s);
        const fd_st_tensor *ex = part_t(&v, c, "expected"), *pt = part_t(&v, c, "weight_packed"),
                           *st = part_t(&v, c, "weight_scale"), *zt = part_t(&v, c, "weight_zero_point");
        const uint8_t *exp = part_d(&v, c, "expected", "BF16");
        CHECKF(ex && exp && pt && st && (s[5] || zt), "case %d complete", c);
        if (!ex || !exp || !pt || !st) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1], first = 0;
        fd_ct_row r = {bytes_of(&v, pt), bytes_of(&v, st), bytes_of(&v, zt), pt->shape[1], st->shape[1],
                       zt ? zt->shape[1] : 0, scale_code(st), s[0], s[1], s[2], s[3], s[4], 0};
        uint64_t bad = rows_differ(ct_row, &r, exp, N, K, &first);
        CHECKF(!bad, "case c%02d (int%d strategy %d %s [%llu,%llu]): %llu of %llu differ, first at %llu", c, s[0], s[1],
               st->dtype, (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad,
               (unsigned long long)(N * K), (unsigned long long)first);
        ncase++;
    }
    CHECKF(ncase == 36, "36 cases in the vectors (found %d)", ncase);
    vecs_close(&v);
    return fails;
}

static void gq_row(const void *ctx, uint64_t K, uint64_t i, uint16_t *row) { fd_gq_row_bf16(ctx, K, i, row); }

/* GPTQ / AWQ: tests/vectors/packed/gq.safetensors (tests/py/gq_vectors.py) and
 * GPTQ 2 / 3-bit: gq23.safetensors (tests/py/gq23_vectors.py) */
static int gq_file(const char *path, int want_cases)
{
    vecs v;
    int fails = vecs_open(&v, path), ncase = 0;
    if (fails) return fails;
    for (int c = 0; c < 100; c++) {
        const uint8_t *p[5];
        static const char *const PART[5] = {"scheme", "qweight", "qzeros", "scales", "g_idx"};
        for (int i = 0; i < 5; i++) p[i] = part_d(&v, c, PART[i], NULL);
        if (!p[0]) break;
        int32_t s[5];
        memcpy(s, p[0], sizeof s);
        const fd_st_tensor *ex = part_t(&v, c, "expected"), *st = part_t(&v, c, "scales");
        CHECKF(ex && p[1] && p[2] && st && (s[0] || p[4]), "case %d complete", c);
        if (!ex || !p[1] || !p[2] || !st) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        fd_gq_row r = {p[1], p[2], p[3], p[4], N, !strcmp(st->dtype, "BF16") ? 0 : 1, s[1], s[2], s[3], s[0]};
        uint64_t bad = rows_differ(gq_row, &r, bytes_of(&v, ex), N, K, NULL);
        CHECKF(!bad, "gq case c%02d (%s int%d g%d v1=%d %s [%llu,%llu]): %llu differ", c, s[0] ? "awq" : "gptq", s[1], s[2],
               s[3], st->dtype, (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad);
        ncase++;
    }
    CHECKF(ncase == want_cases, "%d GPTQ/AWQ cases in %s (found %d)", want_cases, path, ncase);
    vecs_close(&v);
    return fails;
}

static int f16(void)
{
    int fails = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        float v = fd_f16_to_f32((uint16_t)h);
        if (isnan(v)) continue;
        CHECKF(fd_f32_to_f16(v) == h, "fp16 %04x round-trips", h);
    }
    CHECK(fd_f32_to_f16(65519.99f) == 0x7bff && fd_f32_to_f16(65520.0f) == 0x7c00, "65520 ties up to infinity");
    CHECK(fd_f32_to_f16(0x1p-25f) == 0 && fd_f32_to_f16(0x1.8p-25f) == 1 && fd_f32_to_f16(0x1.8p-24f) == 2,
          "subnormal ties to even");
    CHECK(fd_f32_to_f16(1.0f + 0x1p-11f) == 0x3c00 && fd_f32_to_f16(1.0f + 0x3p-11f) == 0x3c02, "mantissa ties to even");
    CHECK(fd_f32_to_f16(-0.0f) == 0x8000 && (fd_f32_to_f16(NAN) & 0x7e00) == 0x7e00, "-0 and NaN");
    return fails;
}

/* compressed-tensors int-/float-/naive-quantized: ct_dense.safetensors
 * (tests/py/ct_dense_oracle.py, compressed-tensors' own decompress) */
static int dense(void)
{
    vecs v;
    int fails = vecs_open(&v, "tests/vectors/packed/ct_dense.safetensors"), ncase = 0;
    if (fails) return fails;
    for (int c = 0; c < 100; c++) {
        const uint8_t *sp = part_d(&v, c, "scheme", "I32");
        if (!sp) break;
        int32_t s[7];
        memcpy(s, sp, sizeof s);
        const fd_st_tensor *ex = part_t(&v, c, "expected"), *wt = part_t(&v, c, "weight"),
                           *st = part_t(&v, c, "weight_scale"), *zt = part_t(&v, c, "weight_zero_point");
        CHECKF(ex && wt && st && (s[5] || zt), "dense case %d complete", c);
        if (!ex || !wt || !st) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        fd_ct_row r = {bytes_of(&v, wt), bytes_of(&v, st), bytes_of(&v, zt), 0, st->ndim == 2 ? st->shape[1] : 1, 0,
                       scale_code(st), s[0], s[1], s[2], s[3], s[4], s[6] ? 2 : 1};
        uint64_t bad = rows_differ(ct_row, &r, bytes_of(&v, ex), N, K, NULL);
        CHECKF(!bad, "dense case c%02d (%s strategy %d %s [%llu,%llu]): %llu differ", c, s[6] ? "fp8" : "int8", s[1],
               st->dtype, (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad);
        ncase++;
    }
    CHECKF(ncase == 33, "33 dense cases (found %d)", ncase);
    vecs_close(&v);
    return fails;
}

static void mlx_row(const void *ctx, uint64_t K, uint64_t i, uint16_t *row) { fd_mlx_row_bf16(ctx, K, i, row); }
/* the element-wise decoder, a row of it */
static void mlx_elems(const void *ctx, uint64_t K, uint64_t i, uint16_t *row)
{
    for (uint64_t j = 0; j < K; j++) row[j] = fd_mlx_elem_bf16(ctx, K, i, j);
}

/* MLX affine: mlx.safetensors (tests/py/mlx_oracle.py, mlx.core.dequantize),
 * row by row and element by element */
static int mlx(void)
{
    vecs v;
    int fails = vecs_open(&v, "tests/vectors/packed/mlx.safetensors"), ncase = 0;
    if (fails) return fails;
    for (int c = 0; c < 100; c++) {
        const uint8_t *sp = part_d(&v, c, "scheme", "I32");
        if (!sp) break;
        int32_t s[2];
        memcpy(s, sp, sizeof s);
        const fd_st_tensor *ex = part_t(&v, c, "expected"), *st = part_t(&v, c, "scales");
        const uint8_t *w = part_d(&v, c, "weight", "U32"), *bi = part_d(&v, c, "biases", NULL);
        CHECKF(ex && w && st && bi, "mlx case %d complete", c);
        if (!ex || !w || !st || !bi) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        fd_mlx_row m = {w, bytes_of(&v, st), bi, scale_code(st), s[0], s[1]};
        uint64_t bad = rows_differ(mlx_row, &m, bytes_of(&v, ex), N, K, NULL) +
                       rows_differ(mlx_elems, &m, bytes_of(&v, ex), N, K, NULL);
        CHECKF(!bad, "mlx case c%02d (%d-bit group %d %s [%llu,%llu]): %llu differ", c, s[0], s[1], st->dtype,
               (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad);
        ncase++;
    }
    CHECKF(ncase == 36, "36 mlx cases (found %d)", ncase);
    vecs_close(&v);
    return fails;
}

typedef struct {
    const uint8_t *w, *sc;
    uint64_t kb;
    int bm, bn, e8;
} fp8_case;
static void fp8_row(const void *ctx, uint64_t K, uint64_t i, uint16_t *row)
{
    const fp8_case *f = ctx;
    if (f->e8) fd_fp8_block_row_bf16_e8m0(f->w, f->sc, K, f->kb, f->bm, f->bn, i, row);
    else fd_fp8_block_row_bf16(f->w, f->sc, K, f->kb, f->bm, f->bn, i, row);
}

/* FP8 block with UE8M0 scales: fp8_ue8m0.safetensors (tests/py/ue8m0_oracle.py,
 * transformers' Fp8Dequantize._dequantize_one) */
static int ue8m0(void)
{
    vecs v;
    int fails = vecs_open(&v, "tests/vectors/packed/fp8_ue8m0.safetensors"), ncase = 0;
    if (fails) return fails;
    for (int c = 0; c < 100; c++) {
        const uint8_t *bp = part_d(&v, c, "block", "I32");
        if (!bp) break;
        int32_t blk[2];
        memcpy(blk, bp, sizeof blk);
        const fd_st_tensor *ex = part_t(&v, c, "expected"), *st = part_t(&v, c, "weight_scale_inv");
        const uint8_t *w = part_d(&v, c, "weight", "F8_E4M3");
        CHECKF(ex && w && st, "ue8m0 case %d complete", c);
        if (!ex || !w || !st) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        fp8_case f = {w, bytes_of(&v, st), st->shape[1], blk[0], blk[1], !strcmp(st->dtype, "F8_E8M0")};
        uint64_t bad = rows_differ(fp8_row, &f, bytes_of(&v, ex), N, K, NULL);
        CHECKF(!bad, "ue8m0 case c%02d (%s scales, block %dx%d, [%llu,%llu]): %llu differ", c, st->dtype, blk[0], blk[1],
               (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad);
        ncase++;
    }
    CHECKF(ncase == 6, "6 ue8m0 cases (found %d)", ncase);
    CHECK(fd_e8m0_to_f32(127) == 1.0f && fd_e8m0_to_f32(0) == 0x1p-127f && isnan(fd_e8m0_to_f32(255)), "e8m0 codes");
    vecs_close(&v);
    return fails;
}

typedef struct {
    const uint8_t *w, *sc;
    float gs;
    int mx;
} fp4_case;
static void fp4_row(const void *ctx, uint64_t K, uint64_t i, uint16_t *row)
{
    const fp4_case *f = ctx;
    if (f->mx) fd_ct_mxfp4_row_bf16(f->w, f->sc, K, i, row);
    else fd_ct_nvfp4_row_bf16(f->w, f->sc, f->gs, K, i, row);
}

/* compressed-tensors nvfp4-/mxfp4-pack-quantized: ct_fp4.safetensors (tests/py/ct_fp4_oracle.py) */
static int fp4(void)
{
    vecs v;
    int fails = vecs_open(&v, "tests/vectors/packed/ct_fp4.safetensors"), ncase = 0;
    if (fails) return fails;
    for (int c = 0; c < 100; c++) {
        const uint8_t *kp = part_d(&v, c, "kind", "I32");
        if (!kp) break;
        int32_t mx;
        memcpy(&mx, kp, 4);
        const fd_st_tensor *ex = part_t(&v, c, "expected");
        const uint8_t *w = part_d(&v, c, "weight_packed", "U8"), *sc = part_d(&v, c, "weight_scale", NULL),
                      *gp = part_d(&v, c, "weight_global_scale", "F32");
        CHECKF(ex && w && sc && (mx || gp), "fp4 case %d complete", c);
        if (!ex || !w || !sc || (!mx && !gp)) continue;
        fp4_case f = {w, sc, 0, mx};
        if (gp) memcpy(&f.gs, gp, 4);
        uint64_t N = ex->shape[0], K = ex->shape[1];
        uint64_t bad = rows_differ(fp4_row, &f, bytes_of(&v, ex), N, K, NULL);
        CHECKF(!bad, "fp4 case c%02d (%s [%llu,%llu]): %llu differ", c, mx ? "mxfp4" : "nvfp4", (unsigned long long)N,
               (unsigned long long)K, (unsigned long long)bad);
        ncase++;
    }
    CHECKF(ncase == 12, "12 fp4 cases (found %d)", ncase);
    vecs_close(&v);
    return fails;
}

int test_packed(void)
{
    return vectors() + gq_file("tests/vectors/packed/gq.safetensors", 18) +
           gq_file("tests/vectors/packed/gq23.safetensors", 16) + dense() + mlx() + ue8m0() + fp4() + f16();
}
