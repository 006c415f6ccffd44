/* Non-finite weights, refused by name at load (docs/CAPTURE.md "Non-finite
 * values").  Every F32 tensor up to FINITE_SCAN_MAX bytes (the router
 * weights and biases, e.g. e_score_correction_bias, norms saved in fp32) and
 * every 1-D tensor of any float dtype (norm weights, biases) is read and
 * scanned here; a big BF16 matrix is not: a NaN or infinity in one reaches
 * the hidden states wherever it takes part in the forward, and a
 * non-finite hidden state is refused before anything is written (capture.c). */
#include "weights.h"
#include "util/buf.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FINITE_SCAN_MAX ((uint64_t)256 << 20)
#define FINITE_SCAN_CHUNK ((size_t)1 << 20)

int fd_weights_check_finite(const fd_weights *w, fd_err *e)
{
    unsigned char *buf = NULL;
    int rc = 0;
    for (size_t i = 0; i < w->n && !rc; i++) {
        const fd_tensor *t = &w->t[i];
        int f32 = !strcmp(t->dtype, "F32"), bf = !strcmp(t->dtype, "BF16"), f16 = !strcmp(t->dtype, "F16");
        if (!((f32 && t->nbytes <= FINITE_SCAN_MAX) || ((bf || f16) && t->ndim == 1))) continue;
        size_t es = f32 ? 4 : 2;
        if (!buf) buf = fd_xmalloc(FINITE_SCAN_CHUNK);
        for (uint64_t off = 0; off < t->nbytes && !rc; off += FINITE_SCAN_CHUNK) {
            size_t n = t->nbytes - off < FINITE_SCAN_CHUNK ? (size_t)(t->nbytes - off) : FINITE_SCAN_CHUNK;
            n -= n % es;
            if (t->data) memcpy(buf, (const unsigned char *)t->data + off, n);
            else {
                fd_tensor part = *t; /* the same tensor from off: fd_weights_read reads from the start */
                part.off += off;
                part.nbytes -= off;
                if (fd_weights_read(w, &part, buf, n, e)) { rc = -1; break; }
            }
            for (size_t k = 0; k < n / es; k++) {
                int bad;
                if (f32) { uint32_t u; memcpy(&u, buf + 4 * k, 4); bad = (u & 0x7f800000u) == 0x7f800000u; }
                else if (bf) { uint16_t u; memcpy(&u, buf + 2 * k, 2); bad = (u & 0x7f80u) == 0x7f80u; }
                else { uint16_t u; memcpy(&u, buf + 2 * k, 2); bad = (u & 0x7c00u) == 0x7c00u; }
                if (bad) {
                    rc = fd_fail(e, "non_finite", "", "%s: weight %s (%s) element %llu is NaN or infinite; a checkpoint's "
                                 "weights must be finite (refused at load)", w->root, t->name, t->dtype,
                                 (unsigned long long)(off / es + k));
                    break;
                }
            }
        }
    }
    free(buf);
    return rc;
}
