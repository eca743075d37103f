/* sweep: a sweep's axes and points, their preparation and a thread pool that runs them. Rows are
 * sweep_rows.c's, the output sweep_out.c's. */
#include <string.h>

#include "machine_error.h"
#include "sweep_internal.h"

#define SWEEP_MAX_POINTS 10000000

static void axis_free(gpointer p) {
    Axis *a = p;
    g_free(a->name);
    g_ptr_array_unref(a->labels);
    g_ptr_array_unref(a->sets);
    g_free(a);
}

static Axis *axis_new(const char *name, gboolean bundle) {
    Axis *a = g_new0(Axis, 1);
    a->name = g_strdup(name);
    a->bundle = bundle;
    a->labels = g_ptr_array_new_with_free_func(g_free);
    a->sets = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    return a;
}

static void point_free(gpointer p) {
    Point *pt = p;
    g_strfreev(pt->labels);
    g_strfreev(pt->sets);
    g_free(pt->error);
    g_free(pt->prefix);
    g_free(pt);
}

Sweep *sweep_new(const char *scenario, char *const *base_sets, SweepFormat fmt, gboolean timing) {
    Sweep *sw = g_new0(Sweep, 1);
    sw->scenario = g_strdup(scenario);
    sw->base_sets = g_strdupv((char **)base_sets);
    sw->fmt = fmt;
    sw->timing = timing;
    sw->horizon = SIM_TIME_MAX;
    sw->axes = g_ptr_array_new_with_free_func(axis_free);
    sw->keys = g_ptr_array_new_with_free_func(g_free);
    sw->points = g_ptr_array_new_with_free_func(point_free);
    sw->columns = g_ptr_array_new_with_free_func(g_free);
    return sw;
}

void sweep_free(Sweep *sw) {
    if (!sw)
        return;
    g_free(sw->scenario);
    g_strfreev(sw->base_sets);
    g_ptr_array_unref(sw->axes);
    g_ptr_array_unref(sw->keys);
    g_ptr_array_unref(sw->points);
    g_ptr_array_unref(sw->columns);
    g_free(sw->header);
    g_free(sw);
}

/* --- axes ------------------------------------------------------------------------------------- */

static Axis *find_axis(Sweep *sw, const char *name) {
    for (guint i = 0; i < sw->axes->len; i++)
        if (strcmp(((Axis *)sw->axes->pdata[i])->name, name) == 0)
            return sw->axes->pdata[i];
    return NULL;
}

static gboolean has_label(const Axis *a, const char *label) {
    for (guint i = 0; i < a->labels->len; i++)
        if (strcmp(a->labels->pdata[i], label) == 0)
            return TRUE;
    return FALSE;
}

static gboolean valid_key(const char *key) {
    return *key && !strchr(key, '=') && !strchr(key, ',') && !strchr(key, '"') &&
           !g_str_has_prefix(key, "sweep");
}

/* Add a plain value KEY=label to a. */
static gboolean axis_add_value(Axis *a, const char *value, const char *where, GError **err) {
    if (!*value) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE, "%s: an empty value for %s", where, a->name);
        return FALSE;
    }
    if (has_label(a, value)) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE, "%s: %s=%s is given twice", where, a->name,
                    value);
        return FALSE;
    }
    g_ptr_array_add(a->labels, g_strdup(value));
    char *sets[] = {g_strdup_printf("%s=%s", a->name, value), NULL};
    g_ptr_array_add(a->sets, g_strdupv(sets));
    g_free(sets[0]);
    return TRUE;
}

