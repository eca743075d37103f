/* validate: the validation runner. Parsing (quoted fields, bounds, ratio rows), errors with
 * FILE:LINE, the error computation, in-process runs of collective, scenario and ratio rows, and
 * the baseline check: a row that got worse or disappeared fails, an unchanged tree passes, and
 * the baseline is written byte for byte the same twice. */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "accuracy.h"
#include "collectives.h"
#include "util.h"
#include "validate.h"

#define HEADER VALIDATE_HEADER "\n"
#define COLL "collective --op allreduce --ranks 8 --sizes 1MiB --topology frontier"

/* Write text to a fresh temporary .csv file; returns its path (g_free it). */
static char *write_csv(const char *text) {
    char *path = NULL;
    int fd = g_file_open_tmp("validate-XXXXXX.csv", &path, NULL);
    ck_assert(fd >= 0);
    close(fd);
    ck_assert(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static Validation *load_text(const char *text, char **path, GError **err) {
    *path = write_csv(text);
    char *paths[] = {*path, NULL};
    return validate_load(paths, NULL, err);
}

/* Loading text must fail with a message holding "PATH:LINE:" and needle. */
static void expect_load_error(const char *text, int line, const char *needle) {
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v = load_text(text, &path, &err);
    ck_assert_msg(v == NULL, "expected an error for:\n%s", text);
    g_autofree char *where = g_strdup_printf("%s:%d:", path, line);
    ck_assert_msg(strstr(err->message, where), "message '%s' lacks '%s'", err->message, where);
    ck_assert_msg(strstr(err->message, needle), "message '%s' lacks '%s'", err->message, needle);
    ck_assert_int_eq(err->code, VALIDATE_ERROR_PARSE);
    g_unlink(path);
}

START_TEST(test_parse_fields) {
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v =
        load_text(HEADER "a,g1,calibrate," COLL ",busbw_GBps,17.5,GB/s,\"src, with comma\","
                         "\"say \"\"hi\"\"\",n\n"
                         "\n"
                         "b,g2,check,x.yaml ;; y.yaml,ratio:tflops_per_gpu,>1,ratio,s,t,u\r\n",
                  &path, &err);
    ck_assert_msg(v != NULL, "%s", err ? err->message : "");
    ck_assert_uint_eq(validate_count(v), 2);
    const ValidateRow *a = validate_row(v, 0);
    ck_assert_str_eq(a->id, "a");
    ck_assert_str_eq(a->use, "calibrate");
    ck_assert_str_eq(a->source, "src, with comma");
    ck_assert_str_eq(a->setting, "say \"hi\"");
    ck_assert(a->measured == 17.5 && a->bound == VALIDATE_BOUND_EQ);
    ck_assert_int_eq(a->line, 2);
    const ValidateRow *b = validate_row(v, 1);
    ck_assert(b->bound == VALIDATE_BOUND_GT && b->measured == 1);
    ck_assert_str_eq(b->note, "u");
    ck_assert_int_eq(b->line, 4);
    g_unlink(path);
}
END_TEST

START_TEST(test_parse_errors) {
    expect_load_error("id,group\n", 1, "header");
    expect_load_error("", 1, "header");
    expect_load_error(HEADER "a,g,check," COLL ",busbw_GBps,1,GB/s,s,t\n", 2, "9 fields");
    expect_load_error(HEADER "a,g,tune," COLL ",busbw_GBps,1,GB/s,s,t,n\n", 2,
                      "calibrate or check");
    expect_load_error(HEADER "a,g,check," COLL ",bandwidth,1,GB/s,s,t,n\n", 2,
                      "unknown metric 'bandwidth'");
    expect_load_error(HEADER "a,g,check,x.yaml,busbw_GBps,1,GB/s,s,t,n\n", 2,
                      "for a scenario command");
    expect_load_error(HEADER "a,g,check," COLL ",busbw_GBps,fast,GB/s,s,t,n\n", 2,
                      "measured must be");
    expect_load_error(HEADER "a,g,check," COLL ",busbw_GBps,0,GB/s,s,t,n\n", 2, "measured must be");
    expect_load_error(HEADER "a,g,check,x.yaml,ratio:tflops_per_gpu,1,r,s,t,n\n", 2,
                      "two commands");
    expect_load_error(HEADER "a,g,check,x.yaml ;; y.yaml,tflops_per_gpu,1,r,s,t,n\n", 2,
                      "ratio:METRIC");
    expect_load_error(HEADER "a,g,check,x.yaml,mfu,1,r,\"s,t,n\n", 2, "not closed");
    expect_load_error(HEADER "a,g,check,x.yaml,mfu,1,r,s,t,n\n"
                             "a,g,check,x.yaml,mfu,2,r,s,t,n\n",
                      3, "already used");
}
END_TEST

START_TEST(test_error_pct) {
    ck_assert(fabs(validate_error_pct(110, 100, VALIDATE_BOUND_EQ) - 10) < 1e-12);
    ck_assert(fabs(validate_error_pct(90, 100, VALIDATE_BOUND_EQ) + 10) < 1e-12);
    ck_assert(validate_error_pct(1.5, 1, VALIDATE_BOUND_GT) == 0);
    ck_assert(fabs(validate_error_pct(0.8, 1, VALIDATE_BOUND_GT) + 20) < 1e-12);
    ck_assert(validate_error_pct(0.5, 1, VALIDATE_BOUND_LT) == 0);
    ck_assert(fabs(validate_error_pct(1.25, 1, VALIDATE_BOUND_LT) - 25) < 1e-12);
}
END_TEST

/* Rows run in-process give what `sim collective` and `sim SCENARIO` give. */
START_TEST(test_run_rows) {
    g_autofree char *text =
        g_strdup_printf(HEADER "c,g,calibrate," COLL ",time_us,100,us,s,t,n\n"
                               "t,g,check,%s,tflops_per_gpu,50,TFLOP/s,s,t,n\n"
                               "r,g,check,%s ;; %s,ratio:iteration_time_s,1,ratio,s,t,n\n"
                               "m,g,check,%s,megatron_tflops_per_gpu,50,TFLOP/s,s,t,n\n"
                               "n,g,check,%s,neox2022_tflops_per_gpu,50,TFLOP/s,s,t,n\n",
                        scen("1.3B_tp.yaml"), scen("1.3B_tp.yaml"), scen("1.3B_tp.yaml"),
                        scen("1.3B_tp.yaml"), scen("1.3B_tp.yaml"));
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v = load_text(text, &path, &err);
    ck_assert_msg(v && validate_run(v, 2, &err), "%s", err ? err->message : "");

    TopologySpec spec;
    ck_assert(scenario_load_topology("frontier", NULL, &spec, NULL));
    SimTime t =
        coll_run_alone(&spec, COLL_ALLREDUCE, 8, 1048576, FALSE, -1, -1, NULL, NULL, 0, NULL);
    topo_spec_clear(&spec);
    const ValidateRow *c = validate_row(v, 0);
    ck_assert_msg(fabs(c->predicted - (double)t / 1e6) < 1e-9, "collective %g us, want %g",
                  c->predicted, (double)t / 1e6);
    ck_assert(fabs(c->error_pct - (c->predicted - 100)) < 1e-9);

    g_autoptr(Scenario) sc = load_ok("1.3B_tp.yaml", NULL);
    g_autoptr(SimRun) run = run_ok(sc, -1);
    const ValidateRow *s = validate_row(v, 1);
    ck_assert_msg(s->predicted == sim_summary(run)->tflops_per_gpu, "%g vs %g", s->predicted,
                  sim_summary(run)->tflops_per_gpu);
    ck_assert(validate_row(v, 2)->predicted == 1 && validate_row(v, 2)->error_pct == 0);
    /* Full recomputation: Megatron's count is 4/3 of model FLOPs up to the logit term. */
    double ratio = validate_row(v, 3)->predicted / s->predicted;
    ck_assert_msg(ratio > 1.30 && ratio < 1.34, "megatron / model FLOPs %g", ratio);
    /* GPT-NeoX's count before its pull request #1044: B s (6 P + 60 s h l) per iteration */
    double it = sim_time_s(sim_summary(run)->iteration), seq = sc->seq_len;
    double neox = (double)sc->global_batch * seq *
                  (6 * model_params(&sc->model, sc->seq_len, sc->tp) +
                   60 * seq * sc->model.hidden * sc->model.layers) /
                  it / sc->gpus / 1e12;
    ck_assert_msg(fabs(validate_row(v, 4)->predicted - neox) < 1e-9 * neox, "neox2022 %g, want %g",
                  validate_row(v, 4)->predicted, neox);
    g_unlink(path);
}
END_TEST

/* A scenario row whose deduplicated run reports uneven copies (UNEVEN COPIES in coll_streams.c)
 * is checked with every rank simulated: the 1T_full_frontier layout on 256 nodes, whose one
 * group-crossing stage boundary crowds Frontier's global links unevenly, gives 60.045 s
 * deduplicated and 59.422 s with every rank; the row's prediction is the latter. */
START_TEST(test_uneven_row_runs_all_ranks) {
    g_autofree char *text =
        g_strdup_printf(HEADER "u,g,check,%s --set nodes=256,iteration_time_s,59,s,s,t,n\n",
                        scen("1T_full_frontier.yaml"));
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v = load_text(text, &path, &err);
    ck_assert_msg(v && validate_run(v, 1, &err), "%s", err ? err->message : "");
    const char *n256[] = {"nodes=256", NULL};
    g_autoptr(Scenario) sc = load_ok("1T_full_frontier.yaml", n256);
    g_autoptr(SimRun) one = run_ok(sc, 1);
    g_autoptr(SimRun) all = run_ok(sc, 0);
    ck_assert_int_gt(sim_summary(one)->uneven_sends, 0);
    ck_assert(sim_summary(one)->iteration != sim_summary(all)->iteration);
    double want = (double)sim_summary(all)->iteration / (double)SIM_PS_PER_S;
    ck_assert_msg(validate_row(v, 0)->predicted == want, "predicted %.12g s, all ranks %.12g s",
                  validate_row(v, 0)->predicted, want);
    g_unlink(path);
}
END_TEST

START_TEST(test_run_error) {
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v =
        load_text(HEADER "a,g,check,no-such.yaml,mfu,1,r,s,t,n\n", &path, &err);
    ck_assert(v != NULL);
    ck_assert(!validate_run(v, 2, &err));
    g_autofree char *where = g_strdup_printf("%s:2: row a:", path);
    ck_assert_msg(strstr(err->message, where), "message '%s' lacks '%s'", err->message, where);
    g_unlink(path);
}
END_TEST

/* Run the rows and check them against baseline text; returns the failures, output in *out. */
static int check_against(Validation *v, const char *baseline, char **out) {
    g_autofree char *bpath = write_csv(baseline);
    g_autofree char *opath = write_csv("");
    FILE *f = fopen(opath, "w");
    g_autoptr(GError) err = NULL;
    int failed = validate_check(v, bpath, VALIDATE_DEFAULT_THRESHOLD_PP, f, &err);
    fclose(f);
    ck_assert_msg(failed >= 0, "%s", err ? err->message : "");
    g_file_get_contents(opath, out, NULL, NULL);
    g_unlink(bpath);
    g_unlink(opath);
    return failed;
}

START_TEST(test_check_baseline) {
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v = load_text(HEADER "c,coll,check," COLL ",time_us,20,us,s,t,n\n"
                                               "d,coll,check," COLL ",busbw_GBps,17,GB/s,s,t,n\n",
                                        &path, &err);
    ck_assert(v && validate_run(v, 2, &err));
    double pc = validate_row(v, 0)->predicted, pd = validate_row(v, 1)->predicted;

    /* The baseline written now passes, and is written the same twice. */
    g_autofree char *b1 = write_csv(""), *b2 = write_csv("");
    ck_assert(validate_write_baseline(v, b1, NULL) && validate_write_baseline(v, b2, NULL));
    g_autofree char *t1 = NULL, *t2 = NULL;
    g_file_get_contents(b1, &t1, NULL, NULL);
    g_file_get_contents(b2, &t2, NULL, NULL);
    ck_assert_str_eq(t1, t2);
    ck_assert(g_str_has_prefix(t1, VALIDATE_BASELINE_HEADER "\nc,coll,time_us,"));
    g_autofree char *out = NULL;
    ck_assert_int_eq(check_against(v, t1, &out), 0);

    /* A baseline whose c predicted the measurement exactly: c is now worse by |pc-20|/20. */
    g_autofree char *exact = g_strdup_printf(VALIDATE_BASELINE_HEADER "\nc,coll,time_us,20\n"
                                                                      "d,coll,busbw_GBps,%.12g\n",
                                             pd);
    g_autofree char *out2 = NULL;
    int failed = check_against(v, exact, &out2);
    ck_assert_msg(fabs(pc - 20) / 20 > 0.05, "the test needs c's error over 5%%, got %g us", pc);
    ck_assert_int_eq(failed, 1);
    ck_assert_msg(strstr(out2, "FAIL c:"), "%s", out2);

    /* The same row marked calibrate is a note, not a failure: a refit may move it. */
    ValidateRow *cr = (ValidateRow *)validate_row(v, 0);
    g_free(cr->use);
    cr->use = g_strdup("calibrate");
    g_autofree char *out2c = NULL;
    ck_assert_int_eq(check_against(v, exact, &out2c), 0);
    ck_assert_msg(strstr(out2c, "note c: calibrate row"), "%s", out2c);
    g_free(cr->use);
    cr->use = g_strdup("check");

    /* Within the threshold (baseline 3 points better) passes. */
    /* |error| 3 points smaller than now: pc - 20 shrunk by 3% of 20. */
    double near = pc - copysign(0.03 * 20, pc - 20);
    g_autofree char *close = g_strdup_printf(VALIDATE_BASELINE_HEADER "\nc,coll,time_us,%.12g\n"
                                                                      "d,coll,busbw_GBps,%.12g\n",
                                             near, pd);
    g_autofree char *out3 = NULL;
    ck_assert_int_eq(check_against(v, close, &out3), 0);

    /* A row gone from the files fails; one new to them is a note. */
    g_autofree char *gone = g_strdup_printf(VALIDATE_BASELINE_HEADER "\nc,coll,time_us,%.12g\n"
                                                                     "z,coll,time_us,5\n",
                                            pc);
    g_autofree char *out4 = NULL;
    ck_assert_int_eq(check_against(v, gone, &out4), 1);
    ck_assert_msg(strstr(out4, "FAIL z:") && strstr(out4, "note d:"), "%s", out4);

    /* A malformed baseline is an error, not a pass. */
    g_autofree char *bad = write_csv("id,predicted\n");
    ck_assert_int_eq(validate_check(v, bad, 5, stderr, &err), -1);
    ck_assert(err && strstr(err->message, ":1:"));
    g_unlink(b1);
    g_unlink(b2);
    g_unlink(bad);
    g_unlink(path);
}
END_TEST

START_TEST(test_group_filter) {
    g_autofree char *path = write_csv(HEADER "c,coll,calibrate," COLL ",time_us,100,us,s,t,n\n"
                                             "d,other,calibrate," COLL ",time_us,100,us,s,t,n\n");
    char *paths[] = {path, NULL};
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v = validate_load(paths, "other", &err);
    ck_assert(v && validate_count(v) == 1);
    ck_assert_str_eq(validate_row(v, 0)->id, "d");
    ck_assert(validate_run(v, 2, &err));
    /* Baseline rows of groups not loaded are not missing. */
    g_autofree char *out = NULL;
    g_autofree char *base =
        g_strdup_printf(VALIDATE_BASELINE_HEADER "\nc,coll,time_us,1\nd,other,time_us,%.12g\n",
                        validate_row(v, 0)->predicted);
    ck_assert_int_eq(check_against(v, base, &out), 0);
    g_unlink(path);
}
END_TEST

/* The accuracy table: check rows that simulate a scenario, per device and framework, mean and max
 * |error| exactly as the rows give them; calibrate rows and collective rows are left out; a report
 * finds its line, and a device or framework with none finds rows = 0. */
START_TEST(test_accuracy_table) {
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v =
        load_text(HEADER "a,e2e,check,scenarios/1.3B_tp.yaml,iteration_time_s,1,s,s,t,n\n"
                         "b,e2e,check,scenarios/1.3B_tp.yaml,tflops_per_gpu,40,TFLOP/s,s,t,n\n"
                         "c,e2e,calibrate,scenarios/1.3B_tp.yaml,tflops_per_gpu,1,TFLOP/s,s,t,n\n"
                         "d,coll,check," COLL ",time_us,1,us,s,t,n\n",
                  &path, &err);
    ck_assert_msg(v && validate_run(v, 2, &err), "%s", err ? err->message : "");
    double ea = fabs(validate_row(v, 0)->error_pct), eb = fabs(validate_row(v, 1)->error_pct);
    ck_assert_ptr_null(validate_row(v, 3)->device);
    g_autofree char *out = write_csv("");
    ck_assert(validate_write_accuracy(v, out, &err));
    g_autofree char *text = NULL;
    g_file_get_contents(out, &text, NULL, NULL);
    const ValidateRow *a = validate_row(v, 0);
    Accuracy acc = accuracy_find(text, a->device, a->framework);
    ck_assert_int_eq(acc.rows, 2);
    ck_assert_str_eq(acc.groups, "e2e");
    ck_assert_double_eq_tol(acc.mean_abs_error_pct, (ea + eb) / 2, 1e-3);
    ck_assert_double_eq_tol(acc.max_abs_error_pct, MAX(ea, eb), 1e-3);
    ck_assert_int_eq(accuracy_find(text, a->device, "no-such-framework").rows, 0);
    ck_assert_int_eq(accuracy_find("not,the,header\n", a->device, a->framework).rows, 0);
    g_unlink(out);
    g_unlink(path);
}
END_TEST

/* The shipped folder loads: every row well formed, ids unique. */
START_TEST(test_shipped_files) {
    g_autofree char *dir = g_build_filename(SIM_SOURCE_DIR, "validation", NULL);
    char *paths[] = {dir, NULL};
    g_autoptr(GError) err = NULL;
    g_autoptr(Validation) v = validate_load(paths, NULL, &err);
    ck_assert_msg(v != NULL, "%s", err ? err->message : "");
    ck_assert_uint_ge(validate_count(v), 20);
}
END_TEST

int main(void) {
    Suite *s = suite_create("validate");
    TCase *tc = tcase_create("validate");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_parse_fields);
    tcase_add_test(tc, test_parse_errors);
    tcase_add_test(tc, test_error_pct);
    tcase_add_test(tc, test_run_rows);
    tcase_add_test(tc, test_uneven_row_runs_all_ranks);
    tcase_add_test(tc, test_run_error);
    tcase_add_test(tc, test_check_baseline);
    tcase_add_test(tc, test_group_filter);
    tcase_add_test(tc, test_accuracy_table);
    tcase_add_test(tc, test_shipped_files);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
