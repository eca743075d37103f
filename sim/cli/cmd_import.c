/* cmd_import: `sim import FILE [-o OUT] [--format F] [--topology T] [--nodes N] [--model NAME]
 * [--name NAME]`: the scenario a framework's configuration implies (import.c), written to stdout
 * or OUT, ready for `sim OUT`.
 *
 * Exit status: 0 ok; 2 bad input (an unreadable file, a setting the simulator cannot express,
 * named with its place); 1 the output cannot be written. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "import.h"
#include "outfile.h"

int cmd_import(int argc, char **argv) {
    g_autofree char *output = NULL, *format = NULL, *topology = NULL, *model = NULL, *name = NULL;
    int nodes = 0;
    GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output, "Write the scenario to FILE", "FILE"},
        {"format", 'f', 0, G_OPTION_ARG_STRING, &format,
         "gpt-neox, megatron, deepspeed, hf, llm-foundry or accelerate (default: from the file)",
         "F"},
        {"topology", 't', 0, G_OPTION_ARG_STRING, &topology,
         "The machine (a topologies/ name or a path; default frontier)", "T"},
        {"nodes", 'n', 0, G_OPTION_ARG_INT, &nodes,
         "Nodes in the job (default: the fewest that hold the layout)", "N"},
        {"model", 'm', 0, G_OPTION_ARG_STRING, &model,
         "A shipped model by name, for a file without one (DeepSpeed)", "NAME"},
        {"name", 0, 0, G_OPTION_ARG_STRING, &name, "The imported model's name", "NAME"},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    g_autoptr(GOptionContext) ctx =
        g_option_context_new("FILE - the scenario a framework's configuration implies");
    g_option_context_add_main_entries(ctx, entries, NULL);
    g_option_context_set_description(
        ctx,
        "Reads a GPT-NeoX .yml, a Megatron-LM argument list (a file of --flag value words), a\n"
        "DeepSpeed JSON config or a Hugging Face config.json, and writes the scenario YAML it\n"
        "implies, with every setting it could not map and every default it chose in comments.\n"
        "How each setting maps: docs/import.md.\n\n"
        "Exit status: 0 ok, 2 bad input, 1 cannot write output.");
    g_autoptr(GError) err = NULL;
    g_autofree char *help = NULL;
    if (!cmd_parse(ctx, "sim import", &argc, &argv, &help, &err)) {
        fprintf(stderr, "sim import: %s (try --help)\n", err->message);
        return 2;
    }
    if (help) {
        fputs(help, stdout);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "sim import: give one FILE (try --help)\n");
        return 2;
    }
    ImportOptions opt = {IMPORT_AUTO, topology, nodes, model, name};
    if (format && !import_format_parse(format, &opt.format)) {
        fprintf(stderr,
                "sim import: --format must be gpt-neox, megatron, deepspeed, hf, llm-foundry or "
                "accelerate, "
                "not '%s'\n",
                format);
        return 2;
    }
    if (nodes < 0) {
        fprintf(stderr, "sim import: --nodes must be at least 1\n");
        return 2;
    }
    g_autofree char *yaml = import_scenario(argv[1], &opt, &err);
    if (!yaml) {
        fprintf(stderr, "sim import: %s\n", err->message);
        return 2;
    }
    if (!outfile_write(output, yaml, strlen(yaml), &err)) {
        fprintf(stderr, "sim import: %s\n", err->message);
        return 1;
    }
    return 0;
}
