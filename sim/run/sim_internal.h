/* sim_internal: the run's parts, shared by sim.c (one run) and steady.c (STEADY STATE, a run
 * extrapolated from a short one). Nothing outside sim/run/sim*.c and steady.c includes it. */
#ifndef SIM_SIM_INTERNAL_H
#define SIM_SIM_INTERNAL_H

#include "sim.h"

struct SimRun {
    const Scenario *sc; /* the scenario reported */
    Scenario *own_sc;   /* the short run's scenario (steady.c), owned: its parts are sc's */
    Engine *eng;
    Topology *topo;
    Network *net;
    Collectives *coll;
    Workload *wl;
    Stats *st;
    Executor *ex;
    int critical_index;
    SimSummary sum;
    GArray *links; /* STEADY STATE: every link's NetLinkStat extrapolated, busiest first (NULL:
                      the network's own) */
    HostWork host; /* STEADY STATE: the critical rank's host work extrapolated */
};

/* STEADY STATE (steady.c): the cuts a run is to take of itself. */
typedef struct SteadyCuts SteadyCuts;

/* A run of sc with every micro-batch: representatives or every rank as dedup says
 * (EXACT REPRESENTATIVES), stopped past horizon; the observer, if any, sees every task; cuts,
 * if any, are taken of the run returned. */
SimRun *sim_run_mode(const Scenario *sc, int dedup, SimTime horizon, const ExecObserver *obs,
                     SteadyCuts *cuts, GError **err);
/* The summary's figures from the run's statistics and its scenario: the critical rank, its
 * times, the FLOP rates and the memory (not the engine's counters). */
void sim_figures(SimRun *run);
/* The summary's host figures: seconds since t0 (g_get_monotonic_time), peak RSS, page faults. */
void sim_host_cost(SimSummary *s, gint64 t0);

/* STEADY STATE (steady.c): run's cuts, taken from now on by its executor (the cuts of an earlier
 * run dropped). */
void steady_cuts_arm(SteadyCuts *cuts, SimRun *run);
/* STEADY STATE (steady.c): whether sc's pipeline repeats so that steady_run applies. */
gboolean steady_applies(const Scenario *sc);
/* sim_run_mode's answer from one short run whose steady part repeats exactly, else from
 * sim_run_mode itself. */
SimRun *steady_run(const Scenario *sc, int dedup, SimTime horizon, GError **err);

#endif
