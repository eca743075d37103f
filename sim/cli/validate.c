/* validate: reads the validation/ CSV files, simulates each row in-process, compares with the
 * measurement, and keeps a baseline of predictions for CI. See validate.h for the file format. */
#include "validate.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include "accuracy.h"
#include "collectives.h"
#include "outfile.h"
#include "report.h"
#include "scenario.h"
#include "sim.h"

G_DEFINE_QUARK(validate - error - quark, validate_error)

#define NFIELDS 10
#define RATIO_SEP " ;; "

struct Validation {
    GPtrArray *rows; /* ValidateRow *, file order */
    char *group;     /* the --group filter, or NULL */
};

static void row_free(gpointer p) {
    ValidateRow *r = p;
    g_free(r->id);
    g_free(r->group);
    g_free(r->use);
    g_free(r->command);
    g_free(r->metric);
    g_free(r->unit);
    g_free(r->source);
    g_free(r->setting);
    g_free(r->note);
    g_free(r->file);
    g_free(r->device);
    g_free(r->framework);
    g_free(r);
}

void validate_free(Validation *v) {
    if (!v)
        return;
    g_ptr_array_unref(v->rows);
    g_free(v->group);
    g_free(v);
}

guint validate_count(const Validation *v) {
    return v->rows->len;
}

const ValidateRow *validate_row(const Validation *v, guint i) {
    return v->rows->pdata[i];
}

/* ---- CSV ---------------------------------------------------------------------------------- */

/* Split one CSV line into fields (RFC 4180 quoting, no line breaks inside fields). Returns NULL
 * and sets *why on a malformed line. */
static GPtrArray *csv_split(const char *line, const char **why) {
    GPtrArray *f = g_ptr_array_new_with_free_func(g_free);
    const char *p = line;
    for (;;) {
        GString *s = g_string_new(NULL);
        if (*p == '"') {
            p++;
            for (;;) {
                if (!*p) {
                    *why = "a quoted field is not closed on its line";
                    g_string_free(s, TRUE);
                    g_ptr_array_unref(f);
                    return NULL;
                }
                if (*p == '"' && p[1] == '"') {
                    g_string_append_c(s, '"');
                    p += 2;
                } else if (*p == '"') {
                    p++;
                    break;
                } else
                    g_string_append_c(s, *p++);
            }
            if (*p && *p != ',') {
                *why = "text after a closing quote (a quote inside a field is written \"\")";
                g_string_free(s, TRUE);
                g_ptr_array_unref(f);
                return NULL;
            }
        } else
            while (*p && *p != ',')
                g_string_append_c(s, *p++);
        g_ptr_array_add(f, g_string_free(s, FALSE));
        if (!*p)
            return f;
        p++; /* the comma */
    }
}

static gboolean parse_number(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = g_ascii_strtod(s, &end);
    if (end == s || *end || errno || !isfinite(v))
        return FALSE;
    *out = v;
    return TRUE;
}

/* Metrics of a scenario row (the JSON report's keys and a few derived figures,
 * docs/validation.md). */
static const char *const scenario_metrics[] = {"iteration_time_s",
                                               "tflops_per_gpu",
                                               "mfu",
                                               "compute_s",
                                               "comm_s",
                                               "exposed_comm_s",
                                               "bubble_s",
                                               "overlap",
                                               "tokens_per_s",
                                               "exposed_comm_share",
                                               "megatron_tflops_per_gpu",
                                               "megatron_peak_fraction",
                                               "memory_capacity_fraction",
                                               "neox2022_tflops_per_gpu",
                                               NULL};
static const char *const collective_metrics[] = {"time_us", "algbw_GBps", "busbw_GBps", NULL};

static gboolean known_metric(const char *m, gboolean collective) {
    const char *const *list = collective ? collective_metrics : scenario_metrics;
    for (int i = 0; list[i]; i++)
        if (!strcmp(m, list[i]))
            return TRUE;
    return FALSE;
}

