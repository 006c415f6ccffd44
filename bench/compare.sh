#!/usr/bin/env bash
# bench/compare.sh: the compare replay on the 0.1B-fixture shape (8 records x
# 2,047 scored positions, hidden 256, vocab 154,880; SHAPE=0.6b: the head of a
# 0.6B model, hidden 1,024 and vocab 151,936 as Qwen3-0.6B's; SHAPE=8b: the
# head of an 8B model, hidden 4,096 and vocab 128,256 as Llama 3 8B's; same
# positions),
# on every kernel path the CPU has, against the numpy QFS default path timed
# in the same run.
# Per path: wall time, the replay's own time (compare --progress) and what is
# left (start-up: reading and packing the head, mapping the records; the end:
# writing the receipt), positions/s, the replay's GFLOP/s and its share of the
# path's register-only peak (bench/peak.c: avx2 -> vfmadd256, avx512f ->
# vfmadd512, avx512bf16 -> vdpbf16ps, run on THREADS cores at once and
# summed).  Beside it, % of the workload's bound: the GEMM at that probe
# plus the canonical fp64 KL pass's FMA-pipe operations (two exps and three
# products per column: 25 per 8 columns at 512 bits, 50 at 256, counted in
# src/kernels/kl_exp.inc and kl_impl.inc's KL_FOLD) at the FMA probe; on Zen
# 4/5 vdpbf16ps and the FMAs share two pipes (bench/pipes.c), so the bf16-dot
# path cannot beat it.  Each path runs REPEATS times, each run between two probes of its
# peak (this host's clock moves 10-20 % over minutes: a run is held to the
# clock of its own moment); the best run is reported, with the median.  With perf
# installed (PROFILE=0 skips it) one more run of the default path under
# `perf record` splits the CPU time into phases by symbol: GEMM, the fp64 KL
# pass (exp/log, log-sum-exp, max scans), the token statistics' top-k,
# head packing, reads and copies, and the rest.  Every path must write the same tokenwise-kld.npy
# bytes (checked).  Writes bench/results/compare.json (SHAPE=0.6b: compare-0.6b.json,
# SHAPE=8b: compare-8b.json).
# env: SHAPE (0.1b | 0.6b | 8b), THREADS (nproc), PATHS (every path the CPU has), NUMPY_RECORDS (1),
#      REPEATS (3), PROBE_SCALE (10: probe length in ~40 ms units),
#      BENCH_DIR (/tmp/fidelity-bench, SHAPE=0.6b: /tmp/fidelity-bench-0.6b: 0.7 GB,
#      SHAPE=8b: /tmp/fidelity-bench-8b: 2.4 GB), PROFILE (1)
set -euo pipefail
cd "$(dirname "$0")/.."
B=./build/fidelity
SHAPE=${SHAPE:-0.1b}
case $SHAPE in
    0.1b) HIDDEN=256 VOCAB=154880 W=${BENCH_DIR:-/tmp/fidelity-bench} RESULT=bench/results/compare.json ;;
    0.6b) HIDDEN=1024 VOCAB=151936 W=${BENCH_DIR:-/tmp/fidelity-bench-0.6b} RESULT=bench/results/compare-0.6b.json ;;
    8b) HIDDEN=4096 VOCAB=128256 W=${BENCH_DIR:-/tmp/fidelity-bench-8b} RESULT=bench/results/compare-8b.json ;;
    *) echo "bench/compare.sh: SHAPE is 0.1b, 0.6b or 8b, not $SHAPE" >&2; exit 4 ;;
