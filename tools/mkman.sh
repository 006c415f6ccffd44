#!/usr/bin/env bash
# Writes fidelity(1) in troff to stdout, made from the binary's own help
# (`fidelity --help`): one entry per command, so the page never drifts from
# the command table.  usage: tools/mkman.sh BINARY
set -euo pipefail
bin=$1
esc() { sed -e 's/\\/\\e/g' -e 's/^\./\\\&./' -e "s/^'/\\\\\&'/" -e 's/-/\\-/g'; }
cat <<'HEAD'
.TH FIDELITY 1 "" "fidelity" "User Commands"
.SH NAME
fidelity \- measure how far a quantized language model drifts from its reference
.SH SYNOPSIS
.B fidelity
.I COMMAND
[\fIARGS\fR]
.SH DESCRIPTION
Captures a model's final hidden states on a token panel into a sealed,
self-verifying fidelity dataset (format malaiwah.fidelity\-dataset.v1),
and compares two datasets offline: full\-vocabulary fp64 KL(reference||candidate),
top\-1 agreement, statistics and a sealed comparison receipt.
.SH COMMANDS
HEAD
"$bin" --help | sed -n '/^commands:/,/^$/p' | sed '1d;/^$/d' | while IFS= read -r line; do
    line=${line#  }
    name=${line%% *}; name=${name%:}
    echo ".TP"
    echo ".B $(printf '%s' "$name" | esc)"
    printf '%s\n' "$line" | esc
done
cat <<'TAIL'
.SH EXIT STATUS
0 ok; 2 ok with warnings (an advisory receipt); 3 refused: the input fails a check and
nothing was written (the message reads REFUSED [code]: reason); 4 bad usage.
.SH SEE ALSO
The README and docs/ of the fidelity source tree.
TAIL
