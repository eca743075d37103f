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
 * sim.dedup_replicas; a Dedup value (scenario.h) forces one: DEDUP_OFF every rank, DEDUP_ESTIMATE
 * representatives, DEDUP_EXACT representatives unless their sends turn out uneven, then every
 * rank (EXACT REPRESENTATIVES in sim.c). */
SimRun *sim_run(const Scenario *sc, int dedup, GError **err);
/* sim_run, failing with EXEC_ERROR_HORIZON as soon as the iteration it would report is known to
 * last past horizon (ps): a search that only wants runs faster than its K-th best stops the
 * others early (exec_set_horizon). A run that ends by then is sim_run's, the same bytes. */
SimRun *sim_run_within(const Scenario *sc, int dedup, SimTime horizon, GError **err);
/* The same, reporting every task to obs (NULL for none): a trace watches this way. */
SimRun *sim_run_observed(const Scenario *sc, int dedup, const ExecObserver *obs, GError **err);
/* The mode sim_run's dedup settles to before any run: the scenario's for -1, and DEDUP_OFF
 * whatever is asked where ep > 1. */
Dedup sim_dedup_mode(const Scenario *sc, int dedup);
void sim_run_free(SimRun *run);
/* A lower bound on the iteration time of sc with every rank simulated (what sim_run gives with
 * DEDUP_OFF, and DEDUP_EXACT where it reruns), picoseconds, at the cost of a deduplicated run;
 * -1 with err set when the run fails. Proved in sim.c (LOWER BOUND). */
SimTime sim_bound(const Scenario *sc, GError **err);
/* sim_bound, failing with EXEC_ERROR_HORIZON as soon as the bound is known to exceed horizon
 * (ps): its run stops there (exec_set_horizon), as the layout search wants it (cmd_search.c,
 * PRUNING). A bound at or under the horizon is sim_bound's. */
SimTime sim_bound_within(const Scenario *sc, SimTime horizon, GError **err);
/* Whether an error from sim_run is the input's fault (a layout, a combination or a size that
 * cannot be: CONF_ERROR, MACHINE_ERROR, EXEC_ERROR_OVERFLOW) rather than the simulator's
 * (EXEC_ERROR_DEADLOCK, anything else). Chosen by error domain and code, never by the message. */
gboolean sim_error_is_input(const GError *err);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimRun, sim_run_free)

/* STEADY STATE (steady.c): how a run's micro-batches were simulated. */
typedef enum {
    STEADY_OFF,          /* every micro-batch (sim.steady_state off, or not a repeating pipeline) */
    STEADY_EXTRAPOLATED, /* a short run cut three times, its per-period step repeated */
    STEADY_DIVERGED,     /* the cuts' steps differed: every micro-batch simulated after */
} SteadyMode;

/* "off", "extrapolated", "diverged": the report's sim.steady_state. */
const char *sim_steady_name(SteadyMode m);

