#!/usr/bin/env bash
# The whole suite: C unit tests (ASan+UBSan), Python-oracle differential and
# interop tests against both the release and the sanitizer binaries, parity
# with the transformers goldens, and a bounded libFuzzer run per parser.
#
# Steps are independent (each works in its own temporary directory) and run
# on a pool of TEST_JOBS jobs (default: the number of cores); each step's
# output is printed whole when it ends, under "=== NAME", and the last line
# is "N passed, M failed".
#
# usage: tests/run.sh [--only unit|py|parity|fuzz] [--list] [--match SUBSTRING]
# The whole script is one brace group, read before it runs: editing this file
# while a run is going (a checkout, a merge) cannot change that run.
{
set -u
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
JSON_DOCS=${JSON_DOCS:-100000}
JOBS=${TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
ONLY="" LIST=0 MATCH=""
while [ $# -gt 0 ]; do
    case $1 in
        --only) ONLY=$2; shift 2 ;;
        --list) LIST=1; shift ;;
        --match) MATCH=$2; shift 2 ;;
        *) echo "usage: tests/run.sh [--only unit|py|parity|fuzz] [--list] [--match SUBSTRING]" >&2; exit 4 ;;
    esac
done
case $ONLY in ""|unit|py|parity|fuzz) ;; *) echo "tests/run.sh: --only takes unit, py, parity or fuzz" >&2; exit 4 ;; esac
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# ---- the steps: GROUP NAME COMMAND...   (a step is one shell-quoted command line)
NAMES=() CMDS=()
step() {
    local group=$1 name=$2; shift 2
    [ -n "$ONLY" ] && [ "$ONLY" != "$group" ] && return 0
    [ -n "$MATCH" ] && [[ $name != *"$MATCH"* ]] && return 0
    NAMES+=("$name")
    CMDS+=("$(printf '%q ' "$@")")
}
BINS="build/fidelity build-asan/fidelity"

step unit "unit tests (ASan+UBSan)" ./build-asan/unit
step unit "kernel paths bit-identical (10^8 bf16 products)" ./build/fidelity kernel-selftest --products 100000000
step unit "kernel paths bit-identical under ASan (10^6 products)" ./build-asan/fidelity kernel-selftest --products 1000000
step unit "AVX2-only CPU (qemu EPYC-Milan): selftest, unit tests, capture/compare bits = native" bash tests/avx2.sh
step unit "aarch64 (cross build under qemu-user): selftest, unit tests, capture/compare bits and tiny goldens = x86-64" bash tests/aarch64.sh
step unit "fences: no vector intrinsics outside src/kernels/ (and the check's self-test)" bash -c 'bash tests/check_fences.sh --self-test && bash tests/check_fences.sh'
if python3 -c 'import numpy' 2>/dev/null; then
    step unit "stats table in test_stats.c regenerates from numpy" bash -c \
        'diff <(python3 tests/py/stats_oracle.py) <(sed -n "/BEGIN GENERATED/,/END GENERATED/p" tests/c/test_stats.c)'
else
    echo "numpy not installed: numpy oracle checks skipped"
