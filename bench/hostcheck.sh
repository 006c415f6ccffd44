#!/usr/bin/env bash
# bench/hostcheck.sh: what to run on a host we have not seen, to show that it
# computes our bits (issue 24: "kernel-selftest and the goldens bit-exact on
# x86, every path available").  Prints, in order:
#   1. the CPU (vendor, family/model, name, cores) and the ISA flags that
#      choose kernel paths (avx2 fma avx512f avx512bw avx512vl avx512_bf16
#      amx_tile amx_bf16; asimd bf16 on aarch64);
#   2. kernel-selftest over PRODUCTS bf16 products on every path the CPU has
#      (both product orders; the KL exp/log);
#   3. tests/parity/run_parity.sh: every committed transformers golden
#      (both orders) captured fresh on this CPU;
#   4. "digest" lines: the tiny glm_moe_dsa fixture and its RTN int8 copy
#      captured with every path the CPU has forced (--kernel) in both orders,
#      and root vs int8 compared on each: the capture digests and the
#      tokenwise KL sha256.  Every line of one order must hold the same
#      values on every path and every host (diff two hosts' outputs).
# usage: bash bench/hostcheck.sh [BINARY]   env: PRODUCTS (100000000), PARITY (1)
set -uo pipefail
cd "$(dirname "$0")/.."
B=$(readlink -f "${1:-build/fidelity}")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
echo "== cpu"
if [ -r /proc/cpuinfo ]; then
    grep -m1 -E '^(vendor_id|CPU implementer)' /proc/cpuinfo
    grep -m1 -E '^cpu family' /proc/cpuinfo; grep -m1 -E '^model\s' /proc/cpuinfo
    grep -m1 -E '^(model name|CPU part)' /proc/cpuinfo
    echo "logical cpus: $(nproc)"
    echo "flags: $(grep -m1 -E '^(flags|Features)' /proc/cpuinfo | tr ' ' '\n' |
        grep -xE 'avx2|fma|avx512f|avx512bw|avx512vl|avx512_bf16|amx_tile|amx_bf16|amx_int8|asimd|bf16' | tr '\n' ' ')"
fi
echo "== kernel-selftest"
"$B" kernel-selftest --products "${PRODUCTS:-100000000}" 2>&1 | tail -8
st=${PIPESTATUS[0]}
echo "kernel-selftest exit $st"
if [ "${PARITY:-1}" != 0 ]; then
    echo "== goldens (tests/parity/run_parity.sh)"
    bash tests/parity/run_parity.sh "$B" 2>&1 | grep -E '^==|hidden_bit_identical_fraction|top1_agreement|FAIL|Error|error' | head -120
    echo "run_parity exit ${PIPESTATUS[0]}"
fi
echo "== digests per path"
dig() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/fidelity-dataset.json"))["capture"]["capture_content_digest"])' "$1" 2>/dev/null || echo none; }
"$B" fixture --preset tiny --seed 3 --out "$W/m" >/dev/null
"$B" quantize --src "$W/m" --dst "$W/q8" --bits 8 --match mlp.experts --emit-scope "$W/s8.json" >/dev/null
sel=$("$B" kernel-selftest --products 1000 2>&1)
for o in pair tile; do
    if [ $o = pair ]; then paths=$(sed -n "s/^kernel-selftest: paths supported here: //p" <<<"$sel")
    else paths=$(sed -n 's/.*tile order, paths: \(.*\);.*/\1/p' <<<"$sel"); fi
    for p in $paths; do
        cap() { "$B" capture --model "$1" --panel "$W/m/panel" --out "$2" --role "$3" --lane other --gemm-order $o \
                --kernel $p --dataset-id "fidelity--hostcheck.$3" --dataset-name hostcheck --no-sanity-check "${@:4}" >/dev/null 2>&1; }
        cap "$W/m" "$W/$o-$p-root" root
        cap "$W/q8" "$W/$o-$p-q8" quant --scope-file "$W/s8.json"
        "$B" compare --reference "$W/$o-$p-root" --candidate "$W/$o-$p-q8" --out "$W/$o-$p-cmp" --no-bootstrap --kernel $p >/dev/null 2>&1
        tw=$(sha256sum "$W/$o-$p-cmp/tokenwise-kld.npy" 2>/dev/null | cut -c1-16)
        echo "digest $o $p root=$(dig "$W/$o-$p-root" | cut -c1-16) int8=$(dig "$W/$o-$p-q8" | cut -c1-16) tokenwise=${tw:-none}"
    done
done
