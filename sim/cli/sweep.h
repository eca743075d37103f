/* sweep: many simulations of one scenario, one per point of a set of overrides, as a table.
 *
 * For: `sim sweep` (the cartesian product of --vary axes and of the scenario's `sweep:` section)
 * and `sim search` (explicit points). A point is a list of "KEY=VALUE" overrides applied to the
 * scenario, exactly as --set would; its row carries the varied values first, then the headline
 * figures, then per (op, dim) the communication time, exposed time, volume and message sizes.
 * Points run in parallel on a GLib thread pool: every simulation owns all its state (no globals),
 * so the rows are the same bytes whatever the number of threads or processes.
 * Not for: simulating (sim.c) or the report of one run (report.c).
 *
 * Output (SweepOut) goes to stdout in point order, or to a file: there every row is written the
 * moment it finishes, so an interrupted sweep keeps them all, and when the sweep completes the
 * file is rewritten in point order. --resume reads such a file back and skips the rows it has. */
#ifndef SIM_SWEEP_H
#define SIM_SWEEP_H

#include "sim.h"

typedef enum { SWEEP_CSV, SWEEP_JSONL } SweepFormat;

typedef enum {
    SWEEP_POINT_OK,
    SWEEP_POINT_INVALID, /* an impossible layout (CONF_ERROR_INVALID, MACHINE_ERROR): skippable */
    SWEEP_POINT_ERROR,   /* anything else a user got wrong: a key, a unit, a file */
} SweepPointStatus;

typedef struct Sweep Sweep;

/* A sweep over scenario, with base_sets ("KEY=VALUE", NULL-terminated, may be NULL) applied to
 * every point before the point's own. timing adds a wall_s column (host seconds per point), which
 * makes rows differ from run to run. */
Sweep *sweep_new(const char *scenario, char *const *base_sets, SweepFormat fmt, gboolean timing);
void sweep_free(Sweep *sw);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Sweep, sweep_free)

/* Axes from the scenario file's `sweep:` section, in file order: `KEY: [V1, V2, ...]` varies a
 * key; `NAME: {LABEL: {KEY: VALUE, ...}, ...}` is an axis of named bundles of overrides (its
 * column shows the label). A file without the section adds nothing. */
gboolean sweep_add_file_axes(Sweep *sw, GError **err);
/* An axis from the command line, "KEY=V1,V2,...". A key already present (from the file) has its
 * values replaced in place; a new key is appended. Values must be distinct. */
gboolean sweep_add_vary(Sweep *sw, const char *spec, GError **err);
/* Explicit points instead of axes (both may not be mixed): keys names the columns (set once),
 * labels the point's value in each, sets its overrides. All NULL-terminated. */
void sweep_add_point(Sweep *sw, const char *const *keys, const char *const *labels,
                     char *const *sets);

/* Expand the axes into points (the first axis varies slowest), load every point's scenario and
 * inspect it (sim_inspect), using up to jobs threads, and fix the columns: those above plus every
 * (op, dim) that some valid point issues, ordered by dim then op. Fails only on a bad --vary or
 * sweep section; a point's own problem is its status. */
gboolean sweep_prepare(Sweep *sw, int jobs, GError **err);

int sweep_points(const Sweep *sw);
SweepPointStatus sweep_point_status(const Sweep *sw, int i);
/* Why point i is not OK (NULL when it is). */
const char *sweep_point_error(const Sweep *sw, int i);
/* "nodes=4, parallel.tp=2": the point's varied values, for messages. g_free it. */
char *sweep_point_name(const Sweep *sw, int i);
/* sim_inspect of point i (valid points only). */
const SimInspect *sweep_point_inspect(const Sweep *sw, int i);
/* The header line (CSV; "" for JSON lines, which have none), newline-terminated. */
const char *sweep_header(const Sweep *sw);
/* Number of columns, and the name of column c. */
int sweep_columns(const Sweep *sw);
const char *sweep_column(const Sweep *sw, int c);

/* --- running ---------------------------------------------------------------------------------- */

