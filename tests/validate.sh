#!/usr/bin/env bash
# sim validate on the command line: the table and its CSV, the baseline round trip, exit 4 when a
# row got worse or disappeared, exit 2 with FILE:LINE on bad input.
#   tests/validate.sh SIM SOURCE_DIR
sim="$1"; src="$2"
source "$(dirname "$0")/lib.sh"
cd "$src" || exit 1

h='id,group,use,command,metric,measured,unit,source,setting,note'
c='collective --op allreduce --ranks 8 --sizes 1MiB --topology frontier'
printf '%s\n%s\n%s\n' "$h" \
    "ar8,coll,check,$c,time_us,20,us,\"a source, with a comma\",s,n" \
    "tp,e2e,check,scenarios/1.3B_tp.yaml ;; scenarios/1.3B_tp.yaml,ratio:tflops_per_gpu,>0.5,ratio,s,t,n" \
    >"$tmp/rows.csv"

check "table" 0 "$sim" validate "$tmp/rows.csv"
expect_grep "table row" '^ar8 .*coll .*check .*us' "$tmp/out"
expect_grep "group summary" '^e2e  *1 ' "$tmp/out"
check "csv" 0 "$sim" validate "$tmp/rows.csv" --format csv
expect_grep "csv header" '^id,group,use,metric,predicted,measured,unit,error_pct$' "$tmp/out"
expect_grep "csv bound" '^tp,e2e,check,ratio:tflops_per_gpu,1,>0.5,ratio,0.00$' "$tmp/out"
"$sim" validate "$tmp/rows.csv" --jobs 1 >"$tmp/j1.txt" 2>&1
"$sim" validate "$tmp/rows.csv" --jobs 3 >"$tmp/j3.txt" 2>&1
cmp -s "$tmp/j1.txt" "$tmp/j3.txt" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL jobs change the table"; }
check "group" 0 "$sim" validate "$tmp/rows.csv" --group e2e --format csv
[ "$(wc -l <"$tmp/out")" -eq 2 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL group rows"; }

# Baseline: written twice the same, then checked; a worse and a missing row fail with exit 4.
check "write baseline" 0 "$sim" validate "$tmp/rows.csv" --write-baseline "$tmp/b1.csv"
check "write again" 0 "$sim" validate "$tmp/rows.csv" --write-baseline "$tmp/b2.csv"
cmp -s "$tmp/b1.csv" "$tmp/b2.csv" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL baseline bytes"; }
check "check passes" 0 "$sim" validate "$tmp/rows.csv" --check "$tmp/b1.csv"
printf 'id,group,metric,predicted\nar8,coll,time_us,20\ntp,e2e,ratio:tflops_per_gpu,1\n' >"$tmp/exact.csv"
check "worse row" 4 "$sim" validate "$tmp/rows.csv" --check "$tmp/exact.csv"
expect_grep "worse row named" 'FAIL ar8: |error|' "$tmp/err"
check "wide threshold" 0 "$sim" validate "$tmp/rows.csv" --check "$tmp/exact.csv" --threshold 1000
cp "$tmp/b1.csv" "$tmp/gone.csv"; echo 'old,coll,time_us,5' >>"$tmp/gone.csv"
check "row gone" 4 "$sim" validate "$tmp/rows.csv" --check "$tmp/gone.csv"
expect_grep "gone row named" 'FAIL old: in the baseline but no longer' "$tmp/err"

# Bad input: exit 2, FILE:LINE.
printf '%s\nx,g,check,%s,speed,1,u,s,t,n\n' "$h" "$c" >"$tmp/bad.csv"
check "unknown metric" 2 "$sim" validate "$tmp/bad.csv"
expect_grep "unknown metric where" "$tmp/bad.csv:2: row x: unknown metric 'speed'" "$tmp/err"
printf 'id,group\n' >"$tmp/hdr.csv"
check "bad header" 2 "$sim" validate "$tmp/hdr.csv"
expect_grep "bad header where" "$tmp/hdr.csv:1:" "$tmp/err"
printf '%s\nx,g,check,scenarios/no-such.yaml,mfu,1,u,s,t,n\n' "$h" >"$tmp/run.csv"
check "missing scenario" 2 "$sim" validate "$tmp/run.csv"
expect_grep "missing scenario where" "$tmp/run.csv:2: row x:" "$tmp/err"
printf '%s\nx,g,check,collective --op allreduce --ranks 1 --sizes 1MiB,time_us,1,u,s,t,n\n' "$h" >"$tmp/coll.csv"
check "bad collective" 2 "$sim" validate "$tmp/coll.csv"
check "no such file" 2 "$sim" validate "$tmp/none.csv"
check "no rows in group" 2 "$sim" validate "$tmp/rows.csv" --group nothing
check "bad format" 2 "$sim" validate "$tmp/rows.csv" --format json
check "bad option" 2 "$sim" validate --frobnicate
check "bad baseline" 2 "$sim" validate "$tmp/rows.csv" --check "$tmp/hdr.csv"
finish validate_cli
