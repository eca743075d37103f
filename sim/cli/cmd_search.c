/* cmd_search: `sim search SCENARIO --nodes N`: every valid parallel layout of the scenario's model
 * on N nodes at a fixed global batch, those that do not fit in GPU memory dropped, the rest
 * simulated in parallel, the best (shortest iteration) printed with their breakdowns.
 *
 * Exit status: 0 ok; 2 bad input (usage, scenario, nothing fits); 1 the output could not be
 * written; 3 a simulation failed. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "outfile.h"
#include "progress.h"
#include "search.h"
#include "sweep.h"

typedef struct {
    GPtrArray *results; /* SweepResult *: final rows */
    GPtrArray *pending; /* SweepResult *: deduplicated rows still to be settled (PRUNING) */
    int failed;
    int beyond;         /* reruns stopped at the horizon (PRUNING) */
    int pruned;         /* layouts ruled out by their bound (PRUNING) */
    Progress *progress; /* on a terminal (progress.c) */
    int done, total;
    Sweep *sw;
    int top;
    gboolean settling;       /* search_pending runs: each final row lowers the horizon */
    double bound_s, exact_s; /* while settling: thread time in bounds and in exact runs, s */
} Found;

static gint by_time(gconstpointer a, gconstpointer b);

/* The top-th best final iteration so far, SIM_TIME_MAX while fewer are known (T in PRUNING). */
static SimTime top_time(const Found *f) {
    if (f->results->len < (guint)f->top)
        return SIM_TIME_MAX;
    g_ptr_array_sort(f->results, by_time);
    return ((SweepResult *)f->results->pdata[f->top - 1])->sum.iteration;
}

static void found(void *ctx, SweepResult *r) {
    Found *f = ctx;
    if (f->settling) {
        f->bound_s += r->bound_s;
        f->exact_s += r->wall_s - r->bound_s;
    }
    if (r->beyond) { /* slower than the top's last: see PRUNING */
        if (r->pruned)
            f->pruned++;
        else
            f->beyond++;
        sweep_result_free(r);
    } else if (r->error) {
        progress_break(f->progress);
        g_autofree char *name = sweep_point_name(f->sw, r->point);
        fprintf(stderr, "sim search: layout %d (%s) failed: %s\n", r->point, name, r->error);
        f->failed++;
        sweep_result_free(r);
    } else if (r->final) {
        g_ptr_array_add(f->results, r);
        if (f->settling) /* for the reruns not yet started */
            sweep_set_horizon(f->sw, top_time(f));
    } else {
        g_ptr_array_add(f->pending, r);
    }
    f->done++;
    if (progress_due(f->progress))
        progress_draw(f->progress, FALSE, "sim search: %d/%d layouts simulated", f->done, f->total);
}

static gint by_time(gconstpointer a, gconstpointer b) {
    const SweepResult *x = *(SweepResult *const *)a, *y = *(SweepResult *const *)b;
    if (x->sum.iteration != y->sum.iteration)
        return x->sum.iteration < y->sum.iteration ? -1 : 1;
    return x->point - y->point;
}

/* PRUNING. The exact answer (every layout as sim_run's default gives it, or with every rank under
 * --all-ranks) without running every layout exactly. Each layout is first run deduplicated
 * (sweep.c, SWEEP_TRIAL_EXACT / SWEEP_TRIAL_ALL): that is already its exact row where its
 * representatives are exact. The others (f->pending) are settled in the order of their
 * deduplicated estimates, `jobs` at a time (SWEEP_SETTLE_*): each first gets a lower bound on its
 * exact iteration (sim_bound_within, proved in sim.c, LOWER BOUND) and is ruled out if the bound
 * exceeds T, the top-th best exact iteration known when it starts; else it is run exactly, and
 * stopped once its simulated time passes T with a rank unfinished (sim_run_within). T is
 * lowered as each exact row comes in (sweep_set_horizon), for the layouts not yet started.
 * Why the printed top is the exhaustive search's: T only falls, so a dropped layout's exact
 * iteration is strictly above the final T; at least `top` settled rows are at or below the
 * final T and so rank ahead of it (ties are broken by point, but its time is strictly larger),
 * and the settled rows keep their order among themselves: the first `top` of the settled rows
 * are the first `top` of all. docs/speed.md, "Search". */
