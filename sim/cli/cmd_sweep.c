/* cmd_sweep: `sim sweep SCENARIO --vary KEY=V1,V2,... [options]`: the cartesian product of the
 * varied keys (and of the scenario's `sweep:` section), one row per point, CSV or JSON lines.
 *
 * Exit status: 0 every point simulated; 2 bad input (usage, a bad --vary, a key or value no point
 * can load, impossible layouts without --skip-invalid, a resumed file of another sweep, a point
 * whose simulated time is past SIM_TIME_MAX); 1 the output could not be written; 3 a point's
 * simulation failed (an internal error). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "sweep.h"
#include "sweep_mpi.h"

/* Check every point; print what is wrong. Returns 0 to go on, else the exit status. */
static int check_points(const Sweep *sw, gboolean skip_invalid, gboolean quiet, gboolean speak) {
    int n = sweep_points(sw), invalid = 0, shown = 0;
    for (int i = 0; i < n; i++) {
        if (sweep_point_status(sw, i) == SWEEP_POINT_ERROR) {
            if (speak) {
                g_autofree char *name = sweep_point_name(sw, i);
                fprintf(stderr, "sim sweep: %s: %s\n", name, sweep_point_error(sw, i));
            }
            return 2;
        }
        invalid += sweep_point_status(sw, i) == SWEEP_POINT_INVALID;
    }
    for (int i = 0; i < n && speak; i++) {
        if (sweep_point_status(sw, i) != SWEEP_POINT_INVALID)
            continue;
        if (skip_invalid ? quiet : shown == 3)
            continue;
        g_autofree char *name = sweep_point_name(sw, i);
        fprintf(stderr, "sim sweep: %s %s: %s\n", skip_invalid ? "skipping" : "impossible layout",
                name, sweep_point_error(sw, i));
        shown++;
    }
    if (invalid && !skip_invalid) {
        if (speak)
            fprintf(stderr,
                    "sim sweep: %d of %d points are impossible layouts; --skip-invalid leaves "
                    "them out\n",
                    invalid, n);
        return 2;
    }
    if (invalid == n) {
        if (speak)
            fprintf(stderr, "sim sweep: no point of the sweep can be simulated\n");
        return 2;
    }
    return 0;
}

/* Ctrl-C on a sweep into a file: every finished row is already there; say how to go on. */
static char interrupted_note[1024];

static void on_interrupt(int sig) {
    (void)sig;
    ssize_t r = write(STDERR_FILENO, interrupted_note, strlen(interrupted_note));
    (void)r;
    _exit(130);
}

