/* What a capture records about its checkpoint besides the hidden states
 * (capture_meta.h): the checkpoint identity, the scope file, the
 * tokenizer identity, the disclosures of F32 casts and quantized weights,
 * the memory report. */
#include "capture/capture.h"
#include "capture/capture_meta.h"
#include "format/ggml_quants.h"
#include "format/gguf.h"
#include "capture/qscope.h"
#include "engine/weights.h"
#include "format/digest.h"
#include "format/sha.h"
#include "util/buf.h"
#include "util/fsio.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int fd_checkpoint_files_digest(const jv *files, char hex[65], fd_err *e)
{
    jv *doc = jv_obj();
    jv_set(doc, "algorithm", jv_str(FD_CKPT_ALGORITHM));
    jv_set(doc, "files", jv_copy(files));
    fd_buf b = {0};
    int rc = jv_dump(doc, &JV_CANON, &b, e);
    if (!rc) fd_sha256_hex(b.p, b.n, hex);
    fd_buf_free(&b);
    jv_free(doc);
    return rc;
}

int fd_checkpoint_identity(const char *dir, char hex[65], char config_sha[65], jv **files_out, fd_err *e)
{
    DIR *d = opendir(dir);
    if (!d) return fd_fail(e, "missing_file", "", "%s: not a readable directory", dir);
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        int st = l > 12 && !strcmp(de->d_name + l - 12, ".safetensors");
        if (!st && strcmp(de->d_name, "config.json")) continue;
        if (n == cap) names = fd_xrealloc(names, (cap = cap ? 2 * cap : 8) * sizeof *names);
        names[n++] = fd_xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    jv *files = jv_arr();
    int rc = 0, have_cfg = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        char *p = fd_path_join(dir, names[i]), h[65];
        struct stat sb;
        if (!fd_is_file(p) || stat(p, &sb)) rc = fd_fail(e, "unreadable", "", "%s: not a regular file", p);
        else rc = fd_sha256_file(p, h, e);
        if (!rc) {
            jv *f = jv_obj();
            jv_set(f, "name", jv_str(names[i]));
            jv_set(f, "sha256", jv_str(h));
            jv_set(f, "size", jv_int((int64_t)sb.st_size));
            jv_push(files, f);
            if (!strcmp(names[i], "config.json")) { memcpy(config_sha, h, 65); have_cfg = 1; }
        }
        free(p);
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    if (!rc && !have_cfg) rc = fd_fail(e, "missing_file", "", "%s: no config.json", dir);
    if (!rc) rc = fd_checkpoint_files_digest(files, hex, e);
    if (rc) { jv_free(files); return -1; }
    *files_out = files;
    return 0;
}

jv *fd_capture_scope_load(const char *path, fd_err *e)
{
    jv *doc = jv_parse_file(path, e);
    if (!doc) return NULL;
    static const char *const KEEP[] = {"policy", "head_policy", "kv_cache_dtype", "assignments"};
    jv *s = jv_obj();
    for (int i = 0; i < 4; i++) {
        jv *v = jv_get(doc, KEEP[i]);
        if (!v) {
            fd_fail(e, "bad_scope", "", "%s: scope document has no %s", path, KEEP[i]);
            jv_free(doc); jv_free(s);
            return NULL;
        }
        jv_set(s, KEEP[i], jv_copy(v));
    }
    jv_free(doc);
    fd_buf d = {0};
    if (fd_scope_digest(s, &d, e)) { fd_buf_free(&d); jv_free(s); fd_err_prefix(e, path); return NULL; }
    jv_set(s, "scope_digest", jv_strn(d.p, d.n));
    fd_buf_free(&d);
    return s;
}


/* What a quantized checkpoint's capture discloses: the dequantization is
 * weight-only (FP8Linear's dynamic activation quantization and NVFP4
 * input_scale are not applied); input_scale tensors are recorded by count,
 * range and the sha256 of their F32 bytes in name order. */
/* The tokenizer identity of a model directory, by content, never by path
 * (docs/CAPTURE.md "Tokenizer identity"), so a quantized copy of the
 * checkpoint elsewhere keeps it:
 *   tokenizer.json present      local/tokenizer-<sha256(tokenizer.json), 16 hex>
 *   else other tokenizer files  local/tokenizer-files-<16 hex of sha256 over
 *                               "name\0sha256hex\n" of each file present, in
 *                               the fixed order of TOK_FILES>
 *   else none at all            local/no-tokenizer-vocab-<vocab_size>: all
 *                               that is known is the id space the panel's
 *                               ids were checked against */