esac
RECORDS=8
THREADS=${THREADS:-$(nproc)}
NUMPY_RECORDS=${NUMPY_RECORDS:-1}
REPEATS=${REPEATS:-3}
PROBE_SCALE=${PROBE_SCALE:-10}   # each probe ~0.4 s: the sustained clock of a multi-second run
PROFILE=${PROFILE:-1}
mkdir -p "$W" bench/results
shape=(--records "$RECORDS" --tokens 2048 --hidden "$HIDDEN" --vocab "$VOCAB" --seed 11)
[ -d "$W/ref" ] || $B write-fixture --out "$W/ref" "${shape[@]}" >/dev/null
[ -d "$W/q1" ] || $B write-fixture --out "$W/q1" "${shape[@]}" --perturb 0.02 --noise-seed 3 --role quant >/dev/null
[ -d "$W/q2" ] || $B write-fixture --out "$W/q2" "${shape[@]}" --perturb 0.05 --noise-seed 4 --role quant >/dev/null
PATHS=${PATHS:-$($B kernel-selftest --products 1000 | sed -n 's/.*F32-weight products, paths: \(.*\);.*/\1/p' | sed 's/scalar//')}
run() { # out-dir args... -> "seconds peak_rss_kb replay_seconds"
    local out=$1; shift
    rm -rf "$out"
    /usr/bin/time -f "%e %M" -o "$W/time.txt" $B compare --reference "$W/ref" --out "$out" --threads "$THREADS" \
        --no-verify-tensors --no-bootstrap --progress "$@" >/dev/null 2>"$W/progress.txt"
    # the last progress line: "compare: N/N positions 100.0% (R positions/s, ...)"
    local rate
    rate=$(tr '\r' '\n' <"$W/progress.txt" | grep -o '[0-9.]* positions/s' | tail -1 | cut -d' ' -f1)
    echo "$(cat "$W/time.txt") $(python3 -c "import sys; print(int(sys.argv[2]) * 2047 / float(sys.argv[1]))" "$rate" "$RECORDS")"
}
cc -O2 bench/peak.c -o "$W/peak"
probe_of() { case $1 in avx2) echo vfmadd256 ;; avx512f) echo vfmadd512 ;; avx512bf16) echo vdpbf16ps ;; *) echo "" ;; esac; }
# the path's register-only probe on THREADS cores at once (each pinned), summed:
# the peak at this moment's clock (it moves 10-20 % over minutes on a shared host)
probe_now() {
    [ -n "$1" ] || { echo 0; return; }
    local i
    rm -f "$W"/probe.*
    for ((i = 0; i < THREADS; i++)); do taskset -c $((i % $(nproc))) "$W/peak" "$1" "$PROBE_SCALE" >"$W/probe.$i" & done
    wait
    cat "$W"/probe.* | awk -v n="$THREADS" '{s += $2; c++} END {if (c != n) exit 1; printf "%.1f\n", s}'
}
# each path REPEATS times, each run between two probes of its peak
per_path="{}"
for p in $PATHS; do
    runs="[]"
    for ((r = 0; r < REPEATS; r++)); do
        pb=$(probe_now "$(probe_of "$p")")
        read -r t rss rep < <(run "$W/o-$p" --candidate "$W/q1" --kernel "$p")
        pa=$(probe_now "$(probe_of "$p")")
        runs=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r.append({"seconds":float(sys.argv[2]),"rss_kb":int(sys.argv[3]),"replay_seconds":float(sys.argv[4]),"peak_before":float(sys.argv[5]),"peak_after":float(sys.argv[6])}); print(json.dumps(r))' \
            "$runs" "$t" "$rss" "$rep" "$pb" "$pa")
    done
    sha=$(sha256sum "$W/o-$p/tokenwise-kld.npy" | cut -c1-64)
    per_path=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d[sys.argv[2]]={"runs":json.loads(sys.argv[3]),"probe":sys.argv[4],"tokenwise_sha256":sys.argv[5]}; print(json.dumps(d))' \
        "$per_path" "$p" "$runs" "$(probe_of "$p")" "$sha")
