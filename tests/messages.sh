#!/usr/bin/env bash
# Messages that named the wrong thing or nothing (issue 29; notes ux-reliability-3.md B1 "What
# remains" and B2 "Poor messages"): each now names what the user wrote and what is wrong.
# Usage: messages.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
s="$src/scenarios"

# a duration past int64 picoseconds is too long, not "not a duration"
check long-duration 2 "$sim" "$s/1.3B_ddp.yaml" --set topology.fabric.switch_latency=1e7s
expect_grep long-duration-text "switch_latency=1e7s: 'switch_latency' is too long ('1e7s')" "$tmp/err"
check not-duration 2 "$sim" "$s/1.3B_ddp.yaml" --set topology.fabric.switch_latency=1e7
expect_grep not-duration-text "must be a duration such as" "$tmp/err"
# a --set that is not UTF-8 names the option (was GOption's "Invalid byte sequence in conversion
# input"), in every subcommand that takes --set
check set-utf8 2 "$sim" "$s/1.3B_ddp.yaml" --set $'nodes=\xff'
expect_grep set-utf8-text "^sim: --set nodes=.*: not valid UTF-8" "$tmp/err"
check set-utf8-sweep 2 "$sim" sweep "$s/1.3B_ddp.yaml" --vary nodes=1,2 --set $'nodes=\xff'
expect_grep set-utf8-sweep-text "not valid UTF-8" "$tmp/err"
check vary-utf8 2 "$sim" sweep "$s/1.3B_ddp.yaml" --vary $'nodes=1,\xff'
expect_grep vary-utf8-text "not valid UTF-8" "$tmp/err"
check set-utf8-collective 2 "$sim" collective --op allreduce --ranks 8 --set $'nodes=\xff'
expect_grep set-utf8-collective-text "not valid UTF-8" "$tmp/err"
# sim search --global-batch too large names --global-batch, not --set training.grad_accum
check search-batch 2 "$sim" search "$s/1.3B_ddp.yaml" --nodes 2 --global-batch 1099511627776 -q
expect_grep search-batch-text "^sim search: --global-batch 1099511627776 is too large for 16 GPUs" "$tmp/err"
if grep -q "grad_accum" "$tmp/err"; then fail=$((fail + 1)); echo "FAIL search-batch: names grad_accum"; fi
# sim search varies pp, which a scenario's own stage split was made for: refused, naming the keys
check search-split 2 "$sim" search "$s/1.3B_pp.yaml" --nodes 1 -q --set parallel.first_stage_layers=3
expect_grep search-split-text "^sim search: parallel.first_stage_layers and last_stage_layers" "$tmp/err"
# a scenario path that is not UTF-8 leaves the JSON report valid UTF-8
p="$tmp/"$'odd\xff.yaml'
cp "$s/1.3B_ddp.yaml" "$p"
check path-utf8 0 "$sim" "$p" --format json --no-timing
if python3 -c "import json,sys; json.loads(open(sys.argv[1],'rb').read().decode('utf-8'))" "$tmp/out"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL path-utf8: the report is not UTF-8 JSON"; fi
# a path with a quote, a backslash, a tab and a newline comes back from the JSON report as it was
# (the strings are quoted by json-glib's generator, report_json_quote)
q="$tmp/"$'q"u\\o\tt\ne.yaml'
cp "$s/1.3B_ddp.yaml" "$q"
check path-quote 0 "$sim" "$q" --format json --no-timing
if python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['scenario'] == sys.argv[2]" "$tmp/out" "$q"; then
    pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL path-quote: the path does not come back"; fi
# sim collective takes rccl-tests' sizes (1K, 128M, 1G: powers of 1024, its parsesize) and says
# when --algo cannot apply (tree on one node, tree for allgather ran ring without a word)
check coll-suffix 0 "$sim" collective --op allreduce --ranks 16 -b 1K -e 4K --format csv
expect_grep coll-suffix-1k '^allreduce,16,2,1024,' "$tmp/out"
expect_grep coll-suffix-4k '^allreduce,16,2,4096,' "$tmp/out"
check coll-suffix-g 0 "$sim" collective --op allreduce --ranks 16 -b 128M -e 1G -f 8 --format csv
expect_grep coll-suffix-128m '^allreduce,16,2,134217728,' "$tmp/out"
expect_grep coll-suffix-1g '^allreduce,16,2,1073741824,' "$tmp/out"
check coll-suffix-same 0 "$sim" collective --op allreduce --ranks 16 -b 1MiB -e 1MiB --format csv
cp "$tmp/out" "$tmp/mib"
check coll-suffix-m 0 "$sim" collective --op allreduce --ranks 16 -b 1m -e 1M --format csv
if cmp -s "$tmp/out" "$tmp/mib"; then pass=$((pass + 1)); else
    fail=$((fail + 1)); echo "FAIL coll-suffix-same: 1M differs from 1MiB"; fi
check coll-suffix-bad 2 "$sim" collective --op allreduce --ranks 16 -b 1T
expect_grep coll-suffix-bad-text "rccl-tests' 1K, 128M, 1G" "$tmp/err"
check coll-tree-one-node 2 "$sim" collective --op allreduce --ranks 8 --algo tree
expect_grep coll-tree-one-node-text "algo tree cannot run allreduce over 8 GPUs on 1 node" "$tmp/err"
check coll-tree-allgather 2 "$sim" collective --op allgather --ranks 16 --algo tree
expect_grep coll-tree-allgather-text "algo tree cannot run allgather" "$tmp/err"
check coll-hier-one-node 2 "$sim" collective --op allreduce --ranks 8 --algo hierarchical
check coll-tree-ok 0 "$sim" collective --op allreduce --ranks 16 --algo tree -b 1M -e 1M
check coll-ring-ok 0 "$sim" collective --op allgather --ranks 8 --algo ring -b 1M -e 1M

# sim validate on a CSV with a NUL said "6 fields, expected 10", on binary "empty file"
mkdir "$tmp/v"
printf 'id,group,use,command,metric,measured,unit,source,setting,note\na,g,check,collective --op allreduce --ranks 16 --sizes 1MiB,time_us,1\0,us,s,x,y\n' >"$tmp/v/x.csv"
check validate-nul 2 "$sim" validate "$tmp/v"
expect_grep validate-nul-text "x.csv:2: a NUL byte; a CSV file is UTF-8 text" "$tmp/err"
printf 'id,group,use,command,metric,measured,unit,source,setting,note\n\xff\xfe\n' >"$tmp/v/x.csv"
check validate-binary 2 "$sim" validate "$tmp/v"
expect_grep validate-binary-text "x.csv:2: a byte that is not UTF-8" "$tmp/err"

finish messages
