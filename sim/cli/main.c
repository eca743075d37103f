/* main: dispatch `sim [COMMAND] ...` to a subcommand; without one, `sim SCENARIO ...` runs a
 * scenario (cmd_run). A new subcommand is a cmd_NAME.c and one line in the table below. */
#include <locale.h>
#include <string.h>

#include "cmd.h"

typedef int (*CmdFn)(int argc, char **argv);

static const struct {
    const char *name;
    CmdFn fn;
} commands[] = {
    /* clang-format off */
    {"run", cmd_run},
    {"collective", cmd_collective},
    {"sweep", cmd_sweep},
    {"search", cmd_search},
    {"validate", cmd_validate},
    {"sensitivity", cmd_sensitivity},
    {"list", cmd_list},
    {"import", cmd_import},
    {"compare", cmd_compare},
    /* clang-format on */
};

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
    if (argc > 1)
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(argv[1], commands[i].name) == 0)
                return commands[i].fn(argc - 1, argv + 1);
    return cmd_run(argc, argv);
}
