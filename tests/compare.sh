#!/usr/bin/env bash
# sim compare: two JSON reports side by side; the scenario keys that differ named with both
# values; each difference equal to B - A of the two reports; bad input refused with the file.
# Usage: compare.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
s="$src/scenarios"
check report-a 0 "$sim" "$s/1.3B_zero1.yaml" --format json --no-timing -o "$tmp/a.json"
check report-b 0 "$sim" "$s/1.3B_zero1.yaml" --set parallel.tp=4 --format json --no-timing -o "$tmp/b.json"
expect_grep resolved-in-report '"parallel.tp": "4"' "$tmp/b.json"

# text: the one key that differs, with A's and B's values, and the figures side by side
check text 0 "$sim" compare "$tmp/a.json" "$tmp/b.json"
expect_grep text-key "^scenario   1 key differs" "$tmp/out"
expect_grep text-key-values "^  parallel.tp  *A 1  *B 4$" "$tmp/out"
expect_grep text-iteration "^  iteration_time_s " "$tmp/out"
expect_grep text-memory "^  memory.total_bytes " "$tmp/out"
expect_grep text-comm "^  comm.allreduce.tp.time_s  *-  " "$tmp/out" # only B has TP allreduces
expect_grep text-links "^  links\\." "$tmp/out"

# json: the key named with both values, and diff = B - A of the two reports' own numbers
check json 0 "$sim" compare "$tmp/a.json" "$tmp/b.json" --format json -o "$tmp/c.json"
python3 - "$tmp/a.json" "$tmp/b.json" "$tmp/c.json" >"$tmp/py" 2>&1 <<'EOF'
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
diffs = c["scenario_differences"]
assert diffs == [{"key": "parallel.tp", "a": "1", "b": "4"}], diffs
fig = {f["name"]: f for f in c["figures"]}
def check(name, va, vb):
    f = fig[name]
    assert f["a"] == va and f["b"] == vb, (name, f, va, vb)
    assert f["diff"] == vb - va, (name, f["diff"], vb - va)
    assert abs(f["rel"] - (vb - va) / va) < 1e-12, (name, f["rel"])
check("iteration_time_s", a["iteration_time_s"], b["iteration_time_s"])
check("tokens_per_s", a["tokens_per_s"], b["tokens_per_s"])
check("memory.total_bytes", a["memory"]["total_bytes"], b["memory"]["total_bytes"])
ca = {(r["op"], r["dim"]): r for r in a["comm"]}
cb = {(r["op"], r["dim"]): r for r in b["comm"]}
check("comm.allgather.dp.volume_bytes", ca["allgather", "dp"]["volume_bytes"],
      cb["allgather", "dp"]["volume_bytes"])
tp = fig["comm.allreduce.tp.calls"]  # only in B: A's side and the difference are null
assert tp["a"] is None and tp["diff"] is None and tp["b"] == cb["allreduce", "tp"]["calls"], tp
print("ok")
EOF
if grep -q '^ok$' "$tmp/py"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL json-values:"; cat "$tmp/py"; fi

# the same report twice: no key differs, every difference 0
check same 0 "$sim" compare "$tmp/a.json" "$tmp/a.json"
expect_grep same-text "^scenario   the same resolved scenario" "$tmp/out"

# bad input: exit 2 naming the file, and the line and column where the JSON breaks
printf '{"schema_version": 1,\n  "iteration_time_s": ]\n}\n' >"$tmp/broken.json"
check broken 2 "$sim" compare "$tmp/a.json" "$tmp/broken.json"
expect_grep broken-place "broken.json:2:" "$tmp/err"
echo '{"traceEvents": []}' >"$tmp/other.json"
check not-report 2 "$sim" compare "$tmp/other.json" "$tmp/a.json"
expect_grep not-report-text "other.json: not a sim report" "$tmp/err"
echo '[1, 2]' >"$tmp/array.json"
check array 2 "$sim" compare "$tmp/a.json" "$tmp/array.json"
expect_grep array-text "array.json: not a sim report" "$tmp/err"
python3 -c "print('[' * 100000 + ']' * 100000)" >"$tmp/deep.json"
check deep 2 "$sim" compare "$tmp/deep.json" "$tmp/a.json"
expect_grep deep-place "deep.json:1:65: " "$tmp/err"
check missing 2 "$sim" compare "$tmp/a.json" "$tmp/nope.json"
expect_grep missing-name "nope.json" "$tmp/err"
check one-file 2 "$sim" compare "$tmp/a.json"
check bad-format 2 "$sim" compare "$tmp/a.json" "$tmp/b.json" --format csv
# output that cannot be written: exit 1 (outfile.c)
check full 1 "$sim" compare "$tmp/a.json" "$tmp/b.json" -o /dev/full
check help 0 "$sim" compare --help
expect_grep help-usage "sim compare \\[OPTION\\.\\.\\.\\] A.json B.json" "$tmp/out"
finish compare
