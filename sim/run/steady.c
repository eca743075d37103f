/* steady: STEADY STATE. A pipeline's iteration from one short run instead of a long one.
 *
 * Under 1F1B (Narayanan et al. SC21; schedule.c) stage s of p runs p - s - 1 warm-up forwards,
 * then m - (p - s - 1) pairs of a forward and a backward, then p - s - 1 cool-down backwards. For
 * m >= p - 1, one micro-batch more adds one pair to every stage's steady part and changes nothing
 * else in any program (the optimizer step and the data-parallel reduction stay after the last
 * backward). Under the interleaved schedule (Megatron-LM's forward_backward_pipelining_with_
 * interleaving) the model chunks take turns in rounds of p micro-batches and the warm-up does not
 * depend on m (m >= 2p, a multiple of p), so p micro-batches more add one round of pairs. Where
 * the steady part repeats with a period T (q = 1 micro-batch under 1F1B, q = p interleaved),
 * every period of it seeing the same network state, q micro-batches more delay everything after
 * them by T and add one period's worth to every sum the report is made of: each rank's busy,
 * communicating, exposed and bubble times, the calls and bytes of every (operation, dimension)
 * and message size, every link's bytes, the host's work.
 *
 * So one short run of m0 micro-batches is made (plan(): under 1F1B m0 = f + 5, f = max(p + 1,
 * 24), where m >= 2 m0; interleaved, m0 = f + 3p, f = the first round start from 2p on past 24
 * micro-batches, where m >= 4 m0 / 3), and it cuts itself three times: as stage 0's first
 * simulated rank starts the forwards of micro-batches f, f + q and f + 2q (exec_set_cut), by when
 * every stage is in its steady part, it copies every statistic (stats_copy, each link's bytes).
 * The two gaps between the cuts must be equal (the period T), every figure must step by as much
 * over the first as over the second (times in integer picoseconds exactly; bytes, calls and
 * shares, running sums of doubles, to within their rounding: sim/engine/steps.h), and every rank
 * must be in the same state at the three cuts (computing or not, its communication in flight,
 * its last change one period later: a data-parallel replica whose pipeline runs at another pace
 * than the one cut is refused), with as many events queued and flows alive at each. Then the report
 * is the short run's with each figure moved by (m - m0) / q steps and each rank's finish by as many
 * periods; the critical rank, the overlap and the FLOP rates are recomputed from the moved figures
 * (sim_figures); the memory is the short run's (the in-flight activations do not depend on m); the
 * model FLOPs come from the scenario; the host's work moves by one period of the critical stage's
 * program, its tasks from the first cut's forward to the second's (exec_host_work_extrapolate).
 * Where a step or a state differs (a transient longer than the cuts, a period longer than q), a
 * second attempt cuts later (2f under 1F1B, a round later interleaved), if both together simulate
 * no more than m micro-batches; else every micro-batch is simulated (sim.steady_state: "diverged").
 *
 * What this proves and what it checks. Two equal periods with equal steps say the steady part
 * repeated twice; that it repeats for every further period inserted there is the assumption the
 * check stands for, not a theorem (a full state comparison, engine queue and flows included,
 * would make it one). The tests hold it to the run with every micro-batch on every Megatron and
 * Korthikanti layout of validation/e2e.csv and on shipped pipelines with DP across nodes, ZeRO-1,
 * host and interference off and on, interleaved, and every rank simulated
 * (tests/steady_state.sh: the same JSON but for the engine's counters); sim.steady_state: false
 * simulates every micro-batch.
 *
 * Not used: with an observer (a trace lists every task of the run it reports), for the
 * zero-bubble schedules (they place W passes by m), and where m is too small for the short run to
 * cost less than the whole by the margins above. */
#include "sim_internal.h"

#include <string.h>

/* Attempt i's short run: m0 micro-batches, cut as stage 0 starts the forwards of micro-batches
 * f, f + q and f + 2q, q the schedule's period in micro-batches. */
typedef struct {
    int64_t q, f, m0;
} Plan;

/* 1F1B: every stage has run two backwards by micro-batch p + 1, and CUT_FIRST_MIN micro-batches
 * have passed, as a short pipeline settles over more periods than its stages
 * (llama3_70b_dgx_h100, p = 8: its periods differ by 8 us at micro-batch 9, by 32 ps at 16, not
 * at all from 20); the run ends two micro-batches after the last cut. The second attempt cuts
 * twice as late. */
#define CUT_FIRST_MIN 24

static Plan plan(const Scenario *sc, int i) {
    int64_t p = sc->pp;
    if (sc->schedule == SCHED_INTERLEAVED) {
        /* rounds of p micro-batches (schedule.c: chunks take turns in groups of p); stage 0's
         * warm-up of 2 (p - 1) + (v - 1) p virtual forwards ends in round 1, and the first cut is
         * the start of round 2, or the first round to start past CUT_FIRST_MIN micro-batches (the
         * second attempt's a round later; at 2p - 2, the first steady forward,
         * megatron_sp_530b's two periods differ by 24 ms); the run is whole rounds, the last
         * cut's and one more */
        int64_t f = (MAX(2, (CUT_FIRST_MIN + p - 1) / p) + i) * p;
        return (Plan){p, f, f + 3 * p};
    }
    int64_t f = MAX(p + 1, CUT_FIRST_MIN) * (i == 0 ? 1 : 2);
    return (Plan){1, f, f + 5};
}