static gboolean fail_at(GError **err, int code, const char *file, int line, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
static gboolean fail_at(GError **err, int code, const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(err, VALIDATE_ERROR, code, "%s:%d: %s", file, line, msg);
    return FALSE;
}

/* Check a row's fields beyond the CSV shape: use, metric, measured, command. */
static gboolean row_check(ValidateRow *r, const char *measured, GError **err) {
    const char *f = r->file;
    int l = r->line;
    if (!*r->id || strchr(r->id, ' '))
        return fail_at(err, VALIDATE_ERROR_PARSE, f, l, "id must be a non-empty slug, not '%s'",
                       r->id);
    if (!*r->group)
        return fail_at(err, VALIDATE_ERROR_PARSE, f, l, "row %s: group is empty", r->id);
    if (strcmp(r->use, "calibrate") && strcmp(r->use, "check"))
        return fail_at(err, VALIDATE_ERROR_PARSE, f, l,
                       "row %s: use must be calibrate or check, not '%s'", r->id, r->use);
    const char *num = measured;
    r->bound = VALIDATE_BOUND_EQ;
    if (*num == '>' || *num == '<')
        r->bound = *num++ == '>' ? VALIDATE_BOUND_GT : VALIDATE_BOUND_LT;
    if (!parse_number(num, &r->measured) || (r->bound == VALIDATE_BOUND_EQ && r->measured == 0))
        return fail_at(err, VALIDATE_ERROR_PARSE, f, l,
                       "row %s: measured must be a non-zero number or a bound >X / <X, not '%s'",
                       r->id, measured);
    if (r->bound != VALIDATE_BOUND_EQ && r->measured == 0)
        return fail_at(err, VALIDATE_ERROR_PARSE, f, l,
                       "row %s: a bound must be non-zero (errors are relative to it)", r->id);
    gboolean ratio = g_str_has_prefix(r->metric, "ratio:");
    const char *metric = ratio ? r->metric + 6 : r->metric;
    g_auto(GStrv) cmds = g_strsplit(r->command, RATIO_SEP, -1);
    guint n = g_strv_length(cmds);
    if (n != (ratio ? 2u : 1u))
        return fail_at(err, VALIDATE_ERROR_PARSE, f, l,
                       ratio ? "row %s: a ratio: metric needs two commands separated by ' ;; '"
                             : "row %s: two commands (' ;; ') need a ratio:METRIC metric",
                       r->id);
    gboolean coll = g_str_has_prefix(g_strstrip(cmds[0]), "collective");
    for (guint i = 1; i < n; i++)
        if (g_str_has_prefix(g_strstrip(cmds[i]), "collective") != coll)
            return fail_at(err, VALIDATE_ERROR_PARSE, f, l,
                           "row %s: both commands of a ratio must be collectives or scenarios",
                           r->id);
    if (!known_metric(metric, coll)) {
        g_autofree char *list =
            g_strjoinv(", ", (char **)(coll ? collective_metrics : scenario_metrics));
        return fail_at(err, VALIDATE_ERROR_PARSE, f, l,
                       "row %s: unknown metric '%s' for a %s command; expected one of %s%s", r->id,
                       r->metric, coll ? "collective" : "scenario", list,
                       ratio ? "" : " (or ratio:METRIC with two commands)");
    }
    return TRUE;
}

/* A CSV's text is UTF-8 with no NUL: a NUL cut its line short ("6 fields, expected 10") and
 * binary bytes read as an "empty file"; both are now named with their line. */
static gboolean csv_text_ok(const char *path, const char *text, gsize len, GError **err) {
    const char *bad = memchr(text, '\0', len);
    const char *end = NULL;
    if (!bad && !g_utf8_validate(text, (gssize)len, &end))
        bad = end;
    if (!bad)
        return TRUE;
    int line = 1;
    for (const char *p = text; p < bad; p++)
        line += *p == '\n';
    return fail_at(err, VALIDATE_ERROR_PARSE, path, line, "%s; a CSV file is UTF-8 text",
                   *bad ? "a byte that is not UTF-8" : "a NUL byte");
}

static gboolean load_file(Validation *v, const char *path, GHashTable *ids, GError **err) {
    g_autofree char *text = NULL;
    gsize text_len = 0;
    g_autoptr(GError) e = NULL;
    if (!g_file_get_contents(path, &text, &text_len, &e)) {
        g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_IO, "cannot read %s: %s", path, e->message);
        return FALSE;
    }
    if (!csv_text_ok(path, text, text_len, err))
        return FALSE;
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    gboolean header = FALSE;
    for (int i = 0; lines[i]; i++) {
        char *line = lines[i];
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[len - 1] = 0;
        if (!*line)
            continue;
        if (!header) {
            if (strcmp(line, VALIDATE_HEADER) != 0)
                return fail_at(err, VALIDATE_ERROR_PARSE, path, i + 1,
                               "the first line must be the header '%s'", VALIDATE_HEADER);
            header = TRUE;
            continue;
        }
        const char *why = NULL;
        g_autoptr(GPtrArray) f = csv_split(line, &why);
        if (!f)
            return fail_at(err, VALIDATE_ERROR_PARSE, path, i + 1, "%s", why);
        if (f->len != NFIELDS)
            return fail_at(err, VALIDATE_ERROR_PARSE, path, i + 1,
                           "%u fields, expected %d (%s); quote a field that holds a comma", f->len,
                           NFIELDS, VALIDATE_HEADER);
        ValidateRow *r = g_new0(ValidateRow, 1);
        char **s = (char **)f->pdata;
        r->id = g_strdup(g_strstrip(s[0]));
        r->group = g_strdup(g_strstrip(s[1]));
        r->use = g_strdup(g_strstrip(s[2]));
        r->command = g_strdup(g_strstrip(s[3]));
        r->metric = g_strdup(g_strstrip(s[4]));
        r->unit = g_strdup(s[6]);
        r->source = g_strdup(s[7]);
        r->setting = g_strdup(s[8]);
        r->note = g_strdup(s[9]);
        r->file = g_strdup(path);
        r->line = i + 1;
        r->predicted = r->error_pct = NAN;
        if (!row_check(r, g_strstrip(s[5]), err)) {
            row_free(r);
            return FALSE;
        }
        const char *prev = g_hash_table_lookup(ids, r->id);
        if (prev) {
            fail_at(err, VALIDATE_ERROR_PARSE, path, i + 1, "id %s is already used at %s", r->id,
                    prev);
            row_free(r);
            return FALSE;
        }
        g_hash_table_insert(ids, g_strdup(r->id), g_strdup_printf("%s:%d", path, i + 1));
        if (v->group && strcmp(v->group, r->group) != 0)
            row_free(r);
        else
            g_ptr_array_add(v->rows, r);
    }
    if (!header)
        return fail_at(err, VALIDATE_ERROR_PARSE, path, 1, "empty file; expected the header '%s'",
                       VALIDATE_HEADER);
    return TRUE;
}

