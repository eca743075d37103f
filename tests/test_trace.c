/* Chrome / Perfetto traces: the file is JSON of the trace-event format; a process per simulated
 * rank, a named thread per stream; every task a slice with layer, micro-batch and bytes; slices
 * of a stream never overlap and add up to what Stats measured; each send joined to its receive by
 * a flow; --trace-ranks limits the ranks; the same run gives the same bytes. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"
#include "util.h"

typedef struct {
    JsonParser *parser;
    JsonArray *events;
    SimRun *run;
    Scenario *sc;
    char *text;
} Traced;

static void traced_clear(Traced *t) {
    g_clear_object(&t->parser);
    g_clear_pointer(&t->run, sim_run_free);
    g_clear_pointer(&t->sc, scenario_free);
    g_clear_pointer(&t->text, g_free);
}

/* Simulate file (with sets) while tracing ranks (NULL default); load the trace back as JSON. */
static void trace_run(Traced *t, const char *file, const char *const *sets, const char *ranks,
                      int dedup) {
    g_autoptr(GError) err = NULL;
    char *path = NULL;
    int fd = g_file_open_tmp("simtrace-XXXXXX.json", &path, &err);
    ck_assert(fd >= 0);
    close(fd);
    t->sc = load_ok(file, sets);
    g_autoptr(Trace) tr = trace_new(t->sc, dedup, path, ranks, &err);
    ck_assert_msg(tr != NULL, "%s", err ? err->message : "?");
    t->run = sim_run_observed(t->sc, dedup, trace_observer(tr), &err);
    ck_assert_msg(t->run != NULL, "%s", err ? err->message : "?");
    ck_assert(trace_finish(tr, t->run, &err));
    ck_assert(g_file_get_contents(path, &t->text, NULL, NULL));
    t->parser = json_parser_new();
    ck_assert_msg(json_parser_load_from_file(t->parser, path, &err), "trace is not JSON: %s",
                  err ? err->message : "?");
    JsonObject *root = json_node_get_object(json_parser_get_root(t->parser));
    ck_assert_str_eq(json_object_get_string_member(root, "displayTimeUnit"), "ms");
    t->events = json_object_get_array_member(root, "traceEvents");
    ck_assert_ptr_nonnull(t->events);
    unlink(path);
    g_free(path);
}

static const char *ph(JsonObject *e) {
    return json_object_get_string_member(e, "ph");
}

static int count_meta(const Traced *t, const char *name) {
    int n = 0;
    for (guint i = 0; i < json_array_get_length(t->events); i++) {
        JsonObject *e = json_array_get_object_element(t->events, i);
        n += !strcmp(ph(e), "M") && !strcmp(json_object_get_string_member(e, "name"), name);
    }
    return n;
}

typedef struct {
    double ts, dur;
} Slice;

static gint cmp_slice(gconstpointer a, gconstpointer b) {
    double x = ((const Slice *)a)->ts, y = ((const Slice *)b)->ts;
    return (x > y) - (x < y);
}

#define HOST_TID STREAM_COUNT /* the host thread's track */