gboolean sweep_add_vary(Sweep *sw, const char *spec, GError **err) {
    g_return_val_if_fail(!sw->explicit_points, FALSE);
    const char *eq = strchr(spec, '=');
    g_autofree char *where = g_strdup_printf("--vary %s", spec);
    g_autofree char *key = eq ? g_strndup(spec, eq - spec) : NULL;
    if (!eq || !valid_key(key) || !eq[1]) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_KEY,
                    "%s: expected KEY=V1,V2,..., e.g. nodes=1,2,4 or training.seq_len=2048,4096",
                    where);
        return FALSE;
    }
    Axis *a = axis_new(key, FALSE);
    g_auto(GStrv) values = g_strsplit(eq + 1, ",", -1);
    for (char **v = values; *v; v++) {
        if (!axis_add_value(a, g_strstrip(*v), where, err)) {
            axis_free(a);
            return FALSE;
        }
    }
    Axis *old = find_axis(sw, key);
    if (old) { /* the command line replaces the file's values, in place */
        for (guint i = 0; i < sw->axes->len; i++)
            if (sw->axes->pdata[i] == old) {
                axis_free(old);
                sw->axes->pdata[i] = a;
            }
    } else {
        g_ptr_array_add(sw->axes, a);
    }
    return TRUE;
}

static gboolean scalar_of(const ConfNode *n, const char *what, GError **err) {
    if (n->kind == CONF_SCALAR)
        return TRUE;
    return conf_fail(err, CONF_ERROR_VALUE, n, "%s must be a single value", what);
}

gboolean sweep_add_file_axes(Sweep *sw, GError **err) {
    g_autoptr(ConfNode) root = conf_load_file(sw->scenario, err);
    if (!root)
        return FALSE;
    const ConfNode *sweep = root->kind == CONF_MAP ? conf_get(root, "sweep") : NULL;
    if (!sweep)
        return TRUE;
    if (sweep->kind != CONF_MAP)
        return conf_fail(err, CONF_ERROR_VALUE, sweep,
                         "sweep must be a mapping of KEY: [values] or NAME: {LABEL: {KEY: VALUE}}");
    for (guint k = 0; k < sweep->keys->len; k++) {
        const char *name = sweep->keys->pdata[k];
        const ConfNode *v = sweep->items->pdata[k];
        if (!valid_key(name))
            return conf_fail(err, CONF_ERROR_KEY, v, "'%s' cannot be a sweep axis", name);
        if (find_axis(sw, name))
            return conf_fail(err, CONF_ERROR_KEY, v, "sweep axis '%s' is given twice", name);
        g_autoptr(GPtrArray) hold = g_ptr_array_new_with_free_func(axis_free);
        Axis *a = axis_new(name, v->kind == CONF_MAP);
        g_ptr_array_add(hold, a);
        if (v->kind == CONF_SEQ) {
            for (guint i = 0; i < v->items->len; i++) {
                const ConfNode *it = v->items->pdata[i];
                g_autofree char *w = conf_where(it);
                if (!scalar_of(it, "a sweep value", err) || !axis_add_value(a, it->value, w, err))
                    return FALSE;
            }
        } else if (v->kind == CONF_MAP) {
            for (guint i = 0; i < v->keys->len; i++) {
                const char *label = v->keys->pdata[i];
                const ConfNode *b = v->items->pdata[i];
                if (b->kind != CONF_MAP)
                    return conf_fail(err, CONF_ERROR_VALUE, b,
                                     "%s.%s must be a mapping of overrides {KEY: VALUE, ...}", name,
                                     label);
                g_autoptr(GPtrArray) sets = g_ptr_array_new_with_free_func(g_free);
                for (guint j = 0; j < b->keys->len; j++) {
                    const ConfNode *val = b->items->pdata[j];
                    if (!scalar_of(val, "an override", err))
                        return FALSE;
                    g_ptr_array_add(
                        sets, g_strdup_printf("%s=%s", (char *)b->keys->pdata[j], val->value));
                }
                g_ptr_array_add(sets, NULL);
                g_ptr_array_add(a->labels, g_strdup(label));
                g_ptr_array_add(a->sets, g_strdupv((char **)sets->pdata));
            }
        } else {
            return conf_fail(err, CONF_ERROR_VALUE, v,
                             "sweep.%s must be a list of values or a mapping of named overrides",
                             name);
        }
        if (a->labels->len == 0)
            return conf_fail(err, CONF_ERROR_VALUE, v, "sweep.%s has no values", name);
        g_ptr_array_add(sw->axes, g_ptr_array_steal_index(hold, 0));
    }
    return TRUE;
}

