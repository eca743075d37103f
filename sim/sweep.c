/* sweep: points, rows, a thread pool, and an output that survives interruption.
 *
 * A row is formatted by the thread that simulated its point, from that run's SimSummary and Stats
 * only, with report_format_number: the same point gives the same bytes on any thread, in any
 * process. Order is restored where it matters: stdout is written in point order (a reorder buffer
 * of finished rows), a file in completion order while the sweep runs and in point order once it
 * completes. Resuming recognises a finished row by its beginning, which is the point's varied
 * values formatted exactly as this sweep formats them. */
#include "sweep.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "report.h"

G_STATIC_ASSERT(COLL_OP_COUNT *DIM_COUNT <= 64); /* SimInspect.comm_kinds is a 64-bit set */

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
    GPtrArray *columns; /* char *: every column, in order */
    int kinds[64];      /* op * DIM_COUNT + dim of each communication column group */
    int nkinds;
    gboolean omit[32]; /* headline columns left out (a varied key has their name) */
    char *header;
};

/* Headline columns, after the varied keys; format_row fills them in this order. */
static const char *const headline[] = {"model",
                                       "nodes",
                                       "gpus",
                                       "tp",
                                       "pp",
                                       "dp",
                                       "zero",
                                       "micro_batch",
                                       "micro_batches",
                                       "global_batch",
                                       "seq_len",
                                       "recompute",
                                       "iteration_time_s",
                                       "compute_s",
                                       "comm_s",
                                       "exposed_comm_s",
                                       "bubble_s",
                                       "overlap",
                                       "tflops_per_gpu",
                                       "mfu",
                                       "tokens_per_s",
                                       "memory_total_bytes",
                                       "fits",
                                       "events",
                                       "neox_tflops_per_gpu",

                                       "host_wait_s",
                                       "interference_s"};
enum { H_COUNT = G_N_ELEMENTS(headline) };
G_STATIC_ASSERT(H_COUNT <= 32);

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
        g_autofree char *where = conf_where(v);
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

/* --- rows ------------------------------------------------------------------------------------- */

static gboolean is_json_number(const char *s) {
    const char *p = s;
    if (*p == '-')
        p++;
    if (!g_ascii_isdigit(*p))
        return FALSE;
    if (*p == '0' && g_ascii_isdigit(p[1]))
        return FALSE;
    while (g_ascii_isdigit(*p))
        p++;
    if (*p == '.') {
        if (!g_ascii_isdigit(*++p))
            return FALSE;
        while (g_ascii_isdigit(*p))
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!g_ascii_isdigit(*p))
            return FALSE;
        while (g_ascii_isdigit(*p))
            p++;
    }
    return *p == '\0';
}

static void csv_string(GString *g, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        g_string_append(g, s);
        return;
    }
    g_string_append_c(g, '"');
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            g_string_append_c(g, '"');
        g_string_append_c(g, *p);
    }
    g_string_append_c(g, '"');
}

/* A row being written: each cell takes the next column's name. */
typedef struct {
    const Sweep *sw;
    GString *s;
    guint col;
} Row;

static void cell_start(Row *r) {
    g_assert(r->col < r->sw->columns->len);
    if (r->sw->fmt == SWEEP_JSONL) {
        g_string_append(r->s, r->col ? ", " : "{");
        report_json_quote(r->s, r->sw->columns->pdata[r->col]);
        g_string_append(r->s, ": ");
    } else if (r->col) {
        g_string_append_c(r->s, ',');
    }
    r->col++;
}

static void cell_num(Row *r, double v) {
    char buf[32];
    cell_start(r);
    g_string_append(r->s, report_format_number(v, buf));
}

static void cell_str(Row *r, const char *v) {
    cell_start(r);
    if (r->sw->fmt == SWEEP_JSONL)
        report_json_quote(r->s, v);
    else
        csv_string(r->s, v);
}

/* A varied value: a JSON number when it reads as one, else a string. */
static void cell_label(Row *r, const char *v) {
    if (r->sw->fmt == SWEEP_JSONL && is_json_number(v)) {
        cell_start(r);
        g_string_append(r->s, v);
    } else {
        cell_str(r, v);
    }
}

static void cell_bool(Row *r, gboolean v) {
    cell_start(r);
    g_string_append(r->s, v ? "true" : "false");
}

