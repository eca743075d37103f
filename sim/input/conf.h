/* conf: YAML documents as a tree of nodes that remember where they came from, with unit-aware
 * typed getters and dotted-path overrides.
 *
 * For: the scenario loader. Every getter either returns a valid value or fails with a GError whose
 * message starts "FILE:LINE:COLUMN: " (or "--set KEY=VALUE: " for command-line values) and says
 * what was expected. Unknown keys are found with conf_check_keys, which names the nearest valid
 * key. Not for: knowing what any key means; scenario.c does that. */
#ifndef SIM_CONF_H
#define SIM_CONF_H

#include <glib.h>
#include <stdint.h>

#define CONF_ERROR (conf_error_quark())
GQuark conf_error_quark(void);
typedef enum {
    CONF_ERROR_PARSE,   /* malformed YAML */
    CONF_ERROR_IO,      /* file cannot be read */
    CONF_ERROR_KEY,     /* unknown or missing key */
    CONF_ERROR_VALUE,   /* wrong type, unit or range */
    CONF_ERROR_INVALID, /* a layout or combination that cannot be */
} ConfError;

typedef enum { CONF_SCALAR, CONF_MAP, CONF_SEQ } ConfKind;

typedef struct ConfNode ConfNode;
struct ConfNode {
    ConfKind kind;
    char *origin;      /* file path, or "--set KEY=VALUE" */
    int line;          /* 1-based; 0 when the node came from the command line */
    int col;           /* 1-based */
    char *value;       /* scalar text (CONF_SCALAR) */
    GPtrArray *keys;   /* char *, CONF_MAP only, parallel to items */
    GArray *key_marks; /* int[2] line, column of each key (0, 0 from the command line) */
    GPtrArray *items;  /* ConfNode *, CONF_MAP and CONF_SEQ */
};

/* Deepest nesting of mappings and sequences a YAML file may have (a scenario needs about 6). */
#define CONF_MAX_DEPTH 64

/* Most bytes read from a path that is not a regular file (a pipe, a device) before giving up. */
#define CONF_MAX_STREAM_BYTES (16 << 20)

/* Parse a YAML file into a tree. Returns NULL and sets err (CONF_ERROR_IO, CONF_ERROR_PARSE). A
 * pipe or device is read up to CONF_MAX_STREAM_BYTES. */
ConfNode *conf_load_file(const char *path, GError **err);
/* Parse YAML text; origin names it in messages. */
ConfNode *conf_load_string(const char *text, const char *origin, GError **err);
void conf_node_free(ConfNode *n);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ConfNode, conf_node_free)
ConfNode *conf_node_copy(const ConfNode *n);
ConfNode *conf_scalar_new(const char *value, const char *origin);

/* "FILE:LINE:COL" (or the command-line origin) of a node, newly allocated. */
char *conf_where(const ConfNode *n);
/* Set err to "WHERE: message". Always returns FALSE so callers can `return conf_fail(...)`. */
gboolean conf_fail(GError **err, int code, const ConfNode *at, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

/* The value under key in a mapping, or NULL. */
ConfNode *conf_get(const ConfNode *map, const char *key);
/* Replace (or add) key in a mapping; takes ownership of value. */
void conf_put(ConfNode *map, const char *key, ConfNode *value);

/* Fail on the first key of map that is not in valid (NULL-terminated), naming the nearest one. */
gboolean conf_check_keys(const ConfNode *map, const char *const *valid, const char *section,
                         GError **err);
/* Fail unless node is a mapping (what names the section in the message). */
gboolean conf_expect_map(const ConfNode *n, const char *what, GError **err);

/* Typed getters. When key is absent: if required, fail naming the key; else leave *out as it is
 * (the caller's default) and return TRUE. */
gboolean conf_int(const ConfNode *map, const char *key, gboolean required, int64_t min, int64_t max,
                  int64_t *out, GError **err);
/* conf_int into an int: min and max must lie within int's range. */
gboolean conf_int32(const ConfNode *map, const char *key, gboolean required, int64_t min,
                    int64_t max, int *out, GError **err);
gboolean conf_double(const ConfNode *map, const char *key, gboolean required, double min,
                     double max, double *out, GError **err);
gboolean conf_bool(const ConfNode *map, const char *key, gboolean required, gboolean *out,
                   GError **err);
/* A boolean or one more word: *out is 0 (false), 1 (true) or 2 (word). */
gboolean conf_bool_or(const ConfNode *map, const char *key, gboolean required, const char *word,
                      int *out, GError **err);
/* One of choices (NULL-terminated); *out is its index. */
gboolean conf_enum(const ConfNode *map, const char *key, gboolean required,
                   const char *const *choices, int *out, GError **err);
gboolean conf_string(const ConfNode *map, const char *key, gboolean required, char **out,
                     GError **err);
/* Sizes: "64GiB", "1.5GB", "4096" (bytes). Must be >= 0. */
gboolean conf_bytes(const ConfNode *map, const char *key, gboolean required, double *out,
                    GError **err);
/* Rates: "25GB/s", "200Gb/s" (bits), bytes per second; must be > 0. */
gboolean conf_rate(const ConfNode *map, const char *key, gboolean required, double *out,
                   GError **err);
/* Durations: "2us", "1.5ms", "300ns", "12ps", "1s"; picoseconds, >= 0. */
gboolean conf_time(const ConfNode *map, const char *key, gboolean required, int64_t *out,
                   GError **err);
/* Compute rates: "191.5TFLOP/s"; FLOP per second, > 0. */
gboolean conf_flops(const ConfNode *map, const char *key, gboolean required, double *out,
                    GError **err);

/* Counts (conf_count.c): "300e9", "300B" or "300G" (1e9), "1.5T", "2M", "4k"; decimal
 * prefixes; must be > 0. */
gboolean conf_count(const ConfNode *map, const char *key, gboolean required, double *out,
                    GError **err);

/* Unit parsers on bare text (no node); return FALSE on a malformed value or wrong unit, and on a
 * value past the largest double (*out is then infinite, so callers can say "too large"). */
gboolean conf_parse_bytes(const char *s, double *out);
gboolean conf_parse_rate(const char *s, double *out);
gboolean conf_parse_time(const char *s, int64_t *out);
gboolean conf_parse_flops(const char *s, double *out);
gboolean conf_parse_count(const char *s, double *out);

/* Set a dotted path (a.b.c) in root to a scalar, creating mappings on the way. Fails if a node on
 * the way is not a mapping. origin names the override in messages. */
gboolean conf_set_path(ConfNode *root, const char *path, const char *value, const char *origin,
                       GError **err);

/* Levenshtein distance, for suggestions. */
int conf_edit_distance(const char *a, const char *b);

#endif
