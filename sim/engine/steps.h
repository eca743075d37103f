/* steps: whether a running sum of doubles stepped by the same amount twice (STEADY STATE,
 * sim/run/steady.c, docs/speed.md "Steady state").
 *
 * For: the byte counts, calls and shares of a short run cut three times one period apart (stats.c,
 * net_stats.c). Such a sum is rounded at every addition, so the sums of two periods that added the
 * same terms can differ by that rounding alone: a few units in the last place of the sum for each
 * term. The steps are taken as equal where they differ by no more than STEP_REL of the sum, far
 * above rounding (2^-52 a term) and far below anything the model could make of a period that does
 * not repeat; times, integer picoseconds, are compared exactly by their callers. */
#ifndef SIM_STEPS_H
#define SIM_STEPS_H

#include <glib.h>
#include <math.h>

#define STEP_REL 1e-12

/* Sums a, b, c one period apart: the step from b to c equals the step from a to b. */
static inline gboolean steps_even(double a, double b, double c) {
    double d = c - b;
    return fabs((b - a) - d) <= STEP_REL * fmax(fabs(c), fabs(d));
}

#endif
