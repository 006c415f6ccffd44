#!/usr/bin/env bash
# Peak RSS and wall time of a capture against checkpoint size, for the two
# schedules (window-outer: the checkpoint mapped whole; layer-outer: one
# layer mapped at a time).  usage: bash bench/scale.sh [THREADS]
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-2}
B=$(readlink -f "${FIDELITY_BIN:-build/fidelity}")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
printf "%-12s %10s %8s %-13s %9s %12s\n" preset ckpt_MB windows schedule wall_s peak_rss_MB
for spec in tiny:4 flash-0.1b:2 small:4; do
    p=${spec%%:*} n=${spec##*:}
    "$B" fixture --preset "$p" --seed 1 --out "$W/$p" >/dev/null
    mb=$(( $(cat "$W/$p"/*.safetensors | wc -c) / 1048576 ))
    for s in window-outer layer-outer; do
        rm -rf "$W/o"
        /usr/bin/time -f "%e %M" -o "$W/t" "$B" capture --model "$W/$p" --panel "$W/$p/panel" --out "$W/o" --role root \
            --lane other --dataset-id bench.scale --dataset-name scale --windows "$n" --threads "$T" --schedule "$s" >/dev/null
        read -r wall rss < "$W/t"
        printf "%-12s %10s %8s %-13s %9s %12s\n" "$p" "$mb" "$n" "$s" "$wall" "$((rss / 1024))"
    done
done
