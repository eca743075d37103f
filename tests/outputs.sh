#!/usr/bin/env bash
# Outputs and habits users expect: time to train from a token budget (text, JSON, CSV, sweeps),
# `sim help` naming every command, `sim list` naming scenarios `sim NAME` runs, short flags that
# mean one thing, the report's lines, and no progress when standard error is not a terminal.
# Usage: outputs.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
s="$src/scenarios"
pycheck() { # name, python file args...: passes when the script prints ok
    local name="$1"; shift
    if python3 "$@" >"$tmp/py" 2>&1 && grep -q '^ok$' "$tmp/py"; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL $name:"; cat "$tmp/py"; fi
}

# --- time to train: the closed form from the JSON report ------------------------------------
check ttt-json 0 "$sim" "$s/1.3B_zero1.yaml" --set training.token_budget=300B --format json --no-timing -o "$tmp/t.json"
cat >"$tmp/check_ttt.py" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
p = r["parallel"]
tps = p["global_batch"] * r["model"]["seq_len"] / r["iteration_time_s"]
close = lambda x, y: abs(x - y) <= 1e-9 * abs(y)
assert close(r["tokens_per_s"], tps), (r["tokens_per_s"], tps)
assert r["token_budget"] == 300e9, r["token_budget"]
days = 300e9 / r["tokens_per_s"] / 86400
assert close(r["time_to_train_days"], days), (r["time_to_train_days"], days)
assert close(r["time_to_train_s"], days * 86400), r["time_to_train_s"]
assert close(r["node_hours"], p["nodes"] * days * 24), (r["node_hours"], p["nodes"] * days * 24)
assert close(r["gpu_hours"], p["gpus"] * days * 24), (r["gpu_hours"], p["gpus"] * days * 24)
print("ok")
PY
pycheck ttt-closed-form "$tmp/check_ttt.py" "$tmp/t.json"
# suffixes: 300e9 = 300B = 300G = 0.3T; without a budget the keys are null
for b in 300e9 300G 0.3T 300000000000; do
    check "ttt-suffix-$b" 0 "$sim" "$s/1.3B_zero1.yaml" --set training.token_budget=$b --format json --no-timing
    expect_grep "ttt-suffix-$b-value" '"token_budget": 300000000000,' "$tmp/out"
done
check ttt-none 0 "$sim" "$s/1.3B_zero1.yaml" --format json --no-timing
expect_grep ttt-none-null '"time_to_train_days": null,' "$tmp/out"
expect_grep ttt-none-tokens '"tokens_per_s": [0-9]' "$tmp/out"
check ttt-bad 2 "$sim" "$s/1.3B_zero1.yaml" --set training.token_budget=300X
expect_grep ttt-bad-text "training.token_budget=300X: 'token_budget' must be a count" "$tmp/err"
check ttt-negative 2 "$sim" "$s/1.3B_zero1.yaml" --set training.token_budget=-1T
check ttt-text 0 "$sim" "$s/1.3B_zero1.yaml" --set training.token_budget=1.5T
expect_grep ttt-text-line "^to train   1.5T tokens: [0-9.]* days, [0-9]* node-hours, [0-9]* GPU-hours (2 nodes, 16 GPUs)$" "$tmp/out"
expect_grep ttt-text-tokens "^throughput .* tokens/s$" "$tmp/out"
check ttt-csv 0 "$sim" "$s/1.3B_zero1.yaml" --set training.token_budget=1T --format csv
cat >"$tmp/check_csv.py" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
r = rows[0]
days = 1e12 / float(r["tokens_per_s"]) / 86400
assert abs(float(r["time_to_train_days"]) - days) <= 1e-9 * days, (r["time_to_train_days"], days)
assert abs(float(r["node_hours"]) - 2 * days * 24) <= 1e-9 * days * 48, r["node_hours"]
assert abs(float(r["gpu_hours"]) - 16 * days * 24) <= 1e-9 * days * 384, r["gpu_hours"]
print("ok")
PY
pycheck ttt-csv-values "$tmp/check_csv.py" "$tmp/out"
# sweeps: the columns in CSV and JSON lines, empty (CSV) or null (JSON) without a budget
check ttt-sweep 0 "$sim" sweep "$s/1.3B_zero1.yaml" --vary training.token_budget=1T,2T --vary nodes=1,2
cat >"$tmp/check_sweep.py" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 4, rows
for r in rows:
    budget = float(r["token_budget"])
    days = budget / float(r["tokens_per_s"]) / 86400
    assert abs(float(r["time_to_train_days"]) - days) <= 1e-9 * days, r
    assert abs(float(r["node_hours"]) - float(r["nodes"]) * days * 24) <= 1e-9 * days * 48, r
    assert abs(float(r["gpu_hours"]) - float(r["gpus"]) * days * 24) <= 1e-9 * days * 384, r