int fd_capture_tokenizer_identity(const char *model, int64_t vocab, char *out, size_t cap, fd_err *e)
{
    static const char *const TOK_FILES[] = {"tokenizer.model", "vocab.json", "merges.txt", "vocab.txt",
                                            "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"};
    char *tp = fd_path_join(model, "tokenizer.json"), th[65];
    int rc = 0;
    if (fd_is_file(tp)) {
        if (fd_sha256_file(tp, th, e)) rc = -1;
        else snprintf(out, cap, "local/tokenizer-%.16s", th);
        free(tp);
        return rc;
    }
    free(tp);
    fd_sha *h = fd_sha_new();
    size_t n = 0;
    for (size_t i = 0; i < sizeof TOK_FILES / sizeof *TOK_FILES && !rc; i++) {
        char *p = fd_path_join(model, TOK_FILES[i]);
        if (fd_is_file(p)) {
            if (fd_sha256_file(p, th, e)) rc = -1;
            else {
                fd_sha_update(h, TOK_FILES[i], strlen(TOK_FILES[i]) + 1);
                fd_sha_update(h, th, 64);
                fd_sha_update(h, "\n", 1);
                n++;
            }
        }
        free(p);
    }
    char d[65];
    fd_sha_final_hex(h, d);
    if (rc) return -1;
    if (n) snprintf(out, cap, "local/tokenizer-files-%.16s", d);
    else snprintf(out, cap, "local/no-tokenizer-vocab-%lld", (long long)vocab);
    return 0;
}

/* Tensors the engine uses at the precision stored (fp32 when F32 on disk):
 * the ones transformers keeps in fp32 (_keep_in_fp32_modules_strict of
 * glm_moe_dsa / glm5_next; minimax_m2 keeps none: its
 * block_sparse_moe.e_score_correction_bias is rounded).  Every other F32 tensor is cast to bf16 as
 * from_pretrained(dtype=bfloat16) casts it. */
static int used_as_stored(const char *name)
{
    static const char *const suf[] = {".mlp.gate.weight", ".gate.e_score_correction_bias", "_conv1d.weight", ".conv1d.weight",
                                      ".dt_bias", ".A_log", ".hc_attn_base", ".hc_attn_scale", ".hc_ffn_base",
                                      ".hc_ffn_scale",
                                      /* quantization companions: not weights of the forward */
                                      ".weight_scale_inv", ".weight_scale", ".weight_scale_2", ".input_scale"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suf / sizeof *suf; i++) {
        size_t k = strlen(suf[i]);
        if (n >= k && !strcmp(name + n - k, suf[i])) return 1;
    }
    return !strncmp(name, "model.visual.", 13); /* the vision tower: never run by a text capture */
}

/* F32 tensors rounded to bf16 (issue 16.6: never without a disclosure):
 * NULL when there is none. */
jv *fd_capture_f32_cast_disclosure(const fd_weights *W)
{
    size_t n = 0;
    fd_buf b = {0};
    for (size_t i = 0; i < W->n; i++) {
        const fd_tensor *t = &W->t[i];
        int ign = 0; /* MTP layers past num_hidden_layers: never loaded */
        for (size_t j = 0; j < W->ignored.n && !ign; j++) ign = !strcmp(W->ignored.v[j], t->name);
        if (ign || t->qfmt != FD_Q_NONE || strcmp(t->dtype, "F32") || used_as_stored(t->name)) continue;
        size_t nl = strlen(t->name); /* a GGUF's stored 1 + w (fd_q35_norm): the multiplier as stored */
        if (W->gstored && strstr(W->gstored, "1 + w") && nl > 11 && !strcmp(t->name + nl - 11, "norm.weight") &&
            (nl < 23 || strcmp(t->name + nl - 23, "linear_attn.norm.weight")))
            continue;
        if (n < 8) fd_buf_printf(&b, "%s%s", n ? ", " : "", t->name);
        n++;
    }
    if (!n) { fd_buf_free(&b); return NULL; }
    fd_buf d = {0};
    fd_buf_printf(&d, "%zu F32 tensor%s of the checkpoint rounded to bf16 (nearest even) before use, as transformers' "
                  "from_pretrained(dtype=bfloat16) casts every parameter it does not keep in fp32: %.*s%s. Parameters "
                  "transformers keeps in fp32 (the router weight and bias, KDA conv1d / dt_bias / A_log, mHC base / scale) "
                  "are used as stored", n, n == 1 ? "" : "s", (int)b.n, b.p, n > 8 ? ", ..." : "");
    fd_buf_free(&b);
    jv *x = jv_obj();
    jv_set(x, "code", jv_str("f32_weights_cast_to_bf16"));
    jv_set(x, "severity", jv_str("caveat"));
    jv_set(x, "affects_comparability", jv_bool(1));
    jv_set(x, "detail", jv_strn(d.p, d.n));
    fd_buf_free(&d);
    return x;
}

