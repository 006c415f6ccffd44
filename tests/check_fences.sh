#!/usr/bin/env bash
# The fence (docs/ARCHITECTURE.md "A new kernel path"): every piece of vector
# code lives in src/kernels/.  Fails, naming file and line, when any other
# source file uses an intrinsic header (immintrin.h, x86intrin.h,
# arm_neon.h, ...), a vector type (__m128/__m256/__m512..., NEON's float32x4_t...), an _mm*_
# intrinsic, an AMX _tile_* call or a __builtin_ia32_* builtin.
#
# usage: tests/check_fences.sh [SRCDIR]   (default: src; self-test: --self-test)
set -u
cd "$(dirname "$0")/.."
PAT='\b(_mm(256|512)?_[a-z0-9_]+|_tile_[a-z0-9_]+)\s*\(|#\s*include\s*[<"](immintrin|x86intrin|emmintrin|xmmintrin|pmmintrin|tmmintrin|smmintrin|nmmintrin|avxintrin|avx2intrin|avx512[a-z0-9]*intrin|amxintrin|arm_neon|arm_sve|arm_bf16|arm_fp16|wmmintrin)\.h[>"]|\b__m(64|128|256|512)[a-z]*\b|\b(u?int|float|bfloat|poly|mfloat)(8|16|32|64)x[0-9]+(x[234])?_t\b|\b__builtin_ia32_[a-z0-9_]+|\b__builtin_neon_[a-z0-9_]+'
scan() { # DIR: prints offending lines outside DIR/kernels/
    grep -rnPI --include='*.c' --include='*.h' --include='*.inc' "$PAT" "$1" | grep -v "^$1/kernels/"
}
if [ "${1:-}" = "--self-test" ]; then # the check must catch each form, and pass a clean tree
    T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
    mkdir -p "$T/src/kernels" "$T/src/engine"
    printf '#include <immintrin.h>\n__m512 v;\n' > "$T/src/kernels/ok.c"
    printf 'int fd_mm_run(void);\nint f(void) { return fd_mm_run(); }\n' > "$T/src/engine/clean.c"
    scan "$T/src" >/dev/null && { echo "FAIL self-test: a clean tree was flagged"; exit 1; }
    for bad in '#include <immintrin.h>' '#include "arm_neon.h"' '__m256 x;' 'int y = _mm512_reduce_add_ps(v);' \
               '_tile_loadd(0, p, 64);' '__builtin_ia32_pause();' '__m128i z;' 'float32x4_t q;' 'bfloat16x8_t h;' \
               '#include <arm_bf16.h>'; do
        printf '%s\n' "$bad" > "$T/src/engine/bad.c"
        scan "$T/src" >/dev/null || { echo "FAIL self-test: not caught: $bad"; exit 1; }
    done
    echo "ok   check_fences self-test: every form caught, a clean tree passes"
    exit 0
fi
D=${1:-src}
hits=$(scan "$D")
if [ -n "$hits" ]; then
    echo "FAIL vector code outside src/kernels/ (move it into the fence):"
    echo "$hits"
    exit 1
fi
echo "ok   no intrinsics, intrinsic headers or vector types outside src/kernels/"