typedef struct {
    SimTime iteration;  /* slowest rank's finish, picoseconds */
    int critical_rank;  /* job rank of the slowest rank */
    RankTimes critical; /* its breakdown */
    double overlap;     /* hidden communication / communication, 0..1 (0 when none) */
    double model_flops; /* per iteration, whole job */
    double tflops_per_gpu;
    double mfu;                 /* tflops_per_gpu / device peak at the run's precision */
    double neox_flops;          /* per iteration, whole job, as GPT-NeoX logs them (recomputation
                                   counted with full recompute) */
    double neox_tflops_per_gpu; /* GPT-NeoX's logged "approx flops per GPU", in TFLOP/s */
    ModelMemory memory;         /* the rank with the largest footprint */
    double params;              /* whole model, Eq. 1 */
    uint64_t events;            /* engine events */
    uint64_t solves;            /* max-min solves (net_solves) */
    uint64_t solved_links;      /* links those solves looked at, in all (net_solved_links) */
    uint64_t lane_events;       /* events taken from a same-time lane (engine_lane_events) */
    uint64_t early_activations; /* flows activated as they started, an event fewer each
                                   (net_early_flows) */
    uint64_t rank_events;       /* the rank-events the events stand for: events, plus n - 1 for
                                   each event a tied group of n ran (exec_group_events) */
    gboolean read_ahead;        /* the engine read crowds' state ahead (READ_AHEAD_BYTES) */
    int ranks_simulated;
    /* deduplicated pipeline sends that carry their replicas' copies in one flow, those whose
       copies would not keep one pace apart (the iteration may be overstated: UNEVEN COPIES in
       coll_streams.c), and the largest ratio of a copy's pace to its send's slowest (1: none) */
    int copy_sends, uneven_sends;
    double copy_pace_ratio;
    /* DEDUP_EXACT found uneven sends in its deduplicated trial and ran again with every rank
       (EXACT REPRESENTATIVES in sim.c): the figures are that run's, and the trial's events and
       the three counts above as the trial found them are kept here (0 when not rerun) */
    gboolean dedup_rerun;
    uint64_t trial_events;
    int trial_copy_sends, trial_uneven_sends;
    double trial_pace_ratio;
    SteadyMode steady;           /* STEADY STATE: with EXTRAPOLATED the figures are the short
                                    run's extrapolated, and the engine's and solver's counters
                                    (events ... rank_events, trial_events) that run's */
    int micro_batches_simulated; /* per pipeline, in the run the figures come from (grad_accum
                                    when every micro-batch was simulated) */
    double wall_s;               /* host seconds spent simulating */
    double peak_rss_bytes;       /* host process peak resident memory */
    double page_faults;          /* host process page faults so far (minor and major; getrusage) */
} SimSummary;

/* EXACT REPRESENTATIVES in two steps, for a caller that must know the mode before the run whose
 * figures count (a trace picks its ranks among those simulated): the mode a deduplicated trial
 * (sim_run with DEDUP_ESTIMATE) settles on, DEDUP_OFF where its sends were uneven, else
 * DEDUP_ESTIMATE; and, after the run in that mode, its summary marked as rerun with the trial's
 * counts (nothing where the trial settled on DEDUP_ESTIMATE). sim_run_observed does both. */
Dedup sim_trial_mode(const SimSummary *trial);
void sim_keep_trial(SimRun *run, const SimSummary *trial);

/* What can be known of a scenario without simulating it: its memory per GPU and the kinds of
 * communication its programs issue. Builds the topology and the rank programs, runs nothing;
 * cheap next to sim_run. For sweeps (which columns a table needs) and layout searches (which
 * layouts fit). */
#define SIM_COMM_KINDS (COLL_OP_COUNT * DIM_COUNT) /* (op, dim) pairs */
#define SIM_COMM_KIND_WORDS ((SIM_COMM_KINDS + 63) / 64)
typedef struct {
    ModelMemory memory; /* the rank with the largest footprint, as sim_run reports it */
    gboolean fits;      /* memory.total_bytes <= the device's HBM capacity */
    /* bit k = op * DIM_COUNT + dim (word k / 64, bit k % 64) set for every (op, dim) some task
       issues */
    guint64 comm_kinds[SIM_COMM_KIND_WORDS];
} SimInspect;

gboolean sim_inspect(const Scenario *sc, SimInspect *out, GError **err);

const SimSummary *sim_summary(const SimRun *run);
const Scenario *sim_scenario(const SimRun *run);
const Stats *sim_stats(const SimRun *run);
/* The rank programs the run executed (with STEADY STATE, the longest short run's). */
const Workload *sim_workload(const SimRun *run);
/* The network and machine of the run, for link statistics. */
const Network *sim_network(const SimRun *run);
/* The `max` busiest links of the run as net_busiest_links gives them (extrapolated with STEADY
 * STATE). g_array_unref. */
GArray *sim_busiest_links(const SimRun *run, int max);
/* The critical rank's host work by cause (exec_host_work over its stage's program; extrapolated
 * with STEADY STATE); all zero when the scenario does not model the host. */
HostWork sim_host_work(const SimRun *run);
const Topology *sim_topology(const SimRun *run);
/* Simulated index of the critical rank (for stats_comm_rows). */
int sim_critical_index(const SimRun *run);
/* Simulated index of job rank r, or -1 when it was not simulated (a deduplicated replica). */
int sim_index_of(const SimRun *run, int job_rank);

#endif
