/* sweep_internal: what the sweep's three files share (sweep.c: axes, points, running;
 * sweep_rows.c: columns and rows; sweep_out.c: the output that survives interruption). Not for
 * other modules: they use sweep.h. */
#ifndef SIM_SWEEP_INTERNAL_H
#define SIM_SWEEP_INTERNAL_H

#include "sweep.h"

typedef struct {
    char *name;
    gboolean bundle;   /* labels name bundles of overrides */
    GPtrArray *labels; /* char * */
    GPtrArray *sets;   /* GStrv per label */
} Axis;

typedef struct {
    GStrv labels; /* one per varied key */
    GStrv sets;   /* the point's overrides, after the sweep's base sets */
    SweepPointStatus status;
    char *error;
    SimInspect insp;
    char *prefix; /* the beginning of its row: the varied values */
} Point;

struct Sweep {
    char *scenario;
    GStrv base_sets;
    SweepFormat fmt;
    gboolean timing;
    GPtrArray *axes;   /* Axis * */
    GPtrArray *keys;   /* char *: varied columns */
    GPtrArray *points; /* Point * */
    gboolean explicit_points;
    GPtrArray *columns;        /* char *: every column, in order */
    int kinds[SIM_COMM_KINDS]; /* op * DIM_COUNT + dim of each communication column group */
    int nkinds;
    gboolean omit[40]; /* headline columns left out (a varied key has their name) */
    char *header;
    SimTime horizon; /* sweep_set_horizon; SIM_TIME_MAX: none */
};

static inline const Point *sweep_point_at(const Sweep *sw, int i) {
    g_assert(i >= 0 && i < (int)sw->points->len);
    return sw->points->pdata[i];
}

/* sweep_rows.c: the columns of a prepared sweep (the varied keys, the headline columns a varied
 * key does not replace, per communication kind in `kinds` its fields, wall_s with timing), the
 * CSV header and every point's row prefix. */
void sweep_rows_layout(Sweep *sw, const guint64 *kinds);
/* One point's row, from its run and the critical rank's communication rows. */
char *sweep_rows_format(const Sweep *sw, const Point *p, const SimRun *run, const GArray *rows,
                        double wall_s);

#endif
