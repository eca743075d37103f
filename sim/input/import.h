/* import: a framework's own configuration (a GPT-NeoX .yml, a Megatron-LM argument list, a
 * DeepSpeed JSON config, a Hugging Face config.json, an llm-foundry training YAML, a Hugging Face
 * accelerate config) turned into the scenario YAML it implies.
 *
 * For: `sim import`. Each reader flattens its file into settings (key, value, where), keys
 * normalised (lower case, '-' as '_', nested keys joined by '.'); one mapper reads the settings
 * every format shares under their several names, and writes the scenario with every setting it
 * could not map and every default it chose named in comments. A setting the simulator cannot
 * express (an unknown activation, experts, ALiBi) is an error naming it. Not for: running
 * anything; the scenario written is loaded and checked by scenario.c like any other. */
#ifndef SIM_IMPORT_H
#define SIM_IMPORT_H

#include <glib.h>

typedef enum {
    IMPORT_AUTO,      /* from the file name and content */
    IMPORT_NEOX,      /* GPT-NeoX configs/NAME.yml */
    IMPORT_MEGATRON,  /* Megatron-LM's pretrain_gpt.py arguments, one file */
    IMPORT_DEEPSPEED, /* a DeepSpeed config JSON */
    IMPORT_HF,        /* a Hugging Face config.json */
    IMPORT_FOUNDRY,   /* a MosaicML llm-foundry training YAML (Composer, PyTorch FSDP) */
    IMPORT_ACCELERATE /* a Hugging Face accelerate config YAML (distributed_type FSDP) */
} ImportFormat;

/* One setting of the file: normalised key, its value as text (sequences written [a, b]), and
 * where it is ("FILE:LINE:COL", "FILE: key a.b", "FILE:LINE: --flag"). */
typedef struct {
    char *key;
    char *value;
    char *where;
    gboolean used; /* the mapper read it */
    char *unknown; /* why the value cannot be known without running the script (import_shell.c,
                      import_fsdp.c); NULL: it is known */
    char *note;    /* what the simulator does instead, said beside it under "Not mapped"; or NULL */
    GSList *refs;  /* the settings its value was interpolated from (llm-foundry's ${...}): read
                      when it is read */
} ImportItem;

/* What the file lacks, from the command line. NULL / 0: the default, named in the output. */
typedef struct {
    ImportFormat format;
    const char *topology; /* a topology name or path; default frontier */
    int nodes;            /* default: the fewest that hold TP x PP */
    const char *model;    /* a shipped model by name, for formats without a model (DeepSpeed,
                             accelerate) */
    const char *name;     /* the model's name; default from the file */
} ImportOptions;

/* The format's name ("gpt-neox", "megatron", "deepspeed", "hf", "llm-foundry", "accelerate"),
 * and the one named by text
 * (FALSE when none is). */
const char *import_format_name(ImportFormat f);
gboolean import_format_parse(const char *text, ImportFormat *out);

/* The settings of path read as format f (IMPORT_AUTO guesses, and *f is set to the guess).
 * GPtrArray of ImportItem. NULL and err (CONF_ERROR) when the file cannot be read or parsed. */
GPtrArray *import_read(const char *path, ImportFormat *f, GError **err);

/* The scenario YAML that path implies. NULL and err (CONF_ERROR, a message naming the setting
 * and where it is) when the file cannot be read or holds a setting the simulator cannot express. */
char *import_scenario(const char *path, const ImportOptions *opt, GError **err);

#endif