fi
step py "json differential vs CPython ($JSON_DOCS docs, release)" python3 tests/py/json_diff.py build/fidelity "$JSON_DOCS" 1234
step py "json differential vs CPython (20000 docs, ASan)" python3 tests/py/json_diff.py build-asan/fidelity 20000 99
for bin in $BINS; do
    step py "interop both ways ($bin)" python3 tests/py/test_interop.py "$bin"
    step py "hostile trees ($bin)" python3 tests/py/test_hostile.py "$bin"
    for t in panel quantize engine_load model_fixture capture probe panel_text schedule; do
        step py "$t ($bin)" python3 tests/py/test_$t.py "$bin"
    done
    # quantized checkpoints as shipped: FP8 block / NVFP4 (issue 10)
    step py "quantized checkpoints FP8-block / NVFP4: oracle bytes, capture digests, refusals, peak RSS ($bin)" \
        python3 tests/py/test_quantfmt.py "$bin"
    # glm5_next (issue 8): flash-0.1b-next fixture, inspect-model, demo flow (int8 < int4)
    step py "glm5_next fixture and demo flow ($bin)" python3 tests/py/test_next.py "$bin"
    step py "compare gates, SC-1, invariance, numpy oracle ($bin)" python3 tests/py/test_compare.py "$bin"
    # report (issue 7 part 1): the screenshot check needs chromium
    step py "report: SVG, receipt values, escaping, refusals, chromium screenshot ($bin)" \
        env FIDELITY_REQUIRE_CHROMIUM=1 python3 tests/py/test_report.py "$bin"
    # llama.cpp .kld interop (issue 7 part 2)
    step py "llama.cpp .kld: export bytes = kld_ref, adapt decode, refusals, logit/mixed compare ($bin)" \
        python3 tests/py/test_kld.py "$bin"
    # hub (issue 6): hf:// fetch against a loopback Hub, cards (PyYAML), registry submissions
    step py "hf:// fetch: 429/500/drop/corrupt/hostile listings/cross-origin redirect, tokens, resume ($bin)" \
        python3 tests/py/test_hub.py "$bin"
    step py "cards (PyYAML) and registry submissions ($bin)" python3 tests/py/test_card.py "$bin"
    # kimi-k3 interop (issue 7 part 3)
    step py "kimi-k3: compat/ view, adapt k3v1/k3v0-window, round trip, refusals ($bin)" \
        python3 tests/py/test_k3.py "$bin"
    step py "kimi-k3: compare --emit-k3-compat summary = plain-Python oracle, views verify and round-trip, refusals ($bin)" \
        python3 tests/py/test_k3_compare.py "$bin"
    # capture --score-from (issue 7 parts 2/3)
    step py "capture --score-from: rows = full capture's [N:], same panel as a .kld, mixed compare, refusals ($bin)" \
        python3 tests/py/test_score_from.py "$bin"
    # tokenizer.json tokenizer: parity with the committed HF oracle ids (tests/tok/fetch.sh brings the rest)
    step py "tokenizer parity with HF tokenizers ($bin)" python3 tests/py/test_tokenizer.py "$bin"
done
# MPI (issue 9 part 2): mpirun -np 1/2/3 compare and capture+merge equal the single process (docs/MPI.md)
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
    for bin in $BINS; do
        step py "MPI: compare/capture under mpirun -np 1/2/3 = single process, merge, resume (vs $bin)" \
            python3 tests/py/test_mpi.py build-mpi/fidelity "$bin"
    done
else
    echo "mpicc/mpirun not installed (openmpi-bin libopenmpi-dev): MPI tests skipped"
fi
step unit "make install into an empty DESTDIR: binary, man page, completion" bash tests/install.sh
# issue 16: defects found on a second host and by independent checks
for bin in $BINS; do
    step py "comparison receipts interoperate with the Python tool ($bin)" python3 tests/py/test_receipt_interop.py "$bin"
    step py "forged, resealed datasets and receipts refused by meaning ($bin)" python3 tests/py/test_forger.py "$bin"
    step py "engine defects of issue 16: F32 weights, config spellings, engine name, tokenizer identity, enumerated flags ($bin)" \
        python3 tests/py/test_engine_defects.py "$bin"
    step py "hostile I/O: labels, atomic compare, FIFOs, hub size, .kld geometry, truncation under read ($bin)" \
        python3 tests/py/test_io_safety.py "$bin"
    step py "numerics defects: KL extremes, non-finite, refusal paths, .kld, strict flags ($bin)" \
        python3 tests/py/test_numerics_defects.py "$bin"
done
step py "demo (README command)" ./build/fidelity demo --out build/test-demo
# GGUF (issue 18): reader, 26 ggml dequantizers = gguf.quants bit for bit (committed vectors; live with pip gguf), inspect-model, hostile files
for bin in $BINS; do
    step py "GGUF reader, ggml dequantization = gguf.quants, inspect-model, hostile files ($bin)" python3 tests/py/test_gguf.py "$bin"
