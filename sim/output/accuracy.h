/* accuracy: the error bar every report carries: how far the simulator was from the published
 * end-to-end runs it was checked on (validation/ rows marked `check`) that match the run's device
 * and framework.
 *
 * For: reading validation/accuracy.csv, which `sim validate --write-accuracy` writes from the
 * check rows (docs/validation.md "Accuracy"), and finding the line of one device and framework.
 * Not for: computing errors (validate.c) or deciding what is validated. */
#ifndef SIM_ACCURACY_H
#define SIM_ACCURACY_H

#include <glib.h>

#define ACCURACY_HEADER "device,framework,groups,rows,mean_abs_error_pct,max_abs_error_pct"
#define ACCURACY_FILE "accuracy.csv"

typedef struct {
    int rows;                  /* check rows of this device and framework (0: none covers it) */
    double mean_abs_error_pct; /* mean |error| over them, percent */
    double max_abs_error_pct;  /* max |error| over them, percent */
    char groups[128];          /* their validation groups, space-separated */
} Accuracy;

/* The accuracy of runs on device (its `name:`) under framework (training.framework), from
 * validation/accuracy.csv under $SIM_DATA_DIR, else the source tree. rows = 0 when the file has no
 * such line or cannot be read. Reads the file each call (once per report). */
Accuracy accuracy_lookup(const char *device, const char *framework);

/* The same from the table's text (ACCURACY_HEADER first). */
Accuracy accuracy_find(const char *text, const char *device, const char *framework);

#endif
