#!/usr/bin/env bash
# sim --trace from the command line: the trace is written beside the report; exit statuses.
# Usage: cli_trace.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
s="$src/scenarios"
check trace 0 "$sim" "$s/1.3B_pp.yaml" --trace "$tmp/t.json" --format json -o "$tmp/r.json"
expect_grep trace-events '"traceEvents"' "$tmp/t.json"
expect_grep trace-flow '"ph": "s"' "$tmp/t.json"
expect_grep trace-report '"iteration_time_s"' "$tmp/r.json"
check trace-ranks 0 "$sim" "$s/20B_tp8.yaml" --set nodes=2 --all-ranks --trace "$tmp/t2.json" \
    --trace-ranks 0-3,8
[ "$(grep -c '"process_name"' "$tmp/t2.json")" -eq 5 ] && pass=$((pass + 1)) ||
    { fail=$((fail + 1)); echo "FAIL trace-ranks: not 5 processes"; }
check trace-default-limit 0 "$sim" "$s/20B_tp8.yaml" --set nodes=16 --all-ranks --trace "$tmp/t3.json"
expect_grep trace-limit-note "the first 64 of 128 simulated ranks" "$tmp/err"
check trace-unsimulated 0 "$sim" "$s/20B_tp8.yaml" --set nodes=2 --trace "$tmp/t4.json" --trace-ranks 8
expect_grep trace-unsimulated-note "add --all-ranks" "$tmp/err"
check trace-bad-ranks 2 "$sim" "$s/20B_tp8.yaml" --trace "$tmp/t5.json" --trace-ranks 99
check trace-ranks-alone 2 "$sim" "$s/20B_tp8.yaml" --trace-ranks 0
check trace-unwritable 1 "$sim" "$s/20B_tp8.yaml" --trace /nonexistent/dir/t.json
finish cli_trace
