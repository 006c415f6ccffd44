#!/usr/bin/env bash
# Seed 004's reproducibility driver (verify_cpu.py), re-run in our tool on the
# tiny fixture: 4 windows x 64 tokens = 252 scored positions, two cold
# captures, verify both, force-computed self-compare.  Prints the whole
# driver's wall time and the peak RSS of each capture next to the seed's
# (34.86 s for the driver, 367,374,336 B peak capture RSS).
# usage: bash bench/seed004.sh
set -euo pipefail
cd "$(dirname "$0")/.."
B=$(readlink -f "${FIDELITY_BIN:-build/fidelity}")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
t0=$(date +%s.%N)
"$B" fixture --preset tiny --seed 1 --out "$W/model" >/dev/null
for side in first repeat; do
    /usr/bin/time -f "%M" -o "$W/rss-$side" "$B" capture --model "$W/model" --panel "$W/model/panel" \
        --out "$W/$side" --role root --lane other --dataset-id "fidelity--seed004.$side" \
        --dataset-name "seed 004 $side" --cold-run "$side" --run-name "$side" >/dev/null
    "$B" verify "$W/$side" >/dev/null
done
"$B" compare --reference "$W/first" --candidate "$W/repeat" --self-compare --force-compute --out "$W/replay" >/dev/null
t1=$(date +%s.%N)
python3 - "$W" "$t0" "$t1" <<'PY'
import json, os, sys
w, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = json.load(open(os.path.join(w, "replay", "comparison-receipt.json")))
rss = max(int(open(os.path.join(w, "rss-" + s)).read().split()[-1]) * 1024 for s in ("first", "repeat"))
pos = r["measurement_scope"]["scored_positions"]
out = {"driver_wall_seconds": round(t1 - t0, 3), "seed_driver_wall_seconds": 34.86,
       "peak_capture_rss_bytes": rss, "seed_peak_capture_rss_bytes": 367374336,
       "kl_mean": r["kl"]["mean"], "kl_max": r["kl"]["max"], "scored_positions": pos}
print(json.dumps(out))
assert r["kl"]["mean"] == 0.0 and r["kl"]["max"] == 0.0 and pos == 252
PY
