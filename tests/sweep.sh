#!/usr/bin/env bash
# sim sweep from the command line: --jobs 1, 2 and 4 and stdout vs a file give the same bytes;
# a sweep killed with SIGKILL and resumed loses no finished row and gives the uninterrupted
# file; exit statuses.
# Usage: sweep.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
same() { # name, file, file
    if cmp -s "$2" "$3"; then ok; else bad "$1: $2 and $3 differ"; diff "$2" "$3" | head -5; fi
}
lines() { if [ -f "$1" ]; then wc -l <"$1"; else echo 0; fi; }
s="$src/scenarios"
v=(--vary nodes=1,2,4,16 --vary parallel.zero=1,3 --vary training.seq_len=1024,2048)

for fmt in csv json; do
    "$sim" sweep "$s/13B_tp8.yaml" "${v[@]}" -f "$fmt" -j 1 -o "$tmp/j1.$fmt"
    "$sim" sweep "$s/13B_tp8.yaml" "${v[@]}" -f "$fmt" -j 2 -o "$tmp/j2.$fmt"
    "$sim" sweep "$s/13B_tp8.yaml" "${v[@]}" -f "$fmt" -j 4 >"$tmp/j4.$fmt" 2>"$tmp/err"
    same "jobs-2-$fmt" "$tmp/j1.$fmt" "$tmp/j2.$fmt"
    same "jobs-4-stdout-$fmt" "$tmp/j1.$fmt" "$tmp/j4.$fmt"
    [ -s "$tmp/err" ] && bad "silent-$fmt: stderr not empty when not a terminal" || ok
done
[ "$(wc -l <"$tmp/j1.csv")" -eq 17 ] && ok || bad "csv: not 16 rows and a header"
[ "$(wc -l <"$tmp/j1.json")" -eq 16 ] && ok || bad "json: not 16 rows"

# Kill a sweep with SIGKILL once it has written some rows: the rows on disk survive, and
# --resume runs only the rest and ends with the file an uninterrupted sweep writes. The last
# points are the slow ones (every rank of 1,024 and 2,048 nodes), so the kill lands mid-sweep.
k=(--vary nodes=1,2,4,8,16,32,1024,2048 --all-ranks -j 1)
"$sim" sweep "$s/13B_tp8.yaml" "${k[@]}" -o "$tmp/ref.csv"
"$sim" sweep "$s/13B_tp8.yaml" "${k[@]}" -o "$tmp/killed.csv" &
pid=$!
for _ in $(seq 6000); do # up to 60 s for 4 rows
    [ "$(lines "$tmp/killed.csv")" -ge 5 ] && break
    sleep 0.01
done
if kill -9 "$pid" 2>/dev/null; then ok; else bad "kill: the sweep had already finished"; fi
wait "$pid" 2>/dev/null
before="$(tail -n +2 "$tmp/killed.csv" | grep -c '')"
cp "$tmp/killed.csv" "$tmp/at-kill.csv"
check resume 0 "$sim" sweep "$s/13B_tp8.yaml" "${k[@]}" -o "$tmp/killed.csv" --resume
grep -q "kept $before finished rows, running $((8 - before)) more" "$tmp/err" && ok ||
    { bad "resume: expected to keep $before rows:"; cat "$tmp/err"; }
same resumed "$tmp/ref.csv" "$tmp/killed.csv"
# every row written before the kill is in the final file, unchanged
lost=0
while IFS= read -r line; do
    grep -qxF -- "$line" "$tmp/killed.csv" || { lost=$((lost + 1)); echo "row lost: ${line:0:40}"; }
done < <(tail -n +2 "$tmp/at-kill.csv")
[ "$before" -gt 0 ] && [ "$lost" -eq 0 ] && ok || bad "kill: $lost of $before rows lost"

# 2^65 points (65 axes of 2 values): refused at once, the count never wrapping
many=(); for i in $(seq 1 65); do many+=(--vary "k$i.x=a,b"); done
check huge 2 "$sim" sweep "$s/1.3B_pp.yaml" "${many[@]}" -q
grep -q "more than 10000000 points" "$tmp/err" && ok || bad "huge: $(head -c 200 "$tmp/err")"

# Ctrl-C (SIGINT): exit 130 with a note on how to go on; the rows written stay
"$sim" sweep "$s/13B_tp8.yaml" "${k[@]}" -o "$tmp/int.csv" 2>"$tmp/int.err" &
pid=$!
for _ in $(seq 6000); do
    [ "$(lines "$tmp/int.csv")" -ge 3 ] && break
    sleep 0.01
done
kill -INT "$pid" 2>/dev/null
wait "$pid"; st=$?
[ "$st" -eq 130 ] && grep -q -- "--resume to go on" "$tmp/int.err" && ok ||
    { bad "sigint: exit $st"; cat "$tmp/int.err"; }