static gint cmp_str(gconstpointer a, gconstpointer b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

Validation *validate_load(char *const *paths, const char *group, GError **err) {
    g_autoptr(Validation) v = g_new0(Validation, 1);
    v->rows = g_ptr_array_new_with_free_func(row_free);
    v->group = g_strdup(group);
    g_autoptr(GHashTable) ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (int i = 0; paths && paths[i]; i++) {
        if (!g_file_test(paths[i], G_FILE_TEST_IS_DIR)) {
            if (!load_file(v, paths[i], ids, err))
                return NULL;
            continue;
        }
        g_autoptr(GError) e = NULL;
        g_autoptr(GDir) d = g_dir_open(paths[i], 0, &e);
        if (!d) {
            g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_IO, "cannot read %s: %s", paths[i],
                        e->message);
            return NULL;
        }
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        const char *name;
        while ((name = g_dir_read_name(d)))
            if (g_str_has_suffix(name, ".csv") && !g_str_has_prefix(name, "baseline") &&
                strcmp(name, ACCURACY_FILE) != 0)
                g_ptr_array_add(names, g_build_filename(paths[i], name, NULL));
        g_ptr_array_sort(names, cmp_str);
        if (names->len == 0) {
            g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_IO, "%s holds no *.csv files",
                        paths[i]);
            return NULL;
        }
        for (guint k = 0; k < names->len; k++)
            if (!load_file(v, names->pdata[k], ids, err))
                return NULL;
    }
    return g_steal_pointer(&v);
}

