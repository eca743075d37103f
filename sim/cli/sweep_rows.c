/* sweep_rows: a sweep's columns and its rows, formatted by the thread that simulated the point
 * from that run's SimSummary and Stats only, with report_format_number: the same point gives the
 * same bytes on any thread, in any process. A row's beginning (its prefix) is the point's varied
 * values, which is how resuming recognises a finished row. */
#include <string.h>

#include "report.h"
#include "sweep_internal.h"

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
                                       "interference_s",
                                       "sim_version",
                                       "topology",
                                       "device",
                                       "overrides",
                                       "uneven_copy_sends",
                                       "dedup_rerun",
                                       "token_budget",
                                       "time_to_train_days",
                                       "node_hours",
                                       "gpu_hours"};
enum { H_COUNT = G_N_ELEMENTS(headline) };
G_STATIC_ASSERT(H_COUNT <= G_N_ELEMENTS(((Sweep *)0)->omit));

static const char *const kind_fields[] = {"time_s", "exposed_s", "hidden_s", "volume_bytes",
                                          "sizes"};

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
        report_csv_quote(r->s, v);
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

/* No value: null in JSON, an empty field in CSV. */
static void cell_null(Row *r) {
    cell_start(r);
    if (r->sw->fmt == SWEEP_JSONL)
        g_string_append(r->s, "null");
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

char *sweep_rows_format(const Sweep *sw, const Point *p, const SimRun *run, const GArray *rows,
                        double wall_s) {
    const SimSummary *s = sim_summary(run);
    const Scenario *sc = sim_scenario(run);
    Row r = {sw, g_string_sized_new(1024), 0};
    row_labels(&r, p);
    double it = sim_time_s((double)s->iteration);
    const RankTimes *c = &s->critical;
    g_autofree char *overrides = sc->sets ? g_strjoinv(" ", sc->sets) : g_strdup("");
    TrainTime tt = report_train_time(run);
    enum { NUM, STR, BOOL, OPT }; /* OPT: a number, empty (CSV) or null (JSON) without a budget */
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
        {NUM, sim_time_s((double)c->compute), NULL},
        {NUM, sim_time_s((double)c->comm), NULL},
        {NUM, sim_time_s((double)c->exposed), NULL},
        {NUM, sim_time_s((double)c->bubble), NULL},
        {NUM, s->overlap, NULL},
        {NUM, s->tflops_per_gpu, NULL},
        {NUM, s->mfu, NULL},
        {NUM, tt.tokens_per_s, NULL},
        {NUM, s->memory.total_bytes, NULL},
        {BOOL, s->memory.total_bytes <= sc->topo.device.hbm_capacity, NULL},
        {NUM, (double)s->events, NULL},
        {NUM, s->neox_tflops_per_gpu, NULL},
        {NUM, sim_time_s((double)c->host_wait), NULL},
        {NUM, sim_time_s((double)c->interference), NULL},
        {STR, 0, SIM_VERSION},
        {STR, 0, sc->topo.name},
        {STR, 0, sc->topo.device.name},
        {STR, 0, overrides},
        {NUM, s->uneven_sends, NULL},
        {BOOL, s->dedup_rerun, NULL},
        {OPT, tt.budget, NULL},
        {OPT, tt.days, NULL},
        {OPT, tt.node_hours, NULL},
        {OPT, tt.gpu_hours, NULL},
    };
    G_STATIC_ASSERT(G_N_ELEMENTS(cells) == H_COUNT);
    for (int h = 0; h < H_COUNT; h++) {
        if (sw->omit[h])
            continue;
        if (cells[h].type == STR)
            cell_str(&r, cells[h].s);
        else if (cells[h].type == BOOL)
            cell_bool(&r, cells[h].v != 0);
        else if (cells[h].type == OPT && tt.budget <= 0)
            cell_null(&r);
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
        cell_num(&r, row ? sim_time_s((double)row->time) : 0);
        cell_num(&r, row ? sim_time_s(row->exposed) : 0);
        cell_num(&r, row ? sim_time_s(row->hidden) : 0);
        cell_num(&r, row ? row->volume_bytes : 0);
        cell_sizes(&r, row ? row->sizes : NULL);
    }
    if (sw->timing)
        cell_num(&r, wall_s);
    row_end(&r);
    return g_string_free(r.s, FALSE);
}

void sweep_rows_layout(Sweep *sw, const guint64 *kinds) {
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
            if (!(kinds[cat / 64] & (G_GUINT64_CONSTANT(1) << (cat % 64))))
                continue;
            sw->kinds[sw->nkinds++] = cat;
            for (int f = 0; f < (int)G_N_ELEMENTS(kind_fields); f++)
                g_ptr_array_add(sw->columns, g_strdup_printf("%s_%s_%s", coll_op_name(op),
                                                             layout_dim_name(d), kind_fields[f]));
        }
    }
    if (sw->timing)
        g_ptr_array_add(sw->columns, g_strdup("wall_s"));

    GString *h = g_string_new(NULL);
    if (sw->fmt == SWEEP_CSV) {
        for (guint c = 0; c < sw->columns->len; c++) {
            if (c)
                g_string_append_c(h, ',');
            report_csv_quote(h, sw->columns->pdata[c]);
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
}
