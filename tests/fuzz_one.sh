#!/usr/bin/env bash
# One bounded libFuzzer run: TARGET CORPUS_DIR SECONDS.  The committed corpus
# is copied to a scratch directory first, so a run never changes the tree.
set -u
target=$1 corpus=$2 secs=$3
[ -x "$target" ] || { echo "fuzz_one.sh: $target is not built (make fuzz)"; exit 1; }
tmpc=$(mktemp -d)
trap 'rm -rf "$tmpc"' EXIT
[ -d "$corpus" ] && cp -r "$corpus"/. "$tmpc"/
cd "$tmpc" && "$OLDPWD/$target" -max_total_time="$secs" -print_final_stats=1 "$tmpc" 2>&1 | tail -n 80
exit "${PIPESTATUS[0]}"
