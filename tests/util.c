#include "util.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *scen(const char *file) {
    static char buf[4096];
    g_snprintf(buf, sizeof buf, "%s/%s", SIM_TEST_SCENARIOS, file);
    return buf;
}

char *write_temp_yaml(const char *text) {
    char *path = NULL;
    g_autoptr(GError) err = NULL;
    int fd = g_file_open_tmp("simtest-XXXXXX.yaml", &path, &err);
    ck_assert_msg(fd >= 0, "cannot create a temporary file");
    close(fd);
    ck_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

Scenario *load_ok(const char *file, const char *const *sets) {
    g_autoptr(GError) err = NULL;
    Scenario *sc = scenario_load(scen(file), (char *const *)sets, &err);
    ck_assert_msg(sc != NULL, "loading %s failed: %s", file, err ? err->message : "?");
    return sc;
}

void load_fails(const char *file, const char *const *sets, const char *want) {
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = scenario_load(scen(file), (char *const *)sets, &err);
    ck_assert_msg(sc == NULL && err, "%s: expected an error with '%s'", file, want);
    ck_assert_msg(strstr(err->message, want), "message '%s' lacks '%s'", err->message, want);
}

SimRun *run_ok(const Scenario *sc, int dedup) {
    g_autoptr(GError) err = NULL;
    SimRun *run = sim_run(sc, dedup, &err);
    ck_assert_msg(run != NULL, "simulating %s failed: %s", sc->path, err ? err->message : "?");
    return run;
}

char *json_of(const SimRun *run) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    report_write(f, run, REPORT_JSON, FALSE);
    fclose(f);
    char *copy = g_strndup(buf, len);
    free(buf);
    return copy;
}

static void count_done(void *ctx, uint64_t arg) {
    (void)arg;
    (*(int *)ctx)++;
}

Topology *topo_ok(const Scenario *sc) {
    g_autoptr(GError) err = NULL;
    Topology *topo = topo_new(&sc->topo, sc->nodes, &err);
    ck_assert_msg(topo, "%s", err ? err->message : "");
    return topo;
}

SimTime coll_time_alone(const Scenario *sc, CollOp op, const int *members, int n, double bytes) {
    g_autoptr(Topology) topo = topo_ok(sc);
    g_autoptr(Engine) eng = engine_new();
    g_autoptr(Network) net = net_new(eng, topo);
    net_set_sharing(net, sc->contention);
    g_autoptr(Collectives) coll = coll_new(eng, net, topo);
    coll_set_mode(coll, sc->detailed ? COLL_MODE_DETAILED : COLL_MODE_AGGREGATED);
    int calls = 0;
    coll_start(coll, &(CollCall){.op = op, .members = members, .n = n, .bytes = bytes}, count_done,
               &calls, 0);
    SimTime end = engine_run(eng);
    ck_assert_int_eq(calls, 1);
    return end;
}

int run_suite(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}

double gathers_alone(const Scenario *sc, const int *members, int n, int elem) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double total = 0;
    for (guint i = 0; i < units->len; i++) {
        double sizes[32];
        int k = model_unit_tensors(&sc->model, &g_array_index(units, ParamUnit, i), sc->seq_len,
                                   sc->tp, sizes, 32);
        for (int j = 0; j < k; j++) /* tensors DeepSpeed keeps whole are never gathered */
            if (sizes[j] >= sc->persist_elems)
                total += (double)coll_time_alone(sc, COLL_ALLGATHER, members, n, sizes[j] * elem);
    }
    return total;
}

void assert_same_inventory(const SimRun *one, const SimRun *all) {
    ck_assert_int_eq(sim_summary(one)->iteration, sim_summary(all)->iteration);
    GArray *ra = stats_comm_rows(sim_stats(one), 0), *rb = stats_comm_rows(sim_stats(all), 0);
    ck_assert_uint_eq(ra->len, rb->len);
    for (guint i = 0; i < ra->len; i++) {
        CommRow *x = &g_array_index(ra, CommRow, i), *y = &g_array_index(rb, CommRow, i);
        ck_assert_int_eq(x->op, y->op);
        ck_assert_int_eq(x->dim, y->dim);
        ck_assert_double_eq_tol(x->total_volume_bytes, y->total_volume_bytes,
                                1e-9 * y->total_volume_bytes);
        ck_assert_double_eq_tol(x->calls, y->calls, 1e-9);
    }
    stats_rows_free(ra);
    stats_rows_free(rb);
}

