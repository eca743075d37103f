/* fuzz_common: what the fuzz targets share: splitting an input into a YAML document and --set
 * overrides, and writing the document where the loaders can read it.
 *
 * An input is YAML text, optionally followed by a line "#--set" and then one KEY=VALUE override a
 * line (at most FUZZ_MAX_SETS; the rest are ignored). The marker is a YAML comment, so an input
 * without overrides is a plain YAML file and any shipped file is a valid seed.
 * Not for: deciding what is loaded; fuzz_scenario.c and fuzz_topology.c do that. */
#ifndef SIM_FUZZ_COMMON_H
#define SIM_FUZZ_COMMON_H

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#define FUZZ_MAX_SETS 8
#define FUZZ_SET_MARKER "#--set"

typedef struct {
    char *yaml; /* the document, NUL-terminated (a NUL inside is kept: the loader must refuse it) */
    size_t yaml_len; /* bytes of yaml */
    char **sets;     /* NULL-terminated KEY=VALUE overrides, or NULL for none */
} FuzzInput;

/* Split data (size bytes) into *in; clear it with fuzz_input_clear. */
void fuzz_input_split(const uint8_t *data, size_t size, FuzzInput *in);
void fuzz_input_clear(FuzzInput *in);

/* Write len bytes of text to a file owned by this process (same path on every call; name is
 * its base name, e.g. "scenario.yaml") and return its path (owned by fuzz_common). */
const char *fuzz_write_file(const char *name, const char *text, size_t len);

/* With SIM_FUZZ_VERBOSE set in the environment, print what became of an input: err's message, or
 * "loaded" (for checking that seeds load). */
void fuzz_report(const char *path, const GError *err);

/* The libFuzzer entry point each target defines (also called by replay.c). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
