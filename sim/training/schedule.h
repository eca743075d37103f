/* schedule: pipeline schedules, each a function that lists the passes one stage runs, in order,
 * registered in a table.
 *
 * For: the order of forward and backward passes (micro-batch, model chunk) on a pipeline stage.
 * Not for: what a pass contains (workload.c, blocks.c) or when it may start (the executor waits
 * for the activations and gradients the pass receives).
 *
 * Adding a schedule: one function with the ScheduleFn signature, its entry in schedule.c's `table`
 * and its name in `schedule_names` beside it, one PipeSchedule value (the scenario's
 * parallel.schedule accepts every name in schedule_names). */
#ifndef SIM_SCHEDULE_H
#define SIM_SCHEDULE_H

#include <glib.h>

typedef enum { SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED, SCHED_COUNT } PipeSchedule;

/* One pass of a stage: a micro-batch's forward or backward through one of its model chunks
 * (chunk 0..v-1; the stage's layers are one chunk unless the schedule interleaves). */
typedef struct {
    gboolean fwd;
    int micro;
    int chunk;
} PassRef;

/* Appends to out (PassRef) the passes stage `stage` of pp runs for m micro-batches and v model
 * chunks per stage. */
typedef void (*ScheduleFn)(int pp, int stage, int m, int v, GArray *out);

typedef struct {
    ScheduleFn passes; /* the order */
    gboolean chunked;  /* runs v > 1 model chunks per stage (parallel.virtual_stages) */
} Schedule;

/* The schedule's entry; never NULL for a valid id. */
const Schedule *schedule_get(PipeSchedule id);

/* Names, NULL-terminated, in PipeSchedule order (for the scenario parser). */
extern const char *const schedule_names[];
const char *schedule_name(PipeSchedule id);

/* The passes of stage `stage` (PassRef, caller unrefs). */
GArray *schedule_passes(PipeSchedule id, int pp, int stage, int m, int v);

/* Most forward passes whose backward has not run yet at any point of passes: the chunk
 * activations a stage holds at its peak; counting only chunk `chunk`'s passes when chunk >= 0.
 * O(passes). */
int schedule_peak_inflight(const GArray *passes, int chunk);

#endif