/* Message-size histogram: JSON [{"bytes": B, "calls": C}, ...]; CSV "B:C B:C ...". */
static void cell_sizes(Row *r, const GArray *sizes) {
    char b1[32], b2[32];
    gboolean json = r->sw->fmt == SWEEP_JSONL;
    cell_start(r);
    if (json)
        g_string_append_c(r->s, '[');
    for (guint k = 0; sizes && k < sizes->len; k++) {
        const SizeCount *c = &g_array_index(sizes, SizeCount, k);
        report_format_number(c->bytes, b1);
        report_format_number(c->calls, b2);
        if (json)
            g_string_append_printf(r->s, "%s{\"bytes\": %s, \"calls\": %s}", k ? ", " : "", b1, b2);
        else
            g_string_append_printf(r->s, "%s%s:%s", k ? " " : "", b1, b2);
    }
    if (json)
        g_string_append_c(r->s, ']');
}

static void row_end(Row *r) {
    g_assert(r->col == r->sw->columns->len);
    g_string_append(r->s, r->sw->fmt == SWEEP_JSONL ? "}\n" : "\n");
}

static void row_labels(Row *r, const Point *p) {
    for (guint k = 0; k < r->sw->keys->len; k++)
        cell_label(r, p->labels[k]);
}

static double ps_s(double ps) {
    return ps / (double)SIM_PS_PER_S;
}

static char *format_row(const Sweep *sw, const Point *p, const SimRun *run, const GArray *rows,
                        double wall_s) {
    const SimSummary *s = sim_summary(run);
    const Scenario *sc = sim_scenario(run);
    Row r = {sw, g_string_sized_new(1024), 0};
    row_labels(&r, p);
    double it = ps_s((double)s->iteration);
    const RankTimes *c = &s->critical;
    enum { NUM, STR, BOOL };
    const struct {
        int type;
        double v;
        const char *s;
    } cells[] = {
        {STR, 0, sc->model.name},
        {NUM, sc->nodes, NULL},
        {NUM, sc->gpus, NULL},
        {NUM, sc->tp, NULL},
        {NUM, sc->pp, NULL},
        {NUM, sc->dp, NULL},
        {NUM, sc->zero, NULL},
        {NUM, sc->micro_batch, NULL},
        {NUM, sc->grad_accum, NULL},
        {NUM, (double)sc->global_batch, NULL},
        {NUM, sc->seq_len, NULL},
        {STR, 0, scenario_recompute_name(sc->recompute)},
        {NUM, it, NULL},
        {NUM, ps_s((double)c->compute), NULL},
        {NUM, ps_s((double)c->comm), NULL},
        {NUM, ps_s((double)c->exposed), NULL},
        {NUM, ps_s((double)c->bubble), NULL},
        {NUM, s->overlap, NULL},
        {NUM, s->tflops_per_gpu, NULL},
        {NUM, s->mfu, NULL},
        {NUM, it > 0 ? (double)sc->global_batch * sc->seq_len / it : 0, NULL},
        {NUM, s->memory.total_bytes, NULL},
        {BOOL, s->memory.total_bytes <= sc->topo.device.hbm_capacity, NULL},
        {NUM, (double)s->events, NULL},
        {NUM, s->neox_tflops_per_gpu, NULL},
        {NUM, ps_s((double)c->host_wait), NULL},
        {NUM, ps_s((double)c->interference), NULL},
    };
    G_STATIC_ASSERT(G_N_ELEMENTS(cells) == H_COUNT);
    for (int h = 0; h < H_COUNT; h++) {
        if (sw->omit[h])
            continue;
        if (cells[h].type == STR)
            cell_str(&r, cells[h].s);
        else if (cells[h].type == BOOL)
            cell_bool(&r, cells[h].v != 0);
        else
            cell_num(&r, cells[h].v);
    }
    for (int k = 0; k < sw->nkinds; k++) {
        const CommRow *row = NULL;
        for (guint i = 0; i < rows->len; i++) {
            const CommRow *x = &g_array_index(rows, CommRow, i);
            if ((int)(x->op * DIM_COUNT + x->dim) == sw->kinds[k])
                row = x;
        }
        cell_num(&r, row ? ps_s((double)row->time) : 0);
        cell_num(&r, row ? ps_s(row->exposed) : 0);
        cell_num(&r, row ? ps_s(row->hidden) : 0);
        cell_num(&r, row ? row->volume_bytes : 0);
        cell_sizes(&r, row ? row->sizes : NULL);
    }
    if (sw->timing)
        cell_num(&r, wall_s);
    row_end(&r);
    return g_string_free(r.s, FALSE);
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
    p->status = g_error_matches(e, CONF_ERROR, CONF_ERROR_INVALID) ? SWEEP_POINT_INVALID
                                                                   : SWEEP_POINT_ERROR;
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

static const char *const kind_fields[] = {"time_s", "exposed_s", "hidden_s", "volume_bytes",
                                          "sizes"};

gboolean sweep_prepare(Sweep *sw, int jobs, GError **err) {
    g_return_val_if_fail(sw->columns->len == 0, FALSE);
    guint64 cells = 1;
    for (guint a = 0; a < sw->axes->len; a++)
        cells *= ((Axis *)sw->axes->pdata[a])->labels->len;
    if (cells > 10000000) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_VALUE,
                    "the sweep has %" G_GUINT64_FORMAT " points; at most 10,000,000", cells);
        return FALSE;
    }
    expand(sw);
    parallel_for((int)sw->points->len, jobs, prepare_one, sw);

    guint64 kinds = 0;
    for (guint i = 0; i < sw->points->len; i++) {
        const Point *p = sw->points->pdata[i];
        if (p->status == SWEEP_POINT_OK)
            kinds |= p->insp.comm_kinds;
    }
    for (guint k = 0; k < sw->keys->len; k++)
        g_ptr_array_add(sw->columns, g_strdup(sw->keys->pdata[k]));
    for (int h = 0; h < H_COUNT; h++) {
        for (guint k = 0; k < sw->keys->len; k++)
            sw->omit[h] |= strcmp(sw->keys->pdata[k], headline[h]) == 0;
        if (!sw->omit[h])
            g_ptr_array_add(sw->columns, g_strdup(headline[h]));
    }
    for (int d = 0; d < DIM_COUNT; d++) {
        for (int op = 0; op < COLL_OP_COUNT; op++) {
            int cat = op * DIM_COUNT + d;
            if (!(kinds & (G_GUINT64_CONSTANT(1) << cat)))
                continue;
            sw->kinds[sw->nkinds++] = cat;
            for (int f = 0; f < (int)G_N_ELEMENTS(kind_fields); f++)
                g_ptr_array_add(sw->columns, g_strdup_printf("%s_%s_%s", coll_op_name(op),
                                                             workload_dim_name(d), kind_fields[f]));
        }
    }
    if (sw->timing)
        g_ptr_array_add(sw->columns, g_strdup("wall_s"));

    GString *h = g_string_new(NULL);
    if (sw->fmt == SWEEP_CSV) {
        for (guint c = 0; c < sw->columns->len; c++) {
            if (c)
                g_string_append_c(h, ',');
            csv_string(h, sw->columns->pdata[c]);
        }
        g_string_append_c(h, '\n');
    }
    sw->header = g_string_free(h, FALSE);
    for (guint i = 0; i < sw->points->len; i++) {
        Point *p = sw->points->pdata[i];
        Row r = {sw, g_string_new(NULL), 0};
        row_labels(&r, p);
        if (sw->fmt == SWEEP_JSONL)
            g_string_append(r.s, sw->keys->len ? ", " : "{");
        else if (sw->keys->len)
            g_string_append_c(r.s, ',');
        p->prefix = g_string_free(r.s, FALSE);
    }
    return TRUE;
}

