/* cmd_colocate: `sim colocate A.yaml B.yaml ... [--placement packed|spread|random] [--seed N]
 * [--set KEY=VALUE]... [--format text|json] [-o FILE]`: several jobs on one machine, each alone
 * and all together.
 *
 * Exit status: 0 success; 2 bad input (usage, a scenario that does not load, jobs on different
 * machines or needing more nodes than the machine has); 1 the report could not be written; 3 an
 * internal error. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "colocate.h"
#include "outfile.h"
#include "report_colocate.h"
#include "sim.h"

int cmd_colocate(int argc, char **argv) {
    g_autofree char *placement = NULL, *seed_text = NULL, *format = NULL, *output = NULL;
    g_auto(GStrv) sets = NULL;
    gboolean no_timing = FALSE;
    GOptionEntry entries[] = {
        {"set", 's', 0, G_OPTION_ARG_FILENAME_ARRAY, &sets,
         "Override a key of every job by its dotted path (repeatable), e.g. "
         "topology.fabric.taper=4 for the machine they share",
         "KEY=VALUE"},
        {"placement", 'p', 0, G_OPTION_ARG_STRING, &placement,
         "How the jobs' nodes are chosen: packed (default; job after job on consecutive nodes), "
         "spread (one node to each job in turn; on a dragonfly each next node in the next "
         "group), random (a seeded draw)",
         "POLICY"},
        {"seed", 0, 0, G_OPTION_ARG_STRING, &seed_text,
         "Seed of --placement random (default 1): the same seed, the same nodes", "N"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "Report format: text (default), json",
         "FORMAT"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the report to FILE", "FILE"},
        {"no-timing", 0, 0, G_OPTION_ARG_NONE, &no_timing,
         "Report 0 for host wall time, so that runs compare byte for byte", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(
        "A.yaml B.yaml [C.yaml...] - several jobs on one machine, alone and together");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(
        ctx,
        "Places the jobs' nodes on one machine (the first scenario's topology; every job must\n"
        "name the same) and simulates one iteration of each job alone on its nodes and of all\n"
        "jobs together, every job starting at time 0, their traffic sharing the fabric's links.\n"
        "Reports each job's iteration time alone and together, the slowdown, and the links\n"
        "where the jobs meet with each job's bytes. Every rank is simulated (no\n"
        "representatives). Options: docs/cli.md; every key: docs/report.md.\n\n"
        "Exit status: 0 ok, 2 bad input, 1 cannot write output, 3 internal error.");
    g_autoptr(GError) err = NULL;
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim colocate", &argc, &argv, &help, &err)) {
        fprintf(stderr, "sim colocate: %s (try --help)\n", err->message);
        return 2;
    }
    if (help) {
        fputs(help, stdout);
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "sim colocate: expected two scenario files or more, got %d (try --help)\n",
                argc - 1);
        return 2;
    }
    ColocatePolicy policy = COLOCATE_PACKED;
    if (placement && !colocate_policy_parse(placement, &policy)) {
        fprintf(stderr, "sim colocate: --placement must be packed, spread or random, not '%s'\n",
                placement);
        return 2;
    }
    guint64 seed = 1;
    if (seed_text) {
        if (policy != COLOCATE_RANDOM) {
            fprintf(stderr, "sim colocate: --seed applies to --placement random only\n");
            return 2;
        }
        if (!g_ascii_string_to_unsigned(seed_text, 10, 0, G_MAXUINT32, &seed, NULL)) {
            fprintf(stderr, "sim colocate: --seed must be an integer in 0..%u, not '%s'\n",
                    G_MAXUINT32, seed_text);
            return 2;
        }
    }
    ReportFormat fmt = REPORT_TEXT;
    if (format) {
        if (!strcmp(format, "json"))
            fmt = REPORT_JSON;
        else if (strcmp(format, "text") != 0) {
            fprintf(stderr, "sim colocate: --format must be text or json, not '%s'\n", format);
            return 2;
        }
    }
    int n = argc - 1;
    g_autoptr(GPtrArray) scs = g_ptr_array_new_with_free_func((GDestroyNotify)scenario_free);
    for (int j = 0; j < n; j++) {
        Scenario *sc = scenario_load(argv[j + 1], sets, &err);
        if (!sc) {
            fprintf(stderr, "sim colocate: %s\n", err->message);
            return 2;
        }
        g_ptr_array_add(scs, sc);
    }
    g_autoptr(Colocation) c =
        colocate_run((const Scenario *const *)scs->pdata, (const char *const *)(argv + 1), n,
                     policy, (guint32)seed, &err);
    if (!c) {
        fprintf(stderr, "sim colocate: %s\n", err->message);
        return sim_error_is_input(err) ? 2 : 3;
    }
    OutFile *out = outfile_open(output, &err);
    if (!out) {
        fprintf(stderr, "sim colocate: %s\n", err->message);
        return 1;
    }
    report_colocate_write(outfile_stream(out), c, fmt, !no_timing);
    if (!outfile_commit(out, &err)) {
        fprintf(stderr, "sim colocate: %s\n", err->message);
        return 1;
    }
    return 0;
}
