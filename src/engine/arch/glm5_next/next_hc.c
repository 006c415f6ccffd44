/* Manifold-constrained hyper-connections of glm5_next
 * (Glm5NextTextHyperConnection; docs/MODEL-GLM5-NEXT.md §3.1, §6): the
 * site's weights; the math is the shared op engine/ops/mhc.c. */
#include "engine/arch/glm5_next/next_internal.h"
#include "engine/ops/mhc.h"
#include "util/buf.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int nx_hc_load(nx_hc *h, const fd_weights *W, const fd_glm_config *c, long long L, const char *site, fd_err *e)
{
    size_t m = (size_t)NX(c)->hc_mult, H = (size_t)c->hidden_size, mix = (2 + m) * m;
    const fd_tensor *fn = fd_op_get(W, e, 2, mix, m * H, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_fn", L, site);
    const fd_tensor *ba = fn ? fd_op_get(W, e, 1, mix, 0, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_base", L, site) : NULL;
    const fd_tensor *sc = ba ? fd_op_get(W, e, 1, 3, 0, 0, FD_NEXT_PREFIX "layers.%lld.hc_%s_scale", L, site) : NULL;
    if (!sc) return -1;
    /* fn is a bf16 parameter (F32 on disk is cast to the bf16 load dtype,
     * and the capture discloses it); base and scale are kept in fp32 by
     * transformers (_keep_in_fp32_modules_strict since 5.23): used as stored,
     * which for BF16 on disk is the exact upcast it always was */
    h->fn = fd_xmalloc(mix * m * H * 4);
    for (size_t i = 0; i < mix * m * H; i++) h->fn[i] = F(fd_tensor_bf16_at(fn, i));
    for (size_t i = 0; i < mix; i++) h->base[i] = fd_tensor_f32_at(ba, i);
    for (size_t i = 0; i < 3; i++) h->scale[i] = fd_tensor_f32_at(sc, i);
    return 0;
}

/* Glm5NextTextHyperConnection.forward: the shared mHC op (engine/ops/mhc.h) */
static fd_mhc site_of(const nx_hc *h, const fd_glm_config *c)
{
    fd_mhc s = {(size_t)NX(c)->hc_mult, (size_t)c->hidden_size, NX(c)->hc_iters, (float)c->rms_norm_eps,
                (float)NX(c)->hc_eps, h->fn, h->base, h->scale};
    return s;
}

void nx_hc_apply(const fd_mm *mm, const nx_hc *h, const fd_glm_config *c, const uint16_t *X, size_t S, float *post,
                 float *comb, uint16_t *collapsed, float *mixdump)
{
    fd_mhc s = site_of(h, c);
    fd_op_mhc_apply(mm, &s, X, S, post, comb, collapsed, mixdump);
}

void nx_hc_combine(const fd_mm *mm, const fd_glm_config *c, const float *post, const float *comb, const uint16_t *out,
                   uint16_t *X, size_t S)
{
    fd_op_mhc_combine(mm, (size_t)NX(c)->hc_mult, (size_t)c->hidden_size, post, comb, out, X, S);
}
