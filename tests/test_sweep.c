/* Sweeps: points and columns, rows equal to single runs, parallel = serial to the byte, the
 * scenario's sweep: section, errors, and resuming an interrupted file. */
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "sweep.h"
#include "util.h"

/* Collects rows by point. */
typedef struct {
    GPtrArray *rows; /* char *, index = point */
    int calls;
} Collect;

static void collect(void *ctx, SweepResult *r) {
    Collect *c = ctx;
    ck_assert_msg(r->error == NULL, "point %d failed: %s", r->point, r->error);
    ck_assert_ptr_null(c->rows->pdata[r->point]);
    c->rows->pdata[r->point] = g_steal_pointer(&r->row);
    c->calls++;
    sweep_result_free(r);
}

static Sweep *prepared(const char *file, const char *const *varies, SweepFormat fmt) {
    g_autoptr(GError) err = NULL;
    Sweep *sw = sweep_new(scen(file), NULL, fmt, FALSE);
    ck_assert(sweep_add_file_axes(sw, &err));
    for (const char *const *v = varies; *v; v++)
        ck_assert_msg(sweep_add_vary(sw, *v, &err), "%s: %s", *v, err ? err->message : "?");
    ck_assert(sweep_prepare(sw, 2, &err));
    return sw;
}

/* All rows of a sweep run on jobs threads, concatenated in point order. */
static char *run_all(const Sweep *sw, int jobs) {
    Collect c = {g_ptr_array_new_with_free_func(g_free), 0};
    g_ptr_array_set_size(c.rows, sweep_points(sw));
    sweep_run(sw, jobs, -1, NULL, collect, NULL, &c);
    GString *s = g_string_new(sweep_header(sw));
    for (int i = 0; i < sweep_points(sw); i++)
        if (c.rows->pdata[i])
            g_string_append(s, c.rows->pdata[i]);
    g_ptr_array_unref(c.rows);
    return g_string_free(s, FALSE);
}

static int column(const Sweep *sw, const char *name) {
    for (int c = 0; c < sweep_columns(sw); c++)
        if (strcmp(sweep_column(sw, c), name) == 0)
            return c;
    return -1;
}

static const char *const nodes_seq[] = {"nodes=1,2,4", "training.seq_len=1024,2048", NULL};

/* The product, first axis slowest; every row's figures are those of a single run with the same
 * overrides, formatted as the report formats them. */
START_TEST(test_rows_are_single_runs) {
    g_autoptr(Sweep) sw = prepared("13B_tp8.yaml", nodes_seq, SWEEP_CSV);
    ck_assert_int_eq(sweep_points(sw), 6);
    g_autofree char *name = sweep_point_name(sw, 3);
    ck_assert_str_eq(name, "nodes=2, training.seq_len=2048");
    ck_assert_str_eq(sweep_column(sw, 0), "nodes");
    ck_assert_str_eq(sweep_column(sw, 1), "training.seq_len");
    ck_assert_int_eq(column(sw, "model"), 2); /* headline "nodes" left out: the varied column */
    int it = column(sw, "iteration_time_s"), ar = column(sw, "allreduce_tp_time_s");
    ck_assert_int_ge(it, 0);
    ck_assert_int_ge(ar, 0);
    ck_assert_int_ge(column(sw, "reduce_dp_volume_bytes"), 0);
    ck_assert_int_eq(column(sw, "send_pp_time_s"), -1); /* no pipeline in this sweep */
    for (int i = 0; i < 6; i++) {
        g_autoptr(SweepResult) r = sweep_run_point(sw, i, -1);
        ck_assert_ptr_nonnull(r->row);
        g_auto(GStrv) f = g_strsplit(r->row, ",", -1);
        ck_assert_int_eq(g_strv_length(f), sweep_columns(sw));
        const char *n = i / 2 == 0 ? "nodes=1" : i / 2 == 1 ? "nodes=2" : "nodes=4";
        const char *sets[] = {n, i % 2 ? "training.seq_len=2048" : "training.seq_len=1024", NULL};
        g_autoptr(Scenario) sc = load_ok("13B_tp8.yaml", sets);
        g_autoptr(SimRun) run = run_ok(sc, -1);
        char want[32];
        report_format_number((double)sim_summary(run)->iteration / SIM_PS_PER_S, want);
        ck_assert_msg(strcmp(f[it], want) == 0, "point %d: iteration %s, single run %s", i, f[it],
                      want);
        ck_assert_str_eq(f[0], n + 6);
        /* GPT-NeoX's TFLOP/s, appended after the headline's former last column */
        int nx = column(sw, "neox_tflops_per_gpu");
        ck_assert_int_eq(nx, column(sw, "events") + 1);
        report_format_number(sim_summary(run)->neox_tflops_per_gpu, want);
        ck_assert_str_eq(f[nx], want);
        /* hidden time by kind adds up to the communication hidden under compute */
        double hidden = 0;
        for (int k = 0; k < sweep_columns(sw); k++)
            if (g_str_has_suffix(sweep_column(sw, k), "_hidden_s"))
                hidden += g_ascii_strtod(f[k], NULL);
        double want_h = g_ascii_strtod(f[column(sw, "comm_s")], NULL) -
                        g_ascii_strtod(f[column(sw, "exposed_comm_s")], NULL);
        ck_assert_msg(fabs(hidden - want_h) < 1e-9, "point %d: hidden %.12g, comm - exposed %.12g",
                      i, hidden, want_h);
        ck_assert_int_eq(atoi(f[column(sw, "seq_len")]), sc->seq_len);
        ck_assert_int_eq(atoi(f[column(sw, "dp")]), sc->dp);
        GArray *rows = stats_comm_rows(sim_stats(run), sim_critical_index(run));
        for (guint k = 0; k < rows->len; k++) {
            const CommRow *cr = &g_array_index(rows, CommRow, k);
            g_autofree char *col = g_strdup_printf("%s_%s_volume_bytes", coll_op_name(cr->op),
                                                   layout_dim_name(cr->dim));
            report_format_number(cr->volume_bytes, want);
            ck_assert_str_eq(f[column(sw, col)], want);
        }
        stats_rows_free(rows);
    }
}
END_TEST

