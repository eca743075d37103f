/* cmd: the subcommands of the `sim` executable. main.c picks one by its first argument; each lives
 * in its own cmd_NAME.c and returns the process exit status (0 ok, 2 bad input, 1 output error,
 * 3 internal error). */
#ifndef SIM_CMD_H
#define SIM_CMD_H

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

/* sim list [models|topologies|devices|scenarios]: what ships, by name (cmd_list.c). */
int cmd_list(int argc, char **argv);

/* sim import FILE [-o OUT] [options]: the scenario a GPT-NeoX, Megatron-LM, DeepSpeed or Hugging
 * Face configuration implies (cmd_import.c). */
int cmd_import(int argc, char **argv);

#endif