"$sim" sweep "$s/13B_tp8.yaml" "${k[@]}" -o "$tmp/int.csv" --resume -q
same sigint-resumed "$tmp/ref.csv" "$tmp/int.csv"

check bad-vary 2 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes
check dup-vary 2 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,1
check bad-key 2 "$sim" sweep "$s/13B_tp8.yaml" --vary parallel.tpp=1,2
grep -q "tpp" "$tmp/err" && ok || bad "bad-key: no mention of the key"
check invalid 2 "$sim" sweep "$s/13B_tp8.yaml" --vary parallel.tp=3,8
grep -q -- "--skip-invalid" "$tmp/err" && ok || bad "invalid: no hint"
check skip-invalid 0 "$sim" sweep "$s/13B_tp8.yaml" --vary parallel.tp=3,8 --skip-invalid
[ "$(wc -l <"$tmp/out")" -eq 2 ] && ok || bad "skip-invalid: not one row"
# --resume refuses a file of another sweep (other --set), an edited row, and a file without record
"$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -q -o "$tmp/id.csv"
check resume-same 0 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -o "$tmp/id.csv" --resume
grep -q "kept 2 finished rows, running 0 more" "$tmp/err" && ok || bad "resume-same: rows not kept"
check resume-other-set 2 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 --set training.seq_len=1024 -o "$tmp/id.csv" --resume
grep -q "id.csv: written by another sweep" "$tmp/err" && ok || bad "resume-other-set: message"
sed -i '3s/,[0-9]/,9/' "$tmp/id.csv"
check resume-edited 2 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -o "$tmp/id.csv" --resume
grep -q "id.csv:3: this row is not as the sweep wrote it" "$tmp/err" && ok || bad "resume-edited: message"
rm "$tmp/id.csv.resume"
check resume-no-record 2 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -o "$tmp/id.csv" --resume
grep -q "no .*id.csv.resume records which sweep wrote it" "$tmp/err" && ok || bad "resume-no-record: message"
check overflow-point 2 "$sim" sweep "$s/13B_tp8.yaml" --vary topology.node.nics.bandwidth=25B/s,25GB/s -q
grep -q "bandwidth=25B/s: .*beyond what 64-bit picoseconds hold" "$tmp/err" && ok || bad "overflow-point: message"
check resume-needs-o 2 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 --resume
check bad-format 2 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -f xml
check other-file 2 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -o "$tmp/ref.csv" --resume
check unwritable 1 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -o /nonexistent/dir/x.csv
# -o writes through a symbolic link, refuses what is not a regular file; a full stdout is exit 1
: >"$tmp/real.csv"; ln -s real.csv "$tmp/link.csv"
check symlink 0 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -q -o "$tmp/link.csv"
[ -L "$tmp/link.csv" ] && [ "$(wc -l <"$tmp/real.csv")" -eq 3 ] && ok ||
    bad "symlink: the link was replaced or the rows are not in its target"
mkfifo "$tmp/fifo"
check fifo 1 timeout 20 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -q -o "$tmp/fifo"
grep -q "fifo: not a regular file" "$tmp/err" && [ -p "$tmp/fifo" ] && ok || bad "fifo: not refused"
ln -s nothing "$tmp/dangling.csv"
check dangling 1 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -q -o "$tmp/dangling.csv"
if [ -w /dev/full ]; then
    "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 -q >/dev/full 2>"$tmp/err"; st=$?
    [ "$st" -eq 1 ] && grep -q "cannot write the output" "$tmp/err" && ok ||
        bad "full-stdout: exit $st"
fi
check timing 0 "$sim" sweep "$s/13B_tp8.yaml" --vary nodes=1,2 --timing
head -1 "$tmp/out" | grep -q ',wall_s$' && ok || bad "timing: no wall_s column"
# sim search
check search 0 "$sim" search "$s/13B_tp8.yaml" --nodes 2 -j 2
grep -q "^   1 " "$tmp/out" && ok || bad "search: no ranked table"
grep -q "layouts simulated" "$tmp/err" && ok || bad "search: no summary"
check search-csv 0 "$sim" search "$s/13B_tp8.yaml" --nodes 2 -f csv -k 3 -q
[ "$(wc -l <"$tmp/out")" -eq 4 ] && ok || bad "search-csv: not 3 rows and a header"
head -1 "$tmp/out" | grep -q '^tp,pp,dp,zero,micro_batch,micro_batches,recompute,' && ok ||
    bad "search-csv: layout columns not first"
check search-no-nodes 2 "$sim" search "$s/13B_tp8.yaml"
check search-bad-micro 2 "$sim" search "$s/13B_tp8.yaml" --nodes 2 --micro-batches 0,x
check search-nothing-fits 2 "$sim" search "$s/20B_tp8.yaml" --nodes 1 --set training.seq_len=65536
finish sweep