/* The same rows, byte for byte, whatever the number of threads, in CSV and JSON lines. */
START_TEST(test_parallel_equals_serial) {
    static const char *const v[] = {"nodes=1,2,8", "parallel.zero=1,3", "training.seq_len=512,1024",
                                    NULL};
    for (int fmt = 0; fmt < 2; fmt++) {
        g_autoptr(Sweep) sw = prepared("13B_tp8.yaml", v, fmt);
        g_autofree char *serial = run_all(sw, 1);
        for (int jobs = 2; jobs <= 5; jobs += 3) {
            g_autofree char *par = run_all(sw, jobs);
            ck_assert_msg(strcmp(serial, par) == 0, "format %d: %d threads differ from serial", fmt,
                          jobs);
        }
        ck_assert_int_eq(sweep_points(sw), 12);
    }
}
END_TEST

/* JSON lines: each row one object, keys in column order, varied numbers as numbers. */
START_TEST(test_json_rows) {
    static const char *const v[] = {"nodes=1,2", "training.precision=fp16,bf16", NULL};
    g_autoptr(Sweep) sw = prepared("1.3B_zero3.yaml", v, SWEEP_JSONL);
    ck_assert_str_eq(sweep_header(sw), "");
    g_autofree char *all = run_all(sw, 2);
    g_auto(GStrv) lines = g_strsplit(all, "\n", -1);
    ck_assert_int_eq(g_strv_length(lines), 5); /* 4 rows and the empty tail */
    for (int i = 0; i < 4; i++) {
        g_autoptr(JsonParser) p = json_parser_new();
        g_autoptr(GError) err = NULL;
        ck_assert_msg(json_parser_load_from_data(p, lines[i], -1, &err), "row %d: %s", i,
                      err ? err->message : "?");
        JsonObject *o = json_node_get_object(json_parser_get_root(p));
        g_autoptr(GList) members = json_object_get_members(o);
        ck_assert_int_eq(g_list_length(members), sweep_columns(sw));
        int c = 0;
        for (GList *m = members; m; m = m->next, c++)
            ck_assert_str_eq(m->data, sweep_column(sw, c));
        ck_assert_int_eq(json_object_get_int_member(o, "nodes"), i < 2 ? 1 : 2);
        ck_assert_str_eq(json_object_get_string_member(o, "training.precision"),
                         i % 2 ? "bf16" : "fp16");
        JsonArray *sizes = json_object_get_array_member(o, "allgather_dp_sizes");
        ck_assert_int_gt(json_array_get_length(sizes), 0);
        JsonObject *s0 = json_array_get_object_element(sizes, 0);
        ck_assert(json_object_has_member(s0, "bytes") && json_object_has_member(s0, "calls"));
        ck_assert(json_object_get_boolean_member(o, "fits"));
    }
}
END_TEST

static const char *sweep_yaml =
    "model: gpt-neox-125m\n"
    "topology: frontier\n"
    "nodes: 1\n"
    "parallel: {tp: 1}\n"
    "training: {micro_batch: 2}\n"
    "sweep:\n"
    "  training.seq_len: [512, 1024]\n"
    "  layout:\n"
    "    DDP: {parallel.zero: 0}\n"
    "    ZeRO-3: {parallel.zero: 3}\n"
    "    TP2xPP2: {parallel.tp: 2, parallel.pp: 2, training.grad_accum: 4}\n";

