/* architectures prepare's additions from the Python tool's coverage.prepare_recipe
 * (cmd_architectures.c): the checks on its flag values, and the panel
 * binding written beside the plan (panel-binding.json) when the panel
 * resolves. */
#ifndef FD_CLI_ARCH_PREPARE_H
#define FD_CLI_ARCH_PREPARE_H
#include "format/json.h"
#include "util/buf.h"
#include "util/err.h"

/* The Python tool's value checks, each a refusal (code = the reason word):
 * model/dataset repositories owner/name, a 40-hex model revision, the
 * author handle, a dataset id that begins fidelity--, --architecture a
 * model_type of the table.  NULL values are not checked. */
int fd_prep_check_values(const char *architecture, const char *model_repository, const char *dataset_repository,
                         const char *model_revision, const char *author, const char *dataset_id, fd_err *e);

/* The binding of panel_dir (role final, tokenizer files verified under
 * tokenizer_root) as coverage.prepare_recipe writes panel-binding.json:
 * json.dumps(sort_keys=True, indent=2) + "\n" into *raw, its sha256 into
 * sha.  -1 with e set (code panel_unresolvable / tokenizer_files_unverified)
 * when the panel does not resolve. */
int fd_prep_panel_binding(const char *panel_dir, const char *tokenizer_root, fd_buf *raw, char sha[65], fd_err *e);

#endif
