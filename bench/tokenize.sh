#!/usr/bin/env bash
# Encodes a ~10 MB mixed text (the test corpus repeated) with `fidelity
# tokenize` and with HF `tokenizers` (single thread, same file, same run);
# prints MB/s of the encode step of each (file loading excluded on both sides).
# usage: bench/tokenize.sh [TOKENIZER_JSON] [MB]
set -euo pipefail
cd "$(dirname "$0")/.."
TOK=${1:-tests/tok/tokenizers/deepseek-v4/tokenizer.json}
MB=${2:-10}
BIN=${BIN:-build/fidelity}
text=$(mktemp --suffix=.txt)
ids=$(mktemp --suffix=.npy)
trap 'rm -f "$text" "$ids"' EXIT
while [ "$(stat -c %s "$text")" -lt $((MB * 1000000)) ]; do cat tests/tok/corpus/*.txt >> "$text"; done
echo "tokenizer $TOK; text $(stat -c %s "$text") bytes (tests/tok/corpus repeated)"
"$BIN" tokenize --tokenizer "$TOK" --time --out "$ids" "$text"
python3 -c 'import hashlib,sys; r=open(sys.argv[1],"rb").read(); h=r[8]|r[9]<<8; print("fidelity ids sha256 %s" % hashlib.sha256(r[10+h:]).hexdigest()[:16])' "$ids"
if python3 -c 'import tokenizers' 2>/dev/null; then
    RAYON_NUM_THREADS=1 python3 bench/tokenize_hf.py "$TOK" "$text"
else
    echo "HF tokenizers not installed: peer skipped (pip install tokenizers)"
fi