/* A GGUF whose converter's rewrites are read as stored (fd_weights.gstored),
 * quantized or not; NULL otherwise. */
jv *fd_capture_gguf_stored_disclosure(const fd_weights *W)
{
    if (!W->gstored) return NULL;
    jv *y = jv_obj();
    jv_set(y, "code", jv_str("gguf_converter_rewrite_as_stored"));
    jv_set(y, "severity", jv_str("caveat"));
    jv_set(y, "affects_comparability", jv_bool(1));
    jv_set(y, "detail", jv_str(W->gstored));
    return y;
}

/* A quantized GGUF's disclosures: the weight-only decode with its census and
 * bits per weight, the head dequantized whole when quantized, the imatrix. */
static jv *gguf_disclosures(const fd_weights *W)
{
    jv *d = jv_arr();
    fd_buf b = {0};
    size_t nq = 0;
    for (size_t i = 0; i < W->n; i++) nq += W->t[i].qfmt == FD_Q_GGUF;
    fd_buf_printf(&b, "%zu GGUF weight views dequantized row by row with the ggml reference decoder (gguf-py "
                  "gguf.quants.dequantize, float32) and rounded to bf16 (nearest even); predominant type %s, nominal %.4g "
                  "bits per weight, effective %.6g (quantized tensors' bytes x 8 / elements); llama.cpp's quantized "
                  "activation products (the vec_dot of a ggml quant type) are not captured: a weight-only capture",
                  nq, W->gmajor[0] ? W->gmajor : "none", W->gnominal, W->geffective);
    jv *x = jv_obj();
    jv_set(x, "code", jv_str("activation_quantization_not_captured"));
    jv_set(x, "severity", jv_str("caveat"));
    jv_set(x, "affects_comparability", jv_bool(1));
    jv_set(x, "detail", jv_strn(b.p, b.n));
    jv_push(d, x);
    if (W->ghead_q) {
        b.n = 0;
        fd_buf_printf(&b, "the head (output.weight / tied token_embd.weight) is stored as %s: dequantized to bf16 row by row "
                      "(float32 decode, nearest even) and used as the candidate's own head; compare it with --own-heads",
                      fd_ggml_type_of(W->ghead_type)->name);
        jv *y = jv_obj();
        jv_set(y, "code", jv_str("quantized_head_dequantized"));
        jv_set(y, "severity", jv_str("caveat"));
        jv_set(y, "affects_comparability", jv_bool(1));
        jv_set(y, "detail", jv_strn(b.p, b.n));
        jv_push(d, y);
    }
    const fd_gguf_file *f = &W->gguf->f[0];
    for (size_t i = 0; i < f->nkv; i++) {
        if (strncmp(f->kv[i].key, "quantize.imatrix.", 17)) continue;
        b.n = 0;
        char *v = fd_gguf_get_str(f, f->kv[i].key);
        int64_t iv;
        if (v) fd_buf_printf(&b, "%s = %.200s", f->kv[i].key, v);
        else if (!fd_gguf_get_int(f, f->kv[i].key, &iv)) fd_buf_printf(&b, "%s = %lld", f->kv[i].key, (long long)iv);
        else fd_buf_printf(&b, "%s (%s)", f->kv[i].key, fd_gguf_vtype_name(f->kv[i].type));
        free(v);
        jv *y = jv_obj();
        jv_set(y, "code", jv_str("gguf_imatrix"));
        jv_set(y, "severity", jv_str("info"));
        jv_set(y, "affects_comparability", jv_bool(0));
        jv_set(y, "detail", jv_strn(b.p, b.n));
        jv_push(d, y);
    }
    fd_buf_free(&b);
    return d;
}

