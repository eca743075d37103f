#!/usr/bin/env bash
# sim colocate on the command line: the issue's pair of shipped jobs runs under every placement
# in text and JSON, byte for byte the same twice, every JSON key documented in docs/report.md;
# packed alone is what `sim` reports for each job; --set reaches every job; bad input (a missing
# or unreadable file, too many nodes, different machines, a bad option) exits 2 naming what is
# wrong; an output that cannot be written exits 1.
#   tests/colocate.sh SIM SOURCE_DIR
sim="$1"; src="$2"
source "$(dirname "$0")/lib.sh"
cd "$src" || exit 1
a=scenarios/1.3B_zero1.yaml; b=scenarios/20B_tp8.yaml

for p in packed spread random; do
    check "text $p" 0 "$sim" colocate "$a" "$b" --placement "$p"
    expect_grep "placement $p" "placement $p" "$tmp/out"
    expect_grep "slowdown $p" "slowdown" "$tmp/out"
    check "json $p" 0 "$sim" colocate "$a" "$b" --placement "$p" --format json --no-timing
    cp "$tmp/out" "$tmp/$p.json"
    expect_grep "json placement $p" "\"placement\": \"$p\"" "$tmp/out"
    expect_grep "json alone $p" '"alone_iteration_time_s": ' "$tmp/out"
    expect_grep "json shared $p" '"shared_links": \[' "$tmp/out"
    check "json again $p" 0 "$sim" colocate "$a" "$b" --placement "$p" --format json --no-timing
    cmp -s "$tmp/out" "$tmp/$p.json" && pass=$((pass + 1)) ||
        { fail=$((fail + 1)); echo "FAIL $p: two runs differ"; }
done
# JSON that parses, where python3 is at hand
if command -v python3 >/dev/null; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["jobs"]) == 2' \
        "$tmp/packed.json" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL json parse"; }
fi
# every key of the JSON report is documented in docs/report.md, as docs.sh checks sim's
grep -ho '"[a-z_][a-z0-9_]*":' "$tmp/packed.json" "$tmp/random.json" | tr -d '":' | sort -u >"$tmp/keys"
while IFS= read -r key; do
    if grep -qE "\`([][a-z_.]*\.)?$key(\`|\.|\[)" docs/report.md; then pass=$((pass + 1)); else
        fail=$((fail + 1)); echo "FAIL json-key: '$key' is not documented in docs/report.md"; fi
done <"$tmp/keys"
# packed: each job alone on its own nodes is `sim`'s report of it
for f in "$a" "$b"; do
    "$sim" "$f" --format json --no-timing >"$tmp/plain.json"
    want=$(grep -m1 '"iteration_time_s"' "$tmp/plain.json" | sed 's/.*: //; s/,$//')
    grep -A6 "\"scenario\": \"$f\"" "$tmp/packed.json" | grep -q "\"alone_iteration_time_s\": $want," &&
        pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL $f alone: want $want"; }
done
check "seed" 0 "$sim" colocate "$a" "$b" --placement random --seed 42
expect_grep "seed shown" "(seed 42)" "$tmp/out"
check "output file" 0 "$sim" colocate "$a" "$b" -o "$tmp/report.txt"
expect_grep "output written" "placement packed" "$tmp/report.txt"
# --set reaches every job: group 0's local links at 1 GB/s (30 GB/s a switch port) are too few
# for two copies of a job whose rings cross them, which slows both alike
check "set" 0 "$sim" colocate "$a" "$a" --set topology.fabric.local_bandwidth=1GB/s
if grep -E '^[12] ' "$tmp/out" | grep -q ' 1.0000x'; then
    fail=$((fail + 1)); echo "FAIL set: no slowdown"; cat "$tmp/out"; else pass=$((pass + 1)); fi
check "bad set" 2 "$sim" colocate "$a" "$b" --set parallel.nothing=1
check "help" 0 "$sim" colocate --help
expect_grep "help text" "docs/report.md" "$tmp/out"

# bad input: exit 2 with the reason
check "one job" 2 "$sim" colocate "$a"
expect_grep "one job message" "expected two scenario files or more" "$tmp/err"
check "missing file" 2 "$sim" colocate "$a" "$tmp/nothing.yaml"
expect_grep "missing file named" "nothing.yaml" "$tmp/err"
mkdir "$tmp/dir.yaml"
check "unreadable file" 2 "$sim" colocate "$tmp/dir.yaml" "$a"
expect_grep "unreadable file named" "dir.yaml" "$tmp/err"
check "too many nodes" 2 "$sim" colocate tests/colocate/pp2.yaml tests/colocate/pp2.yaml \
    tests/colocate/pp2.yaml
expect_grep "too many nodes message" "tree.yaml:.*machine colocate-tree has 4 nodes; the 3 jobs need 6" "$tmp/err"
check "different machines" 2 "$sim" colocate "$a" tests/colocate/pp2.yaml
expect_grep "different machines message" "name different machines (topology frontier and colocate-tree)" "$tmp/err"
check "bad placement" 2 "$sim" colocate "$a" "$b" --placement scattered
expect_grep "bad placement message" "packed, spread or random, not 'scattered'" "$tmp/err"
check "seed without random" 2 "$sim" colocate "$a" "$b" --seed 3
check "bad seed" 2 "$sim" colocate "$a" "$b" --placement random --seed x
check "bad format" 2 "$sim" colocate "$a" "$b" --format csv
# an output that cannot be written: exit 1
check "output to a directory" 1 "$sim" colocate "$a" "$b" -o "$tmp"
if [ -w /dev/full ]; then check "full disk" 1 "$sim" colocate "$a" "$b" -o /dev/full; fi
finish colocate_cli
