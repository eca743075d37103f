/* STEADY STATE (sim/run/steady.c): the extrapolation of a run's statistics from three cuts by
 * closed form on a synthetic rank, its refusal of uneven steps, the rounding allowed to running
 * sums, and a 1F1B run extrapolated against the same run with every micro-batch simulated, to the
 * picosecond. */
#include <string.h>

#include "steps.h"

#include "util.h"

/* A rank's statistics over m periods of 20 ps after a 100 ps prologue of compute: each period a
 * 1,000-byte TP allreduce (2,000 bytes of volume) in flight for 15 ps under 10 ps of compute, then
 * 5 ps idle. Copies are taken at the start of periods 3, 4 and 5 into cut (where not NULL). With
 * `late`, period 4's allreduce ends 1 ps later (an uneven step between the second and third cut).
 */
static Stats *periods(int m, gboolean late, Stats *cut[3]) {
    Stats *st = stats_new(1, 1, 1);
    stats_compute(st, 0, TRUE, 0);
    stats_compute(st, 0, FALSE, 100);
    SimTime t = 100;
    for (int i = 0; i < m; i++, t += 20) {
        if (cut && i >= 3 && i <= 5)
            cut[i - 3] = stats_copy(st);
        stats_issue(st, 0, COLL_ALLREDUCE, DIM_TP, 1000, 2000);
        stats_comm(st, 0, COLL_ALLREDUCE, DIM_TP, TRUE, t);
        stats_compute(st, 0, TRUE, t);
        stats_compute(st, 0, FALSE, t + 10);
        stats_comm(st, 0, COLL_ALLREDUCE, DIM_TP, FALSE, t + 15 + (late && i == 4));
    }
    stats_finish(st, 0, t);
    return st;
}

static void cuts_free(Stats *cut[3]) {
    for (int i = 0; i < 3; i++)
        stats_free(cut[i]);
}

static void rank_eq(RankTimes x, RankTimes y) {
    ck_assert_int_eq(x.finish, y.finish);
    ck_assert_int_eq(x.compute, y.compute);
    ck_assert_int_eq(x.comm, y.comm);
    ck_assert_int_eq(x.exposed, y.exposed);
    ck_assert_int_eq(x.bubble, y.bubble);
}

/* 7 periods cut at periods 3, 4 and 5, moved by 5 periods of 20 ps, are 12 periods: finish
 * 100 + 12 x 20, compute 100 + 12 x 10, communication 12 x 15 of which 12 x 5 exposed, bubble
 * 12 x 5, 12 calls of one size. */
START_TEST(test_stats_closed_form) {
    Stats *cut[3];
    g_autoptr(Stats) run = periods(7, FALSE, cut);
    g_autoptr(Stats) full = periods(12, FALSE, NULL);
    ck_assert(stats_extrapolate(run, cut[0], cut[1], cut[2], 20, 5));
    cuts_free(cut);
    RankTimes r = stats_rank(run, 0);
    ck_assert_int_eq(r.finish, 100 + 12 * 20);
    ck_assert_int_eq(r.compute, 100 + 12 * 10);
    ck_assert_int_eq(r.comm, 12 * 15);
    ck_assert_int_eq(r.exposed, 12 * 5);
    ck_assert_int_eq(r.bubble, 12 * 5);
    rank_eq(r, stats_rank(full, 0));
    GArray *x = stats_comm_rows(run, 0), *y = stats_comm_rows(full, 0);
    ck_assert_uint_eq(x->len, 1);
    CommRow *p = &g_array_index(x, CommRow, 0), *q = &g_array_index(y, CommRow, 0);
    ck_assert_double_eq(p->calls, 12);
    ck_assert_double_eq(p->message_bytes, 12 * 1000.0);
    ck_assert_double_eq(p->volume_bytes, 12 * 2000.0);
    ck_assert_int_eq(p->time, 12 * 15);
    ck_assert_double_eq(p->exposed, q->exposed);
    ck_assert_double_eq(p->hidden, 12 * 10.0);
    ck_assert_uint_eq(p->sizes->len, 1);
    ck_assert_double_eq(g_array_index(p->sizes, SizeCount, 0).calls, 12);
    stats_rows_free(x);
    stats_rows_free(y);
}
END_TEST

/* A step that differs by a picosecond is refused, and the statistics stay as they ran; so is a
 * period that does not match the cuts' own. */
