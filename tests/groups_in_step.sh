#!/usr/bin/env bash
# groups_in_step.sh SIM ROOT: GROUPS IN STEP (sim/run/gang.c) changes no report. Every shipped
# scenario, every layout the validation rows run (validation/e2e.csv, study-trends.csv), and
# variants with every rank simulated and with the mechanisms that make ranks of a group part
# (host, interference, detailed collectives, pipelines, ZeRO, CP, MoE), and two jobs on one
# machine (sim colocate), run with sim.group_in_step true and false; the JSON reports must be the
# same bytes but for the event and solver counters and the override itself. And groups must form (rank_events above events in most runs),
# and the grouped run's rank_events must be the events of the run without groups.
set -u
sim="$1"; cd "$2" || exit 2
source tests/lib.sh

# the report without what may differ: the engine's event counters, the solver's (flows started
# at one picosecond in another order make other solves), and the override's own lines
strip() {
    grep -v -e '"events":' -e '"lane_events":' -e '"rank_events":' -e '"trial_events":' \
        -e '"solves":' -e '"solved_links":' \
        -e '"overrides":' -e 'sim.group_in_step' "$1" | sed 's/,$//'
}
field() { sed -n "s/.*\"$1\": \([0-9]*\).*/\1/p" "$2" | head -1; }

grouped=0
same() { # args...: one scenario, grouped and not
    on_off_same sim.group_in_step "$@" || return 0
    local ev rk evo rko
    ev="$(field events "$tmp/on.json")"; rk="$(field rank_events "$tmp/on.json")"
    evo="$(field events "$tmp/off.json")"; rko="$(field rank_events "$tmp/off.json")"
    if [ "$rko" != "$evo" ]; then
        fail=$((fail + 1)); echo "FAIL off, rank_events $rko != events $evo: $*"
    fi
    # the rank-events the grouped run's events stand for are the events run without groups
    if [ "$rk" != "$evo" ]; then
        fail=$((fail + 1)); echo "FAIL rank_events $rk grouped, events $evo without: $*"
    fi
    [ "$rk" -gt "$ev" ] && grouped=$((grouped + 1))
    return 0
}

# every shipped scenario and validation layout (tests/lib.sh; the whole machine with every rank
# takes minutes: its layout on fewer nodes below)
every_layout same
variants=(
    "scenarios/1T_full_frontier.yaml --set nodes=32 --all-ranks"
    "scenarios/1T_full_frontier.yaml --set nodes=64"
    "scenarios/20B_tp8.yaml --set nodes=16 --all-ranks"
    "scenarios/20B_tp8.yaml --set nodes=4 --set sim.collectives=detailed --all-ranks"
    "scenarios/13B_tp8.yaml --set nodes=4 --set sim.interference=false --all-ranks"
    "scenarios/13B_tp8.yaml --set nodes=4 --set sim.host=false --all-ranks"
    "scenarios/13B_tp8_sp.yaml --set nodes=4 --all-ranks"
    "scenarios/1.3B_tp_overlap.yaml --set nodes=2 --all-ranks"
    "scenarios/1.3B_tp_pp.yaml --all-ranks"
    "scenarios/1.3B_interleaved.yaml --set nodes=2 --set parallel.tp=2 --all-ranks"
    "scenarios/1.3B_pp.yaml --set nodes=2 --set parallel.tp=2 --set parallel.schedule=zb-h1 --all-ranks"
    "scenarios/1.3B_pp.yaml --set nodes=2 --set parallel.tp=2 --set parallel.pp=4 --set parallel.schedule=zb-v --set training.synchronize_each_layer=false --all-ranks"
    "scenarios/1.3B_pp.yaml --set nodes=2 --set parallel.tp=4 --set parallel.pp=4 --set parallel.schedule=zb-v --set training.synchronize_each_layer=false"
    "scenarios/1.3B_zeropp.yaml --set parallel.tp=2 --all-ranks"
    "scenarios/1.3B_zero3.yaml --set parallel.tp=4 --set nodes=4 --all-ranks"
    "scenarios/1.3B_zero3.yaml --set parallel.tp=2 --set nodes=2 --set training.framework=pytorch --all-ranks"
    "scenarios/1.3B_hsdp.yaml --set parallel.tp=2 --all-ranks"
    "scenarios/llama3_70b_dgx_h100.yaml --set parallel.cp=2 --set parallel.pp=2 --set nodes=4 --set training.global_batch=32"
    "scenarios/moe_1.3b_128_frontier.yaml --set parallel.tp=2 --set parallel.ep=32"
)
for v in "${variants[@]}"; do
    same "$v"
done
# several jobs on one engine (sim colocate), each job's groups formed apart
for placement in packed spread; do
    args=(colocate scenarios/13B_tp8.yaml scenarios/20B_tp8.yaml --set nodes=4
          --placement "$placement" --format json --no-timing)
    "$sim" "${args[@]}" >"$tmp/on.json" 2>&1
    "$sim" "${args[@]}" --set sim.group_in_step=false >"$tmp/off.json" 2>&1
    if diff <(strip "$tmp/on.json") <(strip "$tmp/off.json") >"$tmp/diff" &&
        [ "$(field events "$tmp/on.json")" -lt "$(field events "$tmp/off.json")" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1)); echo "FAIL colocate $placement: reports differ or no group formed"
        head -20 "$tmp/diff"
    fi
done
if [ "$grouped" -lt 30 ]; then
    fail=$((fail + 1)); echo "FAIL groups formed in only $grouped runs"
else
    pass=$((pass + 1))
fi
finish groups_in_step
