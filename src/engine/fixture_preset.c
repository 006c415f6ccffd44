/* Helpers of the architectures' fixture presets (engine/fixture_preset.h). */
#include "engine/fixture_preset.h"

jv *fd_fixture_layer_list(const char *types, char one, const char *yes, const char *no)
{
    jv *a = jv_arr();
    for (const char *c = types; *c; c++) jv_push(a, jv_str(*c == one ? yes : no));
    return a;
}

int64_t fd_fixture_first_dense(const fd_fixture_preset *p)
{
    int64_t n = 0;
    while (p->mlp_types[n] == 'D') n++;
    return n;
}
