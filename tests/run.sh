#!/usr/bin/env bash
# The whole suite: C unit tests (ASan+UBSan), Python-oracle differential and
# interop tests against both the release and the sanitizer binaries, and a
# bounded libFuzzer run per parser.  Prints "N passed, M failed" last.
set -u
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
JSON_DOCS=${JSON_DOCS:-100000}
pass=0 fail=0
step() {
    local name=$1; shift
    echo "=== $name"
    if "$@"; then pass=$((pass + 1)); echo "--- ok: $name"
    else fail=$((fail + 1)); echo "--- FAILED: $name"; fi
}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

step "unit tests (ASan+UBSan)" ./build-asan/unit
step "json differential vs CPython ($JSON_DOCS docs, release)" python3 tests/py/json_diff.py build/fidelity "$JSON_DOCS" 1234
step "json differential vs CPython (20000 docs, ASan)" python3 tests/py/json_diff.py build-asan/fidelity 20000 99
for bin in build/fidelity build-asan/fidelity; do
    step "interop both ways ($bin)" python3 tests/py/test_interop.py "$bin"
    step "hostile trees ($bin)" python3 tests/py/test_hostile.py "$bin"
done
step "kernel paths bit-identical (10^8 bf16 products)" ./build/fidelity kernel-selftest --products 100000000
step "kernel paths bit-identical under ASan (10^6 products)" ./build-asan/fidelity kernel-selftest --products 1000000
for t in panel quantize engine_load model_fixture capture probe panel_text schedule; do
    [ -f tests/py/test_$t.py ] || continue
    for bin in build/fidelity build-asan/fidelity; do
        step "$t ($bin)" python3 tests/py/test_$t.py "$bin"
    done
done
# quantized checkpoints as shipped: FP8 block / NVFP4 (issue 10)
for bin in build/fidelity build-asan/fidelity; do
    step "quantized checkpoints FP8-block / NVFP4: oracle bytes, capture digests, refusals, peak RSS ($bin)" \
        python3 tests/py/test_quantfmt.py "$bin"
done
# glm5_next (issue 8): flash-0.1b-next fixture, inspect-model, demo flow (int8 < int4)
for bin in build/fidelity build-asan/fidelity; do
    step "glm5_next fixture and demo flow ($bin)" python3 tests/py/test_next.py "$bin"
done
if [ -f tests/py/test_compare.py ]; then
    for bin in build/fidelity build-asan/fidelity; do
        step "compare gates, SC-1, invariance, numpy oracle ($bin)" python3 tests/py/test_compare.py "$bin"
    done
fi
# --- report (issue 7 part 1): HTML/SVG comparison report; the screenshot check needs chromium
for bin in build/fidelity build-asan/fidelity; do
    step "report: SVG, receipt values, escaping, refusals, chromium screenshot ($bin)" \
        env FIDELITY_REQUIRE_CHROMIUM=1 python3 tests/py/test_report.py "$bin"
done
# --- end report
# --- llama.cpp .kld interop (issue 7 part 2): export/adapt byte layout vs tests/py/kld_ref.py, refusals,
# logit-form and mixed-form compare
for bin in build/fidelity build-asan/fidelity; do
    step "llama.cpp .kld: export bytes = kld_ref, adapt decode, refusals, logit/mixed compare ($bin)" \
        python3 tests/py/test_kld.py "$bin"
done
# --- end llama.cpp .kld
# --- hub (issue 6): hf:// fetch against a loopback Hub (misbehaviour matrix, tokens, kill+resume),
# dataset/model cards parsed by PyYAML, registry submissions
for bin in build/fidelity build-asan/fidelity; do
    step "hf:// fetch: 429/500/drop/corrupt/hostile listings/cross-origin redirect, tokens, resume ($bin)" \
        python3 tests/py/test_hub.py "$bin"
    [ -f tests/py/test_card.py ] && step "cards (PyYAML) and registry submissions ($bin)" python3 tests/py/test_card.py "$bin"
done
# --- end hub
# --- kimi-k3 interop (issue 7 part 3): compat/ byte-equal to tests/py/k3_ref.py (k3compat.py), both-way
# interop, capture -> compat -> adapt --source k3v1 -> compare round trip, his artifact shape, refusals
for bin in build/fidelity build-asan/fidelity; do
    step "kimi-k3: compat/ view, adapt k3v1/k3v0-window, round trip, refusals ($bin)" \
        python3 tests/py/test_k3.py "$bin"
    step "kimi-k3: compare --emit-k3-compat summary = plain-Python oracle, views verify and round-trip, refusals ($bin)" \
        python3 tests/py/test_k3_compare.py "$bin"
done
# --- end kimi-k3
# --- capture --score-from (issue 7 parts 2/3): a capture on the llama.cpp .kld panel, compared directly
for bin in build/fidelity build-asan/fidelity; do
    step "capture --score-from: rows = full capture's [N:], same panel as a .kld, mixed compare, refusals ($bin)" \
        python3 tests/py/test_score_from.py "$bin"
done
# --- end capture --score-from
# --- MPI (issue 9 part 2): mpirun -np 1/2/3 compare and capture+merge equal the single process, resume
# after a killed rank (docs/MPI.md); the merge/single-process side runs under both binaries
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    make -s mpi >/dev/null || echo "make mpi failed"
    for bin in build/fidelity build-asan/fidelity; do
        step "MPI: compare/capture under mpirun -np 1/2/3 = single process, merge, resume (vs $bin)" \
            python3 tests/py/test_mpi.py build-mpi/fidelity "$bin"
    done
else
    echo "mpicc/mpirun not installed (openmpi-bin libopenmpi-dev): MPI tests skipped"
fi
# --- end MPI
if python3 -c 'import numpy' 2>/dev/null; then
    step "stats table in test_stats.c regenerates from numpy" bash -c \
        'diff <(python3 tests/py/stats_oracle.py) <(sed -n "/BEGIN GENERATED/,/END GENERATED/p" tests/c/test_stats.c)'
else
    echo "numpy not installed: numpy oracle checks skipped"
fi
# tokenizer.json tokenizer (src/tokenizer/): parity with the committed HF oracle ids;
# tests/tok/fetch.sh brings the tokenizers that are not committed (skipped when absent)
bash tests/tok/fetch.sh
for bin in build/fidelity build-asan/fidelity; do
    step "tokenizer parity with HF tokenizers ($bin)" python3 tests/py/test_tokenizer.py "$bin"
done
# issue 16 items 16-18: KL at the fp32 extremes vs an exact oracle, non-finite
# weights/hidden states, sanitizer-clean refusal paths, the .kld adapter, strict flags
for bin in build/fidelity build-asan/fidelity; do
    step "numerics defects: KL extremes, non-finite, refusal paths, .kld, strict flags ($bin)" \
        python3 tests/py/test_numerics_defects.py "$bin"
done
step "parity with the transformers goldens (tiny, flash-0.1b window 0: the issue targets)" bash tests/parity/run_parity.sh build/fidelity
step "demo (README command)" ./build/fidelity demo --out build/test-demo
for f in build-fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f"); corpus=fuzz/corpus/${name#fuzz_}
    tmpc=$(mktemp -d)
    [ -d "$corpus" ] && cp -r "$corpus"/. "$tmpc"/
    step "fuzz $name (${FUZZ_SECONDS}s)" "$f" -max_total_time="$FUZZ_SECONDS" -print_final_stats=0 "$tmpc"
    rm -rf "$tmpc"
done
echo
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
