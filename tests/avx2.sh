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
check() { if [ "$2" = ok ]; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }

out=$("${Q[@]}" "$B" kernel-selftest --products 2000000 2>&1 | quiet)
echo "$out"
grep -q '^kernel-selftest: paths supported here: scalar avx2$' <<<"$out" && r=ok || r=bad
check "emulated CPU offers exactly the scalar and avx2 paths" $r
grep -q 'all paths bit-identical' <<<"$out" && r=ok || r=bad
check "kernel-selftest passes on the AVX2-only CPU" $r

"${Q[@]}" ./build/unit >"$W/unit.log" 2>&1 && r=ok || r=bad
tail -1 "$W/unit.log"
check "unit tests pass on the AVX2-only CPU" $r

digest() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/fidelity-dataset.json"))["capture"]["capture_content_digest"])' "$1"; }
$B fixture --preset tiny --seed 3 --out "$W/m" >/dev/null
$B quantize --src "$W/m" --dst "$W/q8" --bits 8 --match mlp.experts --emit-scope "$W/s8.json" >/dev/null
for o in tile pair; do
    for k in native emul; do
        run=("$B"); [ $k = emul ] && run=("${Q[@]}" "$B")
        cap() { "${run[@]}" capture --model "$1" --panel "$W/m/panel" --out "$2" --role "$3" --lane other --gemm-order $o \
                --dataset-id "fidelity--avx2.$3" --dataset-name avx2 --no-sanity-check ${4:+--scope-file "$4"} 2>&1 | quiet >/dev/null; }
        cap "$W/m" "$W/$o-$k-root" root
        cap "$W/q8" "$W/$o-$k-q8" quant "$W/s8.json"
        "${run[@]}" compare --reference "$W/$o-$k-root" --candidate "$W/$o-$k-q8" --out "$W/$o-$k-cmp" --no-bootstrap 2>&1 | quiet >/dev/null
    done
    [ "$(digest "$W/$o-native-root")" = "$(digest "$W/$o-emul-root")" ] && r=ok || r=bad
    check "$o order: root capture digest on AVX2-only = native" $r
    [ "$(digest "$W/$o-native-q8")" = "$(digest "$W/$o-emul-q8")" ] && r=ok || r=bad
    check "$o order: int8 capture digest on AVX2-only = native" $r
    cmp -s "$W/$o-native-cmp/tokenwise-kld.npy" "$W/$o-emul-cmp/tokenwise-kld.npy" && r=ok || r=bad
    check "$o order: compare tokenwise KL bytes on AVX2-only = native" $r
done
# the default kernel path is chosen by CPU features, never by timing (issue 24.4)
kpath() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/comparison-receipt.json"))["comparator"]["replay_env"]["kernel_path"])' "$1"; }
[ "$(kpath "$W/pair-emul-cmp")" = avx2 ] && r=ok || r=bad
check "default compare kernel on the AVX2-only CPU is avx2 (got $(kpath "$W/pair-emul-cmp"))" $r
want=avx2; grep -qw avx512f /proc/cpuinfo && want=avx512f
[ "$(kpath "$W/pair-native-cmp")" = $want ] && r=ok || r=bad
check "default compare kernel natively is $want, by features (got $(kpath "$W/pair-native-cmp"))" $r
exit $fail