done
read -r t1 rss1 _ < <(run "$W/o1" --candidate "$W/q1")
read -r t2 _ _ < <(run "$W/o2" --candidate "$W/q2")
read -r t12 rss12 _ < <(run "$W/o12" --candidate "$W/q1" --candidate "$W/q2")
kernel=$(grep -o '"kernel_path": "[a-z0-9]*"' "$W/o1/comparison-receipt.json" | cut -d'"' -f4)
# the phases of the default path, from a perf profile (CPU samples by symbol)
prof=""
if [ "$PROFILE" != 0 ] && command -v perf >/dev/null; then
    rm -rf "$W/op"
    if perf record -F 499 -o "$W/perf.data" -- $B compare --reference "$W/ref" --candidate "$W/q1" --out "$W/op" \
            --threads "$THREADS" --no-verify-tensors --no-bootstrap >/dev/null 2>&1; then
        prof=$(perf report -i "$W/perf.data" --no-children --sort symbol --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' |
               awk '{print $1, $3}' | tr -d '%' | tr '\n' ';')
    fi
fi
# the numpy peer, on NUMPY_RECORDS records (it is slow); OpenBLAS tuning
# variables of this machine slow a current numpy, so they are unset here only
np_json=$(env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 bench/numpy_compare.py "$W/ref" "$W/q1" --records "$NUMPY_RECORDS")
peak=$("$W/peak" | tr '\n' ';')
python3 - "$t1" "$rss1" "$t2" "$t12" "$rss12" "$kernel" "$THREADS" "$np_json" "$peak" "$per_path" "$prof" \
    "$RECORDS" "$HIDDEN" "$VOCAB" "$RESULT" <<'PY'
import json, re, statistics, sys
t1, rss1, t2, t12, rss12, kernel, threads = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6], int(sys.argv[7])
npj = json.loads(sys.argv[8])
per_path = json.loads(sys.argv[10])
peak = {}
for part in sys.argv[9].split(";"):
    if ":" in part:
        name, rest = part.split(":", 1)
        peak[name.strip()] = float(rest.split()[0]) * threads   # per-core figure x threads
records, hidden, vocab, result = int(sys.argv[12]), int(sys.argv[13]), int(sys.argv[14]), sys.argv[15]
pos = records * 2047
flop = 2 * 2 * pos * vocab * hidden         # two sides, multiply+add
for p, d in per_path.items():
    for r in d["runs"]:  # each run against the higher of the two probes around it (a probe that shared
                         # its core with the other, as a host can schedule two vCPUs, reads half)
        r["peak_gflops"] = max(r["peak_before"], r["peak_after"])
        g = flop / r["seconds"] / 1e9
        r.update({"gflops_whole_run": g, "gflops_replay_only": flop / r["replay_seconds"] / 1e9,
                  "percent_of_peak_whole_run": g / r["peak_gflops"] * 100 if r["peak_gflops"] else None,
                  "percent_of_peak_replay_only": flop / r["replay_seconds"] / 1e9 / r["peak_gflops"] * 100 if r["peak_gflops"] else None})
        # the workload's bound, beside the issue's one-probe figure: the GEMM at the path's probe plus the
        # canonical KL pass's FMA-pipe work at the FMA probe (both on the same pipes on Zen 4/5: bench/pipes.c),
        # the end-of-run probes' ratio held to this run's clock
        # (probe, its FLOPs an instruction, the KL's FMA-pipe instructions a column)
        fma, flops_per_fma, kl_per_column = ("vfmadd256", 16, 50 / 8) if p == "avx2" else ("vfmadd512", 32, 25 / 8)
        if r["peak_gflops"] and peak.get(fma) and peak.get(d["probe"]):
            kl_rate = peak[fma] / flops_per_fma * 1e9 * r["peak_gflops"] / peak[d["probe"]]  # instructions/s
            r["workload_bound_seconds"] = flop / (r["peak_gflops"] * 1e9) + pos * vocab * kl_per_column / kl_rate
            r["percent_of_workload_bound_whole_run"] = r["workload_bound_seconds"] / r["seconds"] * 100
        else:
            r["workload_bound_seconds"] = r["percent_of_workload_bound_whole_run"] = None
    best = max(d["runs"], key=lambda r: (r["percent_of_peak_whole_run"] or 0, -r["seconds"]))
    d.update({k: best[k] for k in ("seconds", "rss_kb", "replay_seconds", "peak_gflops", "gflops_whole_run",
                                   "gflops_replay_only", "percent_of_peak_whole_run", "percent_of_peak_replay_only",
                                   "workload_bound_seconds", "percent_of_workload_bound_whole_run")})
    d.update({"positions_per_second": pos / d["seconds"], "startup_and_write_seconds": d["seconds"] - d["replay_seconds"],
              "peak_probe": d["probe"] or None,  # the shell's probe_of
              "median_percent_of_peak_whole_run": statistics.median(r["percent_of_peak_whole_run"] or 0 for r in d["runs"])})
