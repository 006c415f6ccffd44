#!/usr/bin/env bash
# The element-wise row kernels (src/kernels/rowops.c, torch_ops.c) per ISA
# build in a flash-0.1b capture (issue 24.2): three binaries that differ only
# in those two files, compiled with -DFD_EW_NO_AVX512 -DFD_EW_NO_AVX2 (the
# one-lane loops: what a CPU without AVX2 runs), -DFD_EW_NO_AVX512 (the AVX2
# + FMA builds: what an AVX2-only CPU runs) and as released (AVX-512F here),
# each running `capture --kernel avx2` (the AVX2 GEMMs) on the same fixture,
# REPS times in turn; prints the forward seconds (the manifest's
# elapsed_seconds), wall / user / sys seconds and the capture digest, which
# must be the same on every line of an order.
# usage: bench/rowops_isa.sh [THREADS] [ORDER] [REPS]   (after `make build/fidelity`)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-1} O=${2:-tile} R=${3:-3}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
F=(-std=c17 -D_GNU_SOURCE -Isrc -Ibuild/gen -ffp-contract=off -O2 -g)
for v in scalar avx2; do
    D=(-DFD_EW_NO_AVX512); [ $v = scalar ] && D+=(-DFD_EW_NO_AVX2)
    mkdir -p "$W/$v"
    cc "${F[@]}" "${D[@]}" -c -o "$W/$v/rowops.o" src/kernels/rowops.c
    cc "${F[@]}" "${D[@]}" -c -o "$W/$v/torch_ops.o" src/kernels/torch_ops.c
    cp build/libfidelity.a "$W/$v/lib.a"
    ar r "$W/$v/lib.a" "$W/$v/rowops.o" "$W/$v/torch_ops.o"
    cc -O2 -o "$W/fidelity-$v" build/obj/src/cli/main.o "$W/$v/lib.a" -lcrypto -lm -lpcre2-8 -lpthread -lcurl -lyaml
done
cp build/fidelity "$W/fidelity-native"
./build/fidelity fixture --preset flash-0.1b --seed 1 --out "$W/fl" >/dev/null
for r in $(seq "$R"); do
    for v in scalar avx2 native; do
        rm -rf "$W/ds"
        /usr/bin/time -f "%e %U %S" -o "$W/cpu" "$W/fidelity-$v" capture --model "$W/fl" --panel "$W/fl/panel" \
            --out "$W/ds" --role root --lane other --dataset-id bench.rowops --dataset-name bench --windows 1 \
            --threads "$T" --no-sanity-check --kernel avx2 --gemm-order "$O" >"$W/cap.out" 2>&1
        fwd=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["records"][0]["elapsed_seconds"])' \
            "$W/ds/capture/manifest.json")
        echo "$O threads=$T rep=$r rows=$v forward_s=$fwd wall/user/sys=$(tr ' ' / <"$W/cpu") load=$(cut -d' ' -f1 /proc/loadavg)" \
             "digest=$(awk '/capture_content_digest/ { print substr($2, 1, 16) }' "$W/cap.out")"
    done
done
