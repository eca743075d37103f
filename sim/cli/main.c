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
    {"list", cmd_list},
    {"import", cmd_import},
    /* clang-format on */
};

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