void sweep_add_point(Sweep *sw, const char *const *keys, const char *const *labels,
                     char *const *sets) {
    g_return_if_fail(sw->axes->len == 0);
    if (!sw->explicit_points)
        for (const char *const *k = keys; *k; k++)
            g_ptr_array_add(sw->keys, g_strdup(*k));
    sw->explicit_points = TRUE;
    Point *p = g_new0(Point, 1);
    p->labels = g_strdupv((char **)labels);
    p->sets = g_strdupv((char **)sets);
    g_assert(g_strv_length(p->labels) == sw->keys->len);
    g_ptr_array_add(sw->points, p);
}

/* --- preparing -------------------------------------------------------------------------------- */

/* Run fn(i, user) for i in [0, n) on up to jobs threads; returns when all are done. */
static void parallel_for(int n, int jobs, GFunc fn, gpointer user) {
    if (jobs <= 1 || n <= 1) {
        for (int i = 0; i < n; i++)
            fn(GINT_TO_POINTER(i + 1), user);
        return;
    }
    GThreadPool *pool = g_thread_pool_new(fn, user, MIN(jobs, n), FALSE, NULL);
    for (int i = 0; i < n; i++)
        g_thread_pool_push(pool, GINT_TO_POINTER(i + 1), NULL);
    g_thread_pool_free(pool, FALSE, TRUE);
}

static Scenario *load_point(const Sweep *sw, const Point *p, GError **err) {
    g_autoptr(GPtrArray) sets = g_ptr_array_new();
    for (char **s = sw->base_sets; s && *s; s++)
        g_ptr_array_add(sets, *s);
    for (char **s = p->sets; s && *s; s++)
        g_ptr_array_add(sets, *s);
    g_ptr_array_add(sets, NULL);
    return scenario_load(sw->scenario, (char **)sets->pdata, err);
}

static void prepare_one(gpointer data, gpointer user) {
    Sweep *sw = user;
    Point *p = sw->points->pdata[GPOINTER_TO_INT(data) - 1];
    g_autoptr(GError) e = NULL;
    g_autoptr(Scenario) sc = load_point(sw, p, &e);
    if (sc && sim_inspect(sc, &p->insp, &e)) {
        p->status = SWEEP_POINT_OK;
        return;
    }
    /* an impossible layout: the scenario's (CONF_ERROR_INVALID) or the machine's, which
     * sim_inspect's topo_new raises (a job larger than the machine) */
    gboolean invalid =
        g_error_matches(e, CONF_ERROR, CONF_ERROR_INVALID) || e->domain == MACHINE_ERROR;
    p->status = invalid ? SWEEP_POINT_INVALID : SWEEP_POINT_ERROR;
    p->error = g_strdup(e->message);
}

static void expand(Sweep *sw) {
    if (sw->explicit_points)
        return;
    guint n = 1;
    for (guint a = 0; a < sw->axes->len; a++) {
        Axis *ax = sw->axes->pdata[a];
        g_ptr_array_add(sw->keys, g_strdup(ax->name));
        n *= ax->labels->len;
    }
    guint na = sw->axes->len;
    for (guint i = 0; i < n; i++) {
        Point *p = g_new0(Point, 1);
        p->labels = g_new0(char *, na + 1);
        g_autoptr(GPtrArray) sets = g_ptr_array_new();
        guint rest = i;
        /* mixed radix, the last axis fastest */
        g_autofree guint *digit = g_new0(guint, na + 1);
        for (guint a = na; a-- > 0;) {
            Axis *ax = sw->axes->pdata[a];
            digit[a] = rest % ax->labels->len;
            rest /= ax->labels->len;
        }
        for (guint a = 0; a < na; a++) {
            Axis *ax = sw->axes->pdata[a];
            p->labels[a] = g_strdup(ax->labels->pdata[digit[a]]);
            for (char **s = ax->sets->pdata[digit[a]]; *s; s++)
                g_ptr_array_add(sets, *s);
        }
        g_ptr_array_add(sets, NULL);
        p->sets = g_strdupv((char **)sets->pdata);
        g_ptr_array_add(sw->points, p);
    }
}

