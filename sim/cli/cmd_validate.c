/* cmd_validate: `sim validate [DIR|FILE]... [--group G] [--format text|csv] [--check BASELINE]
 * [--threshold PP] [--write-baseline FILE]`: the published measurements of validation/ against
 * the simulator's predictions (validate.c).
 *
 * Exit status: 0 ok; 2 bad input (a malformed file, row or command, with FILE:LINE); 1 output
 * cannot be written; 4 --check found a row worse than its baseline, or a row gone. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "validate.h"

int cmd_validate(int argc, char **argv) {
    g_autofree char *group = NULL, *format = NULL, *check = NULL, *write_baseline = NULL,
                    *write_accuracy = NULL;
    double threshold = VALIDATE_DEFAULT_THRESHOLD_PP;
    int jobs = (int)g_get_num_processors();
    GOptionEntry entries[] = {
        {"group", 'g', 0, G_OPTION_ARG_STRING, &group, "Only the rows of group G", "G"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format, "text (default) or csv", "FORMAT"},
        {"check", 0, 0, G_OPTION_ARG_FILENAME, &check,
         "Fail (exit 4) when a row's |error| is worse than in BASELINE by more than the "
         "threshold, or a baseline row is gone",
         "BASELINE"},
        {"threshold", 0, 0, G_OPTION_ARG_DOUBLE, &threshold,
         "Regression threshold of --check, percentage points of |error| (default 5)", "PP"},
        {"jobs", 'j', 0, G_OPTION_ARG_INT, &jobs,
         "Simulate N commands at once (default: every processor; the output does not change)", "N"},
        {"write-baseline", 0, 0, G_OPTION_ARG_FILENAME, &write_baseline,
         "Write every row's prediction to FILE, the baseline for --check", "FILE"},
        {"write-accuracy", 0, 0, G_OPTION_ARG_FILENAME, &write_accuracy,
         "Write the check rows' accuracy per device and framework to FILE (what every report's "
         "accuracy reads: validation/accuracy.csv)",
         "FILE"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new(
        "[DIR|FILE]... - published measurements against the simulator's predictions");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(
        ctx, "Reads validation CSV files (a folder: its *.csv but baseline*.csv and accuracy.csv;\n"
             "default validation/, here or in the source tree), simulates every row and prints\n"
             "predicted against measured with the signed error, then per group the mean and max\n"
             "|error| of the check rows (the accuracy) and, apart, of the calibrate rows. "
             "docs/validation.md "
             "\"Validation\".\n\n"
             "Exit status: 0 ok, 2 bad input, 1 cannot write output, 4 --check failed.");
    g_autoptr(GError) err = NULL;
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim validate", &argc, &argv, &help, &err)) {
        fprintf(stderr, "sim validate: %s (try --help)\n", err->message);
        return 2;
    }
    if (help) {
        fputs(help, stdout);
        return 0;
    }
    gboolean csv = format && !strcmp(format, "csv");
    if (format && !csv && strcmp(format, "text") != 0) {
        fprintf(stderr, "sim validate: --format must be text or csv, not '%s'\n", format);
        return 2;
    }
    if (threshold < 0) {
        fprintf(stderr, "sim validate: --threshold must be at least 0\n");
        return 2;
    }
    /* Default: validation/ here, else the source tree's (row commands resolve the same way). */
    g_autofree char *here = g_file_test("validation", G_FILE_TEST_IS_DIR)
                                ? g_strdup("validation")
                                : g_build_filename(SIM_SOURCE_DIR, "validation", NULL);
    char *def[] = {here, NULL};
    g_autoptr(Validation) v = validate_load(argc > 1 ? argv + 1 : def, group, &err);
    if (!v) {
        fprintf(stderr, "sim validate: %s\n", err->message);
        return 2;
    }
    if (validate_count(v) == 0) {
        fprintf(stderr, "sim validate: no rows%s%s\n", group ? " in group " : "",
                group ? group : "");
        return 2;
    }
    if (!validate_run(v, jobs, &err)) {
        fprintf(stderr, "sim validate: %s\n", err->message);
        return 2;
    }
    validate_write_table(stdout, v, csv);
    if (fflush(stdout) != 0) {
        perror("sim validate: writing the table");
        return 1;
    }
    if (write_baseline && !validate_write_baseline(v, write_baseline, &err)) {
        fprintf(stderr, "sim validate: %s\n", err->message);
        return 1;
    }
    if (write_accuracy && !validate_write_accuracy(v, write_accuracy, &err)) {
        fprintf(stderr, "sim validate: %s\n", err->message);
        return 1;
    }
    if (check) {
        int failed = validate_check(v, check, threshold, stderr, &err);
        if (failed < 0) {
            fprintf(stderr, "sim validate: %s\n", err->message);
            return 2;
        }
        if (failed > 0) {
            fprintf(stderr,
                    "sim validate: %d row%s worse than %s by more than %.1f points, or "
                    "gone (if intended, rewrite it: sim validate --write-baseline %s)\n",
                    failed, failed == 1 ? "" : "s", check, threshold, check);
            return 4;
        }
        fprintf(stderr, "sim validate: %u rows within %.1f points of %s\n", validate_count(v),
                threshold, check);
    }
    return 0;
}
