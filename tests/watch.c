/* watch: see watch.h. */
#include <string.h>

#include "watch.h"

static void w_begin(void *ctx, int rank, const Task *t, SimTime now) {
    Watch *w = ctx;
    if (rank != w->rank)
        return;
    Ran r = {.t = *t, .begin = now, .end = -1};
    g_array_append_val(w->ran, r);
}

static void w_end(void *ctx, int rank, const Task *t, SimTime now) {
    Watch *w = ctx;
    if (rank != w->rank)
        return;
    for (guint i = w->ran->len; i-- > 0;) { /* the latest begun copy of this task */
        Ran *r = &g_array_index(w->ran, Ran, i);
        if (r->end < 0 && memcmp(&r->t, t, sizeof *t) == 0) {
            r->end = now;
            return;
        }
    }
    ck_abort_msg("task ended that never began");
}

SimRun *watched(const Scenario *sc, Watch *w) {
    return watched_rank(sc, 0, w);
}

SimRun *watched_rank(const Scenario *sc, int rank, Watch *w) {
    w->rank = rank;
    w->ran = g_array_new(FALSE, FALSE, sizeof(Ran));
    ExecObserver obs = {.ctx = w, .begin = w_begin, .end = w_end};
    g_autoptr(GError) err = NULL;
    SimRun *run = sim_run_observed(sc, -1, &obs, &err);
    ck_assert_msg(run, "%s", err ? err->message : "");
    return run;
}

int units_of(const Scenario *sc, int *layer, double *params) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    for (guint i = 0; i < units->len; i++) {
        const ParamUnit *u = &g_array_index(units, ParamUnit, i);
        layer[i] = u->kind == UNIT_EMBED ? -1 : u->kind == UNIT_HEAD ? sc->model.layers : u->layer;
        params[i] = u->params;
    }
    return (int)units->len;
}

SimTime use_end(const Watch *w, int layer, gboolean backward) {
    SimTime end = -1;
    for (guint i = 0; i < w->ran->len; i++) {
        const Ran *r = &g_array_index(w->ran, Ran, i);
        if (r->t.kind != TASK_COMPUTE || r->t.layer != layer)
            continue;
        if (backward ? r->t.phase != PHASE_FWD : r->t.phase == PHASE_FWD)
            end = MAX(end, r->end);
    }
    ck_assert(end >= 0);
    return end;
}
