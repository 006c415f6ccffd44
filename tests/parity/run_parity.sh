#!/usr/bin/env bash
# Parity with transformers without PyPI: the committed golden hidden states of
# the tiny fixture (seed 1), written by transformers 5.16.1 / torch 2.11.0 with
# eager attention (tests/parity/transformers_hidden.py), against a fresh
# capture by our engine.  The yardstick is the RTN int8 KL measured here, as
# issue 4 defines it.  usage: run_parity.sh BINARY
set -euo pipefail
B=$(readlink -f "$1")
cd "$(dirname "$0")/../.."
python3 -c 'import numpy' 2>/dev/null || { echo "parity: numpy not installed, skipped"; exit 0; }
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$B" fixture --preset tiny --seed 1 --out "$W/model" >/dev/null
cap() { "$B" capture --model "$1" --panel "$W/model/panel" --out "$2" --role "$3" --lane other \
        --dataset-id "fidelity--parity.$3" --dataset-name parity ${4:+--scope-file "$4"} >/dev/null; }
cap "$W/model" "$W/root" root
"$B" quantize --src "$W/model" --dst "$W/int8" --bits 8 --match mlp.experts --emit-scope "$W/s8.json" >/dev/null
cap "$W/int8" "$W/c8" quant "$W/s8.json"
"$B" compare --reference "$W/root" --candidate "$W/c8" --out "$W/cmp" --no-bootstrap >/dev/null
int8=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kl"]["mean"])' "$W/cmp/comparison-receipt.json")
python3 tests/parity/compare_hidden.py "$W/root" tests/parity/golden/tiny-seed1-eager --int8-kl "$int8"
