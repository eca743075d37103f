/* cmd_sensitivity: `sim sensitivity SCENARIO [--set K=V]... [--jobs N] [--by F]`: which assumption
 * the answer hinges on. Every assumed or calibrated constant the run uses (kernel ceilings and
 * memory shares, the sustained clock and the calibrated compute scale, HBM bandwidth, the kernel
 * gap, interference, host costs, link and NIC rates and latencies) is moved down and up by F
 * (default 0.10: the device and topology files state their ranges in comments, which are not
 * read yet), the scenario is run once per move, and the change of the iteration time is printed
 * per constant, largest first. A constant the scenario's files do not have is skipped; a fraction
 * (a ceiling, a share) is not moved past 1. Runs in parallel like sweeps; the output does not
 * depend on --jobs.
 *
 * Exit status: 0 ok; 2 bad input (the scenario, an option); 1 output cannot be written. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "scenario.h"
#include "sim.h"

/* The constants moved: a dotted scenario path, and whether it is a fraction capped at 1. */
static const struct {
    const char *path;
    gboolean fraction;
} params[] = {
    {"topology.device.calibration.compute_scale", FALSE},
    {"topology.device.sustained_clock", FALSE},
    {"topology.device.gemm.ceiling", TRUE},
    {"topology.device.gemm.bmm_ceiling", TRUE},
    {"topology.device.gemm.flash_ceiling", TRUE},
    {"topology.device.gemm.flash_bwd_ceiling", TRUE},
    {"topology.device.memory_efficiency.streaming", TRUE},
    {"topology.device.memory_efficiency.reduction", TRUE},
    {"topology.device.memory_efficiency.gemm", TRUE},
    {"topology.device.hbm_bandwidth", FALSE},
    {"topology.device.launch_overhead", FALSE},
    {"topology.device.interference.intra_node", FALSE},
    {"topology.device.interference.inter_node", FALSE},
    {"topology.node.host.op_dispatch", FALSE},
    {"topology.node.host.comm_dispatch", FALSE},
    {"topology.node.host.step", FALSE},
    {"topology.node.link.bandwidth", FALSE},
    {"topology.node.link.latency", FALSE},
    {"topology.node.nics.bandwidth", FALSE},
    {"topology.fabric.switch_latency", FALSE},
};

/* The scalar at a dotted path of the resolved tree, or NULL. */
static const char *tree_value(const ConfNode *root, const char *path) {
    g_auto(GStrv) parts = g_strsplit(path, ".", -1);
    const ConfNode *n = root;
    for (int i = 0; parts[i] && n; i++)
        n = n->kind == CONF_MAP ? conf_get(n, parts[i]) : NULL;
    return n && n->kind == CONF_SCALAR ? n->value : NULL;
}

typedef struct {
    const char *scenario;
    char **sets;      /* the user's --set, NULL-terminated */
    char *extra;      /* this point's own K=V, NULL for the base run */
    double iteration; /* seconds; NAN when the run failed */
    char *error;      /* its message */
} Point;

