/* accuracy: the line of validation/accuracy.csv that matches a run (see accuracy.h). */
#include "accuracy.h"

#include <stdlib.h>
#include <string.h>

Accuracy accuracy_find(const char *text, const char *device, const char *framework) {
    Accuracy a = {0};
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    if (!lines[0] || strcmp(g_strchomp(lines[0]), ACCURACY_HEADER) != 0)
        return a;
    for (int i = 1; lines[i]; i++) {
        /* device names hold no comma (the writer refuses them), so a plain split is the CSV */
        g_auto(GStrv) f = g_strsplit(g_strchomp(lines[i]), ",", -1);
        if (g_strv_length(f) != 6 || strcmp(f[0], device) != 0 || strcmp(f[1], framework) != 0)
            continue;
        a.rows = atoi(f[3]);
        a.mean_abs_error_pct = g_ascii_strtod(f[4], NULL);
        a.max_abs_error_pct = g_ascii_strtod(f[5], NULL);
        g_strlcpy(a.groups, f[2], sizeof a.groups);
        break;
    }
    return a;
}

Accuracy accuracy_lookup(const char *device, const char *framework) {
    const char *env = g_getenv("SIM_DATA_DIR");
    char *cands[2] = {env ? g_build_filename(env, "validation", ACCURACY_FILE, NULL) : NULL,
                      g_build_filename(SIM_SOURCE_DIR, "validation", ACCURACY_FILE, NULL)};
    Accuracy a = {0};
    for (int i = 0; i < 2; i++) {
        g_autofree char *text = NULL;
        if (cands[i] && g_file_get_contents(cands[i], &text, NULL, NULL)) {
            a = accuracy_find(text, device, framework);
            break;
        }
    }
    g_free(cands[0]);
    g_free(cands[1]);
    return a;
}
