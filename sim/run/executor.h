/* executor: runs rank programs on the engine the way a GPU runs streams.
 *
 * For: one compute stream and separate communication streams per rank, each in order; a task
 * starts when its stream's previous task and its dependencies have finished; a collective starts
 * when every member has reached it; a send and its receive start together. Stats hear of every
 * start and end.
 * Not for: what the programs contain (workload.c) or what communication costs (collectives.c).
 *
 * With dedup, only data-parallel replica 0 is simulated: the others run the same program at the
 * same times, so a DP collective starts when the representative reaches it, and its transfers
 * still load every member's links; its pipeline sends carry the other replicas' corresponding
 * sends in the same flow (a CollCall's copies, COLL_IMAGES). Where the GPUs of a node are
 * interchangeable (exec_tp_interchangeable), only tensor-parallel rank 0 of each group is simulated
 * as well: a TP collective starts when it arrives and loads every member's links, and its pipeline
 * sends and data-parallel collectives carry its peers' in the same flow (a CollCall's copies:
 * TP_PEERS in executor.c). Where TP ranks are all simulated,
 * a TP group's ranks in step run as one until something concerns one of them alone (GROUPS IN
 * STEP, gang.c). */
#ifndef SIM_EXECUTOR_H
#define SIM_EXECUTOR_H

#include "collectives.h"
#include "stats.h"
#include "workload.h"

typedef struct Executor Executor;

/* The executor's errors. An iteration too long for 64-bit picoseconds comes from the input (a
 * bandwidth or a workload out of proportion); a deadlock is the simulator's own bug. */
#define EXEC_ERROR (exec_error_quark())
GQuark exec_error_quark(void);
typedef enum {
    EXEC_ERROR_OVERFLOW, /* the simulated time passed SIM_TIME_MAX: bad input */
    EXEC_ERROR_DEADLOCK, /* a rank could not finish its program: internal error */
    EXEC_ERROR_HORIZON,  /* a rank finishes after the horizon (exec_set_horizon): not an error of
                            the input or the simulator, the answer "later than that" */
} ExecError;

/* Representatives (one place, so that a layout module can own it): whether the tensor-parallel
 * ranks of a group are interchangeable, so that one stands for all: the node's GPUs meet through
 * a switch (every pair alike), GPU k owns NIC k on a fabric that treats NIC k of every node alike
 * (fat tree with rails, flat; not a dragonfly, whose links are picked per GPU pair), TP groups
 * within a node, no context parallelism, and with data parallelism TP groups that fill their
 * node, without experts or blocks of replicas (ZeRO++, HYBRID_SHARD): a DP group then has one GPU
 * on each node and goes by that GPU's own NIC, so TP peer k's is rank 0's with every node's GPUs
 * and NICs rotated by k, which a representative's DP collective carries as copies (TP_PEERS in
 * executor.c). Where a DP group holds several GPUs of a node, its ring's channels pick NICs by
 * channel, not by GPU, and the TP peers' rings are not images of each other. */
gboolean exec_tp_interchangeable(const Scenario *sc, const Layout *lay);
/* The simulated index of job rank `rank`, -1 when another rank stands for it (dedup). */
int exec_rep_index(const Scenario *sc, const Layout *lay, gboolean dedup, int rank);
/* Ranks a run simulates, and how many job ranks each stands for (*weight). */
int exec_sim_count(const Scenario *sc, const Layout *lay, gboolean dedup, int *weight);

/* Optional callbacks for a trace: begin when a task starts running (a compute task starts, or a
 * communication starts moving data, i.e. when every member has arrived), end when it finishes.
 * rank is the job rank; now is simulated time, picoseconds. Called in simulated-time order. */
typedef struct {
    void (*begin)(void *ctx, int rank, const Task *t, SimTime now);
    void (*end)(void *ctx, int rank, const Task *t, SimTime now);
    void *ctx;
    /* Optional (NULL: not wanted): the host of `rank` spent [start, end) launching t, or, with t
     * NULL, in the optimizer step's framework code after its synchronisation. Called when the
     * task is launched and ready on the GPU, so not in time order. */
    void (*host)(void *ctx, int rank, const Task *t, SimTime start, SimTime end);
} ExecObserver;

