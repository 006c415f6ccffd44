#!/usr/bin/env bash
# The same bits on aarch64 (issue 24.3): the aarch64 build (make aarch64:
# Debian's gcc-aarch64-linux-gnu) run under qemu-user, against the x86-64
# release binary run natively, on two emulated CPUs: `-cpu max` (ASIMD and
# FEAT_BF16: the paths scalar, neon, neon-bf16) and `-cpu cortex-a72` (ASIMD
# only: scalar, neon; the fallback when HWCAP2 has no BF16).  On each CPU:
#   1. kernel-selftest lists exactly that CPU's paths and passes (every
#      path against the scalar definitions, both orders, F32 weights, KL);
#   2. the unit tests pass (tests/c/test_gemm_edges: the flush cases);
#   3. the default path is chosen by HWCAP2 (the compare receipt's
#      kernel_path: neon-bf16 on max, neon on cortex-a72);
#   4. with EACH path forced (capture and compare --kernel K): captures of the
#      tiny glm_moe_dsa fixture (both bf16 product orders) and of the
#      flash-0.1b-next glm5_next fixture (two 16-token windows) have the native
#      capture digests, compare root vs RTN int8 writes the native tokenwise
#      bytes, and the tiny parity goldens (transformers' hidden states, both
#      orders) hold bit for bit;
#   5. every architecture's *-tiny fixture preset captures (default path) with
#      the native capture digest.
# Also runs tests/aarch64/bf16_probe.c under -cpu max (BFMLALB/T are IEEE FMAs;
# BFDOT/BFMMLA differ from the pair order: printed, docs/NUMERICS.md).
# Skipped (exit 0, with a notice) where the cross build or qemu-aarch64 is missing.
# usage: tests/aarch64.sh [--quick]   (after `make build/fidelity aarch64`;
#   --quick: only the default path per CPU in step 4)
set -euo pipefail
cd "$(dirname "$0")/.."
A=build-aarch64/fidelity
if ! command -v qemu-aarch64 >/dev/null || [ ! -x "$A" ] || [ ! -x build-aarch64/unit ]; then
    echo "aarch64.sh: qemu-aarch64 or the aarch64 build is missing (apt: qemu-user gcc-aarch64-linux-gnu and the"
    echo "  :arm64 -dev libraries; make aarch64): aarch64 checks skipped"
    exit 0
fi
B=./build/fidelity
TOP=$(mktemp -d)
trap 'rm -rf "$TOP"' EXIT
W=$TOP
fail=0
. tests/emulated.sh

AA=$(readlink -f "$A")
quick=0; [ "${1:-}" = --quick ] && quick=1

# runner CPU [KERNEL]: a script running the aarch64 binary on that emulated CPU,
# with `--kernel KERNEL` added to every capture and compare when KERNEL is given
runner() {
    local f="$W/run-$1-${2:-default}"
    {
        echo '#!/bin/sh'
        [ -n "${2:-}" ] && printf 'case "$1" in capture|compare) c=$1; shift; exec qemu-aarch64 -cpu %s %s "$c" --kernel %s "$@";; esac\n' "$1" "$AA" "$2"
        printf 'exec qemu-aarch64 -cpu %s %s "$@"\n' "$1" "$AA"
    } >"$f"
    chmod +x "$f"
    echo "$f"
}

# same_bits writes fixed names under W: a fresh W for each call
fresh() { W=$(mktemp -d -p "$TOP"); }

# the glm5_next panel (two 16-token windows) and its native capture, once
$B fixture --preset flash-0.1b-next --seed 1 --out "$TOP/nx" >/dev/null
python3 -c 'import json,sys; json.dump([(i * 7919 + 13) % 154880 for i in range(32)], open(sys.argv[1], "w"))' "$TOP/nx-ids.json"
$B panel build --out "$TOP/nx-panel" --vocab 154880 --context-length 16 "$TOP/nx-ids.json" >/dev/null
nx_capture() { # RUNNER OUT
    "$1" capture --model "$TOP/nx" --panel "$TOP/nx-panel" --out "$2" --role root --lane other \
        --dataset-id fidelity--a64.nx --dataset-name a64 --no-sanity-check >/dev/null 2>&1
}
nx_capture "$B" "$TOP/nx-native"

# every check of step 4 through RUNNER, labelled LABEL
path_checks() { # LABEL RUNNER
    local label=$1 run=$2 o
    fresh
    same_bits "$label" "$run"
    nx_capture "$run" "$W/nx-a64"
    [ -d "$TOP/nx-native" ] && [ "$(digest "$TOP/nx-native")" = "$(digest "$W/nx-a64")" ] && r=ok || r=bad
    check "glm5_next capture digest on $label = x86-64" $r
    for o in pair tile; do
        bash tests/parity/run_parity.sh "$run" $o tiny >"$W/parity-$o.log" 2>&1 && r=ok || r=bad
        grep -q '"hidden_bit_identical_fraction": 1.0,' "$W/parity-$o.log" || r=bad
        check "$o order: the tiny transformers golden holds on $label" $r
    done
}