START_TEST(test_stats_uneven_refused) {
    Stats *cut[3];
    g_autoptr(Stats) run = periods(7, TRUE, cut);
    g_autoptr(Stats) same = periods(7, TRUE, NULL);
    ck_assert(!stats_extrapolate(run, cut[0], cut[1], cut[2], 20, 5));
    rank_eq(stats_rank(run, 0), stats_rank(same, 0));
    ck_assert_double_eq(stats_rank_calls(run, 0, COLL_ALLREDUCE, DIM_TP), 7);
    cuts_free(cut);
    /* cuts taken in another order (not one period apart) step unevenly */
    g_autoptr(Stats) even = periods(7, FALSE, cut);
    ck_assert(!stats_extrapolate(even, cut[0], cut[2], cut[1], 20, 5));
    ck_assert_int_eq(stats_rank(even, 0).finish, 100 + 7 * 20);
    cuts_free(cut);
}
END_TEST

/* Running sums of doubles: steps equal but for the sum's rounding are even (0.1 added to 0.1
 * and to 0.2 gives steps 0.1 and 0.10000000000000003); a step off by a millionth is not. */
START_TEST(test_steps_even_rounding) {
    double a = 0.1, b = a + 0.1, c = b + 0.1;
    ck_assert(b - a != c - b);
    ck_assert(steps_even(a, b, c));
    ck_assert(!steps_even(0, 1, 2.000001));
    ck_assert(!steps_even(1e9, 2e9, 3e9 + 1));
    ck_assert(steps_even(1e9, 2e9, 3e9));
}
END_TEST

/* Whether two JSON reports are the same bytes from the line after "overrides" (which names the
 * switch) up to "resolved_scenario" (which holds it, followed by the sim block's counters), and
 * before "overrides". */
static gboolean report_part_eq(const char *a, const char *b) {
    const char *oa = strstr(a, "\"overrides\""), *ob = strstr(b, "\"overrides\"");
    const char *ra = strstr(a, "\"resolved_scenario\""), *rb = strstr(b, "\"resolved_scenario\"");
    if (!oa || !ob || !ra || !rb || oa - a != ob - b || memcmp(a, b, (size_t)(oa - a)))
        return FALSE;
    oa = strchr(oa, '\n');
    ob = strchr(ob, '\n');
    return ra - oa == rb - ob && !memcmp(oa, ob, (size_t)(ra - oa));
}

#define PIPE_SETS                                                                                  \
    "parallel.pp=4", "parallel.dp=2", "parallel.schedule=1f1b", "training.grad_accum=64",          \
        "training.synchronize_each_layer=false", "model.layers=16"

/* 1.3B on 4 stages, 64 micro-batches: one short run of 29 micro-batches cut at the forwards of
 * micro-batches 24, 25 and 26 (CUT_FIRST_MIN) and extrapolated, equal to the run with every
 * micro-batch in the iteration, the critical rank's times and its communication rows; the JSON
 * reports (host work included) the same bytes but for the sim block. */
START_TEST(test_run_matches_every_micro_batch) {
    const char *on[] = {PIPE_SETS, NULL}, *off[] = {PIPE_SETS, "sim.steady_state=false", NULL};
    g_autoptr(Scenario) sa = load_ok("1.3B_pp.yaml", on);
    g_autoptr(Scenario) sb = load_ok("1.3B_pp.yaml", off);
    g_autoptr(SimRun) ra = run_ok(sa, -1);
    g_autoptr(SimRun) rb = run_ok(sb, -1);
    const SimSummary *x = sim_summary(ra), *y = sim_summary(rb);
    ck_assert_int_eq(x->steady, STEADY_EXTRAPOLATED);
    ck_assert_int_eq(x->micro_batches_simulated, 29);
    ck_assert_int_eq(y->steady, STEADY_OFF);
    ck_assert_int_eq(y->micro_batches_simulated, 64);
    ck_assert_int_eq(x->iteration, y->iteration);
    ck_assert_int_eq(x->critical_rank, y->critical_rank);
    rank_eq(x->critical, y->critical);
    ck_assert(x->events < y->events);
    g_autofree char *ja = json_of(ra), *jb = json_of(rb);
    ck_assert(report_part_eq(ja, jb));
}
END_TEST

#define INTERLEAVED_SETS PIPE_SETS, "parallel.schedule=interleaved", "parallel.virtual_stages=2"

/* The interleaved schedule (2 chunks a stage) repeats by rounds of p micro-batches: 1.3B on 4
 * stages, 64 micro-batches. Without interference, one short run of 36 cut at the forwards of
 * micro-batches 24, 28 and 32 (whole rounds, the first past CUT_FIRST_MIN) and moved by 7
 * rounds equals the run with every micro-batch. With interference the second data-parallel
 * replica's pipeline runs a little slower than the first's (3 ms behind it after 28 more
 * micro-batches) while its sums step evenly from cut to cut: its last change stepping by more than
 * the period refuses the cuts, and every micro-batch is simulated (extrapolated, the iteration
 * came out 3 ms short). */