gboolean steady_applies(const Scenario *sc) {
    if (!sc->steady_state || sc->pp <= 1)
        return FALSE;
    int64_t m = sc->grad_accum, m0 = plan(sc, 0).m0;
    if (sc->schedule == SCHED_1F1B && sc->virtual_stages == 1)
        return 2 * m0 <= m; /* a short run of at most half the whole */
    /* the interleaved run cannot be shorter than about 5 rounds of p: at most three quarters of
     * the whole (the Korthikanti layouts have 8 rounds) */
    return sc->schedule == SCHED_INTERLEAVED && m % sc->pp == 0 && 4 * m0 <= 3 * m;
}

const char *sim_steady_name(SteadyMode m) {
    static const char *const names[] = {"off", "extrapolated", "diverged"};
    return names[m];
}

/* What a cut keeps: when, and every statistic the report is made of as it stood. */
typedef struct {
    SimTime at;
    Stats *st;
    GArray *links;  /* net_busiest_links, every link */
    size_t pending; /* events queued, and flows alive: the same at every cut where the state */
    uint32_t flows; /* repeats (a cheap part of what a full state comparison would hold) */
} Cut;

struct SteadyCuts {
    SimRun *run;   /* the run being cut */
    int64_t first; /* the micro-batch of the first cut */
    int64_t q;     /* and of the next, q later */
    int taken;     /* cuts taken, in order of micro-batch */
    Cut cut[3];
};

static void cuts_clear(SteadyCuts *c) {
    for (int i = 0; i < c->taken; i++) {
        stats_free(c->cut[i].st);
        g_array_unref(c->cut[i].links);
    }
    c->taken = 0;
}

/* exec_set_cut's callback: stage 0's first simulated rank starts micro-batch micro's forward. */
static void on_cut(void *ctx, int32_t micro) {
    SteadyCuts *c = ctx;
    if (c->taken == 3 || micro != c->first + c->taken * c->q)
        return;
    Cut *x = &c->cut[c->taken++];
    x->at = engine_now(c->run->eng);
    x->st = stats_copy(c->run->st);
    x->links = net_busiest_links(c->run->net, G_MAXINT);
    x->pending = engine_pending(c->run->eng);
    x->flows = net_flows_alive(c->run->net);
}

void steady_cuts_arm(SteadyCuts *c, SimRun *run) {
    cuts_clear(c);
    c->run = run;
    exec_set_cut(run->ex, on_cut, c);
}

/* sc with m micro-batches per pipeline (global batch micro_batch x m x dp), owned by the caller;
 * its pointers are sc's. */
static Scenario *shortened(const Scenario *sc, int64_t m) {
    Scenario *s = g_memdup2(sc, sizeof *sc);
    s->grad_accum = (int)m;
    s->global_batch = (int64_t)sc->micro_batch * m * sc->dp;
    return s;
}

/* The short run moved by k periods (every check above); FALSE where a step differs. */
static gboolean extrapolate(const Scenario *sc, SimRun *run, const SteadyCuts *c, int64_t k) {
    if (c->taken != 3 || layout_stage(workload_layout(run->wl), exec_job_rank(run->ex, 0)) != 0)
        return FALSE;
    const Cut *x = c->cut;
    SimTime period = x[1].at - x[0].at;
    for (int i = 1; i < 3; i++)
        if (x[i].pending != x[0].pending || x[i].flows != x[0].flows)
            return FALSE;
    if (x[2].at - x[1].at != period)
        return FALSE;
    run->links = net_links_extrapolate(run->net, x[0].links, x[1].links, x[2].links, k);
    if (!run->links || !stats_extrapolate(run->st, x[0].st, x[1].st, x[2].st, period, k))
        return FALSE;
    run->sc = sc;
    sim_figures(run);
    if (!sc->host)
        return TRUE;
    int stage = layout_stage(workload_layout(run->wl), run->sum.critical_rank);
    return exec_host_work_extrapolate(&sc->topo, workload_program(run->wl, stage),
                                      (int32_t)c->first, (int32_t)c->q, k, &run->host);
}

/* Attempt i: its short run and, where its cuts agree, the run extrapolated. */
static SimRun *attempt(const Scenario *sc, int dedup, Plan pl) {
    int64_t m0 = pl.m0;
    SteadyCuts cuts = {.first = pl.f, .q = pl.q};
    Scenario *s = shortened(sc, m0);
    SimRun *run = sim_run_mode(s, dedup, SIM_TIME_MAX, NULL, &cuts, NULL);
    if (run)
        run->own_sc = s;
    else
        g_free(s);
    if (run && !extrapolate(sc, run, &cuts, (sc->grad_accum - m0) / pl.q))
        g_clear_pointer(&run, sim_run_free);
    cuts_clear(&cuts); /* run's micro_batches_simulated is already m0, its scenario's */
    return run;
}

SimRun *steady_run(const Scenario *sc, int dedup, SimTime horizon, GError **err) {
    gint64 t0 = g_get_monotonic_time();
    /* a second attempt cutting later (a transient that outlasts the first's cuts), while both
     * together simulate no more micro-batches than the run they stand for */
    SimRun *run = NULL;
    int64_t spent = 0;
    for (int i = 0; !run && i < 2 && spent + plan(sc, i).m0 <= sc->grad_accum; i++) {
        spent += plan(sc, i).m0;
        run = attempt(sc, dedup, plan(sc, i));
    }
    if (!run) { /* a short run failed (the full one says why) or the cuts' steps differ */
        run = sim_run_mode(sc, dedup, horizon, NULL, NULL, err);
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