static void search_pending(Sweep *sw, Found *f, int jobs, int settle) {
    g_ptr_array_sort(f->pending, by_time); /* the cheap estimate's order */
    int n = (int)f->pending->len;
    g_autofree int *list = g_new(int, MAX(n, 1));
    for (int k = 0; k < n; k++)
        list[k] = ((SweepResult *)f->pending->pdata[k])->point;
    sweep_set_horizon(sw, top_time(f));
    f->settling = TRUE;
    sweep_run_list(sw, jobs, settle, list, n, found, f);
    f->settling = FALSE;
    sweep_set_horizon(sw, SIM_TIME_MAX);
}

static gboolean parse_ints(const char *s, GArray *out) {
    g_auto(GStrv) parts = g_strsplit(s, ",", -1);
    for (char **p = parts; *p; p++) {
        char *end = NULL;
        long v = strtol(*p, &end, 10);
        if (end == *p || *end || v < 1 || v > 1 << 20)
            return FALSE;
        int iv = (int)v;
        g_array_append_val(out, iv);
    }
    return out->len > 0;
}

/* The value of key in a point's name ("tp=8, pp=1, ..."), or NULL. */
static const char *name_value(GStrv kv, const char *key) {
    size_t n = strlen(key);
    for (int i = 0; kv[i]; i++)
        if (strncmp(kv[i], key, n) == 0 && kv[i][n] == '=')
            return kv[i] + n + 1;
    return NULL;
}

/* budget: training.token_budget (0: none); tokens: per iteration, the same for every layout (the
 * search fixes the global batch), so with a budget the table gains the days to train
 * (report_train_time's closed form). */
static void print_table(FILE *out, const Sweep *sw, GPtrArray *res, int top, double capacity,
                        double budget, double tokens, const char *const *dims, int ndims) {
    /* the columns a search adds (search.c): virtual_stages under the interleaved schedule,
     * schedule under a zero-bubble one, sequence_parallel, tp_comm_overlap and the dimensions
     * (dims: cp) when the scenario turns them on */
    g_autofree char *first =
        res->len ? sweep_point_name(sw, ((SweepResult *)res->pdata[0])->point) : g_strdup("");
    g_auto(GStrv) first_kv = g_strsplit(first, ", ", -1);
    gboolean has_v = name_value(first_kv, "virtual_stages") != NULL;
    gboolean has_zb = name_value(first_kv, "schedule") != NULL;
    gboolean has_sp = name_value(first_kv, "sequence_parallel") != NULL;
    gboolean has_ov = name_value(first_kv, "tp_comm_overlap") != NULL;
    g_autoptr(GString) dim_head = g_string_new(NULL);
    for (int i = 0; i < ndims; i++)
        if (name_value(first_kv, dims[i]))
            g_string_append_printf(dim_head, " %3s", dims[i]);
    fprintf(out,
            "%4s %3s %3s %5s %4s %3s %5s %-9s%s%s%s%s%s %10s %8s %6s %8s %8s %8s %8s %8s %8s%s\n",
            "rank", "tp", "pp", "dp", "zero", "mb", "accum", "recompute", has_v ? "  v" : "",
            has_zb ? " schedule" : "", has_sp ? "    sp" : "", dim_head->str, has_ov ? "  ovl" : "",
            "iter s", "TFLOP/s", "MFU", "mem GiB", "compute", "exp TP", "exp DP", "exp PP",
            "bubble", budget > 0 ? "     days" : "");
    int uneven = 0; /* rows marked ! */
    for (guint k = 0; k < res->len && (int)k < top; k++) {
        const SweepResult *r = res->pdata[k];
        const SimSummary *s = &r->sum;
        double it = sim_time_s(s->iteration), pct = it > 0 ? 100.0 / it : 0;
        g_autofree char *name = sweep_point_name(sw, r->point);
        g_auto(GStrv) kv = g_strsplit(name, ", ", -1); /* tp=.., pp=.., ... in search_keys order */
        const char *v[7];
        for (int i = 0; i < 7; i++)
            v[i] = strchr(kv[i], '=') + 1;
        const char *vs = name_value(kv, "virtual_stages"), *zs = name_value(kv, "schedule"),
                   *sp = name_value(kv, "sequence_parallel"),
                   *ov = name_value(kv, "tp_comm_overlap");
        g_autoptr(GString) extra = g_string_new(NULL);
        g_string_append_printf(extra, "%s%*s%s%*s%s%*s", vs ? " " : "", vs ? 2 : 0, vs ? vs : "",
                               zs ? " " : "", zs ? 8 : 0, zs ? zs : "", sp ? " " : "", sp ? 5 : 0,
                               sp ? (strcmp(sp, "true") ? "no" : "yes") : "");
        for (int i = 0; i < ndims; i++) {
            const char *d = name_value(kv, dims[i]);
            if (d)
                g_string_append_printf(extra, " %3s", d);
        }
        if (ov)
            g_string_append_printf(extra, " %4s", ov);
        uneven += s->uneven_sends > 0;
        fprintf(out,
                "%4u %3s %3s %5s %4s %3s %5s %-9s%s %10.6f%c%8.2f %5.1f%% %8.2f %7.1f%% %7.1f%% "
                "%7.1f%% %7.1f%% %7.1f%%",
                k + 1, v[0], v[1], v[2], v[3], v[4], v[5], v[6], extra->str, it,
                s->uneven_sends > 0 ? '!' : ' ', s->tflops_per_gpu, 100 * s->mfu,
                s->memory.total_bytes / 1073741824.0, sim_time_s(s->critical.compute) * pct,
                r->exposed_dim_s[DIM_TP] * pct, r->exposed_dim_s[DIM_DP] * pct,
                r->exposed_dim_s[DIM_PP] * pct, sim_time_s(s->critical.bubble) * pct);
        if (budget > 0) /* budget / (tokens / it) seconds */
            fprintf(out, " %8.2f", budget * it / tokens / 86400);
        fputc('\n', out);
    }
    fprintf(out,
            "(percentages of the iteration on the critical rank: compute, exposed communication "
            "by dimension, bubble; GPU memory %.1f GiB)\n",
            capacity / 1073741824.0);
    if (budget > 0)
        fprintf(out, "(days: to train on training.token_budget %.4g tokens at that pace)\n",
                budget);
    if (uneven > 0) /* UNEVEN COPIES in coll_streams.c */
        fprintf(out,
                "(! %d of these layouts send pipeline activations for replicas whose paths are\n"
                " loaded unevenly: their deduplicated time (sim.dedup_replicas: estimate) may be\n"
                " overstated, and the default simulates every replica; docs/speed.md,\n"
                " \"Representatives\")\n",
                uneven);
}

