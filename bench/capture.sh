#!/usr/bin/env bash
# Capture throughput and peak RSS: our engine next to transformers on the
# CPU, same fixture, same windows, same thread count, one run.
#
# First (issue 24.2) the capture GEMMs per kernel path, printed as a table by
# this script itself:
#   - each path's register-only peak on one core (bench/peak.c: avx2 ->
#     vfmadd256; avx512f, and the tile order on avx512bf16 (its FMA
#     emulation) -> vfmadd512; the pair order on avx512bf16 -> vdpbf16ps;
#     amx -> tdpbf16ps);
#   - the GEMM kernels alone (build/capture_gemm_bench: one flash-0.1b
#     window's products through fd_mm_run, one thread, best of 3, the
#     thread's CPU time) in GFLOP/s and % of that peak, both product orders;
#   - a flash-0.1b capture (1 window x 2,048 tokens, --kernel PATH, THREADS
#     threads) per path and order: its forward seconds and, with perf
#     (PROFILE=0 skips it), the GEMM kernels' share of the CPU samples, hence
#     the GEMMs' GFLOP/s per core inside the capture (the window's GEMM FLOPs
#     / (share x the capture's sampled CPU seconds)) and % of the peak; the
#     GEMM symbols are the kernels' and their A-plane splits (split_*); the
#     median of REPS (3) runs by that GEMM time (a shared host's run-to-run
#     spread is +-10 %);
#   - transformers' forward of the same window in the same run (PY: a
#     python with torch + transformers), as run and warmed up, with torch's
#     own kernels (its CPU capability and oneDNN's bf16 matmul on this CPU),
#     and once more limited to AVX2 (ATEN_CPU_CAPABILITY=avx2
#     ONEDNN_MAX_CPU_ISA=AVX2: what torch runs on an AVX2-only host).
# Then the preset table (PRESETS=0 skips it; GEMM=0 skips the first part).
# Results: bench/results/capture_gemm.json and bench/results/capture.json.
# usage: bash bench/capture.sh [THREADS]
# env: PATHS (every path the CPU has), PY (python3), PROFILE (1), REPS (3), GEMM (1), PRESETS (1)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-2}
PY=${PY:-python3}
B=$(readlink -f "${FIDELITY_BIN:-build/fidelity}")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p bench/results

