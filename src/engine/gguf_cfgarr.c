/* Per-block metadata arrays for the GGUF config hooks (engine/gguf_model.h):
 * attention.head_count_kv as a list (a 0 marks a linear-attention block:
 * glm5-next, kimi-linear), the indexer types, the swiglu clamps. */
#include "engine/gguf_model.h"
#include <stdio.h>
#include <string.h>

const fd_gguf_kv *fd_gguf_cfg_array(const fd_gguf_set *s, const char *arch, const char *key, int64_t n, int want_float,
                                    fd_err *e)
{
    char k[160];
    snprintf(k, sizeof k, "%s.%s", arch, key);
    const fd_gguf_kv *kv = fd_gguf_get(&s->f[0], k);
    int sz = kv && kv->type == FD_GGUF_ARRAY ? fd_gguf_vtype_size(kv->atype) : 0;
    int isf = kv && (kv->atype == FD_GGUF_F32 || kv->atype == FD_GGUF_F64);
    if (!kv) { fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is missing", s->f[0].path, k); return NULL; }
    if (sz <= 0 || kv->alen < (uint64_t)n || kv->abytes < kv->alen * (uint64_t)sz || isf != want_float ||
        kv->atype == FD_GGUF_STRING) {
        fd_fail(e, "bad_gguf_config", "", "%s: metadata key %s is not an array of at least block_count %s", s->f[0].path,
                k, want_float ? "floats" : "integers or bools");
        return NULL;
    }
    return kv;
}

double fd_gguf_cfg_elem(const fd_gguf_kv *kv, uint64_t i)
{
    const uint8_t *p = kv->adata + i * (uint64_t)fd_gguf_vtype_size(kv->atype);
    uint64_t u = 0;
    for (int b = fd_gguf_vtype_size(kv->atype) - 1; b >= 0; b--) u = u << 8 | p[b];
    switch (kv->atype) {
    case FD_GGUF_F32: { float f; uint32_t w = (uint32_t)u; memcpy(&f, &w, 4); return f; }
    case FD_GGUF_F64: { double d; memcpy(&d, &u, 8); return d; }
    case FD_GGUF_I8: return (int8_t)u;
    case FD_GGUF_I16: return (int16_t)u;
    case FD_GGUF_I32: return (int32_t)u;
    case FD_GGUF_I64: return (double)(int64_t)u;
    default: return (double)u;
    }
}
