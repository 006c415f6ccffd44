#!/usr/bin/env bash
# Parity with transformers without PyPI: committed golden hidden states and
# DSA selections written by transformers 5.16.1 / torch 2.11.0 with eager
# attention (tests/parity/transformers_hidden.py, ONEDNN_MAX_CPU_ISA pinned),
# against fresh captures by our engine.  The yardstick is the RTN int8 KL
# measured here, as issue 4 defines it.
#   tiny (seed 1, 4 x 64), flash-0.1b and flash-0.1b-next (seed 1, window 0,
#     2,048 tokens), small (seed 1, window 0, 512 tokens): the issues'
#     targets (KL <= 1 % of int8, top-1 and DSA selections >= 99.9 %) must
#     hold; measured: all four bit-identical to the golden (docs/CAPTURE.md,
#     docs/MODEL-GLM5-NEXT.md §6).
# usage: run_parity.sh BINARY
set -euo pipefail
B=$(readlink -f "$1")
cd "$(dirname "$0")/../.."
python3 -c 'import numpy' 2>/dev/null || { echo "parity: numpy not installed, skipped"; exit 0; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
run() { # preset golden windows [compare_hidden bounds...]
    local p=$1 g=$2 n=$3; shift 3
    "$B" fixture --preset "$p" --seed 1 --out "$W/$p" >/dev/null
    cap() { "$B" capture --model "$1" --panel "$W/$p/panel" --out "$2" --role "$3" --lane other --windows "$n" \
            --dataset-id "fidelity--parity.$p.$3" --dataset-name parity --no-sanity-check ${4:+--scope-file "$4"} >/dev/null; }
    mkdir -p "$W/dump-$p"
    FIDELITY_FORWARD_DUMP="$W/dump-$p" cap "$W/$p" "$W/root-$p" root
    "$B" quantize --src "$W/$p" --dst "$W/int8-$p" --bits 8 --match mlp.experts --emit-scope "$W/s8-$p.json" >/dev/null
    cap "$W/int8-$p" "$W/c8-$p" quant "$W/s8-$p.json"
    "$B" compare --reference "$W/root-$p" --candidate "$W/c8-$p" --out "$W/cmp-$p" --no-bootstrap >/dev/null
    local int8
    int8=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kl"]["mean"])' "$W/cmp-$p/comparison-receipt.json")
    echo "== $p (golden $g)"
    python3 tests/parity/compare_hidden.py "$W/root-$p" "tests/parity/golden/$g" --int8-kl "$int8" --dump "$W/dump-$p" "$@"
}
run tiny tiny-seed1-eager 4
run flash-0.1b flash-0.1b-seed1-eager-w0 1
# small (hidden 1024, K up to 2,816, router K 1,024): oneDNN's 1024-wide
# K-blocks past 2,048, MKL's 384-blocks for the router, torch's cascade sum
run small small-seed1-eager-w0 1
run flash-0.1b-next flash-0.1b-next-seed1-eager-w0 1