if [ "${GEMM:-1}" != 0 ]; then
    PATHS=${PATHS:-$($B kernel-selftest --products 1000 | sed -n 's/.*tile order, paths: \(.*\);.*/\1/p' | sed 's/scalar//')}
    make -s build/capture_gemm_bench  # up to date with the library it links
    cc -O2 bench/peak.c -o "$W/peak"
    "$W/peak" | tee "$W/peak.txt"
    pk() { sed -n "s/^$1: \([0-9.]*\) GFLOP.*/\1/p" "$W/peak.txt"; }
    p256=$(pk vfmadd256) p512=$(pk vfmadd512) pbf=$(pk vdpbf16ps) pamx=$(pk tdpbf16ps)
    peaks=()
    [ -n "$p256" ] && peaks+=(--peak "avx2=$p256")
    [ -n "$p512" ] && peaks+=(--peak "avx512f=$p512" --peak "avx512bf16/tile=$p512")
    [ -n "$pbf" ] && peaks+=(--peak "avx512bf16/pair=$pbf")
    [ -n "$pamx" ] && peaks+=(--peak "amx=$pamx")
    ./build/capture_gemm_bench --paths "$(echo $PATHS | tr ' ' ,)" "${peaks[@]}" | tee "$W/gemm.txt"
    "$B" fixture --preset flash-0.1b --seed 1 --out "$W/fl" >/dev/null
    : > "$W/caps.txt"
    for order in tile pair; do
        for p in $PATHS; do
            grep -q "^capture-gemm $order $p " "$W/gemm.txt" || continue # not a path of this order here
            : > "$W/runs.txt"
            for rep in $(seq "${REPS:-3}"); do
                rm -rf "$W/ds"
                cmd=("$B" capture --model "$W/fl" --panel "$W/fl/panel" --out "$W/ds" --role root --lane other
                     --dataset-id bench.gemm --dataset-name bench --windows 1 --threads "$T" --no-sanity-check
                     --kernel "$p" --gemm-order "$order")
                share=null scpu=null
                if [ "${PROFILE:-1}" != 0 ] && command -v perf >/dev/null &&
                    /usr/bin/time -f "%U %S" -o "$W/cpu" perf record -q -F 999 -o "$W/perf.data" -- "${cmd[@]}" >"$W/cap.out" 2>/dev/null; then
                    # the GEMM symbols' share of the samples, and the sampled CPU
                    # seconds (cpu-clock: the event count is nanoseconds of the
                    # capture's threads; /usr/bin/time's user+sys here also holds
                    # perf record's own CPU, 0.2-0.4 s, which overstated the GEMM time)
                    read -r share scpu < <(perf report -i "$W/perf.data" --no-children --sort symbol --stdio 2>/dev/null |
                            awk '/^# Event count/ { n = $NF } /^ +[0-9.]+%/ { v = $1; sub("%", "", v); t += v; if ($3 ~ /^(gemm_|tile_block|block_avx|block_bf16|split_)/) g += v }
                                 END { printf("%.4f %.4f\n", (t > 0) ? g / t : 0, n / 1e9) }')
                else
                    /usr/bin/time -f "%U %S" -o "$W/cpu" "${cmd[@]}" >"$W/cap.out"
                fi
                fwd=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["records"][0]["elapsed_seconds"])' "$W/ds/capture/manifest.json")
                digest=$(awk '/capture_content_digest/ { print $2 }' "$W/cap.out")
                read -r us ss < "$W/cpu"
                # sort key: the GEMMs' CPU seconds (share x sampled CPU seconds), else the forward seconds
                key=$(awk -v s="$share" -v c="$scpu" -v f="$fwd" 'BEGIN { print (s == "null") ? f : s * c }')
                echo "$key $order $p $fwd $us $ss $share $scpu $digest" >> "$W/runs.txt"
            done
            # the median run (REPS runs: this host is shared; every run's digest must agree)
            [ "$(awk '{ print $9 }' "$W/runs.txt" | sort -u | wc -l)" = 1 ] || { echo "capture.sh: $order $p: the runs' digests differ" >&2; exit 1; }
            echo "$(sort -g "$W/runs.txt" | sed -n "$(( ($(wc -l < "$W/runs.txt") + 1) / 2 ))p" | cut -d' ' -f2-)" \
                 "$(sort -g "$W/runs.txt" | awk '{ printf("%s%s", NR > 1 ? "," : "", $1) }')" | tee -a "$W/caps.txt"
        done
    done
    peer() { # label env... -> one JSON line
        local label=$1; shift
        env "$@" $PY bench/transformers_capture.py "$W/fl" "$W/fl/panel" 1 "$T" 2>/dev/null | tail -1 |
            $PY -c 'import json,sys; d=json.loads(sys.stdin.read()); d["label"]=sys.argv[1]; print(json.dumps(d))' "$label" || echo null
    }
    torchinfo() {
        env "$@" ONEDNN_VERBOSE=1 $PY -c '
import torch; torch.set_num_threads(1)
a = torch.randn(64, 256, dtype=torch.bfloat16); b = torch.randn(256, 256, dtype=torch.bfloat16)
torch.nn.functional.linear(a, b)
print("cpu_capability", torch.backends.cpu.get_cpu_capability())' 2>/dev/null |
            awk -F, '/^cpu_capability/ { cap = $0; sub("cpu_capability ", "", cap) }
                     /^onednn_verbose.*,exec,.*matmul/ { impl = $7 }
                     END { printf "%s %s", cap ? cap : "?", impl ? impl : "no-onednn-matmul" }'
    }
    {
        peer torch; peer torch-warm WARM=1
        peer torch-avx2 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
        peer torch-avx2-warm WARM=1 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
    } > "$W/peer.txt"
    ti=$(torchinfo || echo "? ?") ti2=$(torchinfo ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 || echo "? ?")
    $PY - "$W/gemm.txt" "$W/caps.txt" "$W/peer.txt" "$W/peak.txt" "$T" "$ti" "$ti2" <<'PY'
import json, sys
gemm_f, caps_f, peer_f, peak_f, threads, ti, ti2 = sys.argv[1:8]
probe = {("tile", "avx2"): "vfmadd256", ("pair", "avx2"): "vfmadd256", ("tile", "avx512f"): "vfmadd512",
         ("pair", "avx512f"): "vfmadd512", ("tile", "avx512bf16"): "vfmadd512", ("pair", "avx512bf16"): "vdpbf16ps",
         ("tile", "amx"): "tdpbf16ps"}
peak = {}
for l in open(peak_f):
    if ": " in l and "GFLOP/s" in l:
        peak[l.split(":")[0]] = float(l.split(":")[1].split()[0])
alone = {}
for l in open(gemm_f):
    if l.startswith("capture-gemm "):
        f = l.split()
        kv = dict(zip(f[3::2], f[4::2]))
        alone[(f[1], f[2])] = {k: float(v) for k, v in kv.items()}
