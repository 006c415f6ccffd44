#!/usr/bin/env bash
# `make install` into an empty DESTDIR: a working binary, a man page that
# renders with every command of the help in it, a bash completion that
# parses and completes command names and flags.
set -euo pipefail
cd "$(dirname "$0")/.."
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
make -s install DESTDIR="$D" PREFIX=/opt/fd >/dev/null
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
B=$D/opt/fd/bin/fidelity M=$D/opt/fd/share/man/man1/fidelity.1 C=$D/opt/fd/share/bash-completion/completions/fidelity
check "installed binary runs" '"$B" kernel-selftest --products 1000 | grep -q "all paths bit-identical"'
check "man page is troff with a NAME section" 'grep -q "^.SH NAME" "$M"'
for c in $("$B" --help | sed -n "/^commands:/,/^$/p" | sed "1d;/^$/d" | awk "{sub(/:$/, \"\", \$1); print \$1}"); do
    grep -q "^\.B $(sed 's/-/\\\\-/g' <<<"$c")\$" "$M" || { echo "FAIL man page lacks command $c"; fail=1; }
done
if command -v man >/dev/null; then check "man page renders" 'man -l "$M" 2>/dev/null | grep -q "EXIT STATUS"'; fi
# object-based build (-MMD): a touched source rebuilds its one object then relinks; a touched header
# rebuilds only the objects that include it (make -n -W: what would run, nothing touched)
check "a touched source file rebuilds one object, not the library" \
    '[ "$(make -n -W src/util/strv.c build/fidelity | grep -c -- " -c ")" = 1 ]'
n_svg=$(grep -l '#include "svg.h"\|#include "report/svg.h"' src/report/*.c src/cli/*.c | wc -l)
check "a touched header rebuilds only its includers (report/svg.h: $n_svg objects)" \
    '[ "$(make -n -W src/report/svg.h build/fidelity | grep -c -- " -c ")" = "$n_svg" ]'
check "completion script parses" 'bash -n "$C"'
comp() { bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _fidelity; printf "%s\n" "${COMPREPLY[@]}"' _ "$C" "$@"; }
check "completes command names" '[ "$(comp fidelity comp)" = compare ]'
check "completes a command's flags" 'comp fidelity compare --ref | grep -qx -- --reference'
exit $fail
