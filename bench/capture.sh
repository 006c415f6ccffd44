#!/usr/bin/env bash
# Capture throughput and peak RSS: our engine next to transformers on the
# CPU, same fixture, same windows, same thread count, one run.
# usage: bash bench/capture.sh [THREADS]   (needs torch + transformers for the peer)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-2}
B=$(readlink -f "${FIDELITY_BIN:-build/fidelity}")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
OUT=bench/results/capture.json
echo "[" > "$OUT.tmp"
first=1
for spec in tiny:4 small:4 flash-0.1b:2 flash-0.1b-next:2 llama-small:2 qwen3-moe-tiny:4 minimax-m2-tiny:4; do
    preset=${spec%%:*} nwin=${spec##*:}
    "$B" fixture --preset "$preset" --seed 1 --out "$W/$preset" >/dev/null
    /usr/bin/time -f "%e %M" -o "$W/time" "$B" capture --model "$W/$preset" --panel "$W/$preset/panel" \
        --out "$W/ds-$preset" --role root --lane other --dataset-id "bench.$preset" --dataset-name bench \
        --windows "$nwin" --threads "$T" --no-sanity-check >/dev/null
    read -r wall rss_kb < "$W/time"
    ours=$(python3 - "$W/ds-$preset" "$wall" "$rss_kb" <<'PY'
import json, os, sys
d, wall, rss = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
m = json.load(open(os.path.join(d, "capture", "manifest.json")))
recs = m["records"]
fwd = sum(r["elapsed_seconds"] for r in recs)
ctx = json.load(open(os.path.join(d, "fidelity-dataset.json")))["panel"]["context_length"]
tok = ctx * len(recs)
print(json.dumps({"tokens": tok, "forward_seconds": round(fwd, 3), "tokens_per_second": round(tok / fwd, 1),
                  "window_seconds": [r["elapsed_seconds"] for r in recs],
                  "process_wall_seconds": wall, "peak_rss_bytes": rss * 1024}))
PY
)
    peer=$(python3 bench/transformers_capture.py "$W/$preset" "$W/$preset/panel" "$nwin" "$T" 2>/dev/null | tail -1 || echo null)
    warm=$(WARM=1 python3 bench/transformers_capture.py "$W/$preset" "$W/$preset/panel" "$nwin" "$T" 2>/dev/null | tail -1 || echo null)
    [ $first = 1 ] || echo "," >> "$OUT.tmp"
    first=0
    printf '{"preset":"%s","windows":%s,"threads":%s,"fidelity":%s,"transformers":%s,"transformers_warm":%s}\n' \
        "$preset" "$nwin" "$T" "$ours" "${peer:-null}" "${warm:-null}" >> "$OUT.tmp"
    echo "$preset: fidelity $ours"
    echo "$preset: transformers ${peer:-null}"
    echo "$preset: transformers, warmed up ${warm:-null}"
done
echo "]" >> "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
