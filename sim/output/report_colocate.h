/* report_colocate: the figures of `sim colocate` (several jobs on one machine) as text for
 * people and JSON for scripts; every JSON key is documented in docs/report.md.
 *
 * For: formatting only. Every number printed is read from the Colocation (colocate.h). */
#ifndef SIM_REPORT_COLOCATE_H
#define SIM_REPORT_COLOCATE_H

#include <stdio.h>

#include "colocate.h"
#include "report.h"

/* fmt: REPORT_TEXT or REPORT_JSON. timing FALSE writes 0 for host wall time, so that two runs
 * compare byte for byte. */
void report_colocate_write(FILE *out, const Colocation *c, ReportFormat fmt, gboolean timing);

#endif
