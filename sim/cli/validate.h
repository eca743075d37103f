/* validate: published measurements (the validation/ CSV files) against the simulator's predictions.
 *
 * For: reading the validation files (one row per measurement: the `sim` command that reproduces
 * its setting, the metric, the measured value and its source), running every row in-process
 * through the same code paths as `sim SCENARIO` and `sim collective`, the signed error of each
 * prediction and per-group summaries, and a baseline of predictions that CI compares against so
 * that a change which makes a row worse is caught. Not for: deciding what to calibrate; rows
 * marked `calibrate` are the facts the machine files were set from, `check` rows never tune
 * anything.
 *
 * File format (docs/validation.md "Validation"): CSV with the header
 *   id,group,use,command,metric,measured,unit,source,setting,note
 * fields optionally in double quotes ("" for a quote). `command` is what follows `build/sim`:
 * `collective --op OP --ranks N --sizes SIZE [--topology T] [--set K=V]...` or
 * `SCENARIO.yaml [--set K=V]... [--all-ranks]`; a ratio row holds two commands separated by
 * ` ;; ` and a metric `ratio:METRIC` (value of the first / value of the second). `measured` is a
 * number, or a bound `>X` / `<X` for a trend the source states without a figure. */
#ifndef SIM_VALIDATE_H
#define SIM_VALIDATE_H

#include <stdio.h>

#include <glib.h>

#define VALIDATE_ERROR (validate_error_quark())
GQuark validate_error_quark(void);
typedef enum {
    VALIDATE_ERROR_IO,    /* a file cannot be read or written */
    VALIDATE_ERROR_PARSE, /* a malformed row, header, metric or command */
    VALIDATE_ERROR_RUN,   /* a row's command cannot be simulated (bad scenario, layout) */
} ValidateError;

/* The header every validation file starts with, and every baseline file. */
#define VALIDATE_HEADER "id,group,use,command,metric,measured,unit,source,setting,note"
#define VALIDATE_BASELINE_HEADER "id,group,metric,predicted"

/* The default regression threshold of --check, percentage points of |error|
 * (docs/validation.md). */
#define VALIDATE_DEFAULT_THRESHOLD_PP 5.0

typedef enum { BOUND_EQ, BOUND_GT, BOUND_LT } ValidateBound;

typedef struct {
    char *id, *group, *use, *command, *metric, *unit, *source, *setting, *note;
    double measured;     /* the published value (or the bound's X), in unit */
    ValidateBound bound; /* BOUND_EQ for a number; >X or <X for a stated trend */
    char *file;          /* file:line the row came from, for messages */
    int line;
    double predicted; /* filled by validate_run; NAN before */
    double error_pct; /* signed (predicted - measured) / measured x 100; 0 when a bound holds */
    char *device;     /* scenario rows: the device's name and training.framework of the (first)
                         command, filled by validate_run; NULL for collective rows */
    char *framework;
} ValidateRow;

typedef struct Validation Validation;

/* Read validation rows from paths: files, or folders whose *.csv files are read in name order
 * (baseline*.csv and accuracy.csv skipped). Rows of another group than `group` (NULL: all) are
 * dropped. Errors (VALIDATE_ERROR_IO, _PARSE) name FILE:LINE. */
Validation *validate_load(char *const *paths, const char *group, GError **err);
void validate_free(Validation *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Validation, validate_free)

guint validate_count(const Validation *v);
const ValidateRow *validate_row(const Validation *v, guint i);

/* Simulate every row (each distinct command once, on up to `jobs` threads; the results do not
 * depend on it) and fill predicted and error_pct. A command that cannot be simulated fails with
 * the FILE:LINE of the first row using it (VALIDATE_ERROR_RUN). */
gboolean validate_run(Validation *v, int jobs, GError **err);

/* Signed error of a prediction, percent: (predicted - measured) / measured x 100 for BOUND_EQ;
 * for a bound, 0 when it holds, else the signed distance to it in percent of it. */
double validate_error_pct(double predicted, double measured, ValidateBound bound);

/* The table: per row id, group, use, predicted, measured, unit, error %; then per group the
 * rows, mean |error| and max |error| of its check rows (the accuracy), and apart those of its
 * calibrate rows. csv: one row per measurement, then no summary. */
void validate_write_table(FILE *out, const Validation *v, gboolean csv);

/* Write the predictions as a baseline (VALIDATE_BASELINE_HEADER, rows in file order, numbers as
 * every report prints them), so the same tree gives the same bytes. */
gboolean validate_write_baseline(const Validation *v, const char *path, GError **err);

/* Compare with a baseline written by validate_write_baseline: a check row fails when its |error|
 * exceeds the |error| of the baseline's prediction by more than threshold_pp percentage points,
 * or when a baseline row of a loaded group is missing; a calibrate row that moves so is only
 * noted (a refit moves it). Failures and notes go to out. Returns the
 * number of failing rows, or -1 with err set when the baseline cannot be read. */
int validate_check(const Validation *v, const char *baseline, double threshold_pp, FILE *out,
                   GError **err);

/* Write the accuracy table (accuracy.h's ACCURACY_HEADER): per device and framework of the check
 * rows that simulate a scenario (collective rows are microbenchmarks, not runs), their groups,
 * count, mean and max |error|, sorted by device then framework, numbers to 3 decimals, so that the
 * same tree writes the same bytes. What every report's `accuracy` reads. */
gboolean validate_write_accuracy(const Validation *v, const char *path, GError **err);

#endif
