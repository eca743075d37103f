/* schedule: pipeline schedules, each a function that lists the passes one stage runs, in order,
 * registered in a table.
 *
 * For: the order of forward and backward passes (micro-batch, model chunk) on a pipeline stage.
 * Not for: what a pass contains (workload.c, blocks.c) or when it may start (the executor waits
 * for the activations and gradients the pass receives).
 *
 * Adding a schedule: one function with the ScheduleFn signature, its entry in schedule.c's `table`
 * and its name in `schedule_names` beside it, one PipeSchedule value (the scenario's
 * parallel.schedule accepts every name in schedule_names).
 *
 * In model/, below input, although the workload (training/) is what runs the passes: the scenario
 * (input/) names the schedule and checks its rules (virtual stages only where it is chunked), so
 * the table must sit below input (SIM_LAYERS, tests/layering.sh). Like the rest of model/ it is
 * pure: a function of the layout, no time and no I/O. */
#ifndef SIM_SCHEDULE_H
#define SIM_SCHEDULE_H

#include <glib.h>

typedef enum {
    SCHED_GPIPE,
    SCHED_1F1B,
    SCHED_INTERLEAVED,
    SCHED_ZB_H1,
    SCHED_ZB_V,
    SCHED_COUNT
} PipeSchedule;

/* One pass of a stage: a micro-batch's forward or backward through one of its model chunks
 * (chunk 0..v-1; the stage's layers are one chunk unless the schedule interleaves). Under a
 * schedule that splits the backward (Schedule.split) a backward pass is the input-gradient pass
 * B alone and the weight-gradient pass W is a pass of its own (wgrad TRUE, fwd FALSE). */
typedef struct {
    gboolean fwd;
    int micro;
    int chunk;
    gboolean wgrad;
} PassRef;

/* Appends to out (PassRef) the passes stage `stage` of pp runs for m micro-batches and v model
 * chunks per stage. */
typedef void (*ScheduleFn)(int pp, int stage, int m, int v, GArray *out);

typedef struct {
    ScheduleFn passes; /* the order */
    gboolean chunked;  /* runs v > 1 model chunks per stage (parallel.virtual_stages) */
    gboolean split;    /* backward split into B (input gradients) and W (weight gradients)
                          passes (zero-bubble schedules, wgrad.c) */
    gboolean vshape;   /* two chunks placed in a V (ZB-V): chunk 1 runs the model's second
                          half back from the last stage to the first (schedule_virtual_stage) */
} Schedule;

/* The schedule's entry; never NULL for a valid id. */
const Schedule *schedule_get(PipeSchedule id);

/* Names, NULL-terminated, in PipeSchedule order (for the scenario parser). */
extern const char *const schedule_names[];
const char *schedule_name(PipeSchedule id);

/* Which of the pp v virtual stages (model chunks, in model order) chunk `chunk` of stage `stage`
 * runs: c pp + stage (Narayanan et al. SC21: stage s holds s, s + p, ...), or under a V-shaped
 * schedule chunk 1 of stage s runs 2 pp - 1 - s, so that the last stage holds the middle two and
 * the first stage both ends (Qi et al., arXiv 2401.10241 v2, Sec. 6 "ZB-V"; the sail-sg
 * zero-bubble-pipeline-parallelism repository's zbv.py create_schedule: layer_group_idx). */
int schedule_virtual_stage(gboolean vshape, int pp, int stage, int chunk);

/* The interleaved schedule's warm-up forwards on stage `stage` of pp, m micro-batches, v chunks:
 * 2 (pp - stage - 1) + (v - 1) pp, at most m v, and all m v when m = pp (Megatron-LM's
 * get_pp_rank_microbatches: num_warmup_microbatches, are_all_microbatches_in_warmup). Its pass
 * list is these forwards, then m v - warm-up pairs of a forward and a backward, then the
 * warm-up's number of backwards. */
int schedule_interleaved_warmup(int pp, int stage, int m, int v);

/* The passes of stage `stage` (PassRef, caller unrefs). */
GArray *schedule_passes(PipeSchedule id, int pp, int stage, int m, int v);

/* Most forward passes whose backward (B) has not run yet at any point of passes: the chunk
 * activations a stage holds at its peak; counting only chunk `chunk`'s passes when chunk >= 0.
 * W passes do not count. O(passes). */
int schedule_peak_inflight(const GArray *passes, int chunk);

/* Under a split backward: the peak over passes of f x (forwards whose B has not run) + w x (B
 * passes whose W has not run), f and w the bytes one micro-batch holds in each state (Qi et al.
 * 2024, Sec. 3: M_B from F until B, M_W from B until W). For pass lists with W passes (a split
 * schedule's). O(passes). */
double schedule_peak_held(const GArray *passes, double f, double w);
/* The same with bytes per chunk: f[c] from chunk c's F until its B, w[c] from its B until its W
 * (a chunk holds its own layers, and on the first or last stage the embedding or logits). */
double schedule_peak_held_chunks(const GArray *passes, const double *f, const double *w);

#endif
