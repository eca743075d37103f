/* validate_accuracy: the accuracy table every report reads (accuracy.h), from the check rows of a
 * validation run: per device and framework, which groups, how many rows, mean and max |error|. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "accuracy.h"
#include "validate.h"

typedef struct {
    char *device, *framework;
    GString *groups; /* space-separated, in order of first appearance */
    int rows;
    double sum, max; /* of |error|, percent */
} Line;

static void line_free(gpointer p) {
    Line *l = p;
    g_free(l->device);
    g_free(l->framework);
    g_string_free(l->groups, TRUE);
    g_free(l);
}

static gint line_cmp(gconstpointer a, gconstpointer b) {
    const Line *x = *(Line *const *)a, *y = *(Line *const *)b;
    int c = strcmp(x->device, y->device);
    return c ? c : strcmp(x->framework, y->framework);
}

static gboolean has_word(const GString *list, const char *w) {
    g_auto(GStrv) words = g_strsplit(list->str, " ", -1);
    for (int i = 0; words[i]; i++)
        if (!strcmp(words[i], w))
            return TRUE;
    return FALSE;
}

gboolean validate_write_accuracy(const Validation *v, const char *path, GError **err) {
    g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(line_free);
    for (guint i = 0; i < validate_count(v); i++) {
        const ValidateRow *r = validate_row(v, i);
        if (strcmp(r->use, "check") != 0 || !r->device)
            continue;
        if (strchr(r->device, ',') || strchr(r->group, ',') || strchr(r->group, ' ')) {
            g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_PARSE,
                        "%s:%d: row %s: a device name or group with a comma or space cannot go in "
                        "the accuracy table",
                        r->file, r->line, r->id);
            return FALSE;
        }
        Line *l = NULL;
        for (guint k = 0; k < lines->len && !l; k++) {
            Line *c = lines->pdata[k];
            if (!strcmp(c->device, r->device) && !strcmp(c->framework, r->framework))
                l = c;
        }
        if (!l) {
            l = g_new0(Line, 1);
            l->device = g_strdup(r->device);
            l->framework = g_strdup(r->framework);
            l->groups = g_string_new(NULL);
            g_ptr_array_add(lines, l);
        }
        if (!has_word(l->groups, r->group))
            g_string_append_printf(l->groups, "%s%s", l->groups->len ? " " : "", r->group);
        l->rows++;
        l->sum += fabs(r->error_pct);
        l->max = MAX(l->max, fabs(r->error_pct));
    }
    g_ptr_array_sort(lines, line_cmp);
    FILE *f = fopen(path, "w");
    if (!f) {
        g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_IO, "cannot write %s: %s", path,
                    g_strerror(errno));
        return FALSE;
    }
    fputs(ACCURACY_HEADER "\n", f);
    for (guint k = 0; k < lines->len; k++) {
        const Line *l = lines->pdata[k];
        char mean[G_ASCII_DTOSTR_BUF_SIZE], max[G_ASCII_DTOSTR_BUF_SIZE];
        g_ascii_formatd(mean, sizeof mean, "%.3f", l->sum / l->rows);
        g_ascii_formatd(max, sizeof max, "%.3f", l->max);
        fprintf(f, "%s,%s,%s,%d,%s,%s\n", l->device, l->framework, l->groups->str, l->rows, mean,
                max);
    }
    if (fclose(f) != 0) {
        g_set_error(err, VALIDATE_ERROR, VALIDATE_ERROR_IO, "cannot write %s: %s", path,
                    g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}
