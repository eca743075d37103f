#!/usr/bin/env bash
# The command line: exit statuses, formats, determinism across processes.
# Usage: cli.sh PATH/TO/sim SOURCE_DIR
set -u
sim="$1"; src="$2"
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
s="$src/scenarios"
check help 0 "$sim" --help
expect_grep help-text "KEY=VALUE" "$tmp/out"
# Help in plain ASCII whatever the locale, naming the subcommand and what it takes (issue 11:
# GLib's "[OPTION" U+2026 "]" printed as "[OPTION?]" outside a UTF-8 locale, and "collective [OPTION?]")
for c in "run:sim \\[OPTION\\.\\.\\.\\] SCENARIO.yaml - simulate" \
         "sweep:sim sweep \\[OPTION\\.\\.\\.\\] SCENARIO.yaml - simulate many" \
         "search:sim search \\[OPTION\\.\\.\\.\\] SCENARIO.yaml - find" \
         "collective:sim collective \\[OPTION\\.\\.\\.\\] - time one collective" \
         "validate:sim validate \\[OPTION\\.\\.\\.\\] \\[DIR|FILE\\]\\.\\.\\. - published"; do
    for loc in C C.UTF-8; do
        check "help-${c%%:*}-$loc" 0 env LC_ALL=$loc "$sim" "${c%%:*}" --help
        expect_grep "help-${c%%:*}-$loc-usage" "^  ${c#*:}" "$tmp/out"
        expect_grep "help-${c%%:*}-$loc-h" "^  -h, --help" "$tmp/out"
        if grep -q "OPTION?" "$tmp/out" || LC_ALL=C grep -q "[^ -~]" "$tmp/out"; then
            fail=$((fail + 1)); echo "FAIL help-${c%%:*}-$loc-ascii: not plain ASCII"
        else pass=$((pass + 1)); fi
    done
done
check version 0 "$sim" --version
expect_grep version-text "^sim [0-9]" "$tmp/out"
check no-args 2 "$sim"
check bad-option 2 "$sim" --frobnicate "$s/20B_tp8.yaml"
check bad-format 2 "$sim" --format xml "$s/20B_tp8.yaml"
check missing-file 2 "$sim" "$tmp/nope.yaml"
check bad-set 2 "$sim" "$s/20B_tp8.yaml" --set parallel.tp=3
expect_grep bad-set-text "does not divide the 64 attention heads" "$tmp/err"
check bad-hybrid-shard 2 "$sim" "$s/1.3B_zero3.yaml" --set parallel.hybrid_shard=true
expect_grep bad-hybrid-shard-text "training.framework: pytorch" "$tmp/err"
check text 0 "$sim" "$s/20B_tp8.yaml"
expect_grep text-breakdown "exposed comm" "$tmp/out"
check json 0 "$sim" "$s/13B_tp8.yaml" --set nodes=4 --format json --no-timing -o "$tmp/a.json"
check json-again 0 "$sim" "$s/13B_tp8.yaml" --set nodes=4 --format json --no-timing -o "$tmp/b.json"
if cmp -s "$tmp/a.json" "$tmp/b.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL determinism: JSON differs"; fi
for key in schema_version iteration_time_s compute_s comm_s exposed_comm_s bubble_s overlap \
           tflops_per_gpu mfu neox_flops neox_tflops_per_gpu params_bytes capacity_bytes fits \
           total_volume_bytes sizes events solves solved_links lane_events early_activations read_ahead host_wait_s interference_s \
           peak_rss_bytes page_faults copy_sends uneven_copy_sends copy_pace_ratio dedup_rerun \
           trial_events trial_copy_sends trial_uneven_copy_sends trial_copy_pace_ratio; do
    expect_grep "json-$key" "\"$key\"" "$tmp/a.json"