Executor *exec_new(Engine *eng, Collectives *coll, const Workload *wl, Stats *st, gboolean dedup);
void exec_free(Executor *ex);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Executor, exec_free)

/* The host's CPU time to issue task t (node.host): its ATen operators at the forward or the
 * backward rate and its gradient hooks for compute; one call for communication. */
SimTime exec_host_cost(const TopologySpec *ts, const Task *t);

/* The CPU time one rank's host spends issuing a stage's program, by cause (seconds), and how
 * often it synchronises with the device: what exec_host_cost charges, summed. */
typedef struct {
    double dispatch_s; /* ATen operators of compute tasks (forward and backward rates) */
    double hooks_s;    /* DeepSpeed ZeRO-1/2 gradient hooks */
    double comm_s;     /* collective and send/recv calls */
    double step_s;     /* the optimizer step's framework code after its synchronisation */
    int syncs;         /* synchronisations with the device */
} HostWork;

HostWork exec_host_work(const TopologySpec *ts, const Program *pg);
/* STEADY STATE (sim/run/steady.c): exec_host_work of the program with k more micro-batches than
 * pg: each figure moves by k times one period's, the tasks in issue order from micro-batch first's
 * first forward task to first + q's, which must equal the next period's (first + q to first + 2q)
 * exactly (FALSE otherwise, or where pg has no forward of first + 2q). */
gboolean exec_host_work_extrapolate(const TopologySpec *ts, const Program *pg, int32_t first,
                                    int32_t q, int64_t k, HostWork *out);

/* Report every task to obs (which must outlive the run); NULL for none, the default. */
void exec_set_observer(Executor *ex, const ExecObserver *obs);

/* STEADY STATE (sim/run/steady.c): fn(ctx, micro) is called as simulated rank 0 starts the first
 * forward compute task of each micro-batch, in the middle of that event (rank 0's compute just
 * charged as started); NULL for none, the default. Costs one comparison per compute start. */
typedef void (*ExecCutFn)(void *ctx, int32_t micro);
void exec_set_cut(Executor *ex, ExecCutFn fn, void *ctx);

/* Before exec_run: the run is sim_bound's (LOWER BOUND in sim.c). Compute is never slowed by
 * communication, and every send of a simulated rank carries no other replica's copies (its own
 * path, as a run with every rank starts it); data-parallel collectives keep the symmetric form,
 * which the bound's Collectives make drop-only (coll_set_bound). */
void exec_set_bound(Executor *ex);

/* Before exec_run: stop, failing with EXEC_ERROR_HORIZON, once an event later than horizon (ps)
 * has run and some rank has not finished (it finishes later still: events run in time order);
 * where every rank finishes by then, the run goes on to its end exactly as without. */
void exec_set_horizon(Executor *ex, SimTime horizon);

/* Before exec_run: job rank r runs on machine GPU gpu[r] (gpu[r] / GPUs per node its node),
 * for a job placed on some of a larger machine's nodes (colocate.c); gpu (one entry per job
 * rank) must outlive the run. NULL, the default: GPU r. Only without dedup (representatives
 * take GPU ids for job ranks). */
void exec_set_gpus(Executor *ex, const int *gpu);

/* Number of ranks simulated and the job rank of simulated rank i. */
int exec_ranks_simulated(const Executor *ex);
/* The bytes of the simulated ranks' state and statistics: what its events read by rank. */
size_t exec_state_bytes(const Executor *ex);
int exec_job_rank(const Executor *ex, int i);
/* Rank-events that events of tied tensor-parallel groups stood for beyond their own (GROUPS IN
 * STEP, gang.c): a compute end or wake-up of a tied group of n counts n - 1 here. */
uint64_t exec_group_events(const Executor *ex);

/* Start every rank and run the engine to the end. Fails (EXEC_ERROR) if the time overflows or a
 * rank could not finish (a schedule that deadlocks, which is a bug). */
gboolean exec_run(Executor *ex, GError **err);
/* exec_run for n executors of several jobs on one engine (and one network): every rank of every
 * job starts at time 0 and the engine runs until all are done; no horizon. Fails as exec_run,
 * for the first job with an unfinished rank. */
gboolean exec_run_together(Executor *const *ex, int n, GError **err);

#endif
