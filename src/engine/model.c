/* The generic forward over the architecture table (engine/model.h). */
#include "engine/model.h"
#include "util/buf.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fd_fwd {
    const fd_arch *a;
    void *st;
};

const fd_arch *fd_arch_of(const char *model_type)
{
    for (size_t i = 0; model_type && i < FD_N_ARCHS; i++)
        if (!strcmp(FD_ARCHS[i]->info.model_type, model_type)) return FD_ARCHS[i];
    return NULL;
}

void fd_arch_layer_prefix(const fd_arch *a, long long L, char *out, size_t cap)
{
    snprintf(out, cap, "%slayers.%lld.", a->prefix, L);
}

void fd_arch_prefix(const fd_arch *a, const char *what, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s.", a->prefix, what);
}

fd_fwd *fd_forward_begin(const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S, fd_err *e)
{
    void *st = c->arch->begin(w, c, ids, S, e);
    if (!st) return NULL;
    fd_fwd *f = fd_xcalloc(1, sizeof *f);
    f->a = c->arch;
    f->st = st;
    return f;
}

int fd_forward_layer(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, long long L, fd_fwd *f, fd_err *e)
{
    return f->a->layer(m, w, c, L, f->st, e);
}

int fd_forward_end(const fd_weights *w, const fd_glm_config *c, fd_fwd *f, uint16_t *out_bf16, fd_err *e)
{
    return f->a->end(w, c, f->st, out_bf16, e);
}

void fd_forward_free(fd_fwd *f)
{
    if (!f) return;
    f->a->free_state(f->st);
    free(f);
}

int fd_forward_hidden(const fd_mm *m, const fd_weights *w, const fd_glm_config *c, const int64_t *ids, size_t S,
                      uint16_t *out_bf16, fd_err *e)
{
    fd_fwd *f = fd_forward_begin(w, c, ids, S, e);
    if (!f) return -1;
    int rc = 0;
    for (long long L = 0; L < c->num_hidden_layers && !rc; L++) rc = fd_forward_layer(m, w, c, L, f, e);
    if (!rc) rc = fd_forward_end(w, c, f, out_bf16, e);
    fd_forward_free(f);
    return rc;
}