done
# dataset lifecycle (issue 23): reseal, architectures, panel-binding, qualify-root --local, publish (docs/LIFECYCLE.md)
for bin in $BINS; do
    step py "lifecycle: reseal = dsreseal bytes, architectures list/show/prepare, panel-binding = resolve_panel, qualify-root --local, publish on a loopback Hub (5xx/timeout/tamper), refusals ($bin)" python3 tests/py/test_lifecycle.py "$bin"
done
# architecture table (issue 17): glm5_next on the generic driver of both schedules, one tensor list
for bin in $BINS; do
    step py "architecture table: glm5_next layer-outer schedule digest = window-outer, capture under RLIMIT_AS < weights ($bin)" \
        python3 tests/py/test_arch.py "$bin"
done
# compare token statistics (issue 22 items 1, 3): numpy oracle, llama.cpp summary lines
for bin in $BINS; do
    step py "compare token statistics: PPL, delta-p, same-top, top-k, KL percentiles/buckets = numpy; llama.cpp lines ($bin)" \
        python3 tests/py/test_token_stats.py "$bin"
    step py "compare --paired / paired: B - A, bootstrap CI, wins, document sign test = numpy; refusals ($bin)" \
        python3 tests/py/test_paired.py "$bin"
    step py "CLI: help/--help/-h with EXAMPLES for every command, --version, did-you-mean, --json documents ($bin)" \
        python3 tests/py/test_cli.py "$bin"
done
# issue 17 item 4: per-layer teacher-forced parity with transformers (save_pretrained checkpoints; skips without torch)
for bin in $BINS; do
    step py "layer parity: every stage of every layer of glm_moe_dsa, glm5_next, qwen3_5 and qwen3_5_moe vs transformers, stated bounds, selections ($bin)" \
        python3 tests/py/test_layer_parity.py "$bin"
done
# issue 20: deepseek_v3 (Kimi K2), deepseek_v32 (DeepSeek V3.2) in the architecture table
for bin in $BINS; do
    step py "deepseek_v3, deepseek_v32: tensor list = loader, MTP ignored, digest across threads/schedules/kernels, RTN int8 < int4, refusals by name ($bin)" \
        python3 tests/py/test_deepseek.py "$bin"
done
# issue 21: model_types llama, qwen3 and qwen3_moe (fixtures, digest across threads / schedules / kernels, RTN KL, tied head, refusals)
for bin in $BINS; do
    step py "llama / qwen3 / qwen3_moe: fixtures, one digest across threads, schedules and kernel paths, RTN int8 < int4, tied head, refusals ($bin)" \
        python3 tests/py/test_llama_qwen.py "$bin"
done
# issue 22 item 4: every command's flags from the command table (did-you-mean, enumerated values)
for bin in $BINS; do
    step py "CLI flags (did-you-mean, enumerated values), progress, capture defaults and --resume, README try-it ($bin)" \
        python3 tests/py/test_cli2.py "$bin"
done
# issue 23: duplicate JSON object keys refused by name in every document read
for bin in $BINS; do
    step py "duplicate JSON keys: manifest, sub-manifest, receipt, config.json, safetensors header, panel refused by name ($bin)" \
        python3 tests/py/test_dupkeys.py "$bin"
done
# issue 18: fidelity capture --model FILE.gguf (glm-dsa as llama.cpp's converter writes it)
for bin in $BINS; do
    step py "GGUF capture: BF16 GGUF (one file, split, layer-outer) = safetensors digest; Q8_0/Q4_0 census, KL order, own heads; refusals ($bin)" \
        python3 tests/py/test_gguf_capture.py "$bin"
done
# issue 19: packed checkpoints as they ship (compressed-tensors pack-quantized int4/int8)
for bin in $BINS; do
    step py "packed checkpoints: compressed-tensors vectors, capture digest = offline-decoded bf16, census, refusals ($bin)" \
        python3 tests/py/test_packed.py "$bin"
done
# issue 21: model_types qwen3_5, qwen3_5_text, qwen3_5_moe, qwen3_5_moe_text (fixtures, digest across threads / schedules / kernels, RTN KL, composite spelling, refusals)
for bin in $BINS; do
    step py "qwen3_5 / qwen3_5_moe: fixtures, one digest across threads, schedules and kernel paths, RTN int8 < int4, composite spelling, refusals ($bin)" \
        python3 tests/py/test_qwen35.py "$bin"
