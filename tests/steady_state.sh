#!/usr/bin/env bash
# steady_state.sh SIM ROOT: STEADY STATE (sim/run/steady.c) changes no report. Every shipped
# scenario, every layout the validation rows run (validation/e2e.csv, study-trends.csv), and
# 1F1B pipelines with many micro-batches under the mechanisms that could break a repeating step
# (every rank simulated, data parallelism across a dragonfly with uneven sends rerun, ZeRO-1, host,
# interference, contention and detailed collectives on and off, the interleaved schedule), run
# with sim.steady_state true and false; the JSON reports must be the same bytes but for the engine's and the solver's
# counters, the two steady-state keys and the override itself. And the runs must extrapolate
# (at least MIN_EXTRAPOLATED of them), or the test says nothing.
set -u
sim="$1"; cd "$2" || exit 2
source tests/lib.sh
MIN_EXTRAPOLATED=20

strip() {
    grep -v -e '"events":' -e '"lane_events":' -e '"rank_events":' -e '"trial_events":' \
        -e '"solves":' -e '"solved_links":' -e '"early_activations":' -e '"steady_state":' \
        -e '"micro_batches_simulated":' -e '"overrides":' -e 'sim.steady_state' "$1" |
        sed 's/,$//'
}

extrapolated=0
same() { # args...: one scenario, with and without the steady state
    on_off_same sim.steady_state "$@" || return 0
    if grep -q '"steady_state": "extrapolated"' "$tmp/on.json"; then
        extrapolated=$((extrapolated + 1))
    fi
    grep -q '"steady_state": "diverged"' "$tmp/on.json" && echo "note: diverged: $*"
    return 0
}

# every shipped scenario and validation layout (tests/lib.sh)
every_layout same
variants=(
    "scenarios/validation/megatron_76b.yaml --all-ranks"
    "scenarios/validation/megatron_76b.yaml --set sim.host=false"
    "scenarios/validation/megatron_76b.yaml --set sim.interference=false"
    "scenarios/validation/megatron_76b.yaml --set sim.contention=false"
    "scenarios/validation/megatron_76b.yaml --set sim.collectives=detailed"
    "scenarios/validation/megatron_76b.yaml --set sim.group_in_step=false"
    "scenarios/validation/dash_22b.yaml --all-ranks"
    "scenarios/validation/dash_22b.yaml --set parallel.zero=1"
    "scenarios/validation/dash_175b.yaml --set sim.dedup_replicas=estimate"
    "scenarios/1.3B_pp.yaml --set training.grad_accum=128"
    "scenarios/1.3B_pp.yaml --set training.grad_accum=128 --set parallel.pp=4 --set nodes=2"
    "scenarios/1.3B_tp_pp.yaml --set training.grad_accum=64 --all-ranks"
    "scenarios/1T_full_frontier.yaml --set nodes=32 --set parallel.pp=16 --set training.grad_accum=128"
    "scenarios/1T_full_frontier.yaml --set nodes=64 --set training.grad_accum=256"
    "scenarios/llama3_70b_dgx_h100.yaml --set training.global_batch=1024"
    "scenarios/llama3_70b_frontier.yaml --set training.global_batch=1024"
    "scenarios/validation/megatron_sp_175b.yaml --all-ranks"
    "scenarios/validation/megatron_sp_175b.yaml --set sim.interference=false --set sim.host=false"
    "scenarios/llama3_70b_dgx_h100.yaml --set parallel.schedule=interleaved --set parallel.virtual_stages=2 --set training.global_batch=512"
    "scenarios/llama3_70b_frontier.yaml --set parallel.schedule=interleaved --set parallel.virtual_stages=2 --set training.global_batch=1024"
)
for v in "${variants[@]}"; do
    same "$v"
done
if [ "$extrapolated" -lt "$MIN_EXTRAPOLATED" ]; then
    fail=$((fail + 1)); echo "FAIL only $extrapolated runs extrapolated"
else
    pass=$((pass + 1))
fi
echo "extrapolated: $extrapolated runs"
finish steady_state