static void note_interrupts(const char *output) {
    g_snprintf(interrupted_note, sizeof interrupted_note,
               "\nsim sweep: interrupted; the finished rows are in %s: run the same command with "
               "--resume to go on\n",
               output);
    struct sigaction sa = {0};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static void add_row(void *ctx, SweepResult *r) {
    sweep_out_add(ctx, r);
}

int cmd_sweep(int argc, char **argv) {
    g_auto(GStrv) sets = NULL, varies = NULL;
    g_autofree char *format = NULL, *output = NULL, *scenario = NULL;
    gboolean resume = FALSE, skip_invalid = FALSE, all_ranks = FALSE, timing = FALSE, quiet = FALSE;
    int jobs = 0;
    GOptionEntry entries[] = {
        {"vary", 'v', 0, G_OPTION_ARG_FILENAME_ARRAY, &varies,
         "Vary a scenario key over values (repeatable; the sweep is the product of all), e.g. "
         "nodes=1,2,4,8 or training.seq_len=1024,2048,4096",
         "KEY=V1,V2,..."},
        {"set", 's', 0, G_OPTION_ARG_FILENAME_ARRAY, &sets,
         "Override a scenario key at every point (repeatable), as in `sim SCENARIO --set`",
         "KEY=VALUE"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format,
         "Row format: csv (default, with a header line) or json (JSON lines, one object a row)",
         "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
         "Write rows to FILE as they finish (point order once complete), not stdout", "FILE"},
        {"resume", 'r', 0, G_OPTION_ARG_NONE, &resume,
         "Keep the finished rows already in the -o FILE and run only the points it lacks", NULL},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
         "Simulate up to N points at once (default: the number of processors)", "N"},
        {"skip-invalid", 0, 0, G_OPTION_ARG_NONE, &skip_invalid,
         "Leave out points whose layout is impossible (e.g. TP not dividing the heads) instead of "
         "failing",
         NULL},
        {"all-ranks", 0, 0, G_OPTION_ARG_NONE, &all_ranks,
         "Simulate every rank (no representatives) at every point", NULL},
        {"timing", 0, 0, G_OPTION_ARG_NONE, &timing,
         "Add a wall_s column: host seconds per point (rows then differ from run to run)", NULL},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet, "No progress bar and no notes on stderr",
         NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    int rank = 0, size = 1;
    gboolean mpi = sweep_mpi_init(&argc, &argv, &rank, &size);
    gboolean speak = rank == 0;
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("SCENARIO.yaml - simulate many variations of a scenario");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(
        ctx,
        "One row per point of the product of the --vary axes and of the scenario's `sweep:`\n"
        "section: the varied values, the headline figures, then per (op, dim) communication\n"
        "time, exposed time, volume and message sizes (columns: docs/report.md). Rows are the\n"
        "same bytes whatever --jobs, and under `mpirun -n N` when built with MPI.\n\n"
        "Exit status: 0 ok, 2 bad input, 1 cannot write output, 3 a simulation failed.");
    g_autoptr(GError) err = NULL;
    int status = 0;
    SweepFormat fmt = SWEEP_CSV;
    g_autoptr(Sweep) sw = NULL;
    g_autoptr(SweepOut) out = NULL;
    if (!mpi && size > 1) {
        if (speak)
            fprintf(stderr,
                    "sim sweep: started as %d MPI ranks, but this sim was built without "
                    "MPI; rebuild with cmake -DSIM_MPI=ON, or run it once\n",
                    size);
        return 2;
    }
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim sweep", &argc, &argv, &help, &err)) {
        if (speak)
            fprintf(stderr, "sim sweep: %s (try --help)\n", err->message);
        status = 2;
        goto done;
    }
    if (help) {
        if (speak)
            fputs(help, stdout);
        goto done;
    }
    if (argc != 2) {
        if (speak)
            fprintf(stderr,
                    "sim sweep: expected one scenario file, got %d arguments (try --help)\n",
                    argc - 1);
        status = 2;
        goto done;
    }
    if (format && (!strcmp(format, "json") || !strcmp(format, "jsonl"))) {
        fmt = SWEEP_JSONL;
    } else if (format && strcmp(format, "csv") != 0) {
        if (speak)
            fprintf(stderr, "sim sweep: --format must be csv or json, not '%s'\n", format);
        status = 2;
        goto done;
    }
    if (resume && !output) {
        if (speak)
            fprintf(stderr, "sim sweep: --resume needs the file to resume: -o FILE\n");
        status = 2;
        goto done;
    }
    if (jobs <= 0)
        jobs = MAX(1, sweep_default_jobs() / sweep_mpi_local_size());

    scenario = cmd_scenario_path(argv[1]); /* a file, or a shipped one's name */
    sw = sweep_new(scenario, sets, fmt, timing);
    gboolean ok = sweep_add_file_axes(sw, &err);
    for (char **v = varies; ok && v && *v; v++)
        ok = sweep_add_vary(sw, *v, &err);
    if (!ok || !sweep_prepare(sw, jobs, &err)) {
        if (speak)
            fprintf(stderr, "sim sweep: %s\n", err->message);
        status = 2;
        goto done;
    }
    if ((status = check_points(sw, skip_invalid, quiet, speak)) != 0)
        goto done;

    if (rank == 0) {
        out = sweep_out_new(sw, output, resume, !quiet && isatty(STDERR_FILENO), &err);
        if (!out) {
            fprintf(stderr, "sim sweep: %s\n", err->message);
            status = g_error_matches(err, CONF_ERROR, CONF_ERROR_IO) ? 1 : 2;
        }
    }
    if (mpi && (status = sweep_mpi_bcast_status(status)) != 0)
        goto done;
    if (status != 0)
        goto done;
    if (rank == 0 && resume && !quiet) {
        int left = 0;
        for (int i = 0; i < sweep_points(sw); i++)
            left += sweep_out_todo(out)[i];
        fprintf(stderr, "sim sweep: %s: kept %d finished rows, running %d more\n", output,
                sweep_out_kept(out), left);
    }
    if (rank == 0 && output && !quiet)
        note_interrupts(output);
    int dedup = all_ranks ? 0 : -1;
    if (mpi)
        sweep_mpi_run(sw, out, jobs, dedup);
    else
        sweep_run(sw, jobs, dedup, sweep_out_todo(out), add_row, NULL, out);
    if (rank == 0) {
        if (!sweep_out_finish(out, &err)) {
            fprintf(stderr, "sim sweep: %s\n", err->message);
            status = 1;
        } else if (sweep_out_failed(out) > 0) {
            status = sweep_out_failed(out) > sweep_out_bad_input(out) ? 3 : 2;
        }
    }
done:
    if (mpi)
        sweep_mpi_finalize();
    return status;
}