typedef struct {
    int point;
    char *row;          /* the full row, newline-terminated; NULL when the simulation failed */
    char *error;        /* why it failed; NULL on success */
    gboolean bad_input; /* it failed on its input (a time past SIM_TIME_MAX), not internally */
    SimSummary sum;
    double exposed_dim_s[DIM_COUNT]; /* critical rank's exposed communication by dimension, s */
    /* with SWEEP_TRIAL_EXACT or SWEEP_TRIAL_ALL: whether the row is the one the exact mode
       would give; TRUE in every other mode */
    gboolean final;
    gboolean beyond; /* past sweep_set_horizon's horizon: no row, no error */
    gboolean pruned; /* beyond, known from its lower bound alone (SWEEP_SETTLE_*) */
    double bound_s;  /* SWEEP_SETTLE_*: wall time of its bound (sim_bound_within), s */
    double wall_s;   /* wall time of the point on its thread (its row's wall_s), s */
} SweepResult;

void sweep_result_free(SweepResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SweepResult, sweep_result_free)

/* What a layout search may pass as dedup (cmd_search.c, PRUNING). SWEEP_TRIAL_*: the
 * deduplicated run (DEDUP_ESTIMATE), marked final where it is what DEDUP_EXACT
 * (SWEEP_TRIAL_EXACT) or DEDUP_OFF (SWEEP_TRIAL_ALL) would give. SWEEP_SETTLE_*: that mode's
 * run, unless sim_bound_within shows it past the horizon first (beyond and pruned). */
#define SWEEP_TRIAL_EXACT (-2)
#define SWEEP_TRIAL_ALL (-3)
#define SWEEP_SETTLE_EXACT (-4)
#define SWEEP_SETTLE_ALL (-5)

/* Runs from now on (not trial modes') stop once their iteration is known to last past horizon
 * (ps; sim_run_within), their result marked beyond; SIM_TIME_MAX, the default: none. A run
 * reads the horizon when it starts: it may be set while sweep_run runs (from its SweepResultFn),
 * for the points not yet started. */
void sweep_set_horizon(Sweep *sw, SimTime horizon);

/* Simulate point i (which must be valid) and format its row. Thread-safe. dedup as sim_run, or
 * SWEEP_TRIAL_EXACT, SWEEP_TRIAL_ALL. */
SweepResult *sweep_run_point(const Sweep *sw, int i, int dedup);

/* Called on the thread that called sweep_run, once per point as it finishes (in completion
 * order); takes ownership of r. */
typedef void (*SweepResultFn)(void *ctx, SweepResult *r);
/* Called between results while sweep_run waits; local_done says this process has no point left
 * running, so the function may block. Returns TRUE while it still expects work from elsewhere
 * (MPI ranks), which keeps sweep_run waiting. */
typedef gboolean (*SweepIdleFn)(void *ctx, gboolean local_done);

/* Run the points i with todo[i] != 0 (todo NULL: every valid point) on up to jobs threads
 * (jobs <= 1: one after another on this thread). */
void sweep_run(const Sweep *sw, int jobs, int dedup, const guint8 *todo, SweepResultFn fn,
               SweepIdleFn idle, void *ctx);
/* The same for the n points in list, started in that order. */
void sweep_run_list(const Sweep *sw, int jobs, int dedup, const int *list, int n, SweepResultFn fn,
                    void *ctx);

/* --- output ----------------------------------------------------------------------------------- */

typedef struct SweepOut SweepOut;

/* Write the sweep's rows to path (NULL: stdout, in point order). With resume, rows already in
 * path that belong to this sweep are kept and their points are not run again; a path whose
 * header or rows belong to another sweep is an error. progress draws a bar on stderr. */
SweepOut *sweep_out_new(const Sweep *sw, const char *path, gboolean resume, gboolean progress,
                        GError **err);
void sweep_out_free(SweepOut *out);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SweepOut, sweep_out_free)
/* Points still to run (valid and not kept from a resumed file): npoints flags. */
const guint8 *sweep_out_todo(const SweepOut *out);
int sweep_out_kept(const SweepOut *out);
/* A finished point: written at once (file) or when its turn comes (stdout). Takes r. */
void sweep_out_add(SweepOut *out, SweepResult *r);
/* Failed points so far. */
int sweep_out_failed(const SweepOut *out);
/* Of those, the points that failed on their input (exit 2 rather than 3). */
int sweep_out_bad_input(const SweepOut *out);
/* All points are in: a file is rewritten in point order. FALSE (with err) if it cannot be. */
gboolean sweep_out_finish(SweepOut *out, GError **err);

/* The number of threads to use by default: the processors of this machine. */
int sweep_default_jobs(void);

#endif