int sweep_points(const Sweep *sw) {
    return (int)sw->points->len;
}

static const Point *point(const Sweep *sw, int i) {
    g_assert(i >= 0 && i < (int)sw->points->len);
    return sw->points->pdata[i];
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

SweepResult *sweep_run_point(const Sweep *sw, int i, int dedup) {
    const Point *p = point(sw, i);
    SweepResult *r = g_new0(SweepResult, 1);
    r->point = i;
    g_autoptr(GError) e = NULL;
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(Scenario) sc = load_point(sw, p, &e);
    g_autoptr(SimRun) run = sc ? sim_run(sc, dedup, &e) : NULL;
    if (!run) {
        r->error = g_strdup(e->message);
        return r;
    }
    r->sum = *sim_summary(run);
    GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
    for (guint k = 0; k < rows->len; k++) {
        const CommRow *c = &g_array_index(rows, CommRow, k);
        r->exposed_dim_s[c->dim] += ps_s(c->exposed);
    }
    r->row = format_row(sw, p, run, rows, (double)(g_get_monotonic_time() - t0) / 1e6);
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

void sweep_run(const Sweep *sw, int jobs, int dedup, const guint8 *todo, SweepResultFn fn,
               SweepIdleFn idle, void *ctx) {
    int n = (int)sw->points->len;
    if (jobs <= 1 && !idle) { /* serial: in point order, on this thread */
        for (int i = 0; i < n; i++)
            if ((todo ? todo[i] : 1) && point(sw, i)->status == SWEEP_POINT_OK)
                fn(ctx, sweep_run_point(sw, i, dedup));
        return;
    }
    RunCtx rc = {sw, dedup, g_async_queue_new()};
    GThreadPool *pool = g_thread_pool_new(run_one, &rc, MAX(jobs, 1), FALSE, NULL);
    int outstanding = 0;
    for (int i = 0; i < n; i++) {
        if ((todo ? todo[i] : 1) && point(sw, i)->status == SWEEP_POINT_OK) {
            g_thread_pool_push(pool, GINT_TO_POINTER(i + 1), NULL);
            outstanding++;
        }
    }
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

/* --- output ----------------------------------------------------------------------------------- */

struct SweepOut {
    const Sweep *sw;
    char *path; /* NULL: stdout */
    int fd;     /* the file, appending; -1 for stdout */
    gboolean progress, drawn;
    guint8 *todo;     /* per point: still to run */
    guint8 *finished; /* per point: result in (row or failure) */
    char **rows;      /* per point: its row, kept or new */
    int kept, failed, expected, done;
    int next; /* stdout: next point to write */
    gint64 t0;
};

static gboolean write_all(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return FALSE;
        s += w;
        n -= (size_t)w;
    }
    return TRUE;
}

/* Write header and every row held, in point order, to path (through a temporary file renamed
 * over it, so a reader never sees half a file). */
static gboolean rewrite_sorted(SweepOut *out, GError **err) {
    g_autofree char *tmp = g_strdup_printf("%s.tmp%d", out->path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    gboolean ok = fd >= 0;
    const char *h = sweep_header(out->sw);
    ok = ok && write_all(fd, h, strlen(h));
    for (guint i = 0; ok && i < out->sw->points->len; i++)
        if (out->rows[i])
            ok = write_all(fd, out->rows[i], strlen(out->rows[i]));
    if (fd >= 0 && close(fd) != 0)
        ok = FALSE;
    if (!ok || rename(tmp, out->path) != 0) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "cannot write %s: %s", out->path,
                    g_strerror(errno));
        unlink(tmp);
        return FALSE;
    }
    return TRUE;
}

/* Fields of a CSV line, quotes respected. */
static int csv_fields(const char *s, size_t n, size_t *end_of_field, int want) {
    int fields = 1;
    gboolean q = FALSE;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            q = !q;
        else if (s[i] == ',' && !q) {
            if (fields == want && end_of_field)
                *end_of_field = i + 1;
            fields++;
        }
    }
    return fields;
}