done
# issue 20: kimi_k25 (Kimi K2.5 text model, vision tower skipped by name) and kimi_linear (KDA + MLA + MoE)
for bin in $BINS; do
    step py "kimi_k25 + kimi_linear: config spellings, on-disk spellings, vision tower skipped, digest across threads/schedules/kernels, RTN int8 < int4, refusals by name ($bin)" \
        python3 tests/py/test_kimi.py "$bin"
done
# issue 18: quantize --format gguf (our writer: BF16 = safetensors digest, Q8_0/Q4_0 = gguf.quants.quantize bytes)
for bin in $BINS; do
    step py "GGUF writer: BF16 digest = safetensors, Q8_0/Q4_0 bytes = gguf.quants.quantize, tokenizer identity, KL order, --match, refusals ($bin)" \
        python3 tests/py/test_gguf_write.py "$bin"
done
# issue 18: GGUF of llama / qwen3 / qwen3moe / deepseek2 / deepseek32 (llama.cpp's converter, committed files) = safetensors digest
for bin in $BINS; do
    step py "GGUF archs: llama/qwen3/qwen3moe/deepseek2(/deepseek32) BF16 = safetensors digest, Q8_0 = gguf-py dequantized, architectures, refusals ($bin)" \
        python3 tests/py/test_gguf_arch.py "$bin"
done
# issue 22 item 8: the report's per-token drill-down (worst positions by KL and delta-p, window strips) + screenshot
for bin in $BINS; do
    step py "report drill-down: worst positions = sealed array / tokenwise.csv, panel tokens decoded, strips, refusals, headless screenshot ($bin)" \
        env FIDELITY_REQUIRE_CHROMIUM=1 python3 tests/py/test_report_drill.py "$bin"
done
# issue 21: model_type minimax_m2 (fixture, digest across threads / schedules / kernels, RTN KL, router bias rounding, partial RoPE spellings, refusals)
for bin in $BINS; do
    step py "minimax_m2: fixture, one digest across threads, schedules and kernel paths, RTN int8 < int4, F32 router bias as bf16, rotary_dim spellings, refusals ($bin)" \
        python3 tests/py/test_minimax.py "$bin"
done
# issue 17 item 4: FIDELITY_FORWARD_INJECT (another implementation's input of layer L into our layer L)
for bin in $BINS; do
    step py "FIDELITY_FORWARD_INJECT: own input = same digest, a changed input moves only layer L on, refusals ($bin)" \
        python3 tests/py/test_inject.py "$bin"
done
# issue 17 item 6: no function over 150 lines, no file over 700 (the listed exceptions may only shrink)
step unit "sizes: functions <= 150 lines, files <= 700 (and the check's self-test)" \
    bash -c 'python3 tests/check_sizes.py --self-test && python3 tests/check_sizes.py'
# issue 17: nothing inside src/engine/ links in a circle (ops -> no architecture; architectures -> no circle)
step unit "engine layers: no import circle (and the check's self-test)" \
    bash -c 'python3 tests/check_layers.py --self-test && python3 tests/check_layers.py'
# issue 21: model_types qwen4_exp, qwen4_exp_text (fixture, digest across threads / schedules / kernels, RTN KL, composite spelling, QSA live, refusals)
for bin in $BINS; do
    step py "qwen4_exp: fixture, one digest across threads, schedules and kernel paths, RTN int8 < int4, composite spelling, QSA live, refusals ($bin)" \
        python3 tests/py/test_qwen4.py "$bin"
done
# issue 19: more packed formats (compressed-tensors unpacked and nvfp4/mxfp4, GPTQ 2/3-bit, MLX affine, FP8 with UE8M0 scales)
for bin in $BINS; do
    step py "packed checkpoints 2: W8A8 int8 / FP8 unpacked, nvfp4/mxfp4, GPTQ 2/3-bit, MLX affine, FP8 UE8M0: vectors, capture digest = offline-decoded bf16, refusals ($bin)" \
        python3 tests/py/test_packed2.py "$bin"
