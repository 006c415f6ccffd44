/* The tile order (gemm.h): which paths compute it here and which one runs.
 * AMX needs three things: the CPU's AMX-TILE and AMX-BF16 bits, the OS
 * enabling the tile state in XCR0, and (Linux) this process asking for it
 * once with arch_prctl; any of them missing leaves the FMA emulations. */
#include "gemm.h"
#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

fd_gemm_fn fd_gemm_tile_scalar_fn(void);
fd_gemm_fn fd_gemm_tile_x86_fn(fd_path p);
fd_gemm_fn fd_gemm_neon_fn(fd_path p, int tile);

static int amx_usable(void)
{
#if defined(__x86_64__) && defined(SYS_arch_prctl)
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    if (!(d & (1u << 22)) || !(d & (1u << 24))) return 0; /* AMX-BF16, AMX-TILE */
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0; /* OSXSAVE */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & (3u << 17)) != (3u << 17)) return 0; /* XTILECFG | XTILEDATA enabled */
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0; /* idempotent */
#else
    return 0;
#endif
}

int fd_tile_path_supported(fd_path p)
{
    switch (p) {
    case FD_PATH_SCALAR:
    case FD_PATH_AVX2:
    case FD_PATH_AVX512F:
    case FD_PATH_AVX512BF16:
    case FD_PATH_NEON:
    case FD_PATH_NEON_BF16: return fd_path_supported(p);
    case FD_PATH_AMX: return amx_usable();
    default: return 0;
    }
}

int fd_tile_path_select(const char *name, fd_path *out)
{
    if (name && *name) return fd_path_parse(name, out) || !fd_tile_path_supported(*out) ? -1 : 0;
    static const fd_path pref[] = {FD_PATH_AMX, FD_PATH_AVX512F, FD_PATH_AVX2, FD_PATH_NEON_BF16, FD_PATH_NEON};
    for (size_t i = 0; i < sizeof pref / sizeof *pref; i++)
        if (fd_tile_path_supported(pref[i])) { *out = pref[i]; return 0; }
    *out = FD_PATH_SCALAR;
    return 0;
}

fd_gemm_fn fd_gemm_tile_for(fd_path p)
{
    if (p == FD_PATH_NEON || p == FD_PATH_NEON_BF16) return fd_gemm_neon_fn(p, 1);
    return p == FD_PATH_SCALAR ? fd_gemm_tile_scalar_fn() : fd_gemm_tile_x86_fn(p);
}