/* A scenario's sweep: section: plain axes and named bundles of overrides, in file order; the
 * command line replaces an axis's values in place; `sim SCENARIO` ignores the section. */
START_TEST(test_file_axes) {
    g_autofree char *path = write_temp_yaml(sweep_yaml);
    g_autoptr(GError) err = NULL;
    g_autoptr(Scenario) sc = scenario_load(path, NULL, &err);
    ck_assert_msg(sc != NULL, "%s", err ? err->message : "?");
    g_autoptr(Sweep) sw = sweep_new(path, NULL, SWEEP_CSV, FALSE);
    ck_assert(sweep_add_file_axes(sw, &err));
    ck_assert(sweep_add_vary(sw, "training.seq_len=256,512,2048", &err));
    ck_assert(sweep_prepare(sw, 1, &err));
    ck_assert_int_eq(sweep_points(sw), 9);
    ck_assert_str_eq(sweep_column(sw, 0), "training.seq_len");
    ck_assert_str_eq(sweep_column(sw, 1), "layout");
    g_autofree char *name = sweep_point_name(sw, 5);
    ck_assert_str_eq(name, "training.seq_len=512, layout=TP2xPP2");
    g_autoptr(SweepResult) r = sweep_run_point(sw, 5, -1);
    ck_assert_ptr_nonnull(r->row);
    ck_assert(g_str_has_prefix(r->row, "512,TP2xPP2,gpt-neox-125m,1,8,2,2,2,0,2,4,"));
    ck_assert_int_ge(column(sw, "send_pp_volume_bytes"), 0);
    unlink(path);
}
END_TEST

START_TEST(test_errors) {
    g_autoptr(GError) err = NULL;
    g_autoptr(Sweep) sw = sweep_new(scen("13B_tp8.yaml"), NULL, SWEEP_CSV, FALSE);
    ck_assert(!sweep_add_vary(sw, "nodes", &err));
    ck_assert(strstr(err->message, "--vary nodes: expected KEY=V1,V2"));
    g_clear_error(&err);
    ck_assert(!sweep_add_vary(sw, "nodes=1,2,1", &err));
    ck_assert(strstr(err->message, "nodes=1 is given twice"));
    g_clear_error(&err);
    ck_assert(!sweep_add_vary(sw, "nodes=1,,2", &err));
    g_clear_error(&err);
    /* impossible layouts are their point's status; a bad key is an error of every point */
    ck_assert(sweep_add_vary(sw, "parallel.tp=3,8", &err));
    ck_assert(sweep_add_vary(sw, "nodes=1", &err));
    ck_assert(sweep_prepare(sw, 2, &err));
    ck_assert_int_eq(sweep_point_status(sw, 0), SWEEP_POINT_INVALID);
    ck_assert(strstr(sweep_point_error(sw, 0), "does not divide the 40 attention heads"));
    ck_assert_int_eq(sweep_point_status(sw, 1), SWEEP_POINT_OK);
    g_autoptr(Sweep) bad = sweep_new(scen("13B_tp8.yaml"), NULL, SWEEP_CSV, FALSE);
    ck_assert(sweep_add_vary(bad, "parallel.tpp=1,2", &err));
    ck_assert(sweep_prepare(bad, 1, &err));
    ck_assert_int_eq(sweep_point_status(bad, 0), SWEEP_POINT_ERROR);
    ck_assert(strstr(sweep_point_error(bad, 0), "tpp"));
    /* a malformed sweep: section names its line */
    g_autofree char *path = write_temp_yaml("model: gpt-neox-125m\ntopology: frontier\nnodes: 1\n"
                                            "parallel: {}\ntraining: {}\nsweep:\n  nodes: 4\n");
    g_autoptr(Sweep) sf = sweep_new(path, NULL, SWEEP_CSV, FALSE);
    ck_assert(!sweep_add_file_axes(sf, &err));
    ck_assert_msg(strstr(err->message, ":7:") && strstr(err->message, "list of values"), "%s",
                  err->message);
    unlink(path);
}
END_TEST

static void out_add(void *ctx, SweepResult *r) {
    sweep_out_add(ctx, r);
}