typedef struct {
    SimTime at[128];
    Engine *eng;
} Ends;

static void on_end(void *ctx, uint64_t i) {
    Ends *e = ctx;
    e->at[i] = engine_now(e->eng);
}

void assert_flows_alike(const Topology *topo, GArray *const *flows, int n, const double *bytes,
                        const SimTime *lat, void (*set)(Network *, gboolean), uint64_t looked[2]) {
    g_assert(n <= 128);
    SimTime at[2][128];
    GArray *busiest[2];
    for (int on = 0; on < 2; on++) {
        g_autoptr(Engine) eng = engine_new();
        g_autoptr(Network) net = net_new(eng, topo);
        set(net, on);
        Ends e = {{0}, eng};
        for (int f = 0; f < n; f++)
            net_flow(net, (const NetLoad *)flows[f]->data, (int)flows[f]->len, bytes[f], lat[f],
                     f % NET_CLASSES, on_end, &e, (uint64_t)f);
        engine_run(eng);
        memcpy(at[on], e.at, sizeof at[on]);
        looked[on] = net_solved_links(net);
        busiest[on] = net_busiest_links(net, 1 << 20);
        for (int max = 0; max < 12; max += 3) { /* the few: the first of the full list */
            GArray *few = net_busiest_links(net, max);
            ck_assert_uint_eq(few->len, MIN((guint)max, busiest[on]->len));
            ck_assert(few->len == 0 ||
                      memcmp(few->data, busiest[on]->data, sizeof(NetLinkStat) * few->len) == 0);
            g_array_unref(few);
        }
    }
    for (int f = 0; f < n; f++)
        ck_assert_int_eq(at[0][f], at[1][f]);
    ck_assert_uint_eq(busiest[0]->len, busiest[1]->len);
    ck_assert(busiest[0]->len == 0 || memcmp(busiest[0]->data, busiest[1]->data,
                                             sizeof(NetLinkStat) * busiest[0]->len) == 0);
    for (int on = 0; on < 2; on++)
        g_array_unref(busiest[on]);
}

GArray *random_flow_loads(GRand *rng, int nlinks, const GArray *prev, const int32_t *pool,
                          int npool, int maxn, int maxw, gboolean mostly_one) {
    GArray *a = g_array_new(FALSE, FALSE, sizeof(NetLoad));
    gboolean *used = g_new0(gboolean, nlinks);
    for (int n = g_rand_int_range(rng, 1, maxn), i = 0; i < n; i++) {
        int32_t id =
            prev && g_rand_boolean(rng)
                ? g_array_index(prev, NetLoad, g_rand_int_range(rng, 0, (int)prev->len)).link
            : pool ? pool[g_rand_int_range(rng, 0, npool)]
                   : g_rand_int_range(rng, 0, nlinks);
        if (used[id])
            continue;
        used[id] = TRUE;
        NetLoad ld = {id, (uint32_t)g_rand_int_range(rng, 1, maxw)};
        if (mostly_one && g_rand_int_range(rng, 0, 3))
            ld.weight = 1;
        g_array_append_val(a, ld);
    }
    g_free(used);
    return a;
}

double persistent_params(const Scenario *sc) {
    g_autoptr(GArray) units = model_stage_units(&sc->model, sc->seq_len, sc->tp, 1, 0);
    double total = 0;
    for (guint i = 0; i < units->len; i++) {
        double sizes[32];
        int k = model_unit_tensors(&sc->model, &g_array_index(units, ParamUnit, i), sc->seq_len,
                                   sc->tp, sizes, 32);
        for (int j = 0; j < k; j++)
            if (sizes[j] < sc->persist_elems)
                total += sizes[j];
    }
    return total;
}
