/* The supported architectures and weight formats (`fidelity architectures`).
 * The architectures are the table of engine/model.h (FD_ARCHS, one line per
 * architecture in archtable.c; each fd_arch carries its fd_arch_info); the
 * formats are FD_FORMATS below.  qconfig.c remains the parser that decides
 * a checkpoint's format. */
#ifndef FD_ENGINE_ARCHTABLE_H
#define FD_ENGINE_ARCHTABLE_H
#include <stddef.h>

typedef struct fd_arch_info {
    const char *model_type;   /* config.json model_type */
    const char *hf_class;     /* the transformers class the engine follows */
    const char *summary;
    const char *doc;          /* where the engine documents it */
    const char *formats;      /* the format ids tested with it, ", "-separated */
} fd_arch_info;

typedef struct fd_format_info {
    const char *id;           /* bf16 | fp8-block | nvfp4 */
    const char *name;
    const char *declared_by;  /* how a checkpoint says it is in this format */
    const char *role;         /* what a capture of it is: root | quant */
    const char *doc;
} fd_format_info;

extern const fd_format_info FD_FORMATS[];
extern const size_t FD_N_FORMATS;

const fd_arch_info *fd_arch_find(const char *model_type);
const fd_format_info *fd_format_find(const char *id);
/* 1 when the architecture lists the format id. */
int fd_arch_has_format(const fd_arch_info *a, const char *format_id);
/* "glm_moe_dsa, glm5_next" into out. */
void fd_arch_names(char *out, size_t cap);

#endif