/* Read a previous run's file: keep the rows that belong to points of this sweep. */
static gboolean resume_read(SweepOut *out, GError **err) {
    const Sweep *sw = out->sw;
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(out->path, &text, &len, &ioerr)) {
        if (g_error_matches(ioerr, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            return TRUE; /* nothing to resume */
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "%s", ioerr->message);
        return FALSE;
    }
    g_autoptr(GHashTable) by_prefix = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < sw->points->len; i++) {
        const Point *p = sw->points->pdata[i];
        if (p->status == SWEEP_POINT_OK)
            g_hash_table_insert(by_prefix, p->prefix, GINT_TO_POINTER(i + 1));
    }
    int ncols = (int)sw->columns->len, nkeys = (int)sw->keys->len;
    const char *first_fixed = sw->columns->pdata[nkeys];
    g_autofree char *marker = g_strdup_printf(", \"%s\": ", first_fixed);
    g_autofree char *last =
        g_strdup_printf("\"%s\": ", (char *)sw->columns->pdata[sw->columns->len - 1]);
    const char *p = text, *end = text + len;
    int line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* a row cut short by the interruption: not finished */
        size_t n = (size_t)(nl - p) + 1;
        line++;
        if (line == 1 && sw->fmt == SWEEP_CSV) {
            if (n != strlen(sw->header) || memcmp(p, sw->header, n) != 0) {
                g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                            "%s: its header is not this sweep's (other varied keys, columns or "
                            "format); write to another file, or remove it to start again",
                            out->path);
                return FALSE;
            }
            p = nl + 1;
            continue;
        }
        size_t plen = 0;
        gboolean shaped;
        if (sw->fmt == SWEEP_CSV) {
            shaped = csv_fields(p, n - 1, &plen, nkeys) == ncols;
            if (nkeys == 0)
                plen = 0;
        } else {
            const char *m = g_strstr_len(p, (gssize)n, nkeys ? marker : "{");
            shaped = m && n >= 2 && p[n - 2] == '}' && g_strstr_len(p, (gssize)n, last);
            plen = m ? (size_t)(m - p) + (nkeys ? 2 : 1) : 0;
        }
        g_autofree char *prefix = g_strndup(p, plen);
        int i = shaped ? GPOINTER_TO_INT(g_hash_table_lookup(by_prefix, prefix)) - 1 : -1;
        if (i < 0) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                        "%s:%d: not a row of this sweep (its varied values or columns match no "
                        "point); write to another file, or remove it to start again",
                        out->path, line);
            return FALSE;
        }
        if (!out->rows[i]) {
            out->rows[i] = g_strndup(p, n);
            out->todo[i] = 0;
            out->kept++;
        }
        p = nl + 1;
    }
    return TRUE;
}

