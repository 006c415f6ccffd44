/* libFuzzer target for src/engine/qconfig.c: a config.json's
 * quantization_config (untrusted) is either refused or parsed into a config
 * whose exclusion rules and codec text work on every weight name kind; the
 * first bytes pick the decoding of the FP8 / NVFP4 element codecs too, which
 * must round-trip every code (abort() otherwise).  compressed-tensors
 * configs: every name's scheme is -1 or a group, the declared bits 4 or 8;
 * GPTQ bits 2, 3, 4 or 8, AWQ 4; an MLX `quantization` object (the
 * document's) is refused or parsed to bits 2-6 / 8, group 32 / 64 / 128;
 * and the input bytes, as packed words /
 * scales / zero points of a small pack-quantized, unpacked int8 / FP8
 * (int-/float-quantized), nvfp4 / mxfp4 packed, GPTQ 2/3/4/8-bit, MLX affine or FP8-with-UE8M0-scales
 * weight whose scheme the first
 * bytes pick, or a ModelOpt per-tensor FP8 weight (MIXED_PRECISION: the
 * layer list sorted, unique, each NVFP4 / FP8 and found again by name), decode in bounds (ASan) with every fp16 scale code
 * round-tripping. */
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
            if (q.ue8m0 && (q.kind != FD_Q_FP8_BLOCK || !strstr(codec, "-ue8m0"))) abort();
            if (q.kind == FD_Q_GPTQ || q.kind == FD_Q_AWQ) {
                int b = q.nct == 1 ? q.ct[0].bits : 0;
                if (q.nct != 1 || (q.kind == FD_Q_AWQ ? b != 4 : (b != 2 && b != 3 && b != 4 && b != 8))) abort();
                for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++) (void)fd_q_excluded(&q, NAMES[i]);
            }
            if (q.mo_layers.n) { /* ModelOpt MIXED_PRECISION: sorted unique layers, each NVFP4 or FP8 and found again */
                if (q.kind != FD_Q_NVFP4 || strncmp(codec, "modelopt-mixed-", 15)) abort();
                if (fd_qconfig_bits(&q) != 4 && fd_qconfig_bits(&q) != 8) abort();
                for (size_t i = 0; i < q.mo_layers.n; i++) {
                    if (q.mo_algo[i] != FD_MO_NVFP4 && q.mo_algo[i] != FD_MO_FP8) abort();
                    if (i && strcmp(q.mo_layers.v[i - 1], q.mo_layers.v[i]) >= 0) abort();
                    size_t l = strlen(q.mo_layers.v[i]);
                    char *wn = malloc(l + 8);
                    memcpy(wn, q.mo_layers.v[i], l);
                    memcpy(wn + l, ".weight", 8);
                    if (fd_q_mo_algo(&q, wn) != q.mo_algo[i]) abort();
                    (void)fd_q_excluded(&q, wn);
                    free(wn);
                }
            }
            if (q.kind == FD_Q_CT_PACK) {
                for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++) {
                    int g = fd_q_ct_scheme(&q, NAMES[i]);
                    if (g < -1 || g >= (int)q.nct) abort();
                }
                if (fd_qconfig_bits(&q) != 4 && fd_qconfig_bits(&q) != 8) abort();
                for (size_t i = 0; i < q.nct; i++) /* float weights: 8-bit, symmetric, unpacked */
                    if (q.ct[i].dense == FD_CT_DENSE_FP8 && (q.ct[i].bits != 8 || !q.ct[i].sym)) abort();
            }
        }
        fd_qconfig_free(&q);
        const jv *mq = jv_get(doc, "quantization"); /* mlx-lm's key */
        if (mq && !fd_qconfig_parse_mlx(mq, "fuzz", &q, &e)) {
            int b = q.nct == 1 ? q.ct[0].bits : 0, g = q.nct == 1 ? q.ct[0].group : 0;
            if (q.kind != FD_Q_MLX || b < 2 || b > 8 || b == 7 || (g != 32 && g != 64 && g != 128)) abort();
            char codec[64];
            fd_q_codec(&q, codec, sizeof codec);
            if (strncmp(codec, "mlx-affine-w", 12)) abort();
        }
        fd_qconfig_free(&q);
        jv_free(doc);
    }
    if (size >= 2) { /* a ModelOpt per-tensor FP8 weight made of the input bytes (a MIXED_PRECISION FP8 layer) */
        uint64_t K = 1 + data[0] % 40, N = (size - 1) / K;
        float sc;
        memcpy(&sc, (uint32_t[]){(uint32_t)data[1] << 23 | 0x3f000000u}, 4);
        uint16_t out[40];
        for (uint64_t r = 0; r < N && r < 8; r++) fd_mo_fp8_row_bf16(data + 1, sc, K, r, out);
    }
    if (size >= 12) { /* a pack-quantized weight made of the input bytes */
        fd_ct_row r = {0};
        r.bits = data[1] & 1 ? 8 : 4;
        r.strategy = data[2] % 3;
        r.sdtype = data[3] % 3;
        uint64_t g = 1 + data[4] % 24, N = 1 + data[5] % 9, K = r.strategy == FD_CT_GROUP ? g * (1 + data[6] % 4) : 1 + data[6] % 70;
        r.group = (int)g;
        r.bh = 1 + data[7] % 8;
        r.bw = 1 + data[8] % 16;
        uint64_t sr = r.strategy == FD_CT_BLOCK ? (N + (uint64_t)r.bh - 1) / (uint64_t)r.bh : N;
        r.scols = r.strategy == FD_CT_GROUP ? K / g : r.strategy == FD_CT_BLOCK ? (K + (uint64_t)r.bw - 1) / (uint64_t)r.bw : 1;
        r.pw = (K * (uint64_t)r.bits + 31) / 32;
        r.zcols = data[9] & 1 && r.strategy != FD_CT_BLOCK ? r.scols : 0;
        uint64_t nz = (N * (uint64_t)r.bits + 31) / 32 * r.zcols * 4, ns = sr * r.scols * (r.sdtype == 2 ? 4 : 2),
                 np_ = N * r.pw * 4;
        uint8_t *pk = malloc(np_), *sc = malloc(ns), *zp = nz ? malloc(nz) : NULL;
        for (uint64_t i = 0; i < np_; i++) pk[i] = data[(10 + i) % size];
        for (uint64_t i = 0; i < ns; i++) sc[i] = data[(11 + 3 * i) % size];
        for (uint64_t i = 0; i < nz; i++) zp[i] = data[(7 + 5 * i) % size];
        r.packed = pk;
        r.scale = sc;
        r.zero = zp;
        uint16_t *out = malloc(K * 2);
        for (uint64_t i = 0; i < N; i++) fd_ct_row_bf16(&r, K, i, out);
        free(out);
        free(pk);
        free(sc);
        free(zp);
        /* the same bytes as an unpacked int8 (I8, zero points I8 shaped as the scale) or FP8 weight */
        fd_ct_row d = {0};
        d.dense = data[9] & 4 ? FD_CT_DENSE_FP8 : FD_CT_DENSE_INT;
        d.bits = 8;
        d.strategy = data[2] % 4;
        d.sdtype = r.sdtype;
        d.group = r.group;
        d.bh = r.bh;
        d.bw = r.bw;
        uint64_t dsr = d.strategy == FD_CT_BLOCK ? sr : d.strategy == FD_CT_TENSOR ? 1 : N;
        d.scols = d.strategy == FD_CT_TENSOR ? 1 : d.strategy == FD_CT_GROUP ? (K + g - 1) / g
                : d.strategy == FD_CT_BLOCK ? (K + (uint64_t)d.bw - 1) / (uint64_t)d.bw : 1;
        uint64_t dn = N * K, dns = dsr * d.scols * (d.sdtype == 2 ? 4 : 2), dnz = d.dense == FD_CT_DENSE_INT && data[9] & 8 ? dsr * d.scols : 0;
        uint8_t *dw = malloc(dn), *ds = malloc(dns), *dz = dnz ? malloc(dnz) : NULL;
        for (uint64_t i = 0; i < dn; i++) dw[i] = data[(4 + i) % size];
        for (uint64_t i = 0; i < dns; i++) ds[i] = data[(6 + 5 * i) % size];
        for (uint64_t i = 0; i < dnz; i++) dz[i] = data[(8 + 3 * i) % size];
        d.packed = dw;
        d.scale = ds;
        d.zero = dz;
        uint16_t *dout = malloc(K * 2);
        for (uint64_t i = 0; i < N; i++) fd_ct_row_bf16(&d, K, i, dout);
        free(dout);
        free(dw);
        free(ds);
        free(dz);
        /* the same bytes as a GPTQ / AWQ weight */
        fd_gq_row gr = {0};
        gr.awq = data[1] & 2 ? 1 : 0;
        static const int GB[4] = {2, 3, 4, 8};
        gr.bits = gr.awq ? 4 : GB[(data[1] >> 2) & 3];
        /* whole words: 32 / b values a word, 3-bit 32 values in 3 words */
        uint64_t pf = gr.bits == 3 ? 32 : 32 / (uint64_t)gr.bits, gN = pf * (1 + data[5] % 3), gK = pf * (1 + data[6] % 5);
        gr.group = (int)(gr.awq ? pf : 1 + data[4] % gK);
        uint64_t G = (gK + (uint64_t)gr.group - 1) / (uint64_t)gr.group;
        gr.N = gN;
        gr.sdtype = data[3] % 3;
        gr.v1 = data[9] & 2 ? 1 : 0;
        uint64_t nq = (gr.awq ? gK * gN / 8 : gK * (uint64_t)gr.bits / 32 * gN) * 4,
                 nzq = G * (gr.awq ? gN / 8 : gN * (uint64_t)gr.bits / 32) * 4,
                 nsc = G * gN * (gr.sdtype == 2 ? 4 : 2);
        uint8_t *qw = malloc(nq), *qz = malloc(nzq), *gs = malloc(nsc);
        int32_t *gi = malloc(gK * 4);
        for (uint64_t i = 0; i < nq; i++) qw[i] = data[(3 + i) % size];
        for (uint64_t i = 0; i < nzq; i++) qz[i] = data[(5 + 7 * i) % size];
        for (uint64_t i = 0; i < nsc; i++) gs[i] = data[(2 + 11 * i) % size];
        for (uint64_t i = 0; i < gK; i++) gi[i] = (int32_t)(data[(1 + i) % size] % G); /* bind checks [0, G) */
        gr.qweight = qw;
        gr.qzeros = qz;
        gr.scale = gs;
        gr.gidx = (const uint8_t *)gi;
        uint16_t *go = malloc(gK * 2);
        for (uint64_t n = 0; n < gN; n++) fd_gq_row_bf16(&gr, gK, n, go);
        free(go);
        free(qw);
        free(qz);
        free(gs);
        free(gi);
        /* the same bytes as an MLX affine weight: bits 2..8 (not 7), a field may straddle words */
        fd_mlx_row mr = {0};
        static const int MB[6] = {2, 3, 4, 5, 6, 8};
        mr.bits = MB[data[7] % 6];
        mr.group = 32 << (data[8] % 3);
        mr.sdtype = data[3] % 3;
        uint64_t mN = 1 + data[5] % 4, mK = (uint64_t)mr.group * (1 + data[6] % 3);
        uint64_t mw = mN * mK * (uint64_t)mr.bits / 32 * 4, ms = mN * (mK / (uint64_t)mr.group) * (mr.sdtype == 2 ? 4 : 2);
        uint8_t *mwp = malloc(mw), *msp = malloc(ms), *mbp = malloc(ms);
        for (uint64_t i = 0; i < mw; i++) mwp[i] = data[(2 + i) % size];
        for (uint64_t i = 0; i < ms; i++) { msp[i] = data[(5 + 3 * i) % size]; mbp[i] = data[(9 + 7 * i) % size]; }
        mr.w = mwp;
        mr.scales = msp;
        mr.biases = mbp;
        uint16_t *mo = malloc(mK * 2);
        for (uint64_t n = 0; n < mN; n++) {
            fd_mlx_row_bf16(&mr, mK, n, mo);
            for (uint64_t k = 0; k < mK; k += 7) /* the element decode is the row decode */
                if (fd_mlx_elem_bf16(&mr, mK, n, k) != mo[k] && (mo[k] & 0x7fff) <= 0x7f80) abort();
        }
        free(mo);
        free(mwp);
        free(msp);
        free(mbp);
        /* FP8 block rows with UE8M0 scales: any code decodes (255 is NaN, refused at bind) */
        {
            uint64_t fN = 1 + data[5] % 9, fK = 1 + data[6] % 70;
            int bm = 1 + data[7] % 8, bn = 1 + data[8] % 16;
            uint64_t kb = (fK + (uint64_t)bn - 1) / (uint64_t)bn, nsb = (fN + (uint64_t)bm - 1) / (uint64_t)bm * kb;
            uint8_t *fw = malloc(fN * fK), *fs = malloc(nsb);
            for (uint64_t i = 0; i < fN * fK; i++) fw[i] = data[(1 + i) % size];
            for (uint64_t i = 0; i < nsb; i++) fs[i] = data[(3 + 5 * i) % size];
            uint16_t *fo = malloc(fK * 2);
            for (uint64_t i = 0; i < fN; i++) fd_fp8_block_row_bf16_e8m0(fw, fs, fK, kb, bm, bn, i, fo);
            free(fo);
            free(fw);
            free(fs);
        }
        /* the same bytes as compressed-tensors nvfp4 / mxfp4 packed rows */
        {
            uint64_t pN = 1 + data[5] % 5, pK = 32 * (uint64_t)(1 + data[6] % 4);
            uint8_t *pp = malloc(pN * pK / 2), *ps = malloc(pN * pK / 16);
            for (uint64_t i = 0; i < pN * pK / 2; i++) pp[i] = data[(2 + 3 * i) % size];
            for (uint64_t i = 0; i < pN * pK / 16; i++) ps[i] = data[(4 + i) % size];
            float gsc;
            uint32_t gb = (uint32_t)data[1] << 24 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 8 | data[4];
            memcpy(&gsc, &gb, 4);
            uint16_t *po = malloc(pK * 2);
            for (uint64_t i = 0; i < pN; i++) {
                fd_ct_nvfp4_row_bf16(pp, ps, gsc, pK, i, po);
                fd_ct_mxfp4_row_bf16(pp, ps, pK, i, po);
            }
            free(po);
            free(pp);
            free(ps);
        }
        uint16_t h = (uint16_t)(data[10] | data[11] << 8);
        float f = fd_f16_to_f32(h);
        if (f == f && fd_f32_to_f16(f) != h) abort();
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
