/* import_internal: what the parts of `sim import`'s mapper share (import.c, import_model.c,
 * import_run.c, import_fsdp.c, import_interp.c): the settings read, the lookup that marks a setting
 * read, the conversions that name a bad value's place, and the writers of one scenario line. Not
 * for: any other module. */
#ifndef SIM_IMPORT_INTERNAL_H
#define SIM_IMPORT_INTERNAL_H

#include <glib.h>
#include <stdint.h>

#include "import.h"

typedef struct {
    GPtrArray *items; /* ImportItem */
    const char *path;
    ImportFormat fmt;
    GString *defaults; /* "#   key: value  (reason)" lines */
} Im;

/* The model's shape as the mapper found it (import_model.c). */
typedef struct {
    int64_t layers, hidden, heads, ffn;
    gboolean swiglu, rms, bias;
} Shape;

/* The run's layout and batch as the mapper found it (import_run.c). */
typedef struct {
    int64_t tp, pp, zero, micro, accum, global, seq;
    int64_t mp;        /* the product of the other model-parallel sizes (cp: import_args) */
    char mp_label[48]; /* their labels and sizes, " x CP 2" */
    int elem_bytes;
    ImportItem *global_dp; /* the global batch when it, with micro and accum, fixes DP */
} Run;

/* A setting appended to items (key normalised; where is taken). */
ImportItem *import_item_add(GPtrArray *items, const char *key, const char *value, char *where);
/* The settings of a Megatron-LM launch script or argument list of len bytes (import_shell.c). */
gboolean import_read_shell(const char *path, const char *text, gsize len, GPtrArray *items,
                           GError **err);

/* The first present setting among the NULL-terminated names; marks it read. NULL if none. */
ImportItem *im_take(Im *im, ...) G_GNUC_NULL_TERMINATED;
/* FALSE, with err "WHERE: key = value: MESSAGE". */
gboolean im_fail(GError **err, const ImportItem *it, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
/* The value as a whole number in [min, max], as true or false, as a number in [min, max]. */
gboolean im_as_int(const ImportItem *it, int64_t min, int64_t max, int64_t *out, GError **err);
gboolean im_as_bool(const ImportItem *it, gboolean *out, GError **err);
gboolean im_as_double(const ImportItem *it, double min, double max, double *out, GError **err);
/* A "Defaults chosen" line. */
void im_chose(Im *im, const char *key, const char *value, const char *why);
/* "  key: value   # from" into a section. */
void im_put(GString *out, const char *key, const char *value, const char *from);
void im_put_int(GString *out, const char *key, int64_t v, const char *from);
/* A switch argument (arg, normalised) that, when on, sets key: true in out (a setting's false
 * is the key's default). FALSE with err where its value is no boolean. */
gboolean im_put_switch(Im *im, GString *out, const char *arg, const char *key, GError **err);
/* An integer setting by its names (NULL-terminated after err) into sec, else def (see import.c). */
gboolean im_int_of(Im *im, GString *sec, const char *key, int64_t min, int64_t max, int64_t def,
                   const char *why, int64_t *out, GError **err, ...);
/* s as a YAML double-quoted scalar: valid UTF-8, controls and line breaks escaped. */
char *im_yaml_quoted(const char *s);
/* Whether the value holds needle, case aside. */
gboolean im_value_has(const ImportItem *it, const char *needle);

/* The model line of a shipped model named by --model. */
void im_put_model_option(GString *m, const ImportOptions *opt);
/* layer_vector_params_h for a GeLU, LayerNorm, biased multi-head layer (kv 0 or heads), or the
 * default named (import_model.c). */
void im_put_vector_params(Im *im, GString *m, const Shape *sh, int64_t kv);

/* The sections (import_model.c, import_run.c); FALSE and err on a setting that cannot be. */
gboolean import_write_model(Im *im, const ImportOptions *opt, GString *m, Shape *sh, GError **err);
gboolean import_write_precision(Im *im, GString *t, Run *r, GError **err);
gboolean import_write_parallel(Im *im, GString *p, Run *r, GError **err);
gboolean import_write_megatron_layout(Im *im, GString *p, const Run *r, int64_t layers,
                                      GError **err);
gboolean import_write_training(Im *im, GString *t, Run *r, GError **err);
gboolean import_nodes_for(Im *im, const ImportOptions *opt, const Run *r, int64_t *nodes,
                          GError **err);

/* llm-foundry's ${...} interpolations resolved in the values of items (import_interp.c): what
 * cannot be resolved statically is marked unknown, with its reason, and refused by the mapper
 * only where it is read. */
void import_foundry_resolve(GPtrArray *items);
/* Every section of an llm-foundry or accelerate file, and the nodes (import_fsdp.c). */
gboolean import_write_fsdp(Im *im, const ImportOptions *opt, GString *model, GString *par,
                           GString *train, int64_t *nodes, GError **err);

#endif