static void draw(SweepOut *out, gboolean last);

SweepOut *sweep_out_new(const Sweep *sw, const char *path, gboolean resume, gboolean progress,
                        GError **err) {
    int n = (int)sw->points->len;
    g_autoptr(SweepOut) out = g_new0(SweepOut, 1);
    out->sw = sw;
    out->path = g_strdup(path);
    out->fd = -1;
    out->progress = progress;
    out->todo = g_new0(guint8, n);
    out->finished = g_new0(guint8, n);
    out->rows = g_new0(char *, n);
    out->t0 = g_get_monotonic_time();
    for (int i = 0; i < n; i++)
        out->todo[i] = point(sw, i)->status == SWEEP_POINT_OK;
    if (!path) {
        g_return_val_if_fail(!resume, NULL);
        fputs(sw->header, stdout);
        fflush(stdout);
    } else {
        if (resume && !resume_read(out, err))
            return NULL;
        if (!rewrite_sorted(out, err))
            return NULL;
        out->fd = open(path, O_WRONLY | O_APPEND);
        if (out->fd < 0) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "cannot write %s: %s", path,
                        g_strerror(errno));
            return NULL;
        }
    }
    for (int i = 0; i < n; i++)
        out->expected += out->todo[i];
    if (out->expected > 0)
        draw(out, FALSE);
    return g_steal_pointer(&out);
}

void sweep_out_free(SweepOut *out) {
    if (!out)
        return;
    if (out->fd >= 0)
        close(out->fd);
    for (guint i = 0; i < out->sw->points->len; i++)
        g_free(out->rows[i]);
    g_free(out->rows);
    g_free(out->todo);
    g_free(out->finished);
    g_free(out->path);
    g_free(out);
}

const guint8 *sweep_out_todo(const SweepOut *out) {
    return out->todo;
}

int sweep_out_kept(const SweepOut *out) {
    return out->kept;
}

int sweep_out_failed(const SweepOut *out) {
    return out->failed;
}

static void draw(SweepOut *out, gboolean last) {
    if (!out->progress)
        return;
    int width = 30, filled = out->expected ? width * out->done / out->expected : width;
    char bar[64];
    memset(bar, '#', (size_t)filled);
    memset(bar + filled, '.', (size_t)(width - filled));
    bar[width] = '\0';
    fprintf(stderr, "\rsweep [%s] %d/%d points, %.1f s", bar, out->done, out->expected,
            (double)(g_get_monotonic_time() - out->t0) / 1e6);
    if (last)
        fputc('\n', stderr);
    fflush(stderr);
    out->drawn = !last;
}

void sweep_out_add(SweepOut *out, SweepResult *r) {
    int i = r->point;
    g_assert(out->todo[i] && !out->finished[i]);
    out->finished[i] = 1;
    out->done++;
    if (r->error) {
        g_autofree char *name = sweep_point_name(out->sw, i);
        if (out->drawn)
            fputc('\n', stderr);
        fprintf(stderr, "sim sweep: %s: %s\n", name, r->error);
        out->failed++;
    } else {
        out->rows[i] = g_steal_pointer(&r->row);
        if (out->fd >= 0 && !write_all(out->fd, out->rows[i], strlen(out->rows[i])))
            fprintf(stderr, "sim sweep: cannot write %s: %s\n", out->path, g_strerror(errno));
    }
    sweep_result_free(r);
    if (out->fd < 0) { /* stdout, in point order: write every row whose turn has come */
        int n = (int)out->sw->points->len;
        while (out->next < n && (!out->todo[out->next] || out->finished[out->next])) {
            if (out->rows[out->next])
                fputs(out->rows[out->next], stdout);
            out->next++;
        }
        fflush(stdout);
    }
    draw(out, FALSE);
}

gboolean sweep_out_finish(SweepOut *out, GError **err) {
    if (out->progress && out->expected > 0)
        draw(out, TRUE);
    if (out->fd < 0) {
        if (fflush(stdout) == 0)
            return TRUE;
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "cannot write the output: %s",
                    g_strerror(errno));
        return FALSE;
    }
    close(out->fd);
    out->fd = -1;
    return rewrite_sorted(out, err);
}