gboolean sweep_prepare(Sweep *sw, int jobs, GError **err) {
    g_return_val_if_fail(sw->columns->len == 0, FALSE);
    /* The product of the axes' sizes, stopping once past the limit (so it never wraps, however
     * many axes there are; each size is below 2^32 and the running product below 2^24 before it).
     */
    guint64 cells = 1;
    for (guint a = 0; a < sw->axes->len && cells <= SWEEP_MAX_POINTS; a++)
        cells *= ((Axis *)sw->axes->pdata[a])->labels->len;
    if (cells > SWEEP_MAX_POINTS) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE,
                    "the sweep has more than %d points (the product of its axes' sizes); at most "
                    "%d",
                    SWEEP_MAX_POINTS, SWEEP_MAX_POINTS);
        return FALSE;
    }
    expand(sw);
    parallel_for((int)sw->points->len, jobs, prepare_one, sw);

    guint64 kinds[SIM_COMM_KIND_WORDS] = {0};
    for (guint i = 0; i < sw->points->len; i++) {
        const Point *p = sw->points->pdata[i];
        for (int w = 0; w < SIM_COMM_KIND_WORDS && p->status == SWEEP_POINT_OK; w++)
            kinds[w] |= p->insp.comm_kinds[w];
    }
    sweep_rows_layout(sw, kinds);
    return TRUE;
}

int sweep_points(const Sweep *sw) {
    return (int)sw->points->len;
}

static const Point *point(const Sweep *sw, int i) {
    return sweep_point_at(sw, i);
}

SweepPointStatus sweep_point_status(const Sweep *sw, int i) {
    return point(sw, i)->status;
}

const char *sweep_point_error(const Sweep *sw, int i) {
    return point(sw, i)->error;
}

char *sweep_point_name(const Sweep *sw, int i) {
    const Point *p = point(sw, i);
    if (sw->keys->len == 0)
        return g_strdup("the scenario");
    GString *g = g_string_new(NULL);
    for (guint k = 0; k < sw->keys->len; k++)
        g_string_append_printf(g, "%s%s=%s", k ? ", " : "", (char *)sw->keys->pdata[k],
                               p->labels[k]);
    return g_string_free(g, FALSE);
}

const SimInspect *sweep_point_inspect(const Sweep *sw, int i) {
    g_return_val_if_fail(point(sw, i)->status == SWEEP_POINT_OK, NULL);
    return &point(sw, i)->insp;
}

const char *sweep_header(const Sweep *sw) {
    return sw->header;
}

int sweep_columns(const Sweep *sw) {
    return (int)sw->columns->len;
}

const char *sweep_column(const Sweep *sw, int c) {
    return sw->columns->pdata[c];
}

int sweep_default_jobs(void) {
    return MAX(1, (int)g_get_num_processors());
}

/* --- running ---------------------------------------------------------------------------------- */

void sweep_result_free(SweepResult *r) {
    if (!r)
        return;
    g_free(r->row);
    g_free(r->error);
    g_free(r);
}

void sweep_set_horizon(Sweep *sw, SimTime horizon) {
    __atomic_store_n(&sw->horizon, horizon, __ATOMIC_RELAXED); /* read by running workers */
}

