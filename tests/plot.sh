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
mkdir -p "$tmp/kb" "$tmp/ks" "$tmp/kv"
SIM_PLOT_KEEP="$tmp/kb" "$src/tools/plot" breakdown "$tmp/nodes.csv" -o "$tmp/breakdown.png" 2>"$tmp/err"
png breakdown "$tmp/breakdown.png"
"$sim" sweep "$s/fig14_1.3B_seqlen.yaml" --vary training.seq_len=512,1024 -q -o "$tmp/seq.csv"
"$src/tools/plot" seqlen "$tmp/seq.csv" -o "$tmp/seqlen.png" 2>"$tmp/err"
png seqlen "$tmp/seqlen.png"
SIM_PLOT_KEEP="$tmp/ks" "$src/tools/plot" sizes "$s/fig9_1.3B_sizes.yaml" -o "$tmp/sizes.png" 2>"$tmp/err"
png sizes "$tmp/sizes.png"
[ -s "$tmp/sizes.csv" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL sizes: no sizes.csv beside the PNG"; }
SIM_PLOT_KEEP="$tmp/kv" "$src/tools/plot" volumes "$s/fig7_8_zero_volumes.yaml" -o "$tmp/volumes.png" 2>"$tmp/err"
png volumes "$tmp/volumes.png"
# Two axes (issue 11: they collapsed into bars labelled 1 1 2 2 4 4 under a wrong title): a panel
# per value of the second, bars labelled by the first; --x gpus; --share bars of 100%
"$sim" sweep "$s/1.3B_zero1.yaml" --vary nodes=1,2,4 --vary parallel.zero=1,2 -q -o "$tmp/two.csv"
k="$tmp/keep"; mkdir -p "$k"
SIM_PLOT_KEEP="$k" "$src/tools/plot" breakdown "$tmp/two.csv" -o "$tmp/two.png" 2>"$tmp/err"
png two-axes "$tmp/two.png"
same() { # name, expected, got
    if [ "$2" = "$3" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL $1: '$3', want '$2'"; fi
}
# panels, titles and axes in words, not the scenario keys (issue 29)
same two-axes-panels "ZeRO-1|ZeRO-2" "$(paste -sd'|' "$k/panels")"
same two-axes-bars "1 2 4|1 2 4" "$(cut -f1 "$k/bars1.tsv" | paste -sd' ')|$(cut -f1 "$k/bars2.tsv" | paste -sd' ')"
grep -q 'one iteration against nodes, a panel per ZeRO stage' "$k/breakdown.gp" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL two-axes-title"; grep multiplot "$k/breakdown.gp"; }
rm -rf "$k"; mkdir -p "$k"
SIM_PLOT_KEEP="$k" "$src/tools/plot" breakdown "$tmp/two.csv" -o "$tmp/gpus.png" --x gpus --share 2>"$tmp/err"
png x-gpus "$tmp/gpus.png"
same x-gpus-bars "8 16 32" "$(cut -f1 "$k/bars1.tsv" | paste -sd' ')"
# --share: the parts of each bar add up to 100 (the last two columns: the bar's top, the label),
# to the 4 digits the parts are rounded to
same share-100 "100 100 100 100 100 100" "$(cat "$k"/bars*.tsv | awk -F'\t' '{ t = 0; for (i = 2; i <= NF - 2; i++) t += $i; printf "%s%.4g", (NR > 1 ? " " : ""), t }')"
# one axis: one panel, as before (the committed figures do not change)
rm -rf "$k"; mkdir -p "$k"
SIM_PLOT_KEEP="$k" "$src/tools/plot" breakdown "$tmp/nodes.csv" -o "$tmp/one.png" 2>"$tmp/err"
same one-axis "1" "$(wc -l <"$k/panels")"
# seqlen draws two axes; a third is refused by name
"$src/tools/plot" seqlen "$tmp/two.csv" -o "$tmp/x.png" 2>"$tmp/err"
same seqlen-axes 2 $?
grep -q "also varies parallel.zero" "$tmp/err" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL seqlen-axes-text"; cat "$tmp/err"; }
rm -rf "$k"; mkdir -p "$k"
SIM_PLOT_KEEP="$k" "$src/tools/plot" sizes "$tmp/two.csv" -o "$tmp/sizes2.png" 2>"$tmp/err"
same sizes-two-axes "1 node, ZeRO-1|1 node, ZeRO-2" "$(head -2 "$k/labels" | paste -sd'|')"
"$src/tools/plot" sizes "$tmp/two.csv" -o "$tmp/x.png" --share 2>"$tmp/err"
same share-not-sizes 2 $?
"$src/tools/plot" pie "$tmp/seq.csv" -o "$tmp/x.png" 2>/dev/null
[ $? -eq 2 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL unknown kind: not exit 2"; }
# One colour per collective kind in every figure (issue 29: DP allgather was blue in Figures 1-2
# and orange in Figure 9, by order of appearance): the breakdown's, the sizes' and the volumes'
# tables of colours agree, and each holds one colour per kind
kind_color() { # file, kind name (its first field, or with " exposed" in the breakdown): the colour
    awk -F'\t' -v n="$2" '$1 == n || $1 == n " exposed" || $2 == n { print ($1 ~ /^[0-9]+$/ ? $4 : $2); exit }' "$1"; }
same color-dp-allgather "#dd8452 #dd8452 #dd8452" \
    "$(kind_color "$tmp/kb/columns" "DP allgather") $(kind_color "$tmp/ks/kinds" "DP allgather") $(kind_color "$tmp/kv/kinds" "DP allgather")"
same color-tp-allreduce "$(kind_color "$tmp/kb/columns" "TP allreduce")" "$(kind_color "$tmp/ks/kinds" "TP allreduce")"
same color-dp-reduce "$(kind_color "$tmp/kb/columns" "DP reduce")" "$(kind_color "$tmp/kv/kinds" "DP reduce")"
same colors-distinct "$(cut -f2 "$tmp/ks/kinds" | wc -l)" "$(cut -f2 "$tmp/ks/kinds" | sort -u | wc -l)"
same colors-distinct-volumes "$(cut -f4 "$tmp/kv/kinds" | wc -l)" "$(cut -f4 "$tmp/kv/kinds" | sort -u | wc -l)"
# the hidden part of a kind takes its exposed part's colour (hatched)
same color-hidden "$(kind_color "$tmp/kb/columns" "DP reduce")" \
    "$(awk -F'\t' '$1 == "DP reduce hidden" { print $2 }' "$tmp/kb/columns")"
# sizes draws one legend, in a cell of its own: no panel draws a key over its bars
grep -q 'unset key' "$tmp/ks/sizes.gp" && ! grep -q 'set key top' "$tmp/ks/sizes.gp" && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL sizes-legend: a key inside a panel"; grep key "$tmp/ks/sizes.gp"; }
# CSV read as CSV (issue 29): the documented --set topology.collectives.algorithms=ring,tree puts
# a quoted comma in the overrides column; `awk -F,` shifted every later column and drew wrong
# bars. The figure must equal the one from the same rows with that field spelt without a comma.
"$sim" sweep "$s/fig1_13B_nodes.yaml" --vary nodes=1,2 --set topology.collectives.algorithms=ring,tree -q -o "$tmp/q.csv"
sed 's/"topology.collectives.algorithms=ring,tree nodes=\([0-9]*\)"/topology.collectives.algorithms=ring+tree nodes=\1/' "$tmp/q.csv" >"$tmp/p.csv"
rm -rf "$k"; mkdir -p "$k"
SIM_PLOT_KEEP="$k" "$src/tools/plot" breakdown "$tmp/q.csv" -o "$tmp/q.png" 2>"$tmp/err"
# and the bars are the rows' own figures: at 1 node (no DP) compute alone is compute_s and the
# bar's top the iteration, read by name from the CSV (a shifted column gave 1.54 s for 1.73)
same csv-quoted-values "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i } NR == 2 { printf "%.6g %.6g", $c["compute_s"], $c["iteration_time_s"] }' "$tmp/q.csv")" \
    "$(awk -F'\t' 'NR == 1 { printf "%.6g %.6g", $2, $(NF - 1) }' "$k/bars1.tsv")"
"$src/tools/plot" breakdown "$tmp/p.csv" -o "$tmp/p.png" 2>>"$tmp/err"
if grep -q '"topology.collectives.algorithms=ring,tree' "$tmp/q.csv" && cmp -s "$tmp/q.png" "$tmp/p.png"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL csv-quoted: a quoted comma changed the figure"; cat "$tmp/err"; fi
echo "plot: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
