/* The toy quantizer (FORMAT.md §7, the C port of P bin/toy_quantize.py):
 * round-to-nearest with a per-output-row absmax scale, applied to the 2-D
 * tensors whose name contains any --match substring, dequantized back to
 * the source dtype.  Everything else keeps its bytes; dtypes never change.
 *
 *   levels = 2^(bits-1) - 1
 *   s[i]   = max(max_j |w[i,j]|, (float)1e-12) / levels        (fp32)
 *   w_hat  = nearbyintf(w[i,j] / s[i]) * s[i]                   (fp32, half to even)
 *
 * w is widened to fp32 exactly (BF16, F16, F32; F64 is narrowed to fp32
 * first, as torch's .float() does) and w_hat is cast back with round to
 * nearest even.  A NaN in a row makes the whole row NaN (torch amax
 * propagates NaN); NaN payload bits are not promised to match torch, whose
 * own scalar and vector paths disagree on them. */
#ifndef FD_QUANTIZE_H
#define FD_QUANTIZE_H
#include <stddef.h>
#include <stdint.h>
#include "format/json.h"
#include "format/safetensors.h"

/* P's SCHEME sentence, verbatim: it is what `scheme` and `_scheme` say. */
#define FD_QZ_SCHEME                                                                                  \
    "round-to-nearest, per-output-row absmax scale, no calibration, no error feedback, no grouping, " \
    "no outlier handling; dequantized back to the source dtype and stored as a normal safetensors "    \
    "checkpoint"

typedef struct fd_qz_opts {
    const char *src, *dst;
    int bits;                      /* 2, 3, 4, 5, 6 or 8 (P's argparse choices) */
    const char *const *patterns;   /* --match substrings, in command-line order */
    size_t npatterns;
    int dry_run;                   /* read and count only: nothing is written under dst */
    int force;                     /* replace an existing dst */
} fd_qz_opts;

int fd_qz_bits_ok(int bits);
/* One of the nine scope classes (the fixed order of the scope document). */
int fd_qz_class_ok(const char *tensor_class);
/* Name contains any pattern and the tensor is 2-D. */
/* Appends {tensor, shape, elements} of a 2-D tensor the quantizer converts
 * to the report's list; returns its element count. */
int64_t fd_qz_touched(jv *touched, const fd_st_tensor *t);
int fd_qz_matches(const char *name, int ndim, const char *const *patterns, size_t npatterns);

/* Quantizes one row of `cols` fp32 values in place. */
void fd_qz_row_f32(float *w, size_t cols, int bits);
/* Quantizes `rows` x `cols` little-endian elements of dtype (BF16, F16,
 * F32, F64) in place; unsupported_dtype for any other dtype.  `scratch`
 * holds at least cols floats. */
int fd_qz_rows(const char *dtype, void *data, uint64_t rows, uint64_t cols, int bits, float *scratch, fd_err *e);

/* Runs the whole quantizer.  *report receives P's report
 * {bits, patterns, scheme, tensors_quantized, tensors_untouched,
 *  elements_quantized, quantized:[{tensor, shape, elements}]} whenever the
 * source was readable, also on a nothing_matched refusal.  Refusal codes:
 * missing_file, unreadable, bad_tensor_file, no_safetensors,
 * unsupported_dtype, nothing_matched, destination_exists,
 * destination_is_source, unwritable. */
int fd_quantize(const fd_qz_opts *o, jv **report, fd_err *e);
/* Builds a model directory beside --dst (".NAME.quantize-tmp.PID"), lets
 * fill() write its files, then renames it into place (replacing an existing
 * dst only with force; a dst that is or contains the source is refused). */
typedef int (*fd_qz_fill_fn)(void *ctx, const char *tmpdir, fd_err *e);
int fd_qz_stage_dir(const char *src_root, const char *dst, int force, fd_qz_fill_fn fill, void *ctx, fd_err *e);
/* pread until n bytes arrived; -1 on error or end of file. */
int fd_qz_pread_all(int fd, void *buf, size_t n, uint64_t off);

/* The report less its `quantized` list (what P prints). */
jv *fd_qz_summary(const jv *report);
/* P's scope document for the report: {policy, head_policy, kv_cache_dtype,
 * assignments, _scheme, _match_patterns, _tensors_quantized,
 * _elements_quantized}. */
jv *fd_qz_scope_doc(const jv *report, const char *tensor_class);

/* json.dumps(..., indent=2, sort_keys=True): ensure_ascii at its default. */
extern const jv_style FD_QZ_JSON_STYLE;

#endif
