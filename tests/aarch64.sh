#!/usr/bin/env bash
# The same bits on aarch64 (issue 24.3): the aarch64 build (make aarch64:
# Debian's gcc-aarch64-linux-gnu) run under qemu-user, against the x86-64
# release binary run natively:
#   1. kernel-selftest passes there (the portable definitions: no SIMD path);
#   2. the unit tests pass;
#   3. captures of the tiny glm_moe_dsa fixture (both bf16 product orders) and
#      of the flash-0.1b-next glm5_next fixture (two 16-token windows) have the
#      native capture digests, and compare root vs RTN int8 writes the native
#      tokenwise bytes;
#   4. the tiny parity goldens (transformers' hidden states, both orders) hold
#      bit for bit.
# Skipped (exit 0, with a notice) where the cross build or qemu-aarch64 is missing.
# usage: tests/aarch64.sh   (after `make build/fidelity aarch64`)
set -euo pipefail
cd "$(dirname "$0")/.."
A=build-aarch64/fidelity
if ! command -v qemu-aarch64 >/dev/null || [ ! -x "$A" ] || [ ! -x build-aarch64/unit ]; then
    echo "aarch64.sh: qemu-aarch64 or the aarch64 build is missing (apt: qemu-user gcc-aarch64-linux-gnu and the"
    echo "  :arm64 -dev libraries; make aarch64): aarch64 checks skipped"
    exit 0
fi
B=./build/fidelity
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
Q=(qemu-aarch64)
fail=0
. tests/emulated.sh

out=$("${Q[@]}" "$A" kernel-selftest --products 2000000 2>&1)
echo "$out" | tail -3
grep -q 'all paths bit-identical' <<<"$out" && r=ok || r=bad
check "kernel-selftest passes on aarch64" $r

"${Q[@]}" build-aarch64/unit >"$W/unit.log" 2>&1 && r=ok || r=bad
tail -1 "$W/unit.log"
check "unit tests pass on aarch64" $r

same_bits aarch64 "${Q[@]}" "$A"

# glm5_next on a short panel (two 16-token windows)
$B fixture --preset flash-0.1b-next --seed 1 --out "$W/nx" >/dev/null
python3 -c 'import json,sys; json.dump([(i * 7919 + 13) % 154880 for i in range(32)], open(sys.argv[1], "w"))' "$W/nx-ids.json"
$B panel build --out "$W/nx-panel" --vocab 154880 --context-length 16 "$W/nx-ids.json" >/dev/null
for k in native a64; do
    run=("$B"); [ $k = a64 ] && run=("${Q[@]}" "$A")
    "${run[@]}" capture --model "$W/nx" --panel "$W/nx-panel" --out "$W/nx-$k" --role root --lane other \
        --dataset-id fidelity--a64.nx --dataset-name a64 --no-sanity-check >/dev/null 2>&1
done
[ -d "$W/nx-native" ] && [ "$(digest "$W/nx-native")" = "$(digest "$W/nx-a64")" ] && r=ok || r=bad
check "glm5_next capture digest on aarch64 = x86-64" $r

# the tiny goldens of transformers, both orders, through the aarch64 binary
printf '#!/bin/sh\nexec qemu-aarch64 %s "$@"\n' "$(readlink -f "$A")" >"$W/fa64"
chmod +x "$W/fa64"
for o in pair tile; do
    bash tests/parity/run_parity.sh "$W/fa64" $o tiny >"$W/parity-$o.log" 2>&1 && r=ok || r=bad
    grep -q '"hidden_bit_identical_fraction": 1.0,' "$W/parity-$o.log" || r=bad
    check "$o order: the tiny transformers golden holds on aarch64" $r
done
exit $fail
