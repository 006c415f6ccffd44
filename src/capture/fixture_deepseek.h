/* deepseek_v3 fixture presets' config.json (fixture_deepseek.c). */
#ifndef FD_CAPTURE_FIXTURE_DEEPSEEK_H
#define FD_CAPTURE_FIXTURE_DEEPSEEK_H
#include "capture/fixture.h"
#include "format/json.h"

jv *fd_fixture_ds3_config(const fd_fixture_preset *p, int bos, int eos, int pad);
jv *fd_fixture_ds32_config(const fd_fixture_preset *p, int bos, int eos, int pad);
jv *fd_fixture_kl_config(const fd_fixture_preset *p, int bos, int eos, int pad);
jv *fd_fixture_k25_config(const fd_fixture_preset *p, int bos, int eos, int pad);

#endif