done
# issues 18 + 21: qwen35 / qwen35moe GGUFs read as stored (ssm_a, 1 + w norms, value-head reorder undone)
for bin in $BINS; do
    step py "GGUF qwen35 / qwen35moe: BF16 digest = safetensors, Q8_0 = dequantized safetensors, F32-norm KL + disclosure, hostile refusals ($bin)" \
        python3 tests/py/test_gguf_ssm.py "$bin"
done
# issue 19: mixed ModelOpt NVFP4 + FP8 (quant_algo MIXED_PRECISION, per-layer quantized_layers)
for bin in $BINS; do
    step py "packed checkpoints: mixed ModelOpt NVFP4 + FP8: capture digest = reference-decoded bf16, census, refusals ($bin)" \
        python3 tests/py/test_packed_mixed.py "$bin"
done
# issue 18: GGUFs quantized by llama.cpp's llama-quantize (K-quants, IQ4_XS/IQ4_NL, fallbacks): digest = gguf-py's dequantized weights, strict receipt with census, inspect-model
for bin in $BINS; do
    step py "llama-quantize GGUFs: digest = the safetensors of gguf-py's dequantized weights, compare root vs candidate strict with the type census and bits per weight, inspect-model ($bin)" \
        python3 tests/py/test_gguf_quantized.py "$bin"
done
# issue 21: qwen4exp GGUFs (index_qk_proj split undone, hyper-connection / indexer norms read as the stored 1 + w)
for bin in $BINS; do
    step py "GGUF qwen4exp: BF16 digest = safetensors, Q8_0 = gguf-py dequantized safetensors, disclosure, hostile refusals ($bin)" \
        python3 tests/py/test_gguf_qwen4.py "$bin"
done
# issue 19: packed-format writers (quantize --format compressed-tensors | gptq | mlx) for the demo rows
for bin in $BINS; do
    step py "quantize writers: compressed-tensors / GPTQ / MLX bytes = the documented rule, capture digest = reference-decoded bf16, strict compare, refusals ($bin)" \
        python3 tests/py/test_quant_writers.py "$bin"
done
# issue 18: glm5_next GGUFs (llama.cpp glm5-next) read as stored (ssm_a; kv_b split, conv1d reshape, experts undone)
for bin in $BINS; do
    step py "GGUF glm5-next (glm5_next): BF16 digest = safetensors, Q8_0 = dequantized safetensors, disclosures, hostile refusals ($bin)" \
        python3 tests/py/test_gguf_glm5.py "$bin"
done
# issue 24: the replay's one-pass KL (reference + first candidate) names a non-finite row as the two passes did
for bin in $BINS; do
    step py "KL one pass: a non-finite reference row named before an earlier candidate row, every path, no receipt ($bin)" \
        python3 tests/py/test_kl_onepass.py "$bin"
done
# issue 20: deepseek_v4 (fixture, loader spellings and refusals, digest across threads / schedules / kernels, RTN int8 < int4)
for bin in $BINS; do
    step py "deepseek_v4: 210 tensors, release spelling, legacy config spellings, tid2eid bounds, digest across threads / schedules / kernels, RTN int8 < int4 ($bin)" \
        python3 tests/py/test_deepseek_v4.py "$bin"
done
# issue 23: the remaining lifecycle pieces: our panels bind (panel build --upstream-layout), capture --panel-binding, strict JSON duplicate keys, architectures prepare with the Python tool's flags
for bin in $BINS; do
    step py "lifecycle 2: panel build --upstream-layout = resolve_panel binding, capture --panel-binding evidence (tokenizer_equivalences + disclosures, the binding's tokenizer/receipt identity), duplicate-key refusals, architectures prepare/list ($bin)" \
        python3 tests/py/test_lifecycle2.py "$bin"
