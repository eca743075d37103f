#!/usr/bin/env bash
# sim search prunes (PRUNING in sim/cli/cmd_search.c): on several machines and sizes it prints the
# same bytes as --exhaustive, which runs every layout exactly, and it did rule layouts out by their
# lower bound, so that a bound or a rule that changed the top K fails here.
# Usage: search.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
s="$src/scenarios"
# Frontier with 4-node dragonfly groups: PP across groups gives uneven replicas' sends, so the
# default reruns them with every rank unless their bound rules them out
small=(--micro-batches 1 --set topology.fabric.nodes_per_group=4
       --set topology.fabric.switches_per_group=4 --set model=gpt-neox-1.3b
       --set parallel.tp=1 --set training.seq_len=512)

same_top() { # name, search arguments...: pruned and exhaustive give the same bytes, and it pruned
    local name="$1"; shift
    "$sim" search "$@" -j 2 >"$tmp/pruned" 2>"$tmp/pruned.err"
    "$sim" search "$@" -j 2 --exhaustive >"$tmp/all" 2>"$tmp/all.err"
    if [ -s "$tmp/all" ] && cmp -s "$tmp/pruned" "$tmp/all"; then ok; else
        bad "$name: the pruned search's top differs from the exhaustive one's"
        diff "$tmp/pruned" "$tmp/all" | head -8; fi
    if grep -Eq '[1-9][0-9]* ruled out by their lower bound; thread time [0-9]+\.[0-9] s in bounds, [0-9]+\.[0-9] s in exact runs$' \
        "$tmp/pruned.err"; then ok; else
        bad "$name: nothing was ruled out, or no thread times:"; tail -1 "$tmp/pruned.err"; fi
}

same_top frontier-8-top5 "$s/13B_tp8.yaml" --nodes 8 "${small[@]}" -k 5
same_top frontier-8-top3-csv "$s/13B_tp8.yaml" --nodes 8 "${small[@]}" -k 3 -f csv
same_top frontier-8-top12-json "$s/13B_tp8.yaml" --nodes 8 "${small[@]}" -k 12 -f json
# --all-ranks: every layout is run exactly with every rank, so every one is a candidate
same_top frontier-all-ranks "$s/13B_tp8.yaml" --nodes 4 --all-ranks -k 5
same_top dgx-a100-all-ranks "$s/13B_tp8.yaml" --nodes 2 --set topology=dgx-a100 --all-ranks -k 4
# with training.token_budget the text table gains the days to train, budget / tokens per second:
# each printed row's equals the CSV row's time_to_train_days for the same layout
days=(--nodes 8 "${small[@]}" -k 3 -q --set training.token_budget=300B)
"$sim" search "$s/13B_tp8.yaml" "${days[@]}" -j 2 >"$tmp/days.txt" 2>/dev/null
"$sim" search "$s/13B_tp8.yaml" "${days[@]}" -j 2 -f csv >"$tmp/days.csv" 2>/dev/null
if python3 - "$tmp/days.txt" "$tmp/days.csv" <<'PY'; then ok; else bad "search: days column"; fi
import csv, sys
text = [l.split() for l in open(sys.argv[1]) if l[:4].strip().isdigit()]
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(text) == len(rows) == 3, (len(text), len(rows))
assert open(sys.argv[1]).readline().split()[-1] == "days"
for t, r in zip(text, rows):
    want = float(r["time_to_train_days"])
    assert abs(float(t[-1]) - want) <= 0.005 + 1e-9, (t[-1], want)
PY
finish search