jv *fd_capture_quant_disclosures(const fd_weights *W)
{
    if (W->gguf) return gguf_disclosures(W);
    jv *d = jv_arr(), *x = jv_obj();
    fd_buf b = {0};
    char codec[64];
    fd_q_codec(&W->q, codec, sizeof codec);
    if (W->q.kind == FD_Q_FP8_BLOCK)
        fd_buf_printf(&b, "%zu FP8 e4m3 weights (%s, weight_block_size [%d,%d], activation_scheme %s) dequantized to "
                      "bf16 as fp32(e4m3) * weight_scale_inv rounded to nearest even (transformers Fp8Dequantize); "
                      "the dynamic per-group activation quantization of FP8Linear is not applied: a weight-only capture",
                      W->nquant, codec, W->q.bm, W->q.bn, W->q.activation_scheme[0] ? W->q.activation_scheme : "(absent)");
    else if (W->q.kind == FD_Q_GPTQ || W->q.kind == FD_Q_AWQ)
        fd_buf_printf(&b, "%zu %s weights (%s) dequantized to bf16 as (q - zero) * scale in the scale's dtype, rounded to "
                      "nearest even (%s); a weight-only capture", W->nquant, W->q.kind == FD_Q_GPTQ ? "GPTQ" : "AWQ", codec,
                      W->q.kind == FD_Q_GPTQ ? "GPTQModel PackableQuantLinear.dequantize_weight, v1 zero points converted "
                      "as convert_gptq_v1_to_v2_format" : "AutoAWQ dequantize_gemm");
    else if (W->q.kind == FD_Q_MLX)
        fd_buf_printf(&b, "%zu MLX affine weights (%s) dequantized to bf16 as T(T(scales * q) + biases) in the scales' "
                      "dtype T, rounded to nearest even (mlx.core.dequantize, CPU backend; a quantized embedding is "
                      "decoded row by row in the lookup); a weight-only capture", W->nquant, codec);
    else if (W->q.kind == FD_Q_CT_PACK) {
        int acts = 0, dense = 0;
        for (size_t i = 0; i < W->q.nct; i++) {
            acts |= W->q.ct[i].acts;
            dense |= W->q.ct[i].dense != FD_CT_PACKED;
        }
        fd_buf_printf(&b, "%zu compressed-tensors %s weights (%s) dequantized to bf16 as (q - zero_point) * weight_scale "
                      "in the scale's dtype, rounded to nearest even (compressed_tensors %s.decompress); a weight-only "
                      "capture%s", W->nquant, dense ? "quantized" : "pack-quantized integer", codec,
                      dense ? "NaiveQuantizationCompressor / PackedQuantizationCompressor" : "PackedQuantizationCompressor",
                      acts ? ": the config's input_activations (W8A8 activation quantization) are not applied" : "");
    }
    else if (W->q.mo_layers.n)
        fd_buf_printf(&b, "%zu ModelOpt MIXED_PRECISION weights (%s, per layer as quantized_layers lists it) dequantized "
                      "to bf16: NVFP4 layers as e2m1 * (fp32(weight_scale) * weight_scale_2) rounded to nearest even "
                      "(NVFP4QTensor.dequantize), FP8 layers as bf16(e4m3) * bf16(weight_scale) rounded to nearest even "
                      "(FP8QTensor.dequantize, dtype bf16); activations stay bf16: a weight-only capture", W->nquant, codec);
    else
        fd_buf_printf(&b, "%zu NVFP4 weights (%s) dequantized to bf16 as e2m1 * (fp32(weight_scale) * weight_scale_2) "
                      "rounded to nearest even (ModelOpt NVFP4QTensor.dequantize); activations stay bf16: a weight-only "
                      "capture", W->nquant, codec);
    /* effective bits per weight, as the Python tool reports them and as a GGUF's: every stored tensor of the
     * quantized modules (packed weights, scales, zero points / biases, g_idx, shapes, input scales) x 8 over
     * the quantized weights' logical elements */
    double qel = 0;
    for (size_t i = 0; i < W->n; i++)
        if (W->t[i].qfmt != FD_Q_NONE) qel += (double)W->t[i].lshape[0] * (double)W->t[i].lshape[1];
    if (qel > 0)
        fd_buf_printf(&b, "; effective %.6g bits per weight (the quantized modules' stored bytes x 8 / their weights' "
                      "elements)", (double)W->qbytes * 8.0 / qel);
    jv_set(x, "code", jv_str("weight_only_dequantization"));
    jv_set(x, "severity", jv_str("caveat"));
    jv_set(x, "affects_comparability", jv_bool(1));
    jv_set(x, "detail", jv_strn(b.p, b.n));
    jv_push(d, x);
    const fd_tensor *qh = fd_weights_get(W, "lm_head.weight");
    if (!qh) qh = fd_weights_get(W, "model.embed_tokens.weight"); /* tied */
    if (qh && qh->qfmt == FD_Q_MLX) {
        b.n = 0;
        fd_buf_printf(&b, "the head (%s) is stored MLX affine %d-bit (group %d): dequantized whole to bf16 by the same "
                      "decode as the Linears and used as the candidate's own head; compare it with --own-heads",
                      qh->name, qh->ct.bits, qh->ct.group);
        jv *y = jv_obj();
        jv_set(y, "code", jv_str("quantized_head_dequantized"));
        jv_set(y, "severity", jv_str("caveat"));
        jv_set(y, "affects_comparability", jv_bool(1));
        jv_set(y, "detail", jv_strn(b.p, b.n));
        jv_push(d, y);
    }
    size_t n = 0;
    int mofp8 = 0;
    float lo = 0, hi = 0;
    fd_sha *h = fd_sha_new();
    for (size_t i = 0; i < W->n; i++) {
        const fd_tensor *t = W->t[i].qfmt == FD_Q_NVFP4 || W->t[i].qfmt == FD_Q_MO_FP8 ? W->t[i].iscale : NULL;
        if (!t) continue;
        mofp8 |= W->t[i].qfmt == FD_Q_MO_FP8;
        float v;
        fd_err re;
        if (fd_weights_read(W, t, &v, 4, &re)) v = NAN; /* a shard that went away: recorded as such */
        fd_sha_update(h, t->name, strlen(t->name) + 1);
        fd_sha_update(h, &v, 4);
        lo = n && lo < v ? lo : v;
        hi = n && hi > v ? hi : v;
        n++;
    }
    char hex[65];
    fd_sha_final_hex(h, hex);
    if (n) {
        b.n = 0;
        fd_buf_printf(&b, "%zu %s input_scale tensors (activation scales for %s serving, range %.9g..%.9g, sha256 "
                      "of name NUL + F32 bytes in name order %s) are recorded and not applied", n, mofp8 ? "ModelOpt NVFP4 / FP8" : "NVFP4",
                      mofp8 ? "W4A4 / W8A8" : "W4A4", (double)lo, (double)hi, hex);
        jv *y = jv_obj();
        jv_set(y, "code", jv_str("activation_scales_not_applied"));
        jv_set(y, "severity", jv_str("caveat"));
        jv_set(y, "affects_comparability", jv_bool(1));
        jv_set(y, "detail", jv_strn(b.p, b.n));
        jv_push(d, y);
    }
    fd_buf_free(&b);
    return d;
}

