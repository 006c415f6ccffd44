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

#define VECTORS "tests/vectors/packed/ct_pack.safetensors"

static const uint8_t *data_of(const fd_st_file *f, const uint8_t *file, const char *name, const char *dtype)
{
    const fd_st_tensor *t = fd_st_find(f, name);
    if (!t || (dtype && strcmp(t->dtype, dtype))) return NULL;
    return file + 8 + f->header_len + t->start;
}

static int vectors(void)
{
    int fails = 0;
    fd_st_file f;
    fd_err e = {0};
    CHECKF(!fd_st_open(VECTORS, &f, &e), "%s opens: %s", VECTORS, e.msg);
    if (e.msg[0]) return fails;
    FILE *fp = fopen(VECTORS, "rb");
    uint8_t *file = malloc((size_t)f.file_size);
    CHECK(fp && fread(file, 1, (size_t)f.file_size, fp) == f.file_size, "read the vectors");
    if (fp) fclose(fp);
    int ncase = 0;
    for (int c = 0; c < 100; c++) {
        char nm[64];
        snprintf(nm, sizeof nm, "c%02d.scheme", c);
        const uint8_t *sp = data_of(&f, file, nm, "I32");
        if (!sp) break;
        int32_t s[6];
        memcpy(s, sp, sizeof s);
        snprintf(nm, sizeof nm, "c%02d.expected", c);
        const fd_st_tensor *ex = fd_st_find(&f, nm);
        const uint8_t *exp = data_of(&f, file, nm, "BF16");
        snprintf(nm, sizeof nm, "c%02d.weight_packed", c);
        const fd_st_tensor *pt = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.weight_scale", c);
        const fd_st_tensor *st = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.weight_zero_point", c);
        const fd_st_tensor *zt = fd_st_find(&f, nm);
        CHECKF(ex && exp && pt && st && (s[5] || zt), "case %d complete", c);
        if (!ex || !exp || !pt || !st) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        fd_ct_row r = {file + 8 + f.header_len + pt->start, file + 8 + f.header_len + st->start,
                       zt ? file + 8 + f.header_len + zt->start : NULL, pt->shape[1], st->shape[1],
                       zt ? zt->shape[1] : 0, !strcmp(st->dtype, "BF16") ? 0 : !strcmp(st->dtype, "F16") ? 1 : 2,
                       s[0], s[1], s[2], s[3], s[4], 0};
        uint16_t *row = malloc(K * 2);
        uint64_t bad = 0, first = 0;
        for (uint64_t i = 0; i < N; i++) {
            fd_ct_row_bf16(&r, K, i, row);
            for (uint64_t j = 0; j < K; j++) {
                uint16_t want;
                memcpy(&want, exp + (i * K + j) * 2, 2);
                if (row[j] != want && !bad++) first = i * K + j;
            }
        }
        CHECKF(!bad, "case c%02d (int%d strategy %d %s [%llu,%llu]): %llu of %llu differ, first at %llu", c, s[0], s[1],
               st->dtype, (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad,
               (unsigned long long)(N * K), (unsigned long long)first);
        free(row);
        ncase++;
    }
    CHECKF(ncase == 36, "36 cases in the vectors (found %d)", ncase);
    free(file);
    fd_st_close(&f);
    return fails;
}


/* GPTQ / AWQ: tests/vectors/packed/gq.safetensors (tests/py/gq_vectors.py) and
 * GPTQ 2 / 3-bit: gq23.safetensors (tests/py/gq23_vectors.py) */
static int gq_file(const char *GQ_VECTORS, int want_cases)
{
    int fails = 0;
    fd_st_file f;
    fd_err e = {0};
    CHECKF(!fd_st_open(GQ_VECTORS, &f, &e), "%s opens: %s", GQ_VECTORS, e.msg);
    if (e.msg[0]) return fails;
    FILE *fp = fopen(GQ_VECTORS, "rb");
    uint8_t *file = malloc((size_t)f.file_size);
    CHECK(fp && fread(file, 1, (size_t)f.file_size, fp) == f.file_size, "read the vectors");
    if (fp) fclose(fp);
    int ncase = 0;
    for (int c = 0; c < 100; c++) {
        char nm[64];
        const uint8_t *p[5];
        static const char *const PART[5] = {"scheme", "qweight", "qzeros", "scales", "g_idx"};
        for (int i = 0; i < 5; i++) {
            snprintf(nm, sizeof nm, "c%02d.%s", c, PART[i]);
            p[i] = data_of(&f, file, nm, NULL);
        }
        if (!p[0]) break;
        int32_t s[5];
        memcpy(s, p[0], sizeof s);
        snprintf(nm, sizeof nm, "c%02d.expected", c);
        const fd_st_tensor *ex = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.scales", c);
        const fd_st_tensor *st = fd_st_find(&f, nm);
        CHECKF(ex && p[1] && p[2] && st && (s[0] || p[4]), "case %d complete", c);
        if (!ex || !p[1] || !p[2] || !st) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        const uint8_t *exp = file + 8 + f.header_len + ex->start;
        fd_gq_row r = {p[1], p[2], p[3], p[4], N, !strcmp(st->dtype, "BF16") ? 0 : 1, s[1], s[2], s[3], s[0]};
        uint16_t *row = malloc(K * 2);
        uint64_t bad = 0;
        for (uint64_t n = 0; n < N; n++) {
            fd_gq_row_bf16(&r, K, n, row);
            for (uint64_t k = 0; k < K; k++) {
                uint16_t want;
                memcpy(&want, exp + (n * K + k) * 2, 2);
                bad += row[k] != want;
            }
        }
        CHECKF(!bad, "gq case c%02d (%s int%d g%d v1=%d %s [%llu,%llu]): %llu differ", c, s[0] ? "awq" : "gptq", s[1], s[2],
               s[3], st->dtype, (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad);
        free(row);
        ncase++;
    }
    CHECKF(ncase == want_cases, "%d GPTQ/AWQ cases in %s (found %d)", want_cases, GQ_VECTORS, ncase);
    free(file);
    fd_st_close(&f);
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

#define DENSE_VECTORS "tests/vectors/packed/ct_dense.safetensors"

/* compressed-tensors int-/float-/naive-quantized: ct_dense.safetensors
 * (tests/py/ct_dense_oracle.py, compressed-tensors' own decompress) */
static int dense(void)
{
    int fails = 0;
    fd_st_file f;
    fd_err e = {0};
    CHECKF(!fd_st_open(DENSE_VECTORS, &f, &e), "%s opens: %s", DENSE_VECTORS, e.msg);
    if (e.msg[0]) return fails;
    FILE *fp = fopen(DENSE_VECTORS, "rb");
    uint8_t *file = malloc((size_t)f.file_size);
    CHECK(fp && fread(file, 1, (size_t)f.file_size, fp) == f.file_size, "read the vectors");
    if (fp) fclose(fp);
    int ncase = 0;
    for (int c = 0; c < 100; c++) {
        char nm[64];
        snprintf(nm, sizeof nm, "c%02d.scheme", c);
        const uint8_t *sp = data_of(&f, file, nm, "I32");
        if (!sp) break;
        int32_t s[7];
        memcpy(s, sp, sizeof s);
        snprintf(nm, sizeof nm, "c%02d.expected", c);
        const fd_st_tensor *ex = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.weight", c);
        const fd_st_tensor *wt = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.weight_scale", c);
        const fd_st_tensor *st = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.weight_zero_point", c);
        const fd_st_tensor *zt = fd_st_find(&f, nm);
        CHECKF(ex && wt && st && (s[5] || zt), "dense case %d complete", c);
        if (!ex || !wt || !st) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        const uint8_t *exp = file + 8 + f.header_len + ex->start;
        fd_ct_row r = {file + 8 + f.header_len + wt->start, file + 8 + f.header_len + st->start,
                       zt ? file + 8 + f.header_len + zt->start : NULL, 0, st->ndim == 2 ? st->shape[1] : 1, 0,
                       !strcmp(st->dtype, "BF16") ? 0 : !strcmp(st->dtype, "F16") ? 1 : 2, s[0], s[1], s[2], s[3], s[4],
                       s[6] ? 2 : 1};
        uint16_t *row = malloc(K * 2);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < N; i++) {
            fd_ct_row_bf16(&r, K, i, row);
            for (uint64_t j = 0; j < K; j++) {
                uint16_t want;
                memcpy(&want, exp + (i * K + j) * 2, 2);
                bad += row[j] != want;
            }
        }
        CHECKF(!bad, "dense case c%02d (%s strategy %d %s [%llu,%llu]): %llu differ", c, s[6] ? "fp8" : "int8", s[1],
               st->dtype, (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad);
        free(row);
        ncase++;
    }
    CHECKF(ncase == 33, "33 dense cases (found %d)", ncase);
    free(file);
    fd_st_close(&f);
    return fails;
}

#define MLX_VECTORS "tests/vectors/packed/mlx.safetensors"

/* MLX affine: mlx.safetensors (tests/py/mlx_oracle.py, mlx.core.dequantize) */
static int mlx(void)
{
    int fails = 0;
    fd_st_file f;
    fd_err e = {0};
    CHECKF(!fd_st_open(MLX_VECTORS, &f, &e), "%s opens: %s", MLX_VECTORS, e.msg);
    if (e.msg[0]) return fails;
    FILE *fp = fopen(MLX_VECTORS, "rb");
    uint8_t *file = malloc((size_t)f.file_size);
    CHECK(fp && fread(file, 1, (size_t)f.file_size, fp) == f.file_size, "read the vectors");
    if (fp) fclose(fp);
    int ncase = 0;
    for (int c = 0; c < 100; c++) {
        char nm[64];
        snprintf(nm, sizeof nm, "c%02d.scheme", c);
        const uint8_t *sp = data_of(&f, file, nm, "I32");
        if (!sp) break;
        int32_t s[2];
        memcpy(s, sp, sizeof s);
        snprintf(nm, sizeof nm, "c%02d.expected", c);
        const fd_st_tensor *ex = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.weight", c);
        const uint8_t *w = data_of(&f, file, nm, "U32");
        snprintf(nm, sizeof nm, "c%02d.scales", c);
        const fd_st_tensor *st = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.biases", c);
        const uint8_t *bi = data_of(&f, file, nm, NULL);
        CHECKF(ex && w && st && bi, "mlx case %d complete", c);
        if (!ex || !w || !st || !bi) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        const uint8_t *exp = file + 8 + f.header_len + ex->start;
        fd_mlx_row m = {w, file + 8 + f.header_len + st->start, bi,
                        !strcmp(st->dtype, "BF16") ? 0 : !strcmp(st->dtype, "F16") ? 1 : 2, s[0], s[1]};
        uint16_t *row = malloc(K * 2);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < N; i++) {
            fd_mlx_row_bf16(&m, K, i, row);
            for (uint64_t j = 0; j < K; j++) {
                uint16_t want;
                memcpy(&want, exp + (i * K + j) * 2, 2);
                bad += row[j] != want;
                bad += fd_mlx_elem_bf16(&m, K, i, j) != want;
            }
        }
        CHECKF(!bad, "mlx case c%02d (%d-bit group %d %s [%llu,%llu]): %llu differ", c, s[0], s[1], st->dtype,
               (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad);
        free(row);
        ncase++;
    }
    CHECKF(ncase == 36, "36 mlx cases (found %d)", ncase);
    free(file);
    fd_st_close(&f);
    return fails;
}

#define UE8M0_VECTORS "tests/vectors/packed/fp8_ue8m0.safetensors"

/* FP8 block with UE8M0 scales: fp8_ue8m0.safetensors (tests/py/ue8m0_oracle.py,
 * transformers' Fp8Dequantize._dequantize_one) */
static int ue8m0(void)
{
    int fails = 0;
    fd_st_file f;
    fd_err e = {0};
    CHECKF(!fd_st_open(UE8M0_VECTORS, &f, &e), "%s opens: %s", UE8M0_VECTORS, e.msg);
    if (e.msg[0]) return fails;
    FILE *fp = fopen(UE8M0_VECTORS, "rb");
    uint8_t *file = malloc((size_t)f.file_size);
    CHECK(fp && fread(file, 1, (size_t)f.file_size, fp) == f.file_size, "read the vectors");
    if (fp) fclose(fp);
    int ncase = 0;
    for (int c = 0; c < 100; c++) {
        char nm[64];
        snprintf(nm, sizeof nm, "c%02d.block", c);
        const uint8_t *bp = data_of(&f, file, nm, "I32");
        if (!bp) break;
        int32_t blk[2];
        memcpy(blk, bp, sizeof blk);
        snprintf(nm, sizeof nm, "c%02d.expected", c);
        const fd_st_tensor *ex = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.weight", c);
        const uint8_t *w = data_of(&f, file, nm, "F8_E4M3");
        snprintf(nm, sizeof nm, "c%02d.weight_scale_inv", c);
        const fd_st_tensor *st = fd_st_find(&f, nm);
        CHECKF(ex && w && st, "ue8m0 case %d complete", c);
        if (!ex || !w || !st) continue;
        uint64_t N = ex->shape[0], K = ex->shape[1];
        const uint8_t *exp = file + 8 + f.header_len + ex->start, *sc = file + 8 + f.header_len + st->start;
        int e8 = !strcmp(st->dtype, "F8_E8M0");
        uint16_t *row = malloc(K * 2);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < N; i++) {
            if (e8) fd_fp8_block_row_bf16_e8m0(w, sc, K, st->shape[1], blk[0], blk[1], i, row);
            else fd_fp8_block_row_bf16(w, sc, K, st->shape[1], blk[0], blk[1], i, row);
            for (uint64_t j = 0; j < K; j++) {
                uint16_t want;
                memcpy(&want, exp + (i * K + j) * 2, 2);
                bad += row[j] != want;
            }
        }
        CHECKF(!bad, "ue8m0 case c%02d (%s scales, block %dx%d, [%llu,%llu]): %llu differ", c, st->dtype, blk[0], blk[1],
               (unsigned long long)N, (unsigned long long)K, (unsigned long long)bad);
        free(row);
        ncase++;
    }
    CHECKF(ncase == 6, "6 ue8m0 cases (found %d)", ncase);
    CHECK(fd_e8m0_to_f32(127) == 1.0f && fd_e8m0_to_f32(0) == 0x1p-127f && isnan(fd_e8m0_to_f32(255)), "e8m0 codes");
    free(file);
    fd_st_close(&f);
    return fails;
}

#define FP4_VECTORS "tests/vectors/packed/ct_fp4.safetensors"

/* compressed-tensors nvfp4-/mxfp4-pack-quantized: ct_fp4.safetensors (tests/py/ct_fp4_oracle.py) */
static int fp4(void)
{
    int fails = 0;
    fd_st_file f;
    fd_err e = {0};
    CHECKF(!fd_st_open(FP4_VECTORS, &f, &e), "%s opens: %s", FP4_VECTORS, e.msg);
    if (e.msg[0]) return fails;
    FILE *fp = fopen(FP4_VECTORS, "rb");
    uint8_t *file = malloc((size_t)f.file_size);
    CHECK(fp && fread(file, 1, (size_t)f.file_size, fp) == f.file_size, "read the vectors");
    if (fp) fclose(fp);
    int ncase = 0;
    for (int c = 0; c < 100; c++) {
        char nm[64];
        snprintf(nm, sizeof nm, "c%02d.kind", c);
        const uint8_t *kp = data_of(&f, file, nm, "I32");
        if (!kp) break;
        int32_t mx;
        memcpy(&mx, kp, 4);
        snprintf(nm, sizeof nm, "c%02d.expected", c);
        const fd_st_tensor *ex = fd_st_find(&f, nm);
        snprintf(nm, sizeof nm, "c%02d.weight_packed", c);
        const uint8_t *w = data_of(&f, file, nm, "U8");
        snprintf(nm, sizeof nm, "c%02d.weight_scale", c);
        const uint8_t *sc = data_of(&f, file, nm, NULL);
        snprintf(nm, sizeof nm, "c%02d.weight_global_scale", c);
        const uint8_t *gp = data_of(&f, file, nm, "F32");
        CHECKF(ex && w && sc && (mx || gp), "fp4 case %d complete", c);
        if (!ex || !w || !sc || (!mx && !gp)) continue;
        float gs = 0;
        if (gp) memcpy(&gs, gp, 4);
        uint64_t N = ex->shape[0], K = ex->shape[1];
        const uint8_t *exp = file + 8 + f.header_len + ex->start;
        uint16_t *row = malloc(K * 2);
        uint64_t bad = 0;
        for (uint64_t i = 0; i < N; i++) {
            if (mx) fd_ct_mxfp4_row_bf16(w, sc, K, i, row);
            else fd_ct_nvfp4_row_bf16(w, sc, gs, K, i, row);
            for (uint64_t j = 0; j < K; j++) {
                uint16_t want;
                memcpy(&want, exp + (i * K + j) * 2, 2);
                bad += row[j] != want;
            }
        }
        CHECKF(!bad, "fp4 case c%02d (%s [%llu,%llu]): %llu differ", c, mx ? "mxfp4" : "nvfp4", (unsigned long long)N,
               (unsigned long long)K, (unsigned long long)bad);
        free(row);
        ncase++;
    }
    CHECKF(ncase == 12, "12 fp4 cases (found %d)", ncase);
    free(file);
    fd_st_close(&f);
    return fails;
}

int test_packed(void)
{
    return vectors() + gq_file("tests/vectors/packed/gq.safetensors", 18) +
           gq_file("tests/vectors/packed/gq23.safetensors", 16) + dense() + mlx() + ue8m0() + fp4() + f16();
}