rows = []
for l in open(caps_f):
    f = l.split()
    order, path, fwd, us, ss, share, scpu = f[0], f[1], float(f[2]), float(f[3]), float(f[4]), f[5], f[6]
    a = alone.get((order, path), {})
    pk = peak.get(probe.get((order, path), ""))
    r = {"order": order, "path": path, "peak_probe": probe.get((order, path)), "peak_gflops_per_core": pk,
         "kernels_alone_gflops": a.get("window_gflops"), "kernels_alone_percent": a.get("percent"),
         "window_gemm_gflop": a.get("window_gflop"), "capture_forward_seconds": fwd, "capture_cpu_seconds": us + ss,
         "capture_sampled_cpu_seconds": None if scpu == "null" else float(scpu),
         "gemm_share_of_cpu": None if share == "null" else float(share), "digest": f[7] if len(f) > 7 else None,
         "runs_gemm_cpu_seconds": [float(v) for v in f[8].split(",")] if len(f) > 8 else None}
    if r["gemm_share_of_cpu"] and r["capture_sampled_cpu_seconds"] and a.get("window_gflop"):
        g = a["window_gflop"] / (r["gemm_share_of_cpu"] * r["capture_sampled_cpu_seconds"])
        r["capture_gemm_gflops_per_core"] = g
        r["capture_gemm_percent"] = g / pk * 100 if pk else None
    rows.append(r)
peers = [json.loads(l) for l in open(peer_f) if l.strip() and l.strip() != "null"]
cap, impl = (ti.split(" ", 1) + ["?"])[:2]
cap2, impl2 = (ti2.split(" ", 1) + ["?"])[:2]
out = {"fixture": "flash-0.1b seed 1, 1 window x 2,048 tokens", "threads": int(threads), "peaks_per_core": peak,
       "paths": rows, "transformers": peers,
       "torch_path": {"default": {"cpu_capability": cap, "onednn_bf16_matmul": impl},
                      "avx2_limited": {"cpu_capability": cap2, "onednn_bf16_matmul": impl2}}}
json.dump(out, open("bench/results/capture_gemm.json.tmp", "w"), indent=1)
f = lambda v, d=1: "-" if v is None else f"{v:.{d}f}"
print(f"\nflash-0.1b, 1 window x 2,048 tokens, {threads} threads; peaks per core (bench/peak.c): " +
      ", ".join(f"{k} {v:.1f}" for k, v in peak.items()))
print("\n| order | path | peak probe (GFLOP/s/core) | GEMM kernels alone, 1 thread: GFLOP/s | % of peak | capture forward s | capture CPU s (sampled) | GEMM share of it | capture GEMMs GFLOP/s/core | % of peak |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['order']} | {r['path']} | {r['peak_probe']} {f(r['peak_gflops_per_core'])} | {f(r['kernels_alone_gflops'])} | "
          f"{f(r['kernels_alone_percent'])} | {f(r['capture_forward_seconds'], 3)} | {f(r['capture_sampled_cpu_seconds'], 2)} | "
          f"{f(None if r['gemm_share_of_cpu'] is None else r['gemm_share_of_cpu'] * 100)} % | "
          f"{f(r.get('capture_gemm_gflops_per_core'))} | {f(r.get('capture_gemm_percent'))} |")
digests = {r["order"]: set() for r in rows}
for r in rows: digests[r["order"]].add(r["digest"])
print("\nsame capture digest on every path: " + ", ".join(f"{o}: {'yes' if len(d) == 1 else 'NO'}" for o, d in digests.items()))
print(f"\ntransformers (same window, same run, {threads} threads); torch's own path here: {cap}, oneDNN bf16 matmul {impl}; "
      f"limited to AVX2: {cap2}, {impl2}")
print("| torch | forward s | tokens/s |")
print("|---|---|---|")
for p in peers:
    print(f"| {p['label']} | {p['forward_seconds']:.3f} | {p['tokens_per_second']:.0f} |")
PY
    mv bench/results/capture_gemm.json.tmp bench/results/capture_gemm.json
fi
[ "${PRESETS:-1}" != 0 ] || exit 0

OUT=bench/results/capture.json
echo "[" > "$OUT.tmp"
first=1
for spec in tiny:4 small:4 flash-0.1b:2 flash-0.1b-next:2 llama-small:2 qwen3-moe-tiny:4 minimax-m2-tiny:4 qwen4-exp-tiny:4; do
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
    peer=$($PY bench/transformers_capture.py "$W/$preset" "$W/$preset/panel" "$nwin" "$T" 2>/dev/null | tail -1 || echo null)
    warm=$(WARM=1 $PY bench/transformers_capture.py "$W/$preset" "$W/$preset/panel" "$nwin" "$T" 2>/dev/null | tail -1 || echo null)
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