/* ---- running ------------------------------------------------------------------------------ */

/* All metrics one command yields (NAN where they do not apply). */
typedef struct {
    double time_us, algbw_GBps, busbw_GBps;
    double scen[G_N_ELEMENTS(scenario_metrics) - 1];
    char *device, *framework; /* a scenario's device name and training.framework */
} Measures;

static char *in_source_tree(const char *path) {
    if (g_path_is_absolute(path) || g_file_test(path, G_FILE_TEST_EXISTS))
        return g_strdup(path);
    return g_build_filename(SIM_SOURCE_DIR, path, NULL);
}

/* Parse a row's command line (argv[0] is the row's first word) with no help option. */
static gboolean parse_options(const GOptionEntry *entries, int *argc, char ***argv, GError **err) {
    g_autoptr(GOptionContext) ctx = g_option_context_new(NULL);
    g_option_context_set_help_enabled(ctx, FALSE);
    g_option_context_add_main_entries(ctx, entries, NULL);
    return g_option_context_parse(ctx, argc, argv, err);
}

static gboolean run_collective(int argc, char **argv, Measures *m, GError **err) {
    g_autofree char *op_name = NULL, *size = NULL, *topology = NULL, *algo_name = NULL,
                    *proto_name = NULL;
    g_auto(GStrv) sets = NULL;
    int ranks = 0;
    gboolean detailed = FALSE;
    GOptionEntry entries[] = {
        {"op", 0, 0, G_OPTION_ARG_STRING, &op_name, NULL, NULL},
        {"ranks", 'n', 0, G_OPTION_ARG_INT, &ranks, NULL, NULL},
        {"sizes", 0, 0, G_OPTION_ARG_STRING, &size, NULL, NULL},
        {"topology", 't', 0, G_OPTION_ARG_STRING, &topology, NULL, NULL},
        {"set", 's', 0, G_OPTION_ARG_FILENAME_ARRAY, &sets, NULL, NULL},
        {"algo", 0, 0, G_OPTION_ARG_STRING, &algo_name, NULL, NULL},
        {"proto", 0, 0, G_OPTION_ARG_STRING, &proto_name, NULL, NULL},
        {"detailed", 0, 0, G_OPTION_ARG_NONE, &detailed, NULL, NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!parse_options(entries, &argc, &argv, err))
        return FALSE;
    int op = op_name ? coll_op_parse(op_name) : -1;
    double bytes = 0;
    if (argc != 2 || op < 0 || op == COLL_RECV || ranks < 2 || !size ||
        !conf_parse_bytes(size, &bytes) || bytes <= 0) {
        g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_PARSE,
                    "a collective row needs --op OP --ranks N (N >= 2) --sizes SIZE (one size, "
                    "e.g. 128MiB) and no other arguments");
        return FALSE;
    }
    int algo = coll_algo_parse(algo_name), proto = coll_proto_parse(proto_name);
    if ((algo_name && algo < 0) || (proto_name && proto < 0)) {
        g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_PARSE,
                    "--algo is ring, tree or hierarchical; --proto LL or Simple");
        return FALSE;
    }
    TopologySpec spec;
    if (!scenario_load_topology(topology ? topology : "frontier", sets, &spec, err))
        return FALSE;
    SimTime t = coll_run_alone(&spec, op, ranks, bytes, detailed, algo, proto, NULL, NULL, 0, err);
    topo_spec_clear(&spec);
    if (t < 0)
        return FALSE;
    double secs = sim_time_s(t);
    m->time_us = secs * 1e6;
    m->algbw_GBps = secs > 0 ? bytes / secs / 1e9 : 0;
    m->busbw_GBps = m->algbw_GBps * coll_busbw_factor(op, op == COLL_SEND ? 2 : ranks);
    return TRUE;
}

/* Model FLOPs of one iteration as Megatron-LM and Megatron-DeepSpeed count them (Narayanan et
 * al. SC21, Eq. 3; Megatron-DeepSpeed's throughput_calculator): 24 k B s l h^2 (1 + s/(6h) +
 * V/(16 l h)), k = 4 with full recomputation (a second forward), else 3. */
