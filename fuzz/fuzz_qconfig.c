/* libFuzzer target for src/engine/qconfig.c: a config.json's
 * quantization_config (untrusted) is either refused or parsed into a config
 * whose exclusion rules and codec text work on every weight name kind; the
 * first bytes pick the decoding of the FP8 / NVFP4 element codecs too, which
 * must round-trip every code (abort() otherwise). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "engine/qconfig.h"
#include "engine/qformat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fd_err e = {0};
    jv *doc = jv_parse((const char *)data, size, &e);
    if (doc) {
        fd_qconfig q;
        memset(&q, 0, sizeof q);
        const jv *qc = jv_get(doc, "quantization_config");
        if (!fd_qconfig_parse(qc ? qc : doc, "fuzz", &q, &e)) {
            static const char *const NAMES[] = {"lm_head.weight", "model.layers.12.mlp.experts.7.gate_proj.weight",
                                                "model.layers.3.self_attn.indexer.weights_proj.weight", "x", ""};
            for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++) {
                (void)fd_q_excluded(&q, NAMES[i]);
                (void)fd_q_is_linear_weight(NAMES[i]);
            }
            char codec[64];
            fd_q_codec(&q, codec, sizeof codec);
            if (q.kind == FD_Q_NONE || !memchr(codec, 0, sizeof codec)) abort();
        }
        fd_qconfig_free(&q);
        jv_free(doc);
    }
    if (size >= 1) { /* every finite e4m3 / e2m1 code decodes and re-encodes to itself */
        uint8_t b = data[0];
        float f = fd_e4m3_to_f32(b);
        if (f == f && fd_f32_to_e4m3(f) != b) abort();
        uint8_t c = (uint8_t)(b & 15);
        if (c != 8 && fd_f32_to_e2m1(fd_e2m1_to_f32(c)) != c) abort();
    }
    return 0;
}