/* This process's peak resident set in bytes: VmHWM of /proc/self/status (the
 * high-water mark of this image's own memory), else getrusage's ru_maxrss.
 * ru_maxrss alone is not this process's: Linux carries the peak of the
 * process that forked it into the exec'd image, so fidelity started from a
 * large Python process would report the parent's size. */
static int64_t peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6) && sscanf(line + 6, "%lld", &kb) != 1) kb = -1;
    if (f) fclose(f);
    if (kb >= 0) return (int64_t)kb * 1024;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (int64_t)ru.ru_maxrss * 1024;
}

/* Peak resident set against the checkpoint's bytes: mapped weight pages count
 * in RSS, so a capture that never builds a bf16 copy of a quantized model
 * peaks near the checkpoint size plus activations. */
int fd_capture_write_memory_report(const char *path, const fd_weights *W, const jv *files, size_t windows,
                               size_t max_tokens, fd_err *e)
{
    int64_t ck = 0, v;
    for (size_t i = 0; files && i < files->u.a.n; i++)
        if (!jv_get_i64(files->u.a.v[i], "size", &v)) ck += v;
    jv *m = jv_obj();
    jv_set(m, "schema", jv_str("fidelity.capture-memory.v1"));
    jv_set(m, "peak_rss_bytes", jv_int(peak_rss_bytes()));
    jv_set(m, "checkpoint_bytes", jv_int(ck));
    jv_set(m, "quantized_weight_bytes", jv_int((int64_t)W->qbytes));
    jv_set(m, "quantized_weights", jv_int((int64_t)W->nquant));
    jv_set(m, "windows", jv_int((int64_t)windows));
    jv_set(m, "max_window_tokens", jv_int((int64_t)max_tokens));
    fd_buf b = {0};
    int rc = jv_dump(m, &JV_PRETTY, &b, e);
    fd_buf_putc(&b, '\n');
    if (!rc) rc = fd_write_atomic(path, b.p, b.n, e);
    fd_buf_free(&b);
    jv_free(m);
    return rc;
}