done
expect_grep json-nodes '"nodes": 4' "$tmp/a.json"
# provenance: version, the resolved machine, the overrides as given
expect_grep json-version "\"sim_version\": \"$("$sim" --version | cut -d' ' -f2)\"" "$tmp/a.json"
expect_grep json-machine '"topology": "frontier"' "$tmp/a.json"
expect_grep json-device '"device": "AMD MI250X GCD"' "$tmp/a.json"
expect_grep json-overrides '"overrides": \["nodes=4"\]' "$tmp/a.json"
# --print-scenario: the resolved scenario as YAML, each value with its origin; it loads back to the
# same simulation
check print-scenario 0 "$sim" "$s/20B_tp8.yaml" --set nodes=4 --print-scenario -o "$tmp/resolved.yaml"
expect_grep print-set '^nodes: 4    # --set nodes=4' "$tmp/resolved.yaml"
expect_grep print-device '^  device:$' "$tmp/resolved.yaml"
"$sim" "$s/20B_tp8.yaml" --set nodes=4 --format json --no-timing | grep -v '"scenario"\|"overrides"' >"$tmp/direct.json"
"$sim" "$tmp/resolved.yaml" --format json --no-timing | grep -v '"scenario"\|"overrides"' >"$tmp/round.json"
if cmp -s "$tmp/direct.json" "$tmp/round.json"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL print-scenario: the printed scenario simulates differently"; fi

# a UTF-8 --set value under a UTF-8 locale is read, not refused (setlocale); numbers keep a point
LC_ALL=C.UTF-8 check utf8-set 0 "$sim" "$s/1.3B_pp.yaml" --set 'description=Über ✓' --format json
expect_grep utf8-value '"overrides": \["description=Über ✓"\]' "$tmp/out"
expect_grep utf8-numbers '"iteration_time_s": [0-9]*\.[0-9]' "$tmp/out"

# sim search: each bad argument gets its own message; a machine too small is named
check search-top 2 "$sim" search "$s/20B_tp8.yaml" --nodes 2 --top 0
expect_grep search-top-msg 'top must be at least 1, not 0' "$tmp/err"
check search-batch 2 "$sim" search "$s/20B_tp8.yaml" --nodes 2 --global-batch -1
expect_grep search-batch-msg 'global-batch must be a positive number of sequences, not -1' "$tmp/err"
check search-machine 2 "$sim" search "$s/20B_tp8.yaml" --nodes 100000
expect_grep search-machine-msg 'nodes=100000: 100000 nodes asked for; topology frontier has 9408 (fabric.nodes)' "$tmp/err"

# sim list: every shipped file by name, with its facts; an unknown kind is bad input
check list 0 "$sim" list
for name in gpt-neox-20b frontier dgx-h100 mi250x-gcd 20B_tp8 validation/megatron_1t; do
    expect_grep "list-$name" "^  $name " "$tmp/out"