same = len({d["tokenwise_sha256"] for d in per_path.values()}) <= 1
# phases from the profile: shares of all CPU samples (both threads)
phases = {}
if sys.argv[11]:
    rules = [("gemm", r"(gemm|^block_)"), ("kl_pass", r"(ref_chunk|pair_chunk|_scan|js_chunk|vexp|vlog)$"),
             ("token_topk", r"(first_above|run_block|tok_fold)$"),
             ("head_pack_reads_copies", r"(pack_head|pack_hidden|sha256|SHA256|memmove|memcpy|read)"),]
    for part in sys.argv[11].split(";"):
        if not part.strip(): continue
        share, sym = part.split(None, 1)
        cat = next((c for c, rx in rules if re.search(rx, sym)), "other")
        phases[cat] = phases.get(cat, 0.0) + float(share)
res = {"shape": f"{records} x 2047 positions, hidden {hidden}, vocab {vocab}", "threads": threads, "kernel_path": kernel,
       "seconds_one_candidate": t1, "positions_per_second": pos / t1, "replay_gflops_achieved": flop / t1 / 1e9,
       "peak_rss_mb_one_candidate": rss1 / 1024, "peak_rss_mb_two_candidates": rss12 / 1024,
       "seconds_two_candidates_one_pass": t12, "seconds_two_separate_runs": t1 + t2,
       "n_candidate_speedup": (t1 + t2) / t12, "n_candidate_speedup_ideal": 2 * 2 / 3,
       "peak_gflops_register_only": peak, "per_path": per_path, "paths_bit_identical": same,
       "profile_percent_of_cpu_samples": phases,
       "numpy": npj, "speedup_vs_numpy": (pos / t1) / npj["positions_per_second"]}
print(json.dumps(res, indent=2))
open(result, "w").write(json.dumps(res, indent=2) + "\n")
print(f"\nbest of {len(next(iter(per_path.values()))['runs'])} runs per path, each against the probes just before and after it")
print("| path | wall s | replay s | start-up + write s | positions/s | GFLOP/s whole run | % of peak (probe) | median % | GFLOP/s replay only | % of peak | % of the workload bound |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
f = lambda v, n=1: "-" if v is None else f"{v:,.{n}f}"
for p, d in per_path.items():
    print(f"| {p} | {d['seconds']:.1f} | {d['replay_seconds']:.1f} | {d['startup_and_write_seconds']:.1f} | {d['positions_per_second']:,.0f} | "
          f"{d['gflops_whole_run']:.0f} | {f(d['percent_of_peak_whole_run'])} ({d['peak_probe']} {f(d['peak_gflops'], 0)}) | "
          f"{f(d['median_percent_of_peak_whole_run'])} | "
          f"{d['gflops_replay_only']:.0f} | {f(d['percent_of_peak_replay_only'])} | {f(d['percent_of_workload_bound_whole_run'])} |")
print(f"\nnumpy peer: {npj['positions_per_second']:,.0f} positions/s; every path the same tokenwise bytes: {same}")
if phases:
    print("profile of the default path (% of CPU samples): " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(phases.items(), key=lambda x: -x[1])))
if not same:
    sys.exit("bench/compare.sh: the kernel paths gave different tokenwise bytes")
PY