# every *-tiny fixture preset (one per architecture): the capture digest of the
# default path on the emulated CPU = the native one
all_presets() { # CPU
    local p d1 d2 list
    list=$($B fixture --help 2>&1 | grep -o 'preset [^ ]*' | head -1 | cut -d' ' -f2 | tr '|' ' ')
    for p in $list; do
        case $p in *tiny) ;; *) continue ;; esac
        [ -d "$TOP/ap-$p" ] || $B fixture --preset "$p" --seed 1 --out "$TOP/ap-$p" >/dev/null 2>&1 || true
        d1=$(digest_of "$B" "$p" native); d2=$(digest_of "$(runner "$1")" "$p" "$1")
        [ -n "$d1" ] && [ "$d1" = "$d2" ] && r=ok || r=bad
        check "$p: capture digest on aarch64 -cpu $1 (default path) = x86-64 native" $r
    done
}
digest_of() { # RUNNER PRESET TAG: the capture's digest, empty when it failed
    [ -e "$TOP/ap-$2-$3" ] || "$1" capture --model "$TOP/ap-$2" --panel "$TOP/ap-$2/panel" --out "$TOP/ap-$2-$3" --role root \
        --lane other --dataset-id fidelity--a64.all --dataset-name a64 --no-sanity-check >/dev/null 2>&1 || true
    [ -d "$TOP/ap-$2-$3" ] && digest "$TOP/ap-$2-$3" || true
}

for cpu in max cortex-a72; do
    Q=(qemu-aarch64 -cpu "$cpu")
    if [ $cpu = max ]; then want="scalar neon neon-bf16"; def=neon-bf16; else want="scalar neon"; def=neon; fi
    out=$("${Q[@]}" "$A" kernel-selftest --products 40000000 2>&1)
    echo "$out" | tail -4
    grep -q 'all paths bit-identical' <<<"$out" && grep -qx "kernel-selftest: paths supported here: $want" <<<"$out" \
        && r=ok || r=bad
    check "kernel-selftest on aarch64 -cpu $cpu: paths $want, all bit-identical" $r

    "${Q[@]}" build-aarch64/unit >"$W/unit.log" 2>&1 && r=ok || r=bad
    tail -1 "$W/unit.log"
    check "unit tests pass on aarch64 -cpu $cpu" $r

    # the default path (no --kernel), as the compare receipt names it
    fresh
    same_bits "aarch64 -cpu $cpu (default path)" "$(runner $cpu)"
    kp=$(grep -rhos '"kernel_path": *"[a-z0-9-]*"' "$W/pair-emul-cmp" | head -1 | sed 's/.*"\([a-z0-9-]*\)"$/\1/') || true
    [ "$kp" = "$def" ] && r=ok || r=bad
    check "aarch64 -cpu $cpu: the default path is $def by HWCAP/HWCAP2 (receipt: ${kp:-none})" $r
    all_presets $cpu
    [ $quick = 1 ] && continue
    for k in $want; do
        path_checks "aarch64 -cpu $cpu --kernel $k" "$(runner $cpu $k)"
    done
done

# --kernel neon-bf16 where the CPU lacks FEAT_BF16: refused by name, exit 3 (capture) / 4 (compare usage)
"$(runner cortex-a72 neon-bf16)" capture --model "$W/m" --panel "$W/m/panel" --out "$W/nobf16" --role root --lane other \
    --dataset-id fidelity--emul.root --dataset-name emul --no-sanity-check >"$W/nobf16.log" 2>&1 && rc=0 || rc=$?
[ $rc = 3 ] && grep -q "neon-bf16" "$W/nobf16.log" && [ ! -e "$W/nobf16" ] && r=ok || r=bad
check "capture --kernel neon-bf16 on cortex-a72 (no BF16): refused by name, exit 3, nothing written (rc $rc)" $r

# what the bf16 instructions compute (informational, but BFMLALB/T must be IEEE FMAs)
if aarch64-linux-gnu-gcc -std=c17 -O2 -Wall -Wextra -Werror -ffp-contract=off -march=armv8.2-a+bf16 \
    -o "$W/bf16_probe" tests/aarch64/bf16_probe.c -lm; then
    qemu-aarch64 -cpu max "$W/bf16_probe" && r=ok || r=bad
else r=bad; fi
check "bf16_probe: BFMLALB/BFMLALT are IEEE fp32 FMAs (the neon-bf16 premise)" $r
exit $fail
