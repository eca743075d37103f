/* steady: STEADY STATE. A 1F1B pipeline's iteration from three short runs instead of one long.
 *
 * Under 1F1B (Narayanan et al. SC21; schedule.c) stage s of p runs p - s - 1 warm-up forwards,
 * then m - (p - s - 1) pairs of a forward and a backward, then p - s - 1 cool-down backwards. For
 * m >= p - 1, one micro-batch more adds one pair to every stage's steady part and changes nothing
 * else in any program (the optimizer step and the data-parallel reduction stay after the last
 * backward). Where the pairs repeat, every micro-batch of the steady part seeing the same network
 * state, each one more micro-batch delays everything after it by one period and adds one period's
 * worth to every sum the report is made of: the rank's busy, communicating, exposed and bubble
 * times, the calls and bytes of every (operation, dimension) and message size, every link's
 * bytes, the host's work. Every such figure is then affine in m, f(m) = f(m0) + (m - m0) step.
 *
 * So where the scenario asks for m >= 6 (p + 1) micro-batches (three short runs cost at most half
 * the whole), three short runs are made, with p, p + 1 and p + 2 micro-batches (every stage has
 * its full warm-up and at least one pair), and every figure of the three is required to step by
 * exactly the same amount from the first to the second as from the second to the third: times in
 * integer picoseconds, bytes, calls and shares as the same double arithmetic gives them. Then the
 * report is the third run's with each figure moved by m - p - 2 steps; the critical rank, the
 * overlap and the FLOP rates are recomputed from the moved figures (sim_figures), the memory is
 * the short runs' (the same in all three: 1F1B holds at most p - s micro-batches' activations
 * whatever m), the model FLOPs come from the scenario. Where any figure's steps differ (a
 * transient longer than the short runs, a period longer than one micro-batch, a rank set or a link
 * set that changes), a second attempt starts from 3p/2 if all attempts together simulate no more
 * than m micro-batches; else the short runs
 * are dropped and every micro-batch is simulated (sim.steady_state: "diverged" in the report).
 *
 * What this proves and what it checks. The steps agreeing on three runs says the iteration grew
 * by one period twice; that it keeps doing so for every further micro-batch is the assumption
 * the check stands for, not a theorem: a figure could in principle step evenly twice and then
 * change. The tests hold it to the run with every micro-batch on every Megatron and Korthikanti
 * layout of validation/e2e.csv and on shipped pipelines with DP across nodes, ZeRO-1, host and
 * interference off and on, and every rank simulated (tests/steady_state.sh: the same JSON but
 * for the engine's counters); sim.steady_state: false simulates every micro-batch.
 *
 * Not used: with an observer (a trace lists every task of the run it reports), for schedules
 * other than 1F1B (the interleaved one repeats by rounds of p micro-batches, the zero-bubble
 * ones place W passes by m), and where m is too small for three short runs to cost less. */
#include "sim_internal.h"

#include <string.h>

/* The micro-batches of attempt i's first short run: p, 3p/2, 2p, ... (every stage has its full
 * warm-up and at least one pair). */
static int64_t short_first(const Scenario *sc, int i) {
    return sc->pp + (int64_t)i * ((sc->pp + 1) / 2);
}

/* The micro-batches attempt i's three runs simulate. */
static int64_t attempt_cost(const Scenario *sc, int i) {
    return 3 * (short_first(sc, i) + 1);
}

gboolean steady_applies(const Scenario *sc) {
    return sc->steady_state && sc->schedule == SCHED_1F1B && sc->pp > 1 &&
           sc->virtual_stages == 1 && 2 * attempt_cost(sc, 0) <= sc->grad_accum;
}

const char *sim_steady_name(SteadyMode m) {
    static const char *const names[] = {"off", "extrapolated", "diverged"};
    return names[m];
}

/* sc with m micro-batches per pipeline (global batch micro_batch x m x dp), owned by the caller;
 * its pointers are sc's. */
static Scenario *shortened(const Scenario *sc, int m) {
    Scenario *s = g_memdup2(sc, sizeof *sc);
    s->grad_accum = m;
    s->global_batch = (int64_t)sc->micro_batch * m * sc->dp;
    return s;
}

/* The engine's counters and the deduplication's outcome: counters summed over the short runs
 * (the work done), the rest required equal in all three (what the run found, not a sum). */
