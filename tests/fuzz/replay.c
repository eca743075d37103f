/* replay: runs a fuzz target's LLVMFuzzerTestOneInput over saved inputs, without libFuzzer, so the
 * normal build's tests replay the seed corpus and every crash input ever found.
 *
 * Usage: fuzz_replay_X PATH... (files, or folders whose files are read, sorted by name). Exits 0
 * when every input ran (a crash ends the process, which CTest reports), 1 when a path cannot be
 * read or none holds an input. */
#include "fuzz_common.h"

#include <stdio.h>
#include <string.h>

static gint cmp_str(gconstpointer a, gconstpointer b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static gboolean run_file(const char *path, int *count) {
    g_autofree char *data = NULL;
    gsize len = 0;
    g_autoptr(GError) err = NULL;
    if (!g_file_get_contents(path, &data, &len, &err)) {
        fprintf(stderr, "replay: %s\n", err->message);
        return FALSE;
    }
    LLVMFuzzerTestOneInput((const uint8_t *)data, len);
    (*count)++;
    return TRUE;
}

int main(int argc, char **argv) {
    int count = 0;
    for (int i = 1; i < argc; i++) {
        if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
            if (!run_file(argv[i], &count))
                return 1;
            continue;
        }
        g_autoptr(GError) err = NULL;
        g_autoptr(GDir) d = g_dir_open(argv[i], 0, &err);
        if (!d) {
            fprintf(stderr, "replay: %s\n", err->message);
            return 1;
        }
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        const char *e;
        while ((e = g_dir_read_name(d)))
            if (e[0] != '.')
                g_ptr_array_add(names, g_build_filename(argv[i], e, NULL));
        g_ptr_array_sort(names, cmp_str);
        for (guint k = 0; k < names->len; k++)
            if (!run_file(names->pdata[k], &count))
                return 1;
    }
    printf("replay: %d inputs, none crashed\n", count);
    return count > 0 ? 0 : 1;
}
