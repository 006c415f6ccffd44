#!/usr/bin/env bash
# bench/compare.sh: the compare replay on the 0.1B-fixture shape (8 records x
# 2,047 scored positions, hidden 256, vocab 154,880), against the numpy QFS
# default path timed in the same run.  Writes bench/results/compare.json.
set -euo pipefail
cd "$(dirname "$0")/.."
B=./build/fidelity
W=${BENCH_DIR:-/tmp/fidelity-bench}
THREADS=${THREADS:-$(nproc)}
NUMPY_RECORDS=${NUMPY_RECORDS:-1}
mkdir -p "$W" bench/results
shape=(--records 8 --tokens 2048 --hidden 256 --vocab 154880 --seed 11)
[ -d "$W/ref" ] || $B write-fixture --out "$W/ref" "${shape[@]}" >/dev/null
[ -d "$W/q1" ] || $B write-fixture --out "$W/q1" "${shape[@]}" --perturb 0.02 --noise-seed 3 --role quant >/dev/null
[ -d "$W/q2" ] || $B write-fixture --out "$W/q2" "${shape[@]}" --perturb 0.05 --noise-seed 4 --role quant >/dev/null
run() { # out-dir args... -> "seconds peak_rss_kb"
    local out=$1; shift
    rm -rf "$out"
    /usr/bin/time -f "%e %M" -o "$W/time.txt" $B compare --reference "$W/ref" --out "$out" --threads "$THREADS" \
        --no-verify-tensors --no-bootstrap "$@" >/dev/null
    cat "$W/time.txt"
}
read -r t1 rss1 < <(run "$W/o1" --candidate "$W/q1")
read -r t2 _ < <(run "$W/o2" --candidate "$W/q2")
read -r t12 rss12 < <(run "$W/o12" --candidate "$W/q1" --candidate "$W/q2")
kernel=$(grep -o '"kernel_path": "[a-z0-9]*"' "$W/o1/comparison-receipt.json" | cut -d'"' -f4)
# the numpy peer, on NUMPY_RECORDS records (it is slow); OpenBLAS tuning
# variables of this machine slow a current numpy, so they are unset here only
np_json=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 bench/numpy_compare.py "$W/ref" "$W/q1" --records "$NUMPY_RECORDS")
peak=""
if grep -q avx512_bf16 /proc/cpuinfo && cc -O2 -mavx512f -mavx512bf16 -mavx512bw -mavx512vl bench/peak.c -o "$W/peak" 2>/dev/null; then
    peak=$("$W/peak" | tr '\n' ';')
fi
python3 - "$t1" "$rss1" "$t2" "$t12" "$rss12" "$kernel" "$THREADS" "$np_json" "$peak" <<'PY'
import json, sys
t1, rss1, t2, t12, rss12, kernel, threads = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7])
npj = json.loads(sys.argv[8])
peak = {}
for part in sys.argv[9].split(";"):
    if ":" in part:
        name, rest = part.split(":", 1)
        peak[name.strip()] = float(rest.split()[0]) * threads   # per-core figure x threads
best_peak = max(peak.values()) if peak else None
pos = 8 * 2047
flop = 2 * 2 * pos * 154880 * 256          # two sides, multiply+add
res = {"shape": "8 x 2047 positions, hidden 256, vocab 154880", "threads": threads, "kernel_path": kernel,
       "seconds_one_candidate": t1, "positions_per_second": pos / t1, "replay_gflops_achieved": flop / t1 / 1e9,
       "peak_rss_mb_one_candidate": rss1 / 1024, "peak_rss_mb_two_candidates": rss12 / 1024,
       "seconds_two_candidates_one_pass": t12, "seconds_two_separate_runs": t1 + t2,
       "n_candidate_speedup": (t1 + t2) / t12, "n_candidate_speedup_ideal": 2 * 2 / 3,
       "peak_gflops_register_only": peak, "percent_of_best_peak": (flop / t1 / 1e9) / best_peak * 100 if best_peak else None,
       "numpy": npj, "speedup_vs_numpy": (pos / t1) / npj["positions_per_second"]}
print(json.dumps(res, indent=2))
open("bench/results/compare.json", "w").write(json.dumps(res, indent=2) + "\n")
PY
