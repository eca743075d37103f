/* cmd: the subcommands of the `sim` executable. main.c picks one by its first argument; each lives
 * in its own cmd_NAME.c and returns the process exit status (0 ok, 2 bad input, 1 output error,
 * 3 internal error). */
#ifndef SIM_CMD_H
#define SIM_CMD_H

#include <glib.h>

/* Parse the options of `prog` (such as "sim sweep") with ctx. -h/--help sets *help to the help
 * text (the caller prints it and exits 0), NULL otherwise. The text is ASCII: "[OPTION...]" where
 * GLib writes "[OPTION\u2026]", which outside a UTF-8 locale prints as "[OPTION?]" (main.c). */
gboolean cmd_parse(GOptionContext *ctx, const char *prog, int *argc, char ***argv, char **help,
                   GError **err);

/* sim SCENARIO [--set K=V]... [--format text|json|csv] [-o FILE]: the default command. */
int cmd_run(int argc, char **argv);

/* sim collective --op OP --ranks N [--sizes MIN:MAX] [--topology NAME]: rccl-tests-style table. */
int cmd_collective(int argc, char **argv);

/* sim sweep SCENARIO --vary KEY=V1,V2,... [options]: many points, one row each (cmd_sweep.c). */
int cmd_sweep(int argc, char **argv);

/* sim search SCENARIO --nodes N [options]: the best parallel layouts (cmd_search.c). */
int cmd_search(int argc, char **argv);

/* sim validate [DIR|FILE]... [--check BASELINE]: published measurements against predictions
 * (cmd_validate.c). */
int cmd_validate(int argc, char **argv);

/* sim sensitivity SCENARIO [--set K=V]... [--by F]: the iteration time's change per assumed or
 * calibrated constant moved by F (cmd_sensitivity.c). */
int cmd_sensitivity(int argc, char **argv);

/* sim list [models|topologies|devices|scenarios]: what ships, by name (cmd_list.c). */
int cmd_list(int argc, char **argv);

/* The scenario file a command line's SCENARIO names, newly allocated: arg itself when it is a
 * file, else the shipped scenario of that name as `sim list scenarios` prints it
 * (scenarios/ARG.yaml under $SIM_DATA_DIR, then the source tree), else arg (whose loading then
 * fails naming it). */
char *cmd_scenario_path(const char *arg);

/* sim import FILE [-o OUT] [options]: the scenario a GPT-NeoX, Megatron-LM, DeepSpeed or Hugging
 * Face configuration implies (cmd_import.c). */
int cmd_import(int argc, char **argv);

/* sim colocate A.yaml B.yaml ... [--placement P] [--seed N]: several jobs on one machine, alone and
 * together, and the links where they meet (cmd_colocate.c). */
int cmd_colocate(int argc, char **argv);

/* sim compare A.json B.json [--format text|json] [-o FILE]: two JSON reports side by side
 * (cmd_compare.c). */
int cmd_compare(int argc, char **argv);

#endif