done
grep -q "does not load" "$tmp/out" && { fail=$((fail + 1)); echo "FAIL list: a shipped file does not load"; } || pass=$((pass + 1))
check list-models 0 "$sim" list models
[ "$(grep -c '^  ' "$tmp/out")" -eq "$(ls "$s/../models/"*.yaml | wc -l)" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL list models: count"; }
check list-bad 2 "$sim" list bogus
check csv 0 "$sim" "$s/1.3B_pp.yaml" --format csv
[ "$(wc -l <"$tmp/out")" -eq 2 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL csv: not 2 lines"; }
expect_grep csv-provenance ',frontier,AMD MI250X GCD,,0,false,[0-9.e+]*,,,,$' "$tmp/out"
# a dragonfly layout whose replicas' sends are uneven (EXACT REPRESENTATIVES in sim/run/sim.c):
# by default rerun with every rank, its figures those of --all-ranks; as an estimate, kept
# deduplicated and counted
check csv-uneven 0 "$sim" "$s/1T_full_frontier.yaml" --set nodes=256 --format csv
expect_grep csv-uneven-rerun ',nodes=256,0,true,[0-9.e+]*,,,,$' "$tmp/out"
cut -d, -f1-27 "$tmp/out" | tail -1 >"$tmp/default.row"
check csv-uneven-all 0 "$sim" "$s/1T_full_frontier.yaml" --set nodes=256 --format csv --all-ranks
cut -d, -f1-27 "$tmp/out" | tail -1 >"$tmp/all.row"
if cmp -s "$tmp/default.row" "$tmp/all.row"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL csv-uneven: the rerun's figures differ from --all-ranks'"; fi
check csv-uneven-estimate 0 "$sim" "$s/1T_full_frontier.yaml" --set nodes=256 --set sim.dedup_replicas=estimate --format csv
expect_grep csv-uneven-count ',nodes=256 sim.dedup_replicas=estimate,16,false,[0-9.e+]*,,,,$' "$tmp/out"
# a trace of such a scenario traces a rank of another replica than the first: the run it traces
# simulates every rank, and the report still says it was rerun
check trace-rerun 0 "$sim" "$s/1T_full_frontier.yaml" --set nodes=256 --trace "$tmp/t.json" \
    --trace-ranks 1024 --format json --no-timing
expect_grep trace-rerun-report '"dedup_rerun": true' "$tmp/out"
expect_grep trace-rerun-rank '"pid": 1024' "$tmp/t.json"
if grep -q "not simulated" "$tmp/err"; then fail=$((fail + 1)); echo "FAIL trace-rerun: rank 1024 called not simulated"; else pass=$((pass + 1)); fi
# READ AHEAD (sim/engine/engine.c) only fetches: 20B on 1,100 nodes with every rank (8,800 ranks,
# 8.8 MB of state) reads ahead, its deduplicated run (8 ranks) does not, and they agree (20B's
# replicas are images of each other: tests/test_dedup.c). The gate (READ_AHEAD_BYTES in
# sim/run/sim.c, 8 MiB of 1,000 bytes a rank) leaves 1,024 nodes (8,192 ranks, 7.81 MiB) off.
check read-ahead-gate 0 "$sim" "$s/20B_tp8.yaml" --set nodes=1024 --all-ranks --format json --no-timing
expect_grep read-ahead-gate-off '"read_ahead": false' "$tmp/out"
check read-ahead-on 0 "$sim" "$s/20B_tp8.yaml" --set nodes=1100 --all-ranks --format json --no-timing -o "$tmp/ra.json"
expect_grep read-ahead-on-flag '"read_ahead": true' "$tmp/ra.json"
check read-ahead-off 0 "$sim" "$s/20B_tp8.yaml" --set nodes=1100 --format json --no-timing -o "$tmp/rb.json"
expect_grep read-ahead-off-flag '"read_ahead": false' "$tmp/rb.json"
for key in iteration_time_s exposed_comm_s compute_s bubble_s; do
    if [ "$(grep -m1 "\"$key\"" "$tmp/ra.json")" = "$(grep -m1 "\"$key\"" "$tmp/rb.json")" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL read-ahead: $key differs from the deduplicated run's"
    fi
done
check dedup-bad 2 "$sim" "$s/1.3B_pp.yaml" --set sim.dedup_replicas=maybe
expect_grep dedup-bad-msg "'dedup_replicas' must be true, false or estimate, not 'maybe'" "$tmp/err"
check unwritable 1 "$sim" "$s/1.3B_pp.yaml" -o /nonexistent/dir/out.txt
check all-ranks 0 "$sim" "$s/1.3B_zero1.yaml" --all-ranks
check collective 0 "$sim" collective --op allreduce --ranks 16 --sizes 1MiB:4MiB --format csv
[ "$(wc -l <"$tmp/out")" -eq 4 ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL collective: not 4 lines"; cat "$tmp/out"; }
expect_grep collective-row "^allreduce,16,2,1048576," "$tmp/out"
check collective-text 0 "$sim" collective --op allgather --ranks 8 --sizes 8B:64B --topology dgx-h100
expect_grep collective-head "busbw" "$tmp/out"
check collective-set 0 "$sim" collective --op send --ranks 10 --sizes 1GiB --set node.nics.bandwidth=50GB/s --format csv
expect_grep collective-nic "49\.9" "$tmp/out"
# rccl-tests' -b/-e/-f, -d and columns (issue 11): the sizes, the count, busbw/algbw per op, the
# average line as the mean of the rows, no algorithm on send and all_to_all
check collective-bef 0 "$sim" collective --op allreduce --ranks 16 -b 1KiB -e 1MiB -f 4 --format csv
got=$(tail -n +2 "$tmp/out" | cut -d, -f4 | tr '\n' ' ')
[ "$got" = "1024 4096 16384 65536 262144 1048576 " ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL collective-bef: sizes '$got'"; }
check collective-sizes-still 0 "$sim" collective --op allreduce --ranks 16 --sizes 1KiB:8KiB --format csv
got=$(tail -n +2 "$tmp/out" | cut -d, -f4 | tr '\n' ' ')
[ "$got" = "1024 2048 4096 8192 " ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL collective-sizes-still: sizes '$got'"; }
check collective-sizes-f 0 "$sim" collective --op allreduce --ranks 16 --sizes 1KiB:64KiB -f 8 --format csv
got=$(tail -n +2 "$tmp/out" | cut -d, -f4 | tr '\n' ' ')
[ "$got" = "1024 8192 65536 " ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL collective-sizes-f: sizes '$got'"; }
check collective-b-only 0 "$sim" collective --op allreduce --ranks 8 -b 512MiB --format csv
[ "$(tail -n +2 "$tmp/out" | cut -d, -f4 | tr '\n' ' ')" = "536870912 1073741824 " ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL collective-b-only"; cat "$tmp/out"; }
check collective-f1 2 "$sim" collective --op allreduce --ranks 8 -f 1
expect_grep collective-f1-text "stepfactor.*at least 2" "$tmp/err"
check collective-b-and-sizes 2 "$sim" collective --op allreduce --ranks 8 -b 8B --sizes 8B:1KiB
check collective-e-below-b 2 "$sim" collective --op allreduce --ranks 8 -b 1MiB -e 1KiB
check collective-bad-type 2 "$sim" collective --op allreduce --ranks 8 -d float128
expect_grep collective-bad-type-text "float128" "$tmp/err"
for case in allreduce:1.75 allgather:0.875 reduce_scatter:0.875 all_to_all:0.875 broadcast:1 reduce:1 send:1; do
    op=${case%%:*}; want=${case#*:}
    check "collective-busbw-$op" 0 "$sim" collective --op "$op" --ranks 8 -b 64MiB -e 64MiB -d half --format csv
    # op,ranks,nodes,size,count,type,redop,root,time,algbw,busbw,ip_time,ip_algbw,ip_busbw,algorithm,...
    awk -F, -v w="$want" -v op="$op" 'NR == 2 {
        per = (op == "allgather" || op == "reduce_scatter" || op == "all_to_all") ? 8 : 1
        ok = ($11 / $10 - w < 0.001 && w - $11 / $10 < 0.001) && $5 == $4 / 2 / per && $6 == "half" \
             && $9 == $12 && $10 == $13 && $11 == $14
        ok = ok && ((op == "send" || op == "all_to_all") ? $15 == "-" : $15 != "-")
        exit !ok }' "$tmp/out" && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL collective-busbw-$op: want busbw/algbw $w"; cat "$tmp/out"; }
done
check collective-avg 0 "$sim" collective --op allgather --ranks 16 -b 1KiB -e 256MiB -f 4
awk '/^# Avg bus bandwidth    : / { avg = $NF; seen++ } !/^#/ { sum += $8 + $12; n += 2 }
     END { d = avg - sum / n; exit !(seen == 1 && n == 20 && d < 0.006 && d > -0.006) }' "$tmp/out" \
    && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL collective-avg: not the mean of the rows"; cat "$tmp/out"; }
check collective-bad-op 2 "$sim" collective --op allsum --ranks 8
check collective-bad-ranks 2 "$sim" collective --op allreduce --ranks 1
check collective-bad-size 2 "$sim" collective --op allreduce --ranks 8 --sizes 1GiB:8B
for sz in 0 0:0 1B:0 0:1KiB 0.5B; do # a size of 0 doubled for ever (issue 11)
    check "collective-size-$sz" 2 timeout 10 "$sim" collective --op allreduce --ranks 8 --sizes "$sz"
    expect_grep "collective-size-$sz-text" "at least 1B.*'$sz'" "$tmp/err"
done
check collective-bad-topology 2 "$sim" collective --op allreduce --ranks 8 --topology summit
check ops 0 "$sim" "$s/1.3B_ddp.yaml" --ops
expect_grep ops-gemm "^fwd   qkv .*compute" "$tmp/out"
expect_grep ops-summary "where the layer's time goes" "$tmp/out"
check ops-csv 0 "$sim" "$s/13B_tp8.yaml" --ops --format csv --set topology.device=h100-sxm
expect_grep ops-csv-header "^pass,kernel,kind,batch,m,n,k,flops" "$tmp/out"
expect_grep ops-csv-row "^bwd,mlp_fc1_wgrad,gemm,1,5120,2560,8192," "$tmp/out"
check ops-json 2 "$sim" "$s/1.3B_ddp.yaml" --ops --format json
check bad-device 2 "$sim" "$s/1.3B_ddp.yaml" --set topology.device=nope
expect_grep bad-device-text "device 'nope' not found" "$tmp/err"
check device-swap 0 "$sim" "$s/1.3B_ddp.yaml" --set topology.device=a100-80gb
expect_grep device-swap-text "NVIDIA A100 SXM4 80GB" "$tmp/out"
# Hostile input: exit 2 with FILE:LINE:COLUMN, never a crash (issue 11)
python3 -c "print('['*50000)" >"$tmp/deep.yaml" 2>/dev/null || printf '%50000s\n' '' | tr ' ' '[' >"$tmp/deep.yaml"
check deep-yaml 2 "$sim" "$tmp/deep.yaml"
expect_grep deep-yaml-text "deep.yaml:1:65: .*nested more than 64 deep" "$tmp/err"
mkdir -p "$tmp/d/scenarios" "$tmp/d/models"
cp "$tmp/deep.yaml" "$tmp/d/models/deep.yaml"
printf 'model: deep\ntopology: frontier\nnodes: 1\nparallel: {}\ntraining: {}\n' >"$tmp/d/scenarios/s.yaml"
check deep-model 2 "$sim" "$tmp/d/scenarios/s.yaml"
expect_grep deep-model-text "models/deep.yaml:1:65: " "$tmp/err"
check deep-sweep 2 "$sim" sweep "$tmp/deep.yaml" --vary nodes=1,2
expect_grep deep-sweep-text "deep.yaml:1:65: " "$tmp/err"
# Simulated time beyond 64-bit picoseconds: exit 2 with a message, never an abort (issue 11)
for set in topology.node.nics.bandwidth=25B/s topology.device.peak_flops.fp16=1FLOP/s \
           topology.device.hbm_bandwidth=1B/s; do
    check "overflow-$set" 2 "$sim" "$s/20B_tp8.yaml" --set "$set"
    expect_grep "overflow-$set-text" "beyond what 64-bit picoseconds hold" "$tmp/err"
done
check overflow-peak 2 "$sim" "$s/20B_tp8.yaml" --set topology.device.peak_flops.fp16=1FLOP/s
expect_grep overflow-peak-kernel "^sim: kernel 'qkv' would take longer than 107 days on AMD MI250X GCD" "$tmp/err"
check overflow-nic 2 "$sim" "$s/20B_tp8.yaml" --set topology.node.nics.bandwidth=25B/s
expect_grep overflow-nic-text "^sim: the simulated iteration would last past 107 days.*a bandwidth too small" "$tmp/err"
check overflow-seq 2 "$sim" "$s/20B_tp8.yaml" --set training.seq_len=1048576 --set training.micro_batch=1048576
expect_grep overflow-seq-text "beyond what 64-bit picoseconds hold" "$tmp/err"
check overflow-ops 2 "$sim" "$s/1.3B_ddp.yaml" --ops --set topology.device.hbm_bandwidth=1B/s
expect_grep overflow-ops-text "kernel '.*' would take longer than" "$tmp/err"
[ -s "$tmp/out" ] && { fail=$((fail + 1)); echo "FAIL overflow-ops: printed a table"; } || pass=$((pass + 1))
check overflow-collective 2 "$sim" collective --op allreduce --ranks 16 --sizes 1e20B
expect_grep overflow-collective-text "allreduce of 100000000000000000000 bytes over 16 GPUs" "$tmp/err"
# Counts past 32 bits: exit 2 with the 64-bit figure (issue 11)
check dragonfly-links 2 "$sim" "$s/20B_tp8.yaml" --set topology.fabric.groups=30000
expect_grep dragonfly-links-text "^sim: --set topology.fabric.groups=30000: .*3632640000 links; at most" "$tmp/err"
check collective-ranks-max 2 "$sim" collective --op allreduce --ranks 2147483647
expect_grep collective-ranks-max-text "needs 268435456 nodes of frontier; at most 1048576" "$tmp/err"
check collective-ranks-machine 2 "$sim" collective --op allreduce --ranks 100000 --sizes 1MiB
expect_grep collective-ranks-machine-text "topologies/frontier.yaml:78:10: topology frontier has 9408 nodes; the job asks for 12500" "$tmp/err"
# A what-if whose knob is not the bottleneck says so (issue 11): with slow in-group links, twice
# the NIC bandwidth changes nothing, and the report names the local links as the limit
wi=(--set nodes=16 --set topology.fabric.local_bandwidth=4GB/s)
check whatif-base 0 "$sim" "$s/1.3B_zero1.yaml" "${wi[@]}" --format json --no-timing -o "$tmp/wi0.json"
check whatif-nic 0 "$sim" "$s/1.3B_zero1.yaml" "${wi[@]}" --set topology.node.nics.bandwidth=50GB/s --format json --no-timing -o "$tmp/wi1.json"
same_it() { grep '"iteration_time_s"' "$1"; }
[ "$(same_it "$tmp/wi0.json")" = "$(same_it "$tmp/wi1.json")" ] && pass=$((pass + 1)) || { fail=$((fail + 1)); echo "FAIL whatif-same-time: $(same_it "$tmp/wi0.json") vs $(same_it "$tmp/wi1.json")"; }
expect_grep whatif-json-kind '"limiting_link_kind": "local"' "$tmp/wi1.json"
expect_grep whatif-json-knob '{"key": "topology.node.nics.bandwidth", "link_kinds": \["nic-out", "nic-in"\], "touches_limiting_link": false}' "$tmp/wi1.json"
expect_grep whatif-json-local '{"key": "topology.fabric.local_bandwidth", "link_kinds": \["local", "port-out", "port-in"\], "touches_limiting_link": true}' "$tmp/wi1.json"
check whatif-text 0 "$sim" "$s/1.3B_zero1.yaml" "${wi[@]}" --set topology.node.nics.bandwidth=50GB/s
expect_grep whatif-text-limit "^what-if    the busiest link is group 0 switch 0->1 (local, " "$tmp/out"
expect_grep whatif-text-knob "set topology.node.nics.bandwidth changes nic-out, nic-in links only, not local: it does not touch the bottleneck" "$tmp/out"
# ... and a knob that does touch it says that instead; no knob, no what-if block
check whatif-touch 0 "$sim" "$s/1.3B_zero1.yaml" --set nodes=16 --set topology.node.nics.bandwidth=12.5GB/s
expect_grep whatif-touch-text "set topology.node.nics.bandwidth changes nic-out, nic-in links, the busiest link's kind" "$tmp/out"
check whatif-none 0 "$sim" "$s/1.3B_zero1.yaml" --set nodes=16
grep -q "^what-if" "$tmp/out" && { fail=$((fail + 1)); echo "FAIL whatif-none: a what-if block without a knob"; } || pass=$((pass + 1))
# GPT-NeoX's get_flops line only for the dense models GPT-NeoX trains (its formula misdescribes MoE)
check neox-line-moe 0 "$sim" "$s/mixtral_8x7b_frontier.yaml"
grep -q "GPT-NeoX logs" "$tmp/out" && { fail=$((fail + 1)); echo "FAIL neox-line-moe: GPT-NeoX's line for a MoE model"; } || pass=$((pass + 1))
check neox-line-dense 0 "$sim" "$s/1.3B_zero1.yaml"
expect_grep neox-line-dense-text "^           GPT-NeoX logs .* TFLOP/s per GPU (get_flops: 4x forward" "$tmp/out"
finish cli
