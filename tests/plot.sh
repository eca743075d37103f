#!/usr/bin/env bash
# tools/plot draws a non-empty PNG of each kind from small sweeps (a CSV, and a scenario that it
# sweeps itself). Skipped (77) when gnuplot is not installed; tools/test installs it.
# Usage: plot.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
command -v gnuplot >/dev/null 2>&1 || { echo "plot: gnuplot not installed, skipped"; exit 77; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
export SIM_BIN="$sim" SIM_PLOT_NO_INSTALL=1
pass=0; fail=0
png() { # name, file: a PNG of some substance
    if [ "$(head -c 8 "$2" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] &&
       [ "$(wc -c <"$2")" -gt 5000 ]; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL $1: $2 is not a PNG of some size"; cat "$tmp/err"; fi
}
s="$src/scenarios"
"$sim" sweep "$s/fig1_13B_nodes.yaml" --vary nodes=1,2,4 -q -o "$tmp/nodes.csv"
"$src/tools/plot" breakdown "$tmp/nodes.csv" -o "$tmp/breakdown.png" 2>"$tmp/err"
png breakdown "$tmp/breakdown.png"
"$sim" sweep "$s/fig14_1.3B_seqlen.yaml" --vary training.seq_len=512,1024 -q -o "$tmp/seq.csv"
"$src/tools/plot" seqlen "$tmp/seq.csv" -o "$tmp/seqlen.png" 2>"$tmp/err"
png seqlen "$tmp/seqlen.png"
"$src/tools/plot" sizes "$s/fig9_1.3B_sizes.yaml" -o "$tmp/sizes.png" 2>"$tmp/err"
png sizes "$tmp/sizes.png"
[ -s "$tmp/sizes.csv" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sizes: no sizes.csv beside the PNG"; }
"$src/tools/plot" volumes "$s/fig7_8_zero_volumes.yaml" -o "$tmp/volumes.png" 2>"$tmp/err"
png volumes "$tmp/volumes.png"
"$src/tools/plot" pie "$tmp/seq.csv" -o "$tmp/x.png" 2>/dev/null
[ $? -eq 2 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL unknown kind: not exit 2"; }
echo "plot: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