/* TP 4 x PP 2 on one node, 8 micro-batches: every rank simulated. */
START_TEST(test_structure) {
    Traced t = {0};
    trace_run(&t, "1.3B_tp_pp.yaml", NULL, NULL, -1);
    const Scenario *sc = t.sc;
    ck_assert_int_eq(count_meta(&t, "process_name"), 8);
    ck_assert_int_ge(count_meta(&t, "thread_name"), 8 * 3);
    /* slices per (rank, stream) */
    GArray *slices[8][STREAM_COUNT + 1];
    for (int r = 0; r < 8; r++)
        for (int s = 0; s <= HOST_TID; s++)
            slices[r][s] = g_array_new(FALSE, FALSE, sizeof(Slice));
    g_autoptr(GHashTable) starts =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    int flows_s = 0, flows_f = 0, slowed = 0;
    /* a pipeline send's bytes: DeepSpeed's engine sends each TP rank's 1/t (framework.c) */
    double act = (double)sc->micro_batch * sc->seq_len * sc->model.hidden * 2 /
                 (sc->pp_scatter_gather ? sc->tp : 1);
    SimTime q = sc->topo.host_op_dispatch; /* gcd of the host's costs, in picoseconds */
    for (SimTime b = sc->topo.host_comm_dispatch; b;) {
        SimTime r = q % b;
        q = b;
        b = r;
    }
    for (SimTime b = sc->topo.host_step; b;) {
        SimTime r = q % b;
        q = b;
        b = r;
    }
    ck_assert(q > 0);
    double host_quantum_us = (double)q / 1e6;
    for (guint i = 0; i < json_array_get_length(t.events); i++) {
        JsonObject *e = json_array_get_object_element(t.events, i);
        if (!strcmp(ph(e), "M"))
            continue;
        int pid = (int)json_object_get_int_member(e, "pid");
        int tid = (int)json_object_get_int_member(e, "tid");
        double ts = json_object_get_double_member(e, "ts");
        ck_assert(pid >= 0 && pid < 8 && tid >= 0 && tid <= HOST_TID);
        if (!strcmp(ph(e), "X") && tid == HOST_TID) { /* launches: one CPU thread, in turn */
            ck_assert_str_eq(json_object_get_string_member(e, "cat"), "host");
            Slice s = {ts, json_object_get_double_member(e, "dur")};
            /* a run of launches: a sum of the topology's CPU costs per kernel, per collective and
             * per optimizer step, so a positive multiple of their greatest common divisor (was:
             * only > 0) */
            ck_assert_msg(s.dur >= host_quantum_us - 1e-6 &&
                              fabs(s.dur / host_quantum_us - round(s.dur / host_quantum_us)) < 1e-6,
                          "host slice of %.6f us is not a multiple of %.6f us", s.dur,
                          host_quantum_us);
            g_array_append_val(slices[pid][tid], s);
        } else if (!strcmp(ph(e), "X")) {
            JsonObject *a = json_object_get_object_member(e, "args");
            ck_assert(json_object_has_member(a, "layer") && json_object_has_member(a, "micro") &&
                      json_object_has_member(a, "bytes"));
            double bytes = json_object_get_double_member(a, "bytes");
            if (tid == STREAM_COMPUTE)
                ck_assert_double_eq(bytes, 0);
            else
                ck_assert_str_eq(json_object_get_string_member(a, "dim"),
                                 tid == STREAM_TP                              ? "tp"
                                 : tid == STREAM_DP || tid == STREAM_DP_GATHER ? "dp"
                                                                               : "pp");
            if (tid >= STREAM_PP_SEND_FWD)
                ck_assert_double_eq(bytes, act);
            Slice s = {ts, json_object_get_double_member(e, "dur")};
            ck_assert(s.dur >= 0);
            if (json_object_has_member(a, "slowed")) { /* communication ran under it */
                ck_assert_int_eq(tid, STREAM_COMPUTE);
                ck_assert(s.dur > json_object_get_double_member(a, "alone_us"));
                slowed++;
            }
            g_array_append_val(slices[pid][tid], s);
        } else {
            gint64 id = json_object_get_int_member(e, "id");
            if (!strcmp(ph(e), "s")) {
                flows_s++;
                ck_assert(tid == STREAM_PP_SEND_FWD || tid == STREAM_PP_SEND_BWD);
                double *at = g_new(double, 2);
                at[0] = ts;
                at[1] = pid;
                g_hash_table_insert(starts, g_memdup2(&id, sizeof id), at);
            } else {
                ck_assert_str_eq(ph(e), "f");
                ck_assert_str_eq(json_object_get_string_member(e, "bp"), "e");
                ck_assert(tid == STREAM_PP_RECV_FWD || tid == STREAM_PP_RECV_BWD);
                flows_f++;
            }
        }
    }
    /* every flow's two ends: same id, same time, neighbouring stages (stride dp x tp = 4) */
    for (guint i = 0; i < json_array_get_length(t.events); i++) {
        JsonObject *e = json_array_get_object_element(t.events, i);
        if (strcmp(ph(e), "f"))
            continue;
        gint64 id = json_object_get_int_member(e, "id");
        double *at = g_hash_table_lookup(starts, &id);
        ck_assert_msg(at != NULL, "flow %" G_GINT64_FORMAT " ends but never starts", id);
        ck_assert_double_eq(at[0], json_object_get_double_member(e, "ts"));
        ck_assert_int_eq(abs((int)at[1] - (int)json_object_get_int_member(e, "pid")), 4);
    }
    /* 8 micro-batches, 4 TP ranks, one stage boundary, both directions */
    ck_assert_int_eq(flows_s, 8 * 4 * 2);
    ck_assert_int_eq(flows_f, flows_s);
    /* the compute stream waits for each pipeline send, and TP's allreduces are on its path:
     * nothing runs under compute here (test_dp_and_determinism sees slowed compute) */
    ck_assert_int_eq(slowed, 0);
    const Stats *st = sim_stats(t.run);
    for (int r = 0; r < 8; r++) {
        int i = sim_index_of(t.run, r);
        double busy = 0;
        ck_assert_uint_gt(slices[r][HOST_TID]->len, 0);
        for (int s = 0; s <= HOST_TID; s++) {
            GArray *a = slices[r][s];
            g_array_sort(a, cmp_slice);
            for (guint k = 1; k < a->len; k++) {
                const Slice *p = &g_array_index(a, Slice, k - 1), *q = &g_array_index(a, Slice, k);
                ck_assert_msg(p->ts + p->dur <= q->ts + 1e-6, "rank %d stream %d: slices overlap",
                              r, s);
            }
            if (s == STREAM_COMPUTE)
                for (guint k = 0; k < a->len; k++)
                    busy += g_array_index(a, Slice, k).dur;
        }
        /* compute slices add up to the compute time Stats measured; one TP slice per call (the
         * allreduces, and the pipeline engine's gathers of partitioned sends) */
        double want = (double)stats_rank(st, i).compute / 1e6;
        ck_assert_msg(fabs(busy - want) < 1e-3, "rank %d: compute slices %.6f us, stats %.6f", r,
                      busy, want);
        ck_assert_double_eq(slices[r][STREAM_TP]->len,
                            stats_rank_calls(st, i, COLL_ALLREDUCE, DIM_TP) +
                                stats_rank_calls(st, i, COLL_ALLGATHER, DIM_TP));
        for (int s = 0; s <= HOST_TID; s++)
            g_array_unref(slices[r][s]);
    }
    traced_clear(&t);
}
END_TEST