static void run_point(gpointer data, gpointer user) {
    (void)user;
    Point *p = data;
    g_autoptr(GPtrArray) sets = g_ptr_array_new();
    for (char **s = p->sets; s && *s; s++)
        g_ptr_array_add(sets, *s);
    if (p->extra)
        g_ptr_array_add(sets, p->extra);
    g_ptr_array_add(sets, NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = scenario_load(p->scenario, (char **)sets->pdata, &err);
    g_autoptr(SimRun) run = sc ? sim_run(sc, -1, &err) : NULL;
    p->iteration = run ? sim_time_s(sim_summary(run)->iteration) : NAN;
    if (!run)
        p->error = g_strdup(err->message);
}

typedef struct {
    const char *path;
    const char *value;
    double down, up; /* iteration time change, fraction of the base run's */
} Row;

static gint row_cmp(gconstpointer a, gconstpointer b) {
    const Row *x = a, *y = b;
    double mx = fmax(fabs(x->down), fabs(x->up)), my = fmax(fabs(y->down), fabs(y->up));
    return mx < my ? 1 : mx > my ? -1 : strcmp(x->path, y->path);
}

int cmd_sensitivity(int argc, char **argv) {
    g_auto(GStrv) sets = NULL;
    int jobs = (int)g_get_num_processors();
    double by = 0.10;
    GOptionEntry entries[] = {
        {"set", 's', 0, G_OPTION_ARG_STRING_ARRAY, &sets, "Override a scenario key (repeatable)",
         "KEY=VALUE"},
        {"by", 0, 0, G_OPTION_ARG_DOUBLE, &by, "Move each constant by this fraction (default 0.10)",
         "F"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs, "Runs at once (default: every processor)", "N"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("SCENARIO - the change of the iteration time per assumed constant");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_autoptr(GError) err = NULL;
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim sensitivity", &argc, &argv, &help, &err)) {
        fprintf(stderr, "sim sensitivity: %s (try --help)\n", err->message);
        return 2;
    }
    if (help) {
        fputs(help, stdout);
        return 0;
    }
    if (argc != 2 || !(by > 0 && by < 1)) {
        fprintf(stderr, "sim sensitivity: give one SCENARIO, and --by in (0, 1)\n");
        return 2;
    }
    g_autofree char *scenario = cmd_scenario_path(argv[1]); /* a file, or a shipped one's name */
    argv[1] = scenario;
    g_autoptr(ConfNode) tree = scenario_resolve(argv[1], sets, &err);
    if (!tree) {
        fprintf(stderr, "sim sensitivity: %s\n", err->message);
        return 2;
    }
    /* points: the base run, then each constant down and up */
    g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(Row));
    g_autoptr(GPtrArray) points = g_ptr_array_new();
    Point *base = g_new0(Point, 1);
    base->scenario = argv[1];
    base->sets = sets;
    g_ptr_array_add(points, base);
    for (size_t i = 0; i < G_N_ELEMENTS(params); i++) {
        const char *v = tree_value(tree, params[i].path);
        if (!v)
            continue;
        char *rest = NULL;
        double x = g_ascii_strtod(v, &rest);
        if (rest == v || x == 0.0)
            continue; /* not a number, or 0: nothing to move */
        Row r = {params[i].path, v, 0, 0};
        g_array_append_val(rows, r);
        for (int d = 0; d < 2; d++) {
            double y = x * (d == 0 ? 1 - by : 1 + by);
            if (params[i].fraction && x <= 1.0)
                y = MIN(y, 1.0);
            char num[G_ASCII_DTOSTR_BUF_SIZE];
            g_ascii_formatd(num, sizeof num, "%.9g", y);
            Point *p = g_new0(Point, 1);
            p->scenario = argv[1];
            p->sets = sets;
            p->extra = g_strdup_printf("%s=%s%s", params[i].path, num, rest);
            g_ptr_array_add(points, p);
        }
    }
    GThreadPool *pool = g_thread_pool_new(run_point, NULL, MAX(jobs, 1), TRUE, NULL);
    for (guint i = 0; i < points->len; i++)
        g_thread_pool_push(pool, points->pdata[i], NULL);
    g_thread_pool_free(pool, FALSE, TRUE);
    int rc = 0;
    for (guint i = 0; i < points->len; i++) {
        Point *p = points->pdata[i];
        if (p->error) {
            fprintf(stderr, "sim sensitivity: %s%s%s\n", p->extra ? p->extra : "",
                    p->extra ? ": " : "", p->error);
            rc = 2;
        }
    }
    if (rc == 0) {
        double t0 = base->iteration;
        for (guint k = 0; k < rows->len; k++) {
            Row *r = &g_array_index(rows, Row, k);
            const Point *dn = points->pdata[1 + 2 * k], *up = points->pdata[2 + 2 * k];
            r->down = dn->iteration / t0 - 1;
            r->up = up->iteration / t0 - 1;
        }
        g_array_sort(rows, row_cmp);
        printf("sensitivity of %s: iteration %.6f s; each constant moved by -%g%% and +%g%%\n"
               "(a fraction no further than 1), largest change first\n\n",
               argv[1], t0, 100 * by, 100 * by);
        printf("%-44s %14s %12s %12s\n", "constant", "value", "down", "up");
        for (guint k = 0; k < rows->len; k++) {
            const Row *r = &g_array_index(rows, Row, k);
            printf("%-44s %14s %+11.2f%% %+11.2f%%\n", r->path, r->value, 100 * r->down,
                   100 * r->up);
        }
        if (fflush(stdout) != 0)
            rc = 1;
    }
    for (guint i = 0; i < points->len; i++) {
        Point *p = points->pdata[i];
        g_free(p->extra);
        g_free(p->error);
        g_free(p);
    }
    return rc;
}
