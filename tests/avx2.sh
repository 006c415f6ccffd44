#!/usr/bin/env bash
# The same bits on an AVX2-only CPU (issue 16): the release binary run under
# qemu-user emulating an AMD EPYC Milan (Zen 3: AVX2 and FMA, no AVX-512, no
# AMX), against the same binary run natively:
#   1. kernel-selftest passes there and sees only the scalar and avx2 paths;
#   2. the unit tests (build/unit, no sanitizers: ASan does not run under qemu-user) pass;
#   3. a tiny capture in both bf16 product orders has the native capture digest,
#      and compare root vs an RTN int8 candidate writes the native tokenwise bytes.
# Skipped (exit 0, with a notice) where qemu-x86_64 is not installed.
# usage: tests/avx2.sh   (after `make build/fidelity build/unit`)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v qemu-x86_64 >/dev/null; then
    echo "avx2.sh: qemu-x86_64 not installed (Debian qemu-user): AVX2-only emulation skipped"
    exit 0
fi
Q=(qemu-x86_64 -cpu EPYC-Milan)
B=./build/fidelity
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
quiet() { grep -v '^qemu-x86_64: warning' || true; }
fail=0
. tests/emulated.sh

out=$("${Q[@]}" "$B" kernel-selftest --products 2000000 2>&1 | quiet)
echo "$out"
grep -q '^kernel-selftest: paths supported here: scalar avx2$' <<<"$out" && r=ok || r=bad
check "emulated CPU offers exactly the scalar and avx2 paths" $r
grep -q 'all paths bit-identical' <<<"$out" && r=ok || r=bad
check "kernel-selftest passes on the AVX2-only CPU" $r

"${Q[@]}" ./build/unit >"$W/unit.log" 2>&1 && r=ok || r=bad
tail -1 "$W/unit.log"
check "unit tests pass on the AVX2-only CPU" $r

same_bits "the AVX2-only CPU" "${Q[@]}" "$B"
# the default kernel path is chosen by CPU features, never by timing (issue 24.4)
kpath() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/comparison-receipt.json"))["comparator"]["replay_env"]["kernel_path"])' "$1"; }
[ "$(kpath "$W/pair-emul-cmp")" = avx2 ] && r=ok || r=bad
check "default compare kernel on the AVX2-only CPU is avx2 (got $(kpath "$W/pair-emul-cmp"))" $r
want=avx2; grep -qw avx512f /proc/cpuinfo && want=avx512f
grep -qw avx512_bf16 /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo &&
    grep -q AuthenticAMD /proc/cpuinfo && want=avx512bf16  # AMD Zen 4+: the bf16-dot path (src/kernels/gemm.c)
[ "$(kpath "$W/pair-native-cmp")" = $want ] && r=ok || r=bad
check "default compare kernel natively is $want, by features (got $(kpath "$W/pair-native-cmp"))" $r
exit $fail
