/* trace: a run as a Chrome / Perfetto trace-event file (JSON), for people to look at.
 *
 * For: `sim --trace FILE SCENARIO`. One process per simulated rank (pid = job rank), one thread
 * per stream (compute, TP, DP and the four pipeline streams), every task a complete slice ("X")
 * with its layer, micro-batch, phase and bytes in args, and each pipeline send joined to its
 * receive by a flow arrow ("s" / "f"). Times are microseconds with picosecond digits, written
 * from integers, so the same run gives the same bytes. Events are written as the run makes them;
 * memory is O(traced ranks).
 * Not for: figures (Stats and the report have them; a trace only shows when things ran).
 *
 * Format: the Trace Event Format (Google, "Trace Event Format" document, the JSON Object Format
 * with traceEvents, ph X / s / f / M), which chrome://tracing and ui.perfetto.dev load. */
#ifndef SIM_TRACE_H
#define SIM_TRACE_H

#include "sim.h"

#define TRACE_DEFAULT_RANKS 64 /* ranks traced when --trace-ranks is not given */

typedef struct Trace Trace;

/* Open path for a trace of a run of sc. ranks: which job ranks to record, "all" or a list of
 * ranks and ranges ("0-7,64,72-79"); NULL for the first TRACE_DEFAULT_RANKS simulated ranks.
 * dedup as sim_run (which ranks are simulated). Fails on a bad list or an unwritable file. */
Trace *trace_new(const Scenario *sc, int dedup, const char *path, const char *ranks, GError **err);
void trace_free(Trace *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Trace, trace_free)

/* The observer to pass to sim_run_observed. */
const ExecObserver *trace_observer(Trace *t);

/* Ranks that will be recorded (simulated and chosen), and of those chosen, how many are not
 * simulated (deduplicated data-parallel replicas: run with all ranks to see them). */
int trace_ranks(const Trace *t);
int trace_unsimulated(const Trace *t);

/* After the run: name the processes and threads, close the file. */
gboolean trace_finish(Trace *t, const SimRun *run, GError **err);

#endif