done
# issue 20: deepseek_v4's release weight format (FP8 e4m3 Linears + packed fp4 experts, E8M0 .scale): loads, same digest as the decoded bf16 checkpoint, across threads / schedules / kernels, refusals by name
for bin in $BINS; do
    step py "deepseek_v4 release format: fp8 + fp4 experts load, digest = decoded bf16's, threads / schedules / kernels, refusals ($bin)" \
        python3 tests/py/test_deepseek_v4_release.py "$bin"
done
# issue 20: glm5_next's KDA forget gate without linear_lower_bound (the softplus path, torch.log = MKL vsLn)
for bin in $BINS; do
    step py "glm5_next softplus forget gate: captures, digest across threads / schedules, vs transformers when torch is installed ($bin)" \
        python3 tests/py/test_glm5_softplus.py "$bin"
done
# issue 20: kimi-linear GGUF (llama.cpp's converter at BF16 / Q8_0): BF16 digest = safetensors across threads / schedules / kernels, Q8_0 = dequantized safetensors, hostile refusals
for bin in $BINS; do
    step py "GGUF kimi-linear (kimi_linear): BF16 digest = safetensors (threads, schedules, kernels), Q8_0 = dequantized safetensors, disclosures, hostile refusals ($bin)" \
        python3 tests/py/test_gguf_kimi.py "$bin"
done
# parity: one step per golden (tests/parity/run_parity.sh ORDER PRESET)
for g in "pair tiny" "pair flash-0.1b" "pair small" "pair flash-0.1b-next" "pair deepseek-v3-tiny" "pair deepseek-v32-tiny" \
         "pair kimi-k25-tiny" "pair kimi-linear-tiny" "pair deepseek-v4-tiny" \
         "tile tiny" "tile small" "tile flash-0.1b" "tile flash-0.1b-next" "pair llama-tiny" "pair qwen3-tiny" \
         "pair qwen3-moe-tiny" "pair llama-small" "pair qwen35-tiny" "pair qwen35-moe-tiny" "pair qwen35-small" "pair minimax-m2-tiny" \
         "pair qwen4-exp-tiny"; do
    step parity "parity with the transformers golden ($g)" bash tests/parity/run_parity.sh build/fidelity $g
done
for f in fuzz/fuzz_*.c; do
    name=$(basename "$f" .c); corpus=fuzz/corpus/${name#fuzz_}
    step fuzz "fuzz $name (${FUZZ_SECONDS}s)" bash tests/fuzz_one.sh "build-fuzz/$name" "$corpus" "$FUZZ_SECONDS"
done

if [ "$LIST" = 1 ]; then printf '%s\n' "${NAMES[@]}"; exit 0; fi
# steps that need fetched data run after the fetch
case $ONLY in ""|py) bash tests/tok/fetch.sh ;; esac

# ---- the pool
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
pass=0 fail=0 failed=()
declare -A PID2IDX=()
finish() { # PID RC
    local i=${PID2IDX[$1]} rc=$2
    unset "PID2IDX[$1]"
    echo "=== ${NAMES[$i]}"
    cat "$LOGS/$i.log"
    if [ "$rc" -eq 0 ]; then pass=$((pass + 1)); echo "--- ok: ${NAMES[$i]} ($(cat "$LOGS/$i.time")s)"
    else fail=$((fail + 1)); failed+=("${NAMES[$i]}"); echo "--- FAILED: ${NAMES[$i]} (exit $rc)"; fi
}
reap() { # wait for any one step
    local pid rc
    wait -n -p pid; rc=$?
    finish "$pid" "$rc"
}
t0=$SECONDS
for i in "${!NAMES[@]}"; do
    while [ "${#PID2IDX[@]}" -ge "$JOBS" ]; do reap; done
    ( s=$SECONDS; eval "${CMDS[$i]}" >"$LOGS/$i.log" 2>&1; rc=$?; echo $((SECONDS - s)) >"$LOGS/$i.time"; exit $rc ) &
    PID2IDX[$!]=$i
done
while [ "${#PID2IDX[@]}" -gt 0 ]; do reap; done
echo
[ "$fail" -gt 0 ] && printf 'failed: %s\n' "${failed[@]}"
echo "suite wall time $((SECONDS - t0)) s on $JOBS jobs"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
exit
}