int cmd_search(int argc, char **argv) {
    g_auto(GStrv) sets = NULL;
    g_autofree char *format = NULL, *output = NULL, *micro = NULL;
    int nodes = 0, jobs = 0, top = 10;
    gint64 global_batch = 0;
    gboolean all_ranks = FALSE, quiet = FALSE, exhaustive = FALSE;
    GOptionEntry entries[] = {
        {"nodes", 'n', 0, G_OPTION_ARG_INT, &nodes, "Nodes of the job (required)", "N"},
        {"global-batch", 'b', 0, G_OPTION_ARG_INT64, &global_batch,
         "Sequences per iteration, the same for every layout (default: the scenario's at N nodes)",
         "B"},
        {"micro-batches", 0, 0, G_OPTION_ARG_STRING, &micro,
         "Micro-batch sizes to try (default 1,2,4,8,16)", "LIST"},
        {"set", 's', 0, G_OPTION_ARG_FILENAME_ARRAY, &sets,
         "Override a scenario key first (repeatable), e.g. training.seq_len=4096", "KEY=VALUE"},
        {"top", 'k', 0, G_OPTION_ARG_INT, &top, "How many layouts to print (default 10)", "K"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format,
         "text (default), or csv / json: the best K as sweep rows", "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write to FILE, not stdout", "FILE"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
         "Simulate up to N layouts at once (default: the number of processors)", "N"},
        {"all-ranks", 0, 0, G_OPTION_ARG_NONE, &all_ranks,
         "Simulate every rank (no representatives) of every layout", NULL},
        {"exhaustive", 0, 0, G_OPTION_ARG_NONE, &exhaustive,
         "Run every layout exactly: no lower bound rules any out (the same answer, slower)", NULL},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress and no summary on stderr", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("SCENARIO.yaml - find the fastest parallel layouts on N nodes");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(
        ctx, "Enumerates TP (within a node), PP, DP, ZeRO stage, micro-batch and recomputation\n"
             "for the scenario's model at a fixed global batch, drops layouts that are impossible\n"
             "or do not fit in GPU memory, simulates the rest and ranks them by iteration time.\n\n"
             "Exit status: 0 ok, 2 bad input or nothing fits, 1 cannot write, 3 a simulation "
             "failed.");
    g_autoptr(GError) err = NULL;
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim search", &argc, &argv, &help, &err)) {
        fprintf(stderr, "sim search: %s (try --help)\n", err->message);
        return 2;
    }
    if (help) {
        fputs(help, stdout);
        return 0;
    }
    if (argc != 2 || nodes < 1) {
        fprintf(stderr, "sim search: expected one scenario file and --nodes N >= 1 (try --help)\n");
        return 2;
    }
    g_autofree char *scenario = cmd_scenario_path(argv[1]); /* a file, or a shipped one's name */
    argv[1] = scenario;
    if (top < 1) {
        fprintf(stderr, "sim search: --top must be at least 1, not %d\n", top);
        return 2;
    }
    if (global_batch < 0) {
        fprintf(stderr,
                "sim search: --global-batch must be a positive number of sequences, not "
                "%" G_GINT64_FORMAT "\n",
                global_batch);
        return 2;
    }
    gboolean csv = format && !strcmp(format, "csv");
    gboolean json = format && (!strcmp(format, "json") || !strcmp(format, "jsonl"));
    if (format && !csv && !json && strcmp(format, "text") != 0) {
        fprintf(stderr, "sim search: --format must be text, csv or json, not '%s'\n", format);
        return 2;
    }
    g_autoptr(GArray) mbs = g_array_new(FALSE, FALSE, sizeof(int));
    if (!parse_ints(micro ? micro : "1,2,4,8,16", mbs)) {
        fprintf(stderr, "sim search: --micro-batches wants sizes like 1,2,4\n");
        return 2;
    }
    if (jobs <= 0)
        jobs = sweep_default_jobs();

    /* The scenario at N nodes, with its own layout: the machine, the model, the batch. */
    g_autoptr(GPtrArray) base = g_ptr_array_new_with_free_func(g_free);
    for (char **s = sets; s && *s; s++)
        g_ptr_array_add(base, g_strdup(*s));
    g_ptr_array_add(base, g_strdup_printf("nodes=%d", nodes));
    g_ptr_array_add(base, NULL);
    g_autoptr(Scenario) sc = scenario_load(argv[1], (char **)base->pdata, &err);
    if (!sc) {
        fprintf(stderr, "sim search: %s\n", err->message);
        return 2;
    }
    if (model_stage_split_set(&sc->model)) { /* a split is made for one pp: the search varies it */
        fprintf(stderr,
                "sim search: parallel.first_stage_layers and last_stage_layers split the layers "
                "over the scenario's %d stages, and the search tries other pipeline depths; "
                "remove them (the search splits every pipeline evenly)\n",
                sc->pp);
        return 2;
    }
    { /* the machine must have N nodes before any layout is worth trying */
        g_autoptr(Topology) machine = topo_new(&sc->topo, nodes, &err);
        if (!machine) {
            fprintf(stderr, "sim search: --nodes %d: %s\n", nodes, err->message);
            return 2;
        }
    }
    /* every layout accumulates global / (micro x DP) micro-batches, at most 2^20 (scenario.c's
     * grad_accum range): a larger batch named --set training.grad_accum, which the user never
     * wrote, from the first layout tried */
    int max_mb = 1;
    for (guint i = 0; i < mbs->len; i++)
        max_mb = MAX(max_mb, g_array_index(mbs, int, i));
    if (global_batch > (INT64_C(1) << 20) * sc->gpus * max_mb) {
        fprintf(stderr,
                "sim search: --global-batch %" G_GINT64_FORMAT " is too large for %d GPUs: "
                "even at DP %d and micro-batch %d each rank would accumulate more than 1048576 "
                "micro-batches (the most a scenario takes); at most %" G_GINT64_FORMAT "\n",
                global_batch, sc->gpus, sc->gpus, max_mb, (INT64_C(1) << 20) * sc->gpus * max_mb);
        return 2;
    }
    const char *dims[SCENARIO_SEARCH_DIMS]; /* the columns of the dimensions it opens (cp) */
    int ndims = scenario_search_dims(sc, dims);
    SearchSpace space = {nodes, global_batch ? global_batch : sc->global_batch,
                         (const int *)(void *)mbs->data, (int)mbs->len};
    gint64 t0 = g_get_monotonic_time();
    g_autoptr(Sweep) sw = sweep_new(argv[1], sets, json ? SWEEP_JSONL : SWEEP_CSV, FALSE);
    SearchCounts counts;
    search_add_layouts(sw, sc, &space, &counts);
    if (!sweep_prepare(sw, jobs, &err)) {
        fprintf(stderr, "sim search: %s\n", err->message);
        return 2;
    }
    int n = sweep_points(sw), invalid = 0, nofit = 0;
    g_autofree guint8 *todo = g_new0(guint8, MAX(n, 1));
    for (int i = 0; i < n; i++) {
        SweepPointStatus st = sweep_point_status(sw, i);
        if (st == SWEEP_POINT_ERROR) {
            fprintf(stderr, "sim search: %s\n", sweep_point_error(sw, i));
            return 2;
        }
        if (st == SWEEP_POINT_INVALID)
            invalid++;
        else if (!sweep_point_inspect(sw, i)->fits)
            nofit++;
        else
            todo[i] = 1;
    }
    int runs = n - invalid - nofit;
    if (!quiet)
        fprintf(stderr,
                "sim search: %s on %d nodes (%d GPUs), global batch %" G_GINT64_FORMAT
                ": %d layouts; %d impossible for the model, %d not supported, %d with the batch "
                "not divisible, %d do not fit in memory; simulating %d on %d threads\n",
                sc->model.name, nodes, sc->gpus, space.global_batch,
                counts.enumerated + counts.unsupported + counts.batch, invalid, counts.unsupported,
                counts.batch, nofit, runs, jobs);
    if (runs == 0) {
        fprintf(stderr, "sim search: no layout fits; try more nodes or another global batch\n");
        return 2;
    }
    Found f = {.results = g_ptr_array_new_with_free_func((GDestroyNotify)sweep_result_free),
               .pending = g_ptr_array_new_with_free_func((GDestroyNotify)sweep_result_free),
               .progress = progress_new(!quiet),
               .total = runs,
               .sw = sw,
               .top = top};
    Dedup mode = sim_dedup_mode(sc, all_ranks ? DEDUP_OFF : -1);
    int reruns = 0;
    if (mode == DEDUP_ESTIMATE || exhaustive) {
        sweep_run(sw, jobs, all_ranks ? DEDUP_OFF : -1, todo, found, NULL, &f);
    } else {
        sweep_run(sw, jobs, mode == DEDUP_EXACT ? SWEEP_TRIAL_EXACT : SWEEP_TRIAL_ALL, todo, found,
                  NULL, &f);
        f.total += f.pending->len;
        search_pending(sw, &f, jobs, all_ranks ? SWEEP_SETTLE_ALL : SWEEP_SETTLE_EXACT);
        reruns = (int)f.pending->len - f.pruned;
    }
    progress_end(f.progress, FALSE);
    g_ptr_array_sort(f.results, by_time);
    if (!quiet) {
        fprintf(stderr, "sim search: %d layouts simulated in %.2f s", runs,
                (double)(g_get_monotonic_time() - t0) / 1e6);
        if (mode != DEDUP_ESTIMATE && !exhaustive)
            fprintf(stderr,
                    "; %d run again with every rank (%d of them stopped once past the top), %d "
                    "ruled out by their lower bound; thread time %.1f s in bounds, %.1f s in "
                    "exact runs",
                    reruns, f.beyond, f.pruned, f.bound_s, f.exact_s);
        fputc('\n', stderr);
    }

    g_autoptr(GError) oerr = NULL;
    OutFile *of = outfile_open(output, &oerr);
    if (!of) {
        fprintf(stderr, "sim search: %s\n", oerr->message);
        g_ptr_array_unref(f.results);
        g_ptr_array_unref(f.pending);
        return 1;
    }
    FILE *out = outfile_stream(of);
    if (csv || json) {
        fputs(sweep_header(sw), out);
        for (guint k = 0; k < f.results->len && (int)k < top; k++)
            fputs(((SweepResult *)f.results->pdata[k])->row, out);
    } else {
        print_table(out, sw, f.results, top, sc->topo.device.hbm_capacity, sc->token_budget,
                    (double)space.global_batch * sc->seq_len, dims, ndims);
    }
    g_ptr_array_unref(f.results);
    g_ptr_array_unref(f.pending);
    if (!outfile_commit(of, &oerr)) {
        fprintf(stderr, "sim search: %s\n", oerr->message);
        return 1;
    }
    return f.failed ? 3 : 0;
}