print("ok")
PY
pycheck ttt-sweep-values "$tmp/check_sweep.py" "$tmp/out"
check ttt-sweep-none 0 "$sim" sweep "$s/1.3B_zero1.yaml" --vary nodes=1 --format json
expect_grep ttt-sweep-null '"token_budget": null, "time_to_train_days": null, "node_hours": null, "gpu_hours": null' "$tmp/out"

# --- sim help: every command of main.c's table, one line each -----------------------------
for h in help --help -h; do
    check "help-$h" 0 "$sim" $h
    for c in run collective sweep search validate sensitivity list import compare; do
        expect_grep "help-$h-$c" "^  $c  *[a-z]" "$tmp/out"
    done
    expect_grep "help-$h-options" "^  -s, --set=KEY=VALUE" "$tmp/out"
done
check help-command 0 "$sim" help sweep
expect_grep help-command-usage "sim sweep \\[OPTION\\.\\.\\.\\]" "$tmp/out"
check help-unknown 2 "$sim" help nosuch

# --- sim list scenarios: every name it prints is one `sim NAME` accepts ----------------------
check list 0 "$sim" list scenarios
# (a few validation scenarios need their row's --set, and the list says so: those must still be
# found by name, failing on what the list names, not "cannot read")
awk 'NR > 1 && NF { print $1, /needs a --set to run/ ? "set" : "runs" }' "$tmp/out" >"$tmp/names"
n=0
while read -r name how; do
    n=$((n + 1))
    if (cd "$tmp" && "$sim" "$name" --print-scenario -o /dev/null) 2>"$tmp/err.name"; then
        [ "$how" = runs ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL list-name $name: runs, but listed as needing a --set"; }
    elif [ "$how" = set ] && ! grep -q "cannot read" "$tmp/err.name"; then pass=$((pass + 1))
    else fail=$((fail + 1)); echo "FAIL list-name $name:"; cat "$tmp/err.name"; fi
done <"$tmp/names"
[ "$n" -ge 20 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL list-count: $n names"; }
(cd "$tmp" && "$sim" 1.3B_zero1 --format json --no-timing) >"$tmp/byname.json"
"$sim" "$s/1.3B_zero1.yaml" --format json --no-timing >"$tmp/bypath.json"
if diff <(grep -v '"scenario"' "$tmp/byname.json") <(grep -v '"scenario"' "$tmp/bypath.json") >/dev/null; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL list-run-by-name: differs from the path's run"; fi
check by-name-sweep 0 "$sim" sweep 1.3B_zero1 --vary nodes=1
check not-a-name 2 "$sim" no_such_scenario
expect_grep not-a-name-hint "sim list scenarios" "$tmp/err"

# --- short flags: one meaning per letter across commands (sim collective's rccl-tests -b, -e,
# -f and -d excepted, as its help says) ------------------------------------------------------
for c in run collective sweep search validate sensitivity import compare; do
    "$sim" $c --help | grep -oE "^  -[a-zA-Z], --[a-z-]+" | sed "s/^  -\\(.\\), --/$c \\1 /"
done >"$tmp/flags"
awk '!($1 == "collective" && $2 ~ /^[befd]$/) { if ($2 in L && L[$2] != $3) { print "-" $2 ": --" L[$2] " (" C[$2] ") and --" $3 " (" $1 ")"; bad = 1 } L[$2] = $3; C[$2] = $1 }
     END { exit bad }' "$tmp/flags" >"$tmp/clash" \
    && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL short-flags:"; cat "$tmp/clash"; }
check collective-help 0 "$sim" collective --help
expect_grep collective-help-rccl "as rccl-tests' -f (not --format" "$tmp/out"

# --- the report's lines -------------------------------------------------------------------
check one-node 0 "$sim" "$s/1.3B_tp.yaml"
expect_grep one-node-text "^machine    frontier, 1 node x 8 " "$tmp/out"
check two-nodes 0 "$sim" "$s/1.3B_zero1.yaml"
expect_grep two-nodes-text "^machine    frontier, 2 nodes x 8 " "$tmp/out"
expect_grep padded "vocab 50304 (padded from 50257)," "$tmp/out"
check unpadded 0 "$sim" "$s/1.3B_zero1.yaml" --set model.vocab=50304
expect_grep unpadded-text "vocab 50304, " "$tmp/out"
grep -q "padded" "$tmp/out" && { fail=$((fail + 1)); echo "FAIL unpadded: says padded"; } || pass=$((pass + 1))
expect_grep neox-deepspeed "GPT-NeoX logs" "$tmp/out"
check neox-megatron 0 "$sim" "$s/1.3B_zero1.yaml" --set training.framework=megatron
grep -q "GPT-NeoX logs" "$tmp/out" && { fail=$((fail + 1)); echo "FAIL neox-megatron: GPT-NeoX's line for a Megatron-LM run"; } || pass=$((pass + 1))
check neox-pytorch 0 "$sim" "$s/1.3B_ddp.yaml" --set training.framework=pytorch
grep -q "GPT-NeoX logs" "$tmp/out" && { fail=$((fail + 1)); echo "FAIL neox-pytorch: GPT-NeoX's line for a PyTorch run"; } || pass=$((pass + 1))

# --- progress: nothing on standard error when it is not a terminal --------------------------
check quiet-run 0 "$sim" "$s/1.3B_zero1.yaml"
[ -s "$tmp/err" ] && { fail=$((fail + 1)); echo "FAIL quiet-run: stderr not empty"; cat "$tmp/err"; } || pass=$((pass + 1))
check quiet-sweep 0 "$sim" sweep "$s/1.3B_zero1.yaml" --vary nodes=1,2,4
[ -s "$tmp/err" ] && { fail=$((fail + 1)); echo "FAIL quiet-sweep: stderr not empty"; cat "$tmp/err"; } || pass=$((pass + 1))
# ... and on a terminal (script(1) gives one; SIM_PROGRESS_DELAY=0 draws at once, not after 2 s)
if command -v script >/dev/null 2>&1; then
    SIM_PROGRESS_DELAY=0 script -qec "'$sim' sweep '$s/1.3B_zero1.yaml' --vary nodes=1,2,4 -o '$tmp/sw.csv'" \
        /dev/null >"$tmp/tty" 2>&1
    expect_grep progress-tty-sweep "sweep \[#*\] 3/3 points, " "$tmp/tty"
    SIM_PROGRESS_DELAY=0 script -qec "'$sim' sweep '$s/1.3B_zero1.yaml' --vary nodes=1,2 -q -o '$tmp/sw.csv'" \
        /dev/null >"$tmp/tty" 2>&1
    grep -q "points" "$tmp/tty" && { fail=$((fail + 1)); echo "FAIL progress-tty-quiet: a bar with -q"; } || pass=$((pass + 1))
    SIM_PROGRESS_DELAY=0 script -qec "'$sim' '$s/20B_tp8.yaml' --set nodes=128 --all-ranks -o '$tmp/r.txt'" \
        /dev/null >"$tmp/tty" 2>&1
    expect_grep progress-tty-run "sim: simulating .*20B_tp8.yaml on 1024 GPUs, [0-9.]* s" "$tmp/tty"
fi
finish outputs
