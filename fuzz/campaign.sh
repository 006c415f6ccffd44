#!/usr/bin/env bash
# The long fuzzing campaign (outside CI): every target of fuzz/ runs until it
# has executed RUNS inputs (default 10,000,000), JOBS targets at a time, each
# from its committed corpus copied to a scratch directory (new finds are kept
# in build-fuzz/campaign/NAME/corpus for a later minimisation into fuzz/corpus).
# Prints one markdown table row per target: executions, seconds, exec/s,
# coverage (libFuzzer's cov), corpus size, crashes.  A crash leaves its input
# in build-fuzz/campaign/NAME/ and makes the script exit 1.
# usage: fuzz/campaign.sh [RUNS] [JOBS] [TARGET...]   (after `make fuzz`; FUZZ_BUILD=build-fuzz-ub for the
# UBSan-only build of `make fuzz-ub`, CAMPAIGN_OUT=DIR for another output folder)
{ # one brace group: read whole before it runs, so editing the file cannot change a running campaign
set -u
cd "$(dirname "$0")/.."
RUNS=${1:-10000000} JOBS=${2:-2}
shift 2 2>/dev/null || shift $#
targets=("$@")
[ ${#targets[@]} -eq 0 ] && for f in fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
out=${CAMPAIGN_OUT:-build-fuzz/campaign}
mkdir -p "$out"
one() {
    local name=$1 d=$out/$1 t0 rc
    rm -rf "$d"; mkdir -p "$d/corpus"
    [ -d "fuzz/corpus/${name#fuzz_}" ] && cp -r "fuzz/corpus/${name#fuzz_}"/. "$d/corpus"/
    t0=$(date +%s)
    (cd "$d" && "$OLDPWD/${FUZZ_BUILD:-build-fuzz}/$name" -runs="$RUNS" -print_final_stats=1 -artifact_prefix="$PWD/" corpus) >"$d/log" 2>&1
    rc=$?
    local secs=$(( $(date +%s) - t0 )) execs cov crashes
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$d/log")
    cov=$(grep -o 'cov: [0-9]*' "$d/log" | tail -1 | awk '{print $2}')
    crashes=$(ls "$d" | grep -c -E '^(crash|leak|timeout|oom)-')
    printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "${execs:-?}" "$secs" \
        "$(( ${execs:-0} / (secs > 0 ? secs : 1) ))" "${cov:-?}" "$(ls "$d/corpus" | wc -l)" "$crashes" >"$d/row"
    return $rc
}
echo "| target | executions | seconds | exec/s | coverage | corpus | crashes |"
echo "|---|---|---|---|---|---|---|"
fail=0 running=0
for t in "${targets[@]}"; do
    [ -x "${FUZZ_BUILD:-build-fuzz}/$t" ] || { echo "campaign: ${FUZZ_BUILD:-build-fuzz}/$t not built (make fuzz / make fuzz-ub)" >&2; fail=1; continue; }
    one "$t" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n || fail=1; running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n || fail=1; running=$((running - 1)); done
for t in "${targets[@]}"; do [ -f "$out/$t/row" ] && cat "$out/$t/row"; done
exit $fail
}