static gboolean combine_counters(SimSummary *c, const SimSummary *a, const SimSummary *b) {
    const SimSummary *x[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (x[i]->ranks_simulated != c->ranks_simulated || x[i]->copy_sends != c->copy_sends ||
            x[i]->uneven_sends != c->uneven_sends || x[i]->copy_pace_ratio != c->copy_pace_ratio ||
            x[i]->dedup_rerun != c->dedup_rerun || x[i]->trial_copy_sends != c->trial_copy_sends ||
            x[i]->trial_uneven_sends != c->trial_uneven_sends ||
            x[i]->trial_pace_ratio != c->trial_pace_ratio ||
            memcmp(&x[i]->memory, &c->memory, sizeof c->memory))
            return FALSE;
    }
    for (int i = 0; i < 2; i++) {
        c->events += x[i]->events;
        c->solves += x[i]->solves;
        c->solved_links += x[i]->solved_links;
        c->lane_events += x[i]->lane_events;
        c->early_activations += x[i]->early_activations;
        c->rank_events += x[i]->rank_events;
        c->trial_events += x[i]->trial_events;
    }
    return TRUE;
}

/* The third run c moved by k steps (every check above); FALSE where a step differs. */
static gboolean extrapolate(const Scenario *sc, SimRun *const r[3], int64_t k) {
    SimRun *c = r[2];
    if (!combine_counters(&c->sum, &r[0]->sum, &r[1]->sum))
        return FALSE;
    c->links = net_links_extrapolate(c->net, r[1]->net, r[0]->net, k);
    if (!c->links || !stats_extrapolate(c->st, r[1]->st, r[0]->st, k))
        return FALSE;
    c->sc = sc;
    sim_figures(c);
    if (!sc->host)
        return TRUE;
    int stage = layout_stage(workload_layout(c->wl), c->sum.critical_rank);
    return exec_host_work_extrapolate(&sc->topo, workload_program(r[0]->wl, stage),
                                      workload_program(r[1]->wl, stage),
                                      workload_program(c->wl, stage), k, &c->host);
}

/* Attempt i: its three short runs and, where their steps agree, the third extrapolated. */
static SimRun *attempt(const Scenario *sc, int dedup, int i) {
    int64_t m0 = short_first(sc, i);
    SimRun *r[3] = {NULL, NULL, NULL};
    gboolean ok = TRUE;
    for (int j = 0; ok && j < 3; j++) {
        Scenario *s = shortened(sc, (int)m0 + j);
        r[j] = sim_run_mode(s, dedup, SIM_TIME_MAX, NULL, NULL);
        if (r[j])
            r[j]->own_sc = s;
        else
            g_free(s);
        ok = r[j] != NULL;
    }
    ok = ok && extrapolate(sc, r, sc->grad_accum - (m0 + 2));
    SimRun *run = ok ? g_steal_pointer(&r[2]) : NULL;
    for (int j = 0; j < 3; j++)
        sim_run_free(r[j]);
    if (run)
        run->sum.micro_batches_simulated = (int)m0 + 2;
    return run;
}

SimRun *steady_run(const Scenario *sc, int dedup, SimTime horizon, GError **err) {
    gint64 t0 = g_get_monotonic_time();
    /* attempts with longer short runs (a transient that outlasts the first's), while all of them
     * together simulate no more micro-batches than the run they stand for */
    SimRun *run = NULL;
    int64_t spent = 0;
    for (int i = 0; !run && spent + attempt_cost(sc, i) <= sc->grad_accum; i++) {
        spent += attempt_cost(sc, i);
        run = attempt(sc, dedup, i);
    }
    if (!run) { /* a short run failed (the full one says why) or the steps differ */
        run = sim_run_mode(sc, dedup, horizon, NULL, err);
        if (!run)
            return NULL;
        run->sum.steady = STEADY_DIVERGED;
    } else {
        run->sum.steady = STEADY_EXTRAPOLATED;
        if (run->sum.iteration > horizon) {
            sim_run_free(run);
            g_set_error(err, EXEC_ERROR, EXEC_ERROR_HORIZON,
                        "the iteration lasts past the horizon");
            return NULL;
        }
    }
    sim_host_cost(&run->sum, t0);
    return run;
}