SweepResult *sweep_run_point(const Sweep *sw, int i, int dedup) {
    const Point *p = point(sw, i);
    SweepResult *r = g_new0(SweepResult, 1);
    r->point = i;
    r->final = TRUE;
    g_autoptr(GError) e = NULL;
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(Scenario) sc = load_point(sw, p, &e);
    SimTime horizon = __atomic_load_n(&sw->horizon, __ATOMIC_RELAXED);
    gboolean trial = dedup == SWEEP_TRIAL_EXACT || dedup == SWEEP_TRIAL_ALL;
    gboolean settle = dedup == SWEEP_SETTLE_EXACT || dedup == SWEEP_SETTLE_ALL;
    if (settle) /* the run it settles to: the exact mode's, or every rank's */
        dedup = dedup == SWEEP_SETTLE_ALL ? DEDUP_OFF : -1;
    if (sc && settle) {
        SimTime bound = sim_bound_within(sc, horizon, &e);
        r->bound_s = (double)(g_get_monotonic_time() - t0) / 1e6;
        if (bound < 0 && g_error_matches(e, EXEC_ERROR, EXEC_ERROR_HORIZON)) {
            r->beyond = r->pruned = TRUE;
            r->wall_s = r->bound_s;
            return r;
        }
    }
    g_autoptr(SimRun) run = !sc || e ? NULL
                            : trial  ? sim_run(sc, DEDUP_ESTIMATE, &e)
                                     : sim_run_within(sc, dedup, horizon, &e);
    if (run && trial && sim_dedup_mode(sc, DEDUP_ESTIMATE) != DEDUP_OFF &&
        (dedup == SWEEP_TRIAL_ALL || sim_trial_mode(sim_summary(run)) == DEDUP_OFF))
        r->final = FALSE;
    r->wall_s = (double)(g_get_monotonic_time() - t0) / 1e6;
    if (!run && g_error_matches(e, EXEC_ERROR, EXEC_ERROR_HORIZON)) {
        r->beyond = TRUE;
        return r;
    }
    if (!run) {
        r->error = g_strdup(e->message);
        r->bad_input = sim_error_is_input(e);
        return r;
    }
    r->sum = *sim_summary(run);
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    for (guint k = 0; k < rows->len; k++) {
        const CommRow *c = &g_array_index(rows, CommRow, k);
        r->exposed_dim_s[layout_dim_class(c->dim)] += sim_time_s(c->exposed); /* ZeRO++: dp */
    }
    r->row = sweep_rows_format(sw, p, run, rows, r->wall_s);
    stats_rows_free(rows);
    return r;
}

typedef struct {
    const Sweep *sw;
    int dedup;
    GAsyncQueue *done;
} RunCtx;

static void run_one(gpointer data, gpointer user) {
    RunCtx *rc = user;
    g_async_queue_push(rc->done, sweep_run_point(rc->sw, GPOINTER_TO_INT(data) - 1, rc->dedup));
}

/* The points of list (n) on up to jobs threads, started in list order (GThreadPool's queue is
 * first in, first out); serial on this thread for jobs <= 1 without idle. */
static void run_list(const Sweep *sw, int jobs, int dedup, const int *list, int n, SweepResultFn fn,
                     SweepIdleFn idle, void *ctx) {
    if (jobs <= 1 && !idle) {
        for (int k = 0; k < n; k++)
            fn(ctx, sweep_run_point(sw, list[k], dedup));
        return;
    }
    RunCtx rc = {sw, dedup, g_async_queue_new()};
    GThreadPool *pool = g_thread_pool_new(run_one, &rc, MAX(jobs, 1), FALSE, NULL);
    for (int k = 0; k < n; k++)
        g_thread_pool_push(pool, GINT_TO_POINTER(list[k] + 1), NULL);
    int outstanding = n;
    for (;;) {
        if (outstanding > 0) {
            SweepResult *r =
                idle ? g_async_queue_timeout_pop(rc.done, 1000) : g_async_queue_pop(rc.done);
            if (r) {
                outstanding--;
                fn(ctx, r);
            }
        }
        gboolean more = idle ? idle(ctx, outstanding == 0) : FALSE;
        if (outstanding == 0 && !more)
            break;
    }
    g_thread_pool_free(pool, FALSE, TRUE);
    g_async_queue_unref(rc.done);
}

void sweep_run(const Sweep *sw, int jobs, int dedup, const guint8 *todo, SweepResultFn fn,
               SweepIdleFn idle, void *ctx) {
    int n = (int)sw->points->len, k = 0;
    g_autofree int *list = g_new(int, MAX(n, 1));
    for (int i = 0; i < n; i++)
        if ((todo ? todo[i] : 1) && point(sw, i)->status == SWEEP_POINT_OK)
            list[k++] = i;
    run_list(sw, jobs, dedup, list, k, fn, idle, ctx);
}

void sweep_run_list(const Sweep *sw, int jobs, int dedup, const int *list, int n, SweepResultFn fn,
                    void *ctx) {
    run_list(sw, jobs, dedup, list, n, fn, NULL, ctx);
}
