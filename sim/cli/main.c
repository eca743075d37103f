/* main: dispatch `sim [COMMAND] ...` to a subcommand; without one, `sim SCENARIO ...` runs a
 * scenario (cmd_run). A new subcommand is a cmd_NAME.c and one line in the table below, with the
 * one-line summary `sim help` prints. */
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"

typedef int (*CmdFn)(int argc, char **argv);

static const struct {
    const char *name;
    CmdFn fn;
    const char *summary; /* one line for `sim help` */
} commands[] = {
    /* clang-format off */
    {"run", cmd_run, "simulate one iteration of a scenario (the default: sim SCENARIO)"},
    {"collective", cmd_collective, "time one collective over a range of sizes, like rccl-tests"},
    {"sweep", cmd_sweep, "many scenario points (--vary KEY=V1,V2), one CSV or JSON row each"},
    {"search", cmd_search, "the fastest parallel layouts of a scenario on N nodes"},
    {"validate", cmd_validate, "published measurements against the model's predictions"},
    {"sensitivity", cmd_sensitivity, "which assumed constant the iteration time hinges on"},
    {"list", cmd_list, "the shipped models, topologies, devices and scenarios, by name"},
    {"import", cmd_import, "a scenario from a GPT-NeoX, Megatron-LM, DeepSpeed, HF, llm-foundry or accelerate config"},
    {"compare", cmd_compare, "two JSON reports side by side, with their differences"},
    {"colocate", cmd_colocate, "several jobs on one machine, alone and together, and where they meet"},
    /* clang-format on */
};

/* `sim help`, `sim --help`: the commands, then the default command's options. */
static int help(void) {
    printf("Usage: sim SCENARIO [OPTION...]      simulate (sim SCENARIO --help: its options)\n"
           "       sim COMMAND [OPTION...]       (sim COMMAND --help: its options)\n\n"
           "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        printf("  %-12s %s\n", commands[i].name, commands[i].summary ? commands[i].summary : "");
    printf("\nSCENARIO is a file or the name of a shipped one (sim list scenarios).\n"
           "Short options mean the same in every command, except sim collective's -b, -e, -f\n"
           "and -d, which are rccl-tests' (docs/cli.md).\n\n");
    fflush(stdout);
    char *run_help[] = {"sim", "--help", NULL};
    return cmd_run(2, run_help);
}

gboolean cmd_parse(GOptionContext *ctx, const char *prog, int *argc, char ***argv, char **help,
                   GError **err) {
    gboolean want = FALSE;
    GOptionEntry entries[] = {
        {"help", 'h', 0, G_OPTION_ARG_NONE, &want, "Show this help and exit", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    *help = NULL;
    g_option_context_set_help_enabled(ctx, FALSE); /* GLib's own prints the ellipsis */
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_get_prgname()) /* the usage line names "sim sweep", not "sweep" */
        g_set_prgname(prog);
    if (!g_option_context_parse(ctx, argc, argv, err))
        return FALSE;
    if (want) {
        g_autofree char *text = g_option_context_get_help(ctx, TRUE, NULL);
        GString *s = g_string_new(text);
        g_string_replace(s, "\u2026", "...", 0);
        *help = g_string_free(s, FALSE);
    }
    return TRUE;
}

int main(int argc, char **argv) {
    /* The user's locale for text (GOption converts arguments from it: a UTF-8 --set value is
     * read as UTF-8), but numbers always C's: reports and parsing use a decimal point. */
    setlocale(LC_ALL, "");
    setlocale(LC_NUMERIC, "C");
    if (argc == 2 && (!strcmp(argv[1], "help") || !strcmp(argv[1], "--help") ||
                      !strcmp(argv[1], "-h") || !strcmp(argv[1], "-?")))
        return help();
    if (argc == 3 && !strcmp(argv[1], "help")) { /* sim help COMMAND: its --help */
        char *sub[] = {argv[2], "--help", NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[2], commands[i].name) == 0)
                return commands[i].fn(2, sub);
        fprintf(stderr, "sim help: no command '%s' (sim help lists them)\n", argv[2]);
        return 2;
    }
    if (argc > 1)
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[1], commands[i].name) == 0)
                return commands[i].fn(argc - 1, argv + 1);
    return cmd_run(argc, argv);
}
