/* cmd_run: `sim SCENARIO [options]`, the default command. Parses options, loads the scenario,
 * runs, reports.
 *
 * Exit status: 0 success; 2 bad input (usage, YAML, keys, units, impossible layouts, missing
 * files); 1 the report could not be written; 3 an internal error. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "device.h"
#include "outfile.h"
#include "progress.h"
#include "report.h"
#include "scenario.h"
#include "sim.h"
#include "trace.h"
#include "workload.h"

#ifndef SIM_VERSION
#define SIM_VERSION "0.0.0"
#endif

int cmd_run(int argc, char **argv) {
    g_auto(GStrv) sets = NULL;
    g_autofree char *format = NULL, *output = NULL, *trace_path = NULL, *ranks_spec = NULL;
    gboolean version = FALSE, no_timing = FALSE, all_ranks = FALSE, ops = FALSE, print = FALSE;
    GOptionEntry entries[] = {
        {"set", 's', 0, G_OPTION_ARG_FILENAME_ARRAY, &sets,
         "Override a scenario key by its dotted path (repeatable), e.g. parallel.tp=4, "
         "training.seq_len=4096, model=gpt-neox-1.3b, topology.node.nics.bandwidth=50GB/s",
         "KEY=VALUE"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Report format: text (default), json, csv",
         "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE", "FILE"},
        {"all-ranks", 0, 0, G_OPTION_ARG_NONE, &all_ranks,
         "Simulate every rank: every data-parallel replica and tensor-parallel rank instead of "
         "representatives",
         NULL},
        {"no-timing", 0, 0, G_OPTION_ARG_NONE, &no_timing,
         "Report 0 for host wall time and memory, so that runs compare byte for byte", NULL},
        /* no -t: -t is --topology in sim collective and sim import (docs/cli.md) */
        {"trace", 0, 0, G_OPTION_ARG_FILENAME, &trace_path,
         "Also write a Chrome / Perfetto trace of the run to FILE (JSON; open it in "
         "ui.perfetto.dev or chrome://tracing)",
         "FILE"},
        {"trace-ranks", 0, 0, G_OPTION_ARG_STRING, &ranks_spec,
         "Ranks to trace: all, or ranks and ranges like 0-7,64 (default: the first 64 simulated)",
         "LIST"},
        {"ops", 0, 0, G_OPTION_ARG_NONE, &ops,
         "Print the time, FLOPs, TFLOP/s and bound of every kernel of one layer on the scenario's "
         "GPU (text, or --format csv) instead of simulating",
         NULL},
        {"print-scenario", 0, 0, G_OPTION_ARG_NONE, &print,
         "Print the fully resolved scenario (model, topology and device files read in, --set "
         "applied) as YAML, each value with the file:line or --set it came from, and exit",
         NULL},
        {"version", 'V', 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("SCENARIO.yaml - simulate one iteration of distributed training");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(
        ctx,
        "Simulates one training iteration of the scenario on its modelled machine and reports\n"
        "iteration time, its compute / communication / bubble breakdown, overlap, throughput,\n"
        "memory per GPU and the communication inventory. docs/report.md has every key.\n"
        "SCENARIO is a file or the name of a shipped one (sim list scenarios). The other\n"
        "commands (sweep, search, compare, ...): sim help.\n\n"
        "Exit status: 0 ok, 2 bad input, 1 cannot write output, 3 internal error.");
    g_autoptr(GError) err = NULL;
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim", &argc, &argv, &help, &err)) {
        fprintf(stderr, "sim: %s (try --help)\n", err->message);
        return 2;
    }
    if (help) {
        fputs(help, stdout);
        return 0;
    }
    if (version) {
        printf("sim %s\n", SIM_VERSION);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "sim: expected one scenario file, got %d arguments (try --help)\n",
                argc - 1);
        return 2;
    }
    g_autofree char *scenario = cmd_scenario_path(argv[1]); /* a file, or a shipped one's name */
    argv[1] = scenario;
    ReportFormat fmt = REPORT_TEXT;
    if (format) {
        if (!strcmp(format, "json"))
            fmt = REPORT_JSON;
        else if (!strcmp(format, "csv"))
            fmt = REPORT_CSV;
        else if (strcmp(format, "text") != 0) {
            fprintf(stderr, "sim: --format must be text, json or csv, not '%s'\n", format);
            return 2;
        }
    }
    g_autoptr(Scenario) sc = scenario_load(argv[1], sets, &err);
    if (!sc) {
        gboolean none = g_error_matches(err, CONF_ERROR, CONF_ERROR_IO) &&
                        !g_file_test(argv[1], G_FILE_TEST_EXISTS);
        fprintf(stderr, "sim: %s%s\n", err->message,
                none ? " (neither a file nor a shipped scenario: sim list scenarios)" : "");
        return 2;
    }
    /* an import: key drops what it cannot map as `sim import` does: said here as it says it */
    g_autofree char *notes = scenario_import_notes(argv[1]);
    if (notes)
        fputs(notes, stderr);
    if (print) { /* validated above; the tree as it was read */
        g_autoptr(ConfNode) tree = scenario_resolve(argv[1], sets, &err);
        g_assert(tree);
        g_autoptr(GString) yaml = g_string_new(NULL);
        g_string_printf(yaml, "# %s as sim %s resolves it\n", argv[1], SIM_VERSION);
        report_scenario_yaml(yaml, tree);
        if (!outfile_write(output, yaml->str, yaml->len, &err)) {
            fprintf(stderr, "sim: %s\n", err->message);
            return 1;
        }
        return 0;
    }
    if (ops) {
        if (fmt == REPORT_JSON) {
            fprintf(stderr, "sim: --ops writes text or csv, not json\n");
            return 2;
        }
        g_autofree char *table = NULL;
        size_t table_len = 0;
        FILE *mem = open_memstream(&table, &table_len);
        double opt_params = workload_first_stage_opt_params(sc);
        gboolean in_range = device_write_ops(mem, &sc->topo.device, &sc->model, sc->micro_batch,
                                             sc->seq_len, sc->tp, sc->precision, sc->recompute,
                                             opt_params, fmt == REPORT_CSV, &err);
        fclose(mem);
        if (!in_range) {
            fprintf(stderr, "sim: %s\n", err->message);
            return 2;
        }
        if (!outfile_write(output, table, table_len, &err)) {
            fprintf(stderr, "sim: %s\n", err->message);
            return 1;
        }
        return 0;
    }
    int dedup = all_ranks ? 0 : -1;
    g_autoptr(Trace) trace = NULL;
    if (ranks_spec && !trace_path) {
        fprintf(stderr, "sim: --trace-ranks needs --trace FILE\n");
        return 2;
    }
    /* a trace picks its ranks among those simulated, so with DEDUP_EXACT a deduplicated trial
     * settles the mode first (EXACT REPRESENTATIVES in sim.c), and the traced run is the one whose
     * figures count */
    g_autoptr(SimRun) trial = NULL;
    /* a run of more than a couple of seconds says so on a terminal (progress.c) */
    g_autofree char *label = g_strdup_printf("sim: simulating %s on %d GPUs", argv[1], sc->gpus);
    Progress *ticker = progress_ticker(label);
    if (trace_path && sim_dedup_mode(sc, dedup) == DEDUP_EXACT) {
        trial = sim_run(sc, DEDUP_ESTIMATE, &err);
        if (!trial) {
            progress_end(ticker, FALSE);
            fprintf(stderr, "sim: %s\n", err->message);
            return sim_error_is_input(err) ? 2 : 3;
        }
        dedup = sim_trial_mode(sim_summary(trial));
    }
    if (trace_path) {
        trace = trace_new(sc, dedup, trace_path, ranks_spec, &err);
        if (!trace) {
            progress_end(ticker, FALSE);
            fprintf(stderr, "sim: %s\n", err->message);
            return g_error_matches(err, CONF_ERROR, CONF_ERROR_IO) ? 1 : 2;
        }
        if (trace_unsimulated(trace) > 0) {
            progress_break(ticker);
            fprintf(stderr,
                    "sim: trace: %d of the chosen ranks are data-parallel replicas that are not "
                    "simulated (add --all-ranks to trace them)\n",
                    trace_unsimulated(trace));
        }
    }
    g_autoptr(SimRun) run = sim_run_observed(sc, dedup, trace ? trace_observer(trace) : NULL, &err);
    progress_end(ticker, FALSE);
    if (!run) {
        fprintf(stderr, "sim: %s\n", err->message);
        return sim_error_is_input(err) ? 2 : 3;
    }
    if (trial)
        sim_keep_trial(run, sim_summary(trial));
    if (trace) {
        if (!ranks_spec && sim_summary(run)->ranks_simulated > trace_ranks(trace))
            fprintf(stderr,
                    "sim: trace: the first %d of %d simulated ranks (choose with "
                    "--trace-ranks)\n",
                    trace_ranks(trace), sim_summary(run)->ranks_simulated);
        if (!trace_finish(trace, run, &err)) {
            fprintf(stderr, "sim: %s\n", err->message);
            return 1;
        }
    }
    OutFile *out = outfile_open(output, &err);
    if (!out) {
        fprintf(stderr, "sim: %s\n", err->message);
        return 1;
    }
    report_write(outfile_stream(out), run, fmt, !no_timing);
    if (!outfile_commit(out, &err)) {
        fprintf(stderr, "sim: %s\n", err->message);
        return 1;
    }
    return 0;
}
