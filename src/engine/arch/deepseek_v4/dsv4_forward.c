/* The deepseek_v4 forward (dsv4.h).  Not implemented yet: begin refuses by
 * name, so a capture of a deepseek_v4 checkpoint stops before anything is
 * written (docs/MODEL-DEEPSEEK.md §11: the loader check and the fixture are
 * in, the forward is not). */
#include "engine/arch/deepseek_v4/dsv4.h"
#include <stdlib.h>

void *fd_v4_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    (void)w; (void)c; (void)ids; (void)S;
    fd_fail(e, "unsupported_model_type", "",
            "deepseek_v4: the forward is not implemented (the loader check and the fixture are; docs/MODEL-DEEPSEEK.md §11)");
    return NULL;
}

int fd_v4_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, void *st, fd_err *e)
{
    (void)m; (void)w; (void)c; (void)L; (void)st;
    return fd_fail(e, "unsupported_model_type", "", "deepseek_v4: the forward is not implemented");
}

int fd_v4_end(const fd_weights *w, const fd_glm_config *c, void *st, uint16_t *out, fd_err *e)
{
    (void)w; (void)c; (void)st; (void)out;
    return fd_fail(e, "unsupported_model_type", "", "deepseek_v4: the forward is not implemented");
}

void fd_v4_free(void *st) { free(st); }

uint16_t *fd_v4_stream(const fd_glm_config *c, void *st, size_t *n)
{
    (void)c; (void)st;
    *n = 0;
    return NULL;
}
