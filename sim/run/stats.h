/* stats: what happened, recorded as it happens.
 *
 * For: per rank, the time its compute stream was busy, the time any of its communication was in
 * flight, and how that splits into communication hidden under compute, communication exposed
 * (compute idle) and bubble (neither); per (operation, dimension), the calls, bytes and volume each
 * rank issued and the message-size histogram. Report and trace only format what is here.
 * Not for: deciding anything about the simulation.
 *
 * Every update is O(1) apart from the exposed-time split, O(categories in flight). A simulated
 * rank can stand for `weight` identical ranks (data-parallel replicas simulated once); sums over
 * all ranks count it that many times. */
#ifndef SIM_STATS_H
#define SIM_STATS_H

#include "collectives.h"
#include "engine.h"
#include "workload.h"

typedef struct Stats Stats;

/* nsim ranks simulated, each standing for weight ranks of the job's total. */
Stats *stats_new(int nsim, int weight, int total);
void stats_free(Stats *st);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Stats, stats_free)

/* Fetch rank r's first line, which every state change reads (a hint: engine_hint). */
void stats_prefetch(const Stats *st, int r);
/* The bytes of one rank's statistics. */
size_t stats_rank_bytes(void);
/* Rank r's compute stream starts (busy) or stops being busy at now. */
void stats_compute(Stats *st, int r, gboolean busy, SimTime now);
/* A communication of (op, dim) starts moving data for rank r (begin) or finishes. */
void stats_comm(Stats *st, int r, CollOp op, Dim dim, gboolean begin, SimTime now);
/* Rank r issued one call of (op, dim) with message size `bytes` and per-rank volume `volume`. */
void stats_issue(Stats *st, int r, CollOp op, Dim dim, double bytes, double volume);
/* Rank r's compute stream sat idle for dt picoseconds with a kernel the GPU could have run but
 * the host had not launched yet. */
void stats_host_wait(Stats *st, int r, SimTime dt);
/* Rank r's compute took dt picoseconds longer than alone because communication ran under it. */
void stats_interference(Stats *st, int r, SimTime dt);
/* Rank r ran its last task at now. */
void stats_finish(Stats *st, int r, SimTime now);

typedef struct {
    SimTime finish;       /* when its last task ended, picoseconds */
    SimTime compute;      /* compute stream busy */
    SimTime comm;         /* any communication in flight */
    SimTime exposed;      /* communication in flight while compute idle */
    SimTime bubble;       /* neither computing nor communicating */
    SimTime host_wait;    /* compute idle waiting for the host to launch a ready kernel; a part
                             of exposed or bubble (whichever the time falls in) */
    SimTime interference; /* compute time added by communication running under it; a part of
                             compute */
} RankTimes;

RankTimes stats_rank(const Stats *st, int r);
/* The simulated rank that finished last (lowest index on ties). */
int stats_critical_rank(const Stats *st);

typedef struct {
    double bytes; /* message size */
    double calls; /* per rank, mean over all ranks */
} SizeCount;

typedef struct {
    CollOp op;
    Dim dim;
    double calls;              /* per rank, mean over all ranks of the job */
    double message_bytes;      /* sum of message sizes, per rank (mean) */
    double volume_bytes;       /* per rank (mean), the study's Sec. III volume */
    double total_volume_bytes; /* summed over all ranks */
    SimTime time;              /* in flight on the given rank, summed over its calls */
    double exposed;            /* share of that rank's exposed time, picoseconds */
    double hidden;             /* share of its compute time with communication in flight, ps */
    GArray *sizes;             /* SizeCount, ascending bytes */
} CommRow;

/* Rows for every (op, dim) that occurred, ordered by dim then op; times of rank r. Free with
 * stats_rows_free. */
GArray *stats_comm_rows(const Stats *st, int r);
void stats_rows_free(GArray *rows);

/* STEADY STATE (sim/run/steady.c). A copy of st as it stands (mid-run: a cut); stats_free it. */
Stats *stats_copy(const Stats *st);
/* STEADY STATE: x, the statistics at the end of a run, becomes what they would be with k more
 * periods in the run's steady part, from three cuts a, b, c of that run one period apart: every
 * figure must step exactly as much from b to c as from a to b, and every rank be in the same state
 * at the three (computing or not, what is in flight); then each sum moves by k such steps and each
 * rank's finish by k periods. FALSE, x unchanged, where a step or a state differs. */
gboolean stats_extrapolate(Stats *x, const Stats *a, const Stats *b, const Stats *c, SimTime period,
                           int64_t k);

/* Volume rank r issued for (op, dim), bytes. */
double stats_rank_volume(const Stats *st, int r, CollOp op, Dim dim);
double stats_rank_calls(const Stats *st, int r, CollOp op, Dim dim);

#endif
