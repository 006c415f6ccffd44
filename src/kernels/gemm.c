#include "gemm.h"
#include "../util/buf.h"
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

fd_gemm_fn fd_gemm_scalar_fn(void);
fd_gemm_fn fd_gemm_x86_fn(fd_path p);
fd_gemm_fn fd_gemm_neon_fn(fd_path p, int tile);
int fd_neon_supported(fd_path p);

static const char *const NAMES[FD_PATH_COUNT] = {"scalar", "avx2", "avx512f", "avx512bf16", "amx", "neon",
                                                     "neon-bf16"};

const char *fd_path_name(fd_path p) { return p < FD_PATH_COUNT ? NAMES[p] : "?"; }

int fd_path_supported(fd_path p)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    switch (p) {
    case FD_PATH_SCALAR: return 1;
    case FD_PATH_AVX2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    /* the AVX-512 KL pass (kl.c) is compiled for AVX512DQ too (GCC may use its
     * instructions): every AVX-512 CPU since Skylake-SP and Zen 4 has it, the
     * Xeon Phi did not */
    case FD_PATH_AVX512F: return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
    case FD_PATH_AVX512BF16:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bf16");
    default: return 0;
    }
#elif defined(__aarch64__)
    return p == FD_PATH_SCALAR || fd_neon_supported(p); /* by HWCAP / HWCAP2 (gemm_neon.c) */
#else
    return p == FD_PATH_SCALAR;
#endif
}

int fd_path_parse(const char *name, fd_path *out)
{
    for (int p = 0; p < FD_PATH_COUNT; p++)
        if (!strcmp(name, NAMES[p])) {
            *out = (fd_path)p;
            return 0;
        }
    return -1;
}

/* The default path is chosen by the CPU's features alone, never by timing
 * (a timed choice can differ from run to run under load): avx512bf16 on an
 * AMD CPU with AVX512_BF16 (Zen 4 and later run vdpbf16ps at full 512-bit
 * width but double-pump 512-bit FMAs: the bf16-dot replay is 2x the FMA one
 * there), else avx512f where the CPU has AVX-512F (two 512-bit FMAs beat one
 * vdpbf16ps on the Intel hosts measured), else avx2 (AVX2 + FMA), else
 * scalar.  Every path computes the same bits (bench/README.md;
 * docs/HOSTS.md). */
fd_path fd_path_default(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (fd_path_supported(FD_PATH_AVX512BF16) && __builtin_cpu_is("amd")) return FD_PATH_AVX512BF16;
#endif
    /* aarch64: the FEAT_BF16 kernel where HWCAP2 has BF16 (it saves the
     * widening shifts; not timed: no aarch64 hardware was measured), else
     * ASIMD, which every aarch64 CPU has */
    if (fd_path_supported(FD_PATH_NEON_BF16)) return FD_PATH_NEON_BF16;
    if (fd_path_supported(FD_PATH_NEON)) return FD_PATH_NEON;
    if (fd_path_supported(FD_PATH_AVX512F)) return FD_PATH_AVX512F;
    if (fd_path_supported(FD_PATH_AVX2)) return FD_PATH_AVX2;
    return FD_PATH_SCALAR;
}

int fd_path_select(const char *name, fd_path *out)
{
    if (name && *name) return fd_path_parse(name, out) || !fd_path_supported(*out) ? -1 : 0;
    *out = fd_path_default();
    return 0;
}

fd_gemm_fn fd_gemm_for(fd_path p)
{
    if (p == FD_PATH_NEON || p == FD_PATH_NEON_BF16) return fd_gemm_neon_fn(p, 0);
    return p == FD_PATH_SCALAR ? fd_gemm_scalar_fn() : fd_gemm_x86_fn(p);
}

void fd_pack_hidden(const void *row, size_t hidden, uint32_t *out)
{
    const unsigned char *b = row; /* mapped tensor data need not be aligned */
    if (hidden % 2 == 0) { memcpy(out, b, hidden * 2); return; } /* little-endian: pairs are words */
    for (size_t k = 0; 2 * k < hidden; k++) {
        uint32_t lo = (uint32_t)b[4 * k] | (uint32_t)b[4 * k + 1] << 8, hi = 0;
        if (2 * k + 1 < hidden) hi = (uint32_t)b[4 * k + 2] | (uint32_t)b[4 * k + 3] << 8;
        out[k] = lo | hi << 16;
    }
}

void fd_pack_head_alloc(size_t vocab, size_t hidden, int touch, fd_packed_head *o)
{
    o->vocab = vocab;
    o->hidden = hidden;
    o->kp = (hidden + 1) / 2;
    o->tiles = (vocab + FD_TILE - 1) / FD_TILE;
    size_t words = o->tiles * o->kp * FD_TILE;
    /* populated in one call (tens of thousands of page faults taken one by one
     * while packing cost more than the packing), or with touch 0 piece by
     * piece (fd_pack_head_touch), and zero-filled, so the lanes past vocab in
     * the last tile are 0; where the mapping fails, the heap (bytes = 0:
     * freed by free) and that tile zeroed */
    o->bytes = ((words * 4 + 4095) / 4096) * 4096;
    void *m = mmap(NULL, o->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | (touch ? MAP_POPULATE : 0), -1, 0);
    if (m != MAP_FAILED) {
        o->w = m;
        return;
    }
    o->bytes = 0;
    o->w = fd_xmalloc(words * 4);
    memset(o->w + (o->tiles - 1) * o->kp * FD_TILE, 0, o->kp * FD_TILE * 4);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
void fd_pack_head_touch(fd_packed_head *o, size_t v0, size_t n)
{
    if (!o->bytes || !n) return;   /* the heap: touched as written */
    size_t tile = o->kp * FD_TILE * 4, lo = v0 / FD_TILE * tile, hi = ((v0 + n - 1) / FD_TILE + 1) * tile;
    lo = lo / 4096 * 4096;
    hi = hi < o->bytes ? (hi + 4095) / 4096 * 4096 : o->bytes;
    (void)madvise((char *)o->w + lo, hi - lo, MADV_POPULATE_WRITE); /* refused (an older kernel): the writes fault the pages in */
}

void fd_pack_head_rows(fd_packed_head *o, const uint16_t *rows, size_t v0, size_t n)
{
    for (size_t v = v0; v < v0 + n; v++) {
        const uint16_t *row = rows + (v - v0) * o->hidden;
        uint32_t *dst = o->w + (v / FD_TILE) * o->kp * FD_TILE + v % FD_TILE;
        for (size_t k = 0; k < o->kp; k++) {
            uint32_t lo = row[2 * k], hi = 2 * k + 1 < o->hidden ? row[2 * k + 1] : 0;
            dst[k * FD_TILE] = lo | hi << 16;
        }
    }
}

void fd_pack_head(const uint16_t *head, size_t vocab, size_t hidden, fd_packed_head *o)
{
    fd_pack_head_alloc(vocab, hidden, 1, o);
    fd_pack_head_rows(o, head, 0, vocab);
}

void fd_packed_head_free(fd_packed_head *p)
{
    if (p->w && p->bytes) munmap(p->w, p->bytes);
    else free(p->w);
    memset(p, 0, sizeof *p);
}