/* Run sw into path (resuming if asked); returns the points that ran. */
static int run_into(const Sweep *sw, const char *path, gboolean resume, int jobs) {
    g_autoptr(GError) err = NULL;
    g_autoptr(SweepOut) out = sweep_out_new(sw, path, resume, FALSE, &err);
    ck_assert_msg(out != NULL, "%s", err ? err->message : "?");
    int todo = 0;
    for (int i = 0; i < sweep_points(sw); i++)
        todo += sweep_out_todo(out)[i];
    sweep_run(sw, jobs, -1, sweep_out_todo(out), out_add, NULL, out);
    ck_assert(sweep_out_finish(out, &err));
    ck_assert_int_eq(sweep_out_failed(out), 0);
    return todo;
}

/* A file cut short (rows in completion order, a half-written last row) resumes to exactly the
 * file of an uninterrupted sweep, running only the missing points. */
START_TEST(test_resume) {
    static const char *const v[] = {"nodes=1,2,4,8", "training.seq_len=1024,2048", NULL};
    for (int fmt = 0; fmt < 2; fmt++) {
        g_autoptr(Sweep) sw = prepared("13B_tp8.yaml", v, fmt);
        g_autofree char *ref = NULL, *got = NULL;
        g_autofree char *dir = g_dir_make_tmp("simsweep-XXXXXX", NULL);
        g_autofree char *full = g_build_filename(dir, "full", NULL);
        g_autofree char *part = g_build_filename(dir, "part", NULL);
        ck_assert_int_eq(run_into(sw, full, FALSE, 1), 8);
        ck_assert(g_file_get_contents(full, &ref, NULL, NULL));
        /* points 6, 1 and 3 finished in that order; point 5 was being written */
        g_autoptr(SweepResult) r6 = sweep_run_point(sw, 6, -1);
        g_autoptr(SweepResult) r1 = sweep_run_point(sw, 1, -1);
        g_autoptr(SweepResult) r3 = sweep_run_point(sw, 3, -1);
        g_autoptr(SweepResult) r5 = sweep_run_point(sw, 5, -1);
        g_autofree char *half = g_strndup(r5->row, strlen(r5->row) / 2);
        g_autofree char *text =
            g_strconcat(sweep_header(sw), r6->row, r1->row, r3->row, half, NULL);
        ck_assert(g_file_set_contents(part, text, -1, NULL));
        /* its record: the uninterrupted sweep's (the same rows), with lines for rows not there */
        g_autofree char *full_rec = g_strconcat(full, ".resume", NULL);
        g_autofree char *part_rec = g_strconcat(part, ".resume", NULL);
        g_autofree char *rec = NULL;
        ck_assert(g_file_get_contents(full_rec, &rec, NULL, NULL));
        ck_assert(g_file_set_contents(part_rec, rec, -1, NULL));
        ck_assert_int_eq(run_into(sw, part, TRUE, 2), 5);
        ck_assert(g_file_get_contents(part, &got, NULL, NULL));
        ck_assert_msg(strcmp(ref, got) == 0, "resumed file differs:\n%s\nvs\n%s", got, ref);
        /* a complete file resumes to itself, running nothing */
        ck_assert_int_eq(run_into(sw, part, TRUE, 2), 0);
        g_free(got);
        ck_assert(g_file_get_contents(part, &got, NULL, NULL));
        ck_assert_str_eq(ref, got);
        /* another sweep's file is refused, not appended to */
        static const char *const other[] = {"nodes=1,2", NULL};
        g_autoptr(Sweep) sw2 = prepared("13B_tp8.yaml", other, fmt);
        g_autoptr(GError) err = NULL;
        g_autoptr(SweepOut) o2 = sweep_out_new(sw2, part, TRUE, FALSE, &err);
        ck_assert_ptr_null(o2);
        ck_assert_msg(strstr(err->message, "written by another sweep"), "%s", err->message);
        /* a row edited by hand is refused */
        g_autofree char *edited = g_strdup(ref);
        char *digit = strchr(edited + strlen(sweep_header(sw)), '\n'); /* a figure late in row 1 */
        while (!g_ascii_isdigit(*digit))
            digit--;
        *digit = *digit == '9' ? '8' : '9';
        ck_assert(g_file_set_contents(part, edited, -1, NULL));
        g_clear_error(&err);
        g_autoptr(SweepOut) o3 = sweep_out_new(sw, part, TRUE, FALSE, &err);
        ck_assert_ptr_null(o3);
        ck_assert_msg(strstr(err->message, "not as the sweep wrote it"), "%s", err->message);
        unlink(full);
        unlink(part);
        unlink(full_rec);
        unlink(part_rec);
        rmdir(dir);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("sweep");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_rows_are_single_runs);
    tcase_add_test(tc, test_parallel_equals_serial);
    tcase_add_test(tc, test_json_rows);
    tcase_add_test(tc, test_file_axes);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_resume);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
