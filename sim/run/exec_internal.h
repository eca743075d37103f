/* exec_internal: the executor's state, shared by its files (exec_setup.c makes it, executor.c
 * runs the programs, reps.c picks the ranks simulated, gang.c groups tensor-parallel ranks in
 * step, exec_host.c sums the host's work). Not for any other module: exec_* in executor.h is the
 * interface. */
#ifndef SIM_EXEC_INTERNAL_H
#define SIM_EXEC_INTERNAL_H

#include "executor.h"

typedef struct {
    guint32 next[STREAM_COUNT]; /* per stream: the head task's position, also the tasks done
                                   there (a stream's task is done before its next one starts) */
    uint8_t busy[STREAM_COUNT];
    uint16_t waiting; /* bit s: stream s has a task not yet started (next < len, not busy) */
    uint8_t finished;
    uint8_t tied;        /* its tensor-parallel group runs as one (gang.c): the group's first
                            member holds the state of all; the others' is stale until untied */
    guint32 stage;       /* pipeline stage: which program it runs */
    guint32 next_sync;   /* index in the stage's sync list of the next synchronisation */
    guint32 completed;   /* tasks finished, all streams */
    guint32 host_first;  /* first task the host issued since its last synchronisation */
    SimTime host_base;   /* when it began issuing that task, ps */
    SimTime ready_since; /* compute head ready on the GPU but not yet issued since, ps; -1 none */
    int comm_intra;      /* communications moving data, within the node */
    int comm_inter;      /* ... and across nodes */
    double sigma;        /* current slowdown of compute: time x (1 + sigma) */
    double work_left;    /* running compute task's work left, ps at full speed */
    SimTime run_since;   /* when work_left was last brought up to date, ps */
    SimTime comp_start;  /* when the running compute task started, ps */
    EngineTimer comp;    /* the running compute task's completion */
    EngineTimer wake;    /* the next issue a stream head is waiting for */
} RankState;

/* p2p channel at a receiver, one per workload_pp_channel: who has arrived */
typedef struct {
    uint8_t send_arrived, recv_arrived;
} Channel;

struct Executor {
    Engine *eng;
    Collectives *coll;
    const Workload *wl;
    const Scenario *sc;
    const Layout *lay;
    Stats *st;
    gboolean dedup;
    gboolean dedup_tp; /* one rank per tensor-parallel group too (exec_tp_interchangeable) */
    int nsim;
    int *job_rank; /* simulated index -> job rank */
    int *sim_of;   /* job rank -> simulated index, -1 when another stands for it (rep_index) */
    RankState *rs;
    int *arrived[STREAM_COUNT][DIM_COUNT]; /* per collective stream and dimension, per group:
                                              members arrived at the stream's current call
                                              (allocated at the pair's first collective) */
    int *done_members; /* on_coll_done's members (ex->members is start_collective's) */
    const CollGroup **cgroup[DIM_COUNT]; /* per dimension, per group: its collectives' group
                                            (coll_group; found at its first collective) */
    /* per channel (workload_pp_channel; 2 and 3, ZB-V's chunk 1, only under a V schedule), per
       simulated receiver: its sends' group */
    const CollGroup **p2p_group[WORKLOAD_PP_CHANNELS];
    int span; /* with dedup: DP indices 0..span-1 simulated (one DIM_DP_INTRA block: ZeRO++) */
    Channel *chan[WORKLOAD_PP_CHANNELS]; /* per channel, as p2p_group, per simulated rank */
    int *members;                        /* scratch, largest group */
    const ExecObserver *obs;             /* NULL: nobody is watching */
    ExecCutFn cut;                       /* exec_set_cut; NULL: none */
    void *cut_ctx;
    int32_t cut_micro;     /* the last micro-batch whose forward simulated rank 0 started */
    gboolean host;         /* host dispatch modelled */
    gboolean interference; /* compute slowed by communication */
    gboolean bound;        /* exec_set_bound: every communication in its --all-ranks form */
    SimTime horizon;       /* exec_set_horizon; SIM_TIME_MAX: none */
    int nfinished;         /* ranks that finished their program */
    gboolean prefetch;     /* the programs outgrow the caches: see complete() */
    const Program **prog;  /* per stage */
    SimTime **host_cum;    /* per stage: [k] host cost of tasks 0..k-1, ps (n + 1 entries) */
    SimTime *host_cum_all; /* the arrays of host_cum, one after another */
    GArray **syncs;        /* per stage: guint32 tasks the host synchronises before, ascending */

    /* GROUPS IN STEP (gang.c): per simulated rank, the first member of its tensor-parallel group
       and the next member (-1 after the last); NULL where groups are not formed */
    int *gang_lead, *gang_next;
    uint8_t *gang_pending; /* per first member: a settling event is queued (on_settle) */
    int gang_size;         /* members of a group (tp); 0: groups not formed */
    int64_t gang_events;   /* rank-events that events of tied groups stood for beyond their own */

    /* exec_set_gpus: job rank -> machine GPU, NULL where GPU r runs rank r; and with it a
       scratch array for a group's machine GPUs (machine_gpus) */
    const int *gpu;
    int *mapped;
};

/* gang.c (GROUPS IN STEP). */
void gang_setup(Executor *ex);
void gang_free(Executor *ex);
/* Rank i's group stops running as one: every member gets the first member's state, its timers
 * held (HELD TIMERS in gang.c) and released in a settling event unless the group ties first. */
void gang_untie(Executor *ex, int i);
/* gang_untie without the settling event: whether a timer is held, which the caller releases
 * (gang_release) before the event ends unless the group ties again. */
gboolean gang_part(Executor *ex, int i);
/* The held timers of the group of first member `lead` queued (HELD TIMERS in gang.c). */
void gang_release(Executor *ex, int lead);
/* executor.c: a settling event for the group of first member `lead` at this picosecond, after the
 * events queued for it, unless one is queued (on_settle). */
void exec_settle_later(Executor *ex, int lead);
/* Before anything that concerns rank i alone (its own collective, send or kernel ends, a member's
 * arrival at another dimension's collective): i's group, if tied, is untied. */
static inline void gang_own(Executor *ex, int i) {
    if (ex->rs[i].tied)
        gang_untie(ex, i);
}
/* The group of first member `lead`, untied, runs as one from now on if its members' states are
 * equal; `changed`, the member whose state changed last, is compared first. */
void gang_try_tie(Executor *ex, int lead, int changed);
/* At the end of an event that changed rank i's state alone: its group, untied, ties if its
 * members are in step again. */
static inline void gang_settle(Executor *ex, int i) {
    if (ex->gang_size > 0 && !ex->rs[i].tied)
        gang_try_tie(ex, ex->gang_lead[i], i);
}
/* Whether rank i is a tied group's first member, standing for the group. */
static inline gboolean gang_leads(const Executor *ex, int i) {
    return ex->rs[i].tied && ex->gang_lead[i] == i;
}

/* For each rank j an event of rank i concerns: every member of the group i leads while tied,
 * else i alone. */
#define GANG_EACH(ex, i, j)                                                                        \
    for (int j = (i), gang_all_ = gang_leads((ex), (i)); j >= 0;                                   \
         j = gang_all_ ? (ex)->gang_next[j] : -1)

/* reps.c: exec_rep_index with exec_tp_interchangeable's answer given (tp_rep). */
int exec_rep_index_given(const Layout *lay, gboolean dedup, gboolean tp_rep, int rank);

#endif
