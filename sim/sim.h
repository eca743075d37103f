/* sim: one simulation of one scenario, wired end to end (topology, network, collectives,
 * workload, executor, stats), and the figures a report is made of.
 *
 * For: main.c, the tests and, later, sweeps: no globals, so several runs can share a process. */
#ifndef SIM_SIM_H
#define SIM_SIM_H

#include "executor.h"
#include "scenario.h"
#include "stats.h"

typedef struct SimRun SimRun;

/* Simulate one iteration of sc (which must outlive the run). dedup < 0 follows the scenario's
 * sim.dedup_replicas; 0 or 1 forces it. */
SimRun *sim_run(const Scenario *sc, int dedup, GError **err);
void sim_run_free(SimRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimRun, sim_run_free)

typedef struct {
    SimTime iteration;  /* slowest rank's finish, picoseconds */
    int critical_rank;  /* job rank of the slowest rank */
    RankTimes critical; /* its breakdown */
    double overlap;     /* hidden communication / communication, 0..1 (0 when none) */
    double model_flops; /* per iteration, whole job */
    double tflops_per_gpu;
    double mfu;         /* tflops_per_gpu / device peak at the run's precision */
    ModelMemory memory; /* the rank with the largest footprint */
    double params;      /* whole model, Eq. 1 */
    uint64_t events;    /* engine events */
    int ranks_simulated;
    double wall_s;         /* host seconds spent simulating */
    double peak_rss_bytes; /* host process peak resident memory */
} SimSummary;

const SimSummary *sim_summary(const SimRun *run);
const Scenario *sim_scenario(const SimRun *run);
const Stats *sim_stats(const SimRun *run);
/* The network and machine of the run, for link statistics. */
const Network *sim_network(const SimRun *run);
const Topology *sim_topology(const SimRun *run);
/* Simulated index of the critical rank (for stats_comm_rows). */
int sim_critical_index(const SimRun *run);
/* Simulated index of job rank r, or -1 when it was not simulated (a deduplicated replica). */
int sim_index_of(const SimRun *run, int job_rank);

#endif