START_TEST(test_interleaved_matches_every_micro_batch) {
    for (int interference = 0; interference < 2; interference++) {
        const char *sw = interference ? "sim.interference=true" : "sim.interference=false";
        const char *on[] = {INTERLEAVED_SETS, sw, NULL};
        const char *off[] = {INTERLEAVED_SETS, sw, "sim.steady_state=false", NULL};
        g_autoptr(Scenario) sa = load_ok("1.3B_pp.yaml", on);
        g_autoptr(Scenario) sb = load_ok("1.3B_pp.yaml", off);
        g_autoptr(SimRun) ra = run_ok(sa, -1);
        g_autoptr(SimRun) rb = run_ok(sb, -1);
        const SimSummary *x = sim_summary(ra), *y = sim_summary(rb);
        ck_assert_int_eq(x->steady, interference ? STEADY_DIVERGED : STEADY_EXTRAPOLATED);
        ck_assert_int_eq(x->micro_batches_simulated, interference ? 64 : 36);
        ck_assert_int_eq(y->micro_batches_simulated, 64);
        ck_assert_int_eq(x->iteration, y->iteration);
        rank_eq(x->critical, y->critical);
        g_autofree char *ja = json_of(ra), *jb = json_of(rb);
        ck_assert(report_part_eq(ja, jb));
    }
}
END_TEST

/* The host's work of a stage with 64 micro-batches, from its program with 29 moved by 35 periods
 * (exec_host_work_extrapolate: one period of tasks from micro-batch 24's first forward to 25's),
 * equals that of the program with 64, every stage, to the picosecond; on stage 0 a first period
 * in the warm-up (micro-batch 2's forward alone) and a second with a backward (3's forward and
 * 0's backward) do not repeat and are refused, as is a period past the last forward. */
START_TEST(test_host_work_matches_full_program) {
    const char *shortm[] = {PIPE_SETS, "training.grad_accum=29", NULL};
    const char *fullm[] = {PIPE_SETS, NULL};
    g_autoptr(Scenario) ss = load_ok("1.3B_pp.yaml", shortm);
    g_autoptr(Scenario) sf = load_ok("1.3B_pp.yaml", fullm);
    ck_assert(ss->host);
    g_autoptr(Topology) ts = topo_ok(ss);
    g_autoptr(Topology) tf = topo_ok(sf);
    g_autoptr(Workload) ws = workload_new(ss, ts);
    g_autoptr(Workload) wf = workload_new(sf, tf);
    for (int st = 0; st < ss->pp; st++) {
        const Program *ps = workload_program(ws, st), *pf = workload_program(wf, st);
        HostWork x, y = exec_host_work(&sf->topo, pf);
        ck_assert(exec_host_work_extrapolate(&ss->topo, ps, 24, 1, 64 - 29, &x));
        ck_assert_double_eq_tol(x.dispatch_s, y.dispatch_s, 1e-15);
        ck_assert_double_eq_tol(x.hooks_s, y.hooks_s, 1e-15);
        ck_assert_double_eq_tol(x.comm_s, y.comm_s, 1e-15);
        ck_assert_double_eq_tol(x.step_s, y.step_s, 1e-15);
        ck_assert_int_eq(x.syncs, y.syncs);
        ck_assert(y.comm_s > 0 && y.dispatch_s > 0);
        ck_assert(!exec_host_work_extrapolate(&ss->topo, ps, 27, 1, 64 - 29, &x));
    }
    ck_assert(!exec_host_work_extrapolate(&ss->topo, workload_program(ws, 0), ss->pp - 2, 1,
                                          64 - 29, &(HostWork){0}));
}
END_TEST

/* Too few micro-batches for the short run to cost half the run: every one simulated. */
START_TEST(test_short_pipeline_simulated) {
    const char *sets[] = {PIPE_SETS, "training.grad_accum=16", NULL};
    g_autoptr(Scenario) sc = load_ok("1.3B_pp.yaml", sets);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    ck_assert_int_eq(sim_summary(run)->steady, STEADY_OFF);
    ck_assert_int_eq(sim_summary(run)->micro_batches_simulated, 16);
}
END_TEST

int main(void) {
    Suite *s = suite_create("steady");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_stats_closed_form);
    tcase_add_test(tc, test_stats_uneven_refused);
    tcase_add_test(tc, test_steps_even_rounding);
    tcase_add_test(tc, test_run_matches_every_micro_batch);
    tcase_add_test(tc, test_interleaved_matches_every_micro_batch);
    tcase_add_test(tc, test_host_work_matches_full_program);
    tcase_add_test(tc, test_short_pipeline_simulated);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
