/* watch: rank 0's tasks as they ran (an ExecObserver), for tests that pin start and end times
 * on closed forms (test_gathers.c, test_fsdp.c). */
#ifndef SIM_TEST_WATCH_H
#define SIM_TEST_WATCH_H

#include "util.h"

/* One task of rank 0 as it ran. */
typedef struct {
    Task t;
    SimTime begin, end;
} Ran;

typedef struct {
    GArray *ran; /* Ran, in begin order */
    int rank;    /* the job rank watched */
} Watch;

/* sc run with every task of rank 0 recorded in w (w->ran: the caller unrefs it). */
SimRun *watched(const Scenario *sc, Watch *w);
/* The same for job rank `rank`. */
SimRun *watched_rank(const Scenario *sc, int rank, Watch *w);

/* The units' layers (unit_layer: -1 embedding, L head) and parameters, forward order. */
int units_of(const Scenario *sc, int *layer, double *params);

/* When use j's compute ends: the last compute task of its unit in its pass (forward; or
 * recomputation and backward). */
SimTime use_end(const Watch *w, int layer, gboolean backward);

#endif
