/* torch's K-blocks (src/engine/ops/kblocks.c) against the splits measured on
 * torch 2.11 (docs/CAPTURE.md, bench/amx/KBLOCKS.md). */
#include "check.h"
#include "engine/ops/kblocks.h"

/* blocks as lengths, terminated by 0 */
static int same(const fd_kplan *p, const size_t *want)
{
    size_t n = 0;
    while (want[n]) n++;
    if (p->nb != n || p->st[0] != 0) return 0;
    for (size_t b = 0; b < n; b++)
        if (p->st[b + 1] - p->st[b] != want[b]) return 0;
    return 1;
}

int test_kblocks(void);
int test_kblocks(void)
{
    int fails = 0;
    static const struct { size_t M, N, K, want[6]; } amx[] = {
        {512, 1024, 1024, {1024}},       {512, 1024, 2816, {1408, 1408}}, {64, 1024, 2816, {2816}},
        {600, 1024, 2816, {1408, 1408}}, {512, 1024, 4096, {1024, 1024, 1024, 1024}}, {64, 1024, 4096, {4096}},
        {512, 1024, 8192, {2048, 2048, 2048, 2048}}, {512, 1024, 3000, {1504, 1496}}, {100, 1024, 3000, {1504, 1496}},
        {512, 1024, 1000, {1000}},       {512, 1024, 2000, {2000}},       {2048, 128, 2048, {1024, 1024}},
        {2048, 64, 2048, {2048}},        {511, 64, 511, {511}},           {512, 8192, 128, {128}},
    };
    for (size_t i = 0; i < sizeof amx / sizeof *amx; i++) {
        fd_kplan p;
        fd_kplan_amx(amx[i].M, amx[i].N, amx[i].K, &p);
        CHECKF(same(&p, amx[i].want), "fd_kplan_amx %zux%zux%zu", amx[i].M, amx[i].N, amx[i].K);
        fd_kplan q;
        fd_kplan_bf16(1, amx[i].M, amx[i].N, amx[i].K, &q);
        CHECKF(same(&q, amx[i].want), "fd_kplan_bf16(tile) %zux%zux%zu", amx[i].M, amx[i].N, amx[i].K);
    }
    static const struct { size_t K, want[6]; } pair[] = {
        {256, {256}}, {512, {512}}, {768, {512, 256}}, {2048, {1024, 1024}}, {2816, {1024, 1024, 768}}, {3000, {1024, 1024, 952}},
    };
    for (size_t i = 0; i < sizeof pair / sizeof *pair; i++) {
        fd_kplan p;
        fd_kplan_bf16(0, 512, 1024, pair[i].K, &p);
        CHECKF(same(&p, pair[i].want), "fd_kplan_bf16(pair) K=%zu", pair[i].K);
    }
    fd_kplan m;
    fd_kplan_mkl(512, 1024, &m);
    static const size_t mkl[] = {384, 320, 320, 0};
    CHECK(same(&m, mkl) && m.half == 0, "fd_kplan_mkl 512 x 1024: 384, 320, 320");
    return fails;
}
