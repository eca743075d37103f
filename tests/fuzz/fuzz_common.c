/* fuzz_common: input splitting and the scratch files of the fuzz targets (see fuzz_common.h). */
#include "fuzz_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fuzz_input_split(const uint8_t *data, size_t size, FuzzInput *in) {
    const char *text = (const char *)data;
    size_t yaml_len = size;
    const char *rest = NULL;
    size_t mlen = strlen(FUZZ_SET_MARKER);
    /* the marker must start a line */
    for (size_t i = 0; i + mlen <= size; i++) {
        if ((i == 0 || text[i - 1] == '\n') && memcmp(text + i, FUZZ_SET_MARKER, mlen) == 0 &&
            (i + mlen == size || text[i + mlen] == '\n')) {
            yaml_len = i;
            rest = i + mlen < size ? text + i + mlen + 1 : text + size;
            break;
        }
    }
    in->yaml = g_malloc(yaml_len + 1);
    memcpy(in->yaml, text, yaml_len);
    in->yaml[yaml_len] = '\0';
    in->yaml_len = yaml_len;
    in->sets = NULL;
    if (!rest)
        return;
    GPtrArray *sets = g_ptr_array_new();
    const char *end = text + size;
    while (rest < end && sets->len < FUZZ_MAX_SETS) {
        const char *nl = memchr(rest, '\n', (size_t)(end - rest));
        const char *stop = nl ? nl : end;
        /* a NUL would end the override early, as it would on a command line */
        g_ptr_array_add(sets, g_strndup(rest, (gsize)(stop - rest)));
        rest = nl ? nl + 1 : end;
    }
    g_ptr_array_add(sets, NULL);
    in->sets = (char **)g_ptr_array_free(sets, FALSE);
}

void fuzz_input_clear(FuzzInput *in) {
    g_free(in->yaml);
    g_strfreev(in->sets);
    in->yaml = NULL;
    in->sets = NULL;
}

/* One scratch folder per process, removed at exit. */
static char *scratch_dir;
static GPtrArray *scratch_files;

static void scratch_remove(void) {
    for (guint i = 0; scratch_files && i < scratch_files->len; i++) {
        unlink(scratch_files->pdata[i]);
        g_free(scratch_files->pdata[i]);
    }
    if (scratch_files)
        g_ptr_array_free(scratch_files, TRUE);
    if (scratch_dir)
        rmdir(scratch_dir);
    g_free(scratch_dir);
}

const char *fuzz_write_file(const char *name, const char *text, size_t len) {
    if (!scratch_dir) {
        scratch_dir = g_dir_make_tmp("sim-fuzz-XXXXXX", NULL);
        if (!scratch_dir) {
            fprintf(stderr, "fuzz: cannot make a scratch folder\n");
            abort();
        }
        scratch_files = g_ptr_array_new();
        atexit(scratch_remove);
    }
    const char *path = NULL;
    for (guint i = 0; i < scratch_files->len && !path; i++)
        if (g_str_has_suffix(scratch_files->pdata[i], name))
            path = scratch_files->pdata[i];
    if (!path) {
        path = g_build_filename(scratch_dir, name, NULL);
        g_ptr_array_add(scratch_files, (char *)path);
    }
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "fuzz: cannot write %s\n", path);
        abort();
    }
    return path;
}

void fuzz_report(const char *path, const GError *err) {
    static int verbose = -1;
    if (verbose < 0)
        verbose = g_getenv("SIM_FUZZ_VERBOSE") != NULL;
    if (verbose)
        fprintf(stderr, "%s: %s\n", path, err ? err->message : "loaded");
}