/* --trace-ranks: only the chosen ranks, and flows only where both ends are traced. */
START_TEST(test_rank_choice) {
    Traced t = {0};
    trace_run(&t, "1.3B_tp_pp.yaml", NULL, "0,4", -1);
    ck_assert_int_eq(count_meta(&t, "process_name"), 2);
    int flows = 0;
    for (guint i = 0; i < json_array_get_length(t.events); i++) {
        JsonObject *e = json_array_get_object_element(t.events, i);
        int pid = (int)json_object_get_int_member(e, "pid");
        ck_assert(pid == 0 || pid == 4);
        flows += !strcmp(ph(e), "s");
    }
    ck_assert_int_eq(flows, 8 * 2);
    traced_clear(&t);
    /* a deduplicated run simulates one replica: the others cannot be traced */
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = load_ok("1.3B_zero1.yaml", NULL);
    g_autoptr(Trace) tr = trace_new(sc, -1, "/dev/null", "0-3", &err);
    ck_assert_int_eq(trace_ranks(tr), 1);
    ck_assert_int_eq(trace_unsimulated(tr), 3);
    g_autoptr(Trace) all = trace_new(sc, 0, "/dev/null", "0-3", &err);
    ck_assert_int_eq(trace_ranks(all), 4);
    for (const char *const *bad = (const char *const[]){"16", "3-1", "x", "1,", "-2", NULL}; *bad;
         bad++) {
        ck_assert_ptr_null(trace_new(sc, -1, "/dev/null", *bad, &err));
        ck_assert_msg(strstr(err->message, "--trace-ranks"), "%s", err->message);
        g_clear_error(&err);
    }
}
END_TEST

/* Data parallelism across nodes: the representative rank's DP stream; same bytes twice. */
START_TEST(test_dp_and_determinism) {
    const char *sets[] = {"nodes=4", "training.comms_logger=false", NULL}; /* let DP overlap */
    Traced a = {0}, b = {0};
    trace_run(&a, "13B_tp8.yaml", sets, NULL, -1);
    trace_run(&b, "13B_tp8.yaml", sets, NULL, -1);
    ck_assert_int_eq(count_meta(&a, "process_name"), 8);
    ck_assert(strstr(a.text, "\"name\": \"reduce dp grads"));
    ck_assert(strstr(a.text, "\"name\": \"allgather dp params"));
    ck_assert(strstr(a.text, "\"slowed\"")); /* the DP reduces run under backward's compute */
    ck_assert(strcmp(a.text, b.text) == 0);
    traced_clear(&a);
    traced_clear(&b);
}
END_TEST

int main(void) {
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_structure);
    tcase_add_test(tc, test_rank_choice);
    tcase_add_test(tc, test_dp_and_determinism);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