static double megatron_flops(const Scenario *sc) {
    double k = sc->recompute == RECOMPUTE_FULL ? 4 : 3;
    double B = (double)sc->global_batch, s = sc->seq_len, l = sc->model.layers,
           h = sc->model.hidden, V = (double)model_padded_vocab(&sc->model, sc->tp);
    return 24 * k * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

/* FLOPs of one iteration as GPT-NeoX logged them until its pull request #1044 (2023-09-25, which
 * ported Megatron-DeepSpeed's count): megatron/logging.py get_flops, ff = 6 x total_params and
 * attn = 60 s h l per token, times B s (the code quoted in EleutherAI/gpt-neox issue #981). This is
 * the count behind GPT-NeoX-20B's published 117 TFLOP/s (Black et al. 2022, trained in 2021-22).
 * total_params is get_total_params: every model-parallel rank's parameters summed, so norms and
 * biases replicated over TP count tp times; here the model's own count (the difference is under
 * 0.1% on GPT-NeoX-20B). */
static double neox2022_flops(const Scenario *sc) {
    const ModelConfig *m = &sc->model;
    double B = (double)sc->global_batch, s = sc->seq_len;
    double ff = 6.0 * model_params(m, sc->seq_len, sc->tp);
    double attn = s * m->hidden * m->layers * 60.0;
    return B * s * (ff + attn);
}

static gboolean run_scenario(int argc, char **argv, Measures *m, GError **err) {
    g_auto(GStrv) sets = NULL;
    gboolean all_ranks = FALSE;
    GOptionEntry entries[] = {
        {"set", 's', 0, G_OPTION_ARG_FILENAME_ARRAY, &sets, NULL, NULL},
        {"all-ranks", 0, 0, G_OPTION_ARG_NONE, &all_ranks, NULL, NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    if (!parse_options(entries, &argc, &argv, err))
        return FALSE;
    if (argc != 2) {
        g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_PARSE,
                    "a scenario row is SCENARIO.yaml [--set KEY=VALUE]... [--all-ranks]");
        return FALSE;
    }
    g_autofree char *path = in_source_tree(argv[1]);
    g_autoptr(Scenario) sc = scenario_load(path, sets, err);
    if (!sc)
        return FALSE;
    g_autoptr(SimRun) run = sim_run(sc, all_ranks ? 0 : -1, err);
    if (!run)
        return FALSE;
    const SimSummary *s = sim_summary(run);
    double it = sim_time_s(s->iteration);
    double mt = it > 0 ? megatron_flops(sc) / it / sc->gpus / 1e12 : 0;
    double v[] = {it,
                  s->tflops_per_gpu,
                  s->mfu,
                  sim_time_s(s->critical.compute),
                  sim_time_s(s->critical.comm),
                  sim_time_s(s->critical.exposed),
                  sim_time_s(s->critical.bubble),
                  s->overlap,
                  report_train_time(run).tokens_per_s,
                  it > 0 ? (double)s->critical.exposed / (double)s->iteration : 0,
                  mt,
                  mt * 1e12 / sc->topo.device.peak_flops[sc->precision],
                  s->memory.total_bytes / sc->topo.device.hbm_capacity,
                  it > 0 ? neox2022_flops(sc) / it / sc->gpus / 1e12 : 0};
    G_STATIC_ASSERT(G_N_ELEMENTS(v) == G_N_ELEMENTS(scenario_metrics) - 1);
    memcpy(m->scen, v, sizeof v);
    m->device = g_strdup(sc->topo.device.name);
    m->framework = g_strdup(framework_names[sc->framework]);
    return TRUE;
}

/* One distinct command and what simulating it gave. */
typedef struct {
    char *command;
    Measures m;
    GError *err; /* set when it could not be simulated */
} Job;

static void job_free(gpointer p) {
    Job *j = p;
    g_free(j->command);
    g_free(j->m.device);
    g_free(j->m.framework);
    g_clear_error(&j->err);
    g_free(j);
}

/* Simulate job->command (a collective or a scenario) into job->m, or set job->err. */
static void job_run(Job *job) {
    Measures *m = &job->m;
    m->time_us = m->algbw_GBps = m->busbw_GBps = NAN;
    for (size_t i = 0; i < G_N_ELEMENTS(m->scen); i++)
        m->scen[i] = NAN;
    int argc;
    g_auto(GStrv) argv = NULL;
    if (!g_shell_parse_argv(job->command, &argc, &argv, &job->err))
        return;
    /* GOption wants argv[0] to be the program: prepend one. */
    g_autofree char **args = g_new0(char *, argc + 2);
    args[0] = "sim";
    memcpy(args + 1, argv, sizeof(char *) * argc);
    if (!strcmp(argv[0], "collective"))
        run_collective(argc + 1, args, m, &job->err);
    else
        run_scenario(argc + 1, args, m, &job->err);
}

static void job_thread(gpointer data, gpointer user) {
    (void)user;
    job_run(data);
}

static double metric_value(const Measures *m, const char *metric) {
    if (!strcmp(metric, "time_us"))
        return m->time_us;
    if (!strcmp(metric, "algbw_GBps"))
        return m->algbw_GBps;
    if (!strcmp(metric, "busbw_GBps"))
        return m->busbw_GBps;
    for (int i = 0; scenario_metrics[i]; i++)
        if (!strcmp(metric, scenario_metrics[i]))
            return m->scen[i];
    return NAN;
}

double validate_error_pct(double predicted, double measured, ValidateBound bound) {
    if ((bound == VALIDATE_BOUND_GT && predicted > measured) ||
        (bound == VALIDATE_BOUND_LT && predicted < measured))
        return 0;
    return (predicted - measured) / fabs(measured) * 100;
}

gboolean validate_run(Validation *v, int jobs, GError **err) {
    /* Each distinct command once, in order of first use; simulations own all their state, so
     * they run in parallel and the results do not depend on jobs. */
    g_autoptr(GPtrArray) todo = g_ptr_array_new_with_free_func(job_free);
    g_autoptr(GHashTable) by_cmd = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < v->rows->len; i++) {
        const ValidateRow *r = v->rows->pdata[i];
        g_auto(GStrv) cmds = g_strsplit(r->command, RATIO_SEP, -1);
        for (int k = 0; cmds[k]; k++) {
            char *c = g_strstrip(cmds[k]);
            if (g_hash_table_contains(by_cmd, c))
                continue;
            Job *j = g_new0(Job, 1);
            j->command = g_strdup(c);
            g_ptr_array_add(todo, j);
            g_hash_table_insert(by_cmd, j->command, j);
        }
    }
    if (jobs <= 1 || todo->len <= 1)
        for (guint i = 0; i < todo->len; i++)
            job_run(todo->pdata[i]);
    else {
        GThreadPool *pool = g_thread_pool_new(job_thread, NULL, jobs, TRUE, NULL);
        for (guint i = 0; i < todo->len; i++)
            g_thread_pool_push(pool, todo->pdata[i], NULL);
        g_thread_pool_free(pool, FALSE, TRUE);
    }
    for (guint i = 0; i < v->rows->len; i++) {
        ValidateRow *r = v->rows->pdata[i];
        gboolean ratio = g_str_has_prefix(r->metric, "ratio:");
        const char *metric = ratio ? r->metric + 6 : r->metric;
        g_auto(GStrv) cmds = g_strsplit(r->command, RATIO_SEP, -1);
        double val[2] = {NAN, NAN};
        for (int k = 0; cmds[k]; k++) {
            const Job *j = g_hash_table_lookup(by_cmd, g_strstrip(cmds[k]));
            if (j->err)
                return fail_at(err, VALIDATE_ERROR_RUN, r->file, r->line, "row %s: %s", r->id,
                               j->err->message);
            val[k] = metric_value(&j->m, metric);
            if (k == 0 && j->m.device) {
                g_free(r->device);
                g_free(r->framework);
                r->device = g_strdup(j->m.device);
                r->framework = g_strdup(j->m.framework);
            }
        }
        r->predicted = ratio ? (val[1] != 0 ? val[0] / val[1] : NAN) : val[0];
        if (!isfinite(r->predicted))
            return fail_at(err, VALIDATE_ERROR_RUN, r->file, r->line,
                           "row %s: the simulation gives no finite %s", r->id, r->metric);
        r->error_pct = validate_error_pct(r->predicted, r->measured, r->bound);
    }
    return TRUE;
}

/* ---- output ------------------------------------------------------------------------------- */

static void fmt_value(char *buf, size_t n, double v, ValidateBound b) {
    const char *pre = b == VALIDATE_BOUND_GT ? ">" : b == VALIDATE_BOUND_LT ? "<" : "";
    g_snprintf(buf, n, "%s%.4g", pre, v);
}

void validate_write_table(FILE *out, const Validation *v, gboolean csv) {
    if (csv) {
        fputs("id,group,use,metric,predicted,measured,unit,error_pct\n", out);
        for (guint i = 0; i < v->rows->len; i++) {
            const ValidateRow *r = v->rows->pdata[i];
            char p[32], m[40];
            fmt_value(m, sizeof m, r->measured, r->bound);
            fprintf(out, "%s,%s,%s,%s,%s,%s,%s,%.2f\n", r->id, r->group, r->use, r->metric,
                    report_format_number(r->predicted, p), m, r->unit, r->error_pct);
        }
        return;
    }
    int w = 4, gw = 5;
    for (guint i = 0; i < v->rows->len; i++) {
        const ValidateRow *r = v->rows->pdata[i];
        w = MAX(w, (int)strlen(r->id));
        gw = MAX(gw, (int)strlen(r->group));
    }
    fprintf(out, "%-*s  %-*s  %-9s  %11s  %11s  %-10s  %8s\n", w, "id", gw, "group", "use",
            "predicted", "measured", "unit", "error %");
    for (guint i = 0; i < v->rows->len; i++) {
        const ValidateRow *r = v->rows->pdata[i];
        char p[32], m[40];
        fmt_value(p, sizeof p, r->predicted, VALIDATE_BOUND_EQ);
        fmt_value(m, sizeof m, r->measured, r->bound);
        fprintf(out, "%-*s  %-*s  %-9s  %11s  %11s  %-10s  %+8.1f\n", w, r->id, gw, r->group,
                r->use, p, m, r->unit, r->error_pct);
    }
    /* Groups in order of first appearance. */
    g_autoptr(GPtrArray) groups = g_ptr_array_new();
    for (guint i = 0; i < v->rows->len; i++) {
        const ValidateRow *r = v->rows->pdata[i];
        gboolean seen = FALSE;
        for (guint k = 0; k < groups->len && !seen; k++)
            seen = !strcmp(groups->pdata[k], r->group);
        if (!seen)
            g_ptr_array_add(groups, r->group);
    }
    /* Accuracy is quoted on check rows alone: a calibrate row was fitted to (or is a fact a
     * machine file was set from), so its error says how well the fit went, not how well the model
     * predicts. Its groups are summarised apart. */
    for (int pass = 0; pass < 2; pass++) {
        const char *use = pass == 0 ? "check" : "calibrate";
        gboolean any = FALSE;
        for (guint i = 0; i < v->rows->len && !any; i++)
            any = !strcmp(((const ValidateRow *)v->rows->pdata[i])->use, use);
        if (!any)
            continue;
        fprintf(out, "\n%s rows%s\n%-*s  %4s  %12s  %11s\n", use,
                pass == 0 ? " (the accuracy)" : " (fitted to, or facts the files were set from)",
                gw, "group", "rows", "mean |err| %", "max |err| %");
        for (guint k = 0; k < groups->len; k++) {
            int n = 0;
            double sum = 0, max = 0;
            for (guint i = 0; i < v->rows->len; i++) {
                const ValidateRow *r = v->rows->pdata[i];
                if (strcmp(r->group, groups->pdata[k]) != 0 || strcmp(r->use, use) != 0)
                    continue;
                n++;
                sum += fabs(r->error_pct);
                max = MAX(max, fabs(r->error_pct));
            }
            if (n > 0)
                fprintf(out, "%-*s  %4d  %12.1f  %11.1f\n", gw, (char *)groups->pdata[k], n,
                        sum / n, max);
        }
    }
}

gboolean validate_write_baseline(const Validation *v, const char *path, GError **err) {
    g_autoptr(GError) ioerr = NULL;
    OutFile *o = outfile_open(path, &ioerr);
    if (!o) {
        g_set_error_literal(err, VALIDATE_ERROR, VALIDATE_ERROR_IO, ioerr->message);
        return FALSE;
    }
    FILE *f = outfile_stream(o);
    fputs(VALIDATE_BASELINE_HEADER "\n", f);
    for (guint i = 0; i < v->rows->len; i++) {
        const ValidateRow *r = v->rows->pdata[i];
        char p[32];
        fprintf(f, "%s,%s,%s,%s\n", r->id, r->group, r->metric,
                report_format_number(r->predicted, p));
    }
    if (!outfile_commit(o, &ioerr)) {
        g_set_error_literal(err, VALIDATE_ERROR, VALIDATE_ERROR_IO, ioerr->message);
        return FALSE;
    }
    return TRUE;
}

int validate_check(const Validation *v, const char *baseline, double threshold_pp, FILE *out,
                   GError **err) {
    g_autofree char *text = NULL;
    gsize text_len = 0;
    g_autoptr(GError) e = NULL;
    if (!g_file_get_contents(baseline, &text, &text_len, &e)) {
        g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_IO, "cannot read %s: %s", baseline,
                    e->message);
        return -1;
    }
    if (!csv_text_ok(baseline, text, text_len, err))
        return -1;
    g_autoptr(GHashTable) rows = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < v->rows->len; i++) {
        const ValidateRow *r = v->rows->pdata[i];
        g_hash_table_insert(rows, r->id, (gpointer)r);
    }
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    int failed = 0;
    for (int i = 0; lines[i]; i++) {
        g_strchomp(lines[i]);
        if (i == 0) {
            if (strcmp(lines[0], VALIDATE_BASELINE_HEADER) != 0) {
                fail_at(err, VALIDATE_ERROR_PARSE, baseline, 1,
                        "the first line must be the header '%s' (write one with "
                        "--write-baseline)",
                        VALIDATE_BASELINE_HEADER);
                return -1;
            }
            continue;
        }
        if (!*lines[i])
            continue;
        g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
        double base;
        if (g_strv_length(f) != 4 || !parse_number(f[3], &base)) {
            fail_at(err, VALIDATE_ERROR_PARSE, baseline, i + 1,
                    "expected id,group,metric,predicted with a number last");
            return -1;
        }
        const ValidateRow *r = g_hash_table_lookup(rows, f[0]);
        if (!r) {
            if (v->group && strcmp(v->group, f[1]) != 0)
                continue; /* a group not loaded */
            fprintf(out, "FAIL %s: in the baseline but no longer in the validation files\n", f[0]);
            failed++;
            continue;
        }
        g_hash_table_add(seen, r->id);
        if (strcmp(r->metric, f[2]) != 0) {
            fprintf(out, "FAIL %s: metric is %s, the baseline has %s (rewrite the baseline)\n",
                    r->id, r->metric, f[2]);
            failed++;
            continue;
        }
        double was = fabs(validate_error_pct(base, r->measured, r->bound));
        double now = fabs(r->error_pct);
        if (strcmp(r->use, "check") != 0) { /* a fit may move; only check rows guard accuracy */
            if (now > was + threshold_pp)
                fprintf(out, "note %s: calibrate row, |error| %.1f%% (baseline %.1f%%)\n", r->id,
                        now, was);
            continue;
        }
        if (now > was + threshold_pp) {
            fprintf(out,
                    "FAIL %s: |error| %.1f%% against the measurement, %.1f%% in the baseline "
                    "(predicted %.4g, was %.4g; threshold %.1f points)\n",
                    r->id, now, was, r->predicted, base, threshold_pp);
            failed++;
        }
    }
    for (guint i = 0; i < v->rows->len; i++) {
        const ValidateRow *r = v->rows->pdata[i];
        if (!g_hash_table_contains(seen, r->id))
            fprintf(out, "note %s: not in the baseline %s (add it with --write-baseline)\n", r->id,
                    baseline);
    }
    return failed;
}
