/* sweep_out: where a sweep's rows go, surviving interruption. stdout is written in point order
 * (a reorder buffer of finished rows), a file in completion order while the sweep runs and in
 * point order once it completes. Beside a file, FILE.resume records the sweep's identity (a hash
 * of the scenario, overrides and columns) and a checksum of each row: resuming keeps only the
 * rows of a file this very sweep wrote, unedited. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "progress.h"
#include "sweep_internal.h"

/* --- output ----------------------------------------------------------------------------------- */

struct SweepOut {
    const Sweep *sw;
    char *path;         /* NULL: stdout */
    int fd;             /* the file, appending; -1 for stdout */
    char *record;       /* path.resume: the sweep's identity and a checksum of every row written */
    int record_fd;      /* the record, appending; -1 for stdout */
    char *identity;     /* SHA-256 of what makes the rows: scenario text, overrides, columns */
    Progress *progress; /* the bar on a terminal (progress.c) */
    guint8 *todo;       /* per point: still to run */
    guint8 *finished;   /* per point: result in (row or failure) */
    char **rows;        /* per point: its row, kept or new */
    int kept, failed, expected, done;
    int bad_input; /* of the failed, those that failed on their input */
    int next;      /* stdout: next point to write */
};

static gboolean write_all(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return FALSE;
        s += w;
        n -= (size_t)w;
    }
    return TRUE;
}

/* --- the record beside a file, for --resume --------------------------------------------------- */

#define RECORD_MAGIC "sim sweep record 1 "

/* What the rows depend on: the scenario file's text, the base and per-point overrides, the
 * format and the columns. Two sweeps with one of these different cannot share a file. (Model and
 * topology files a scenario names are not read here.) */
static char *sweep_identity(const Sweep *sw) {
    g_autoptr(GChecksum) ck = g_checksum_new(G_CHECKSUM_SHA256);
    g_autofree char *text = NULL;
    gsize len = 0;
    if (g_file_get_contents(sw->scenario, &text, &len, NULL))
        g_checksum_update(ck, (const guchar *)text, (gssize)len);
    char fmt[32];
    g_snprintf(fmt, sizeof fmt, "\n%d %d\n", (int)sw->fmt, (int)sw->timing);
    g_checksum_update(ck, (const guchar *)fmt, -1);
    g_checksum_update(ck, (const guchar *)sw->header, -1);
    for (char **b = sw->base_sets; b && *b; b++) {
        g_checksum_update(ck, (const guchar *)*b, -1);
        g_checksum_update(ck, (const guchar *)"\n", 1);
    }
    for (guint i = 0; i < sw->points->len; i++) {
        const Point *pt = sw->points->pdata[i];
        g_checksum_update(ck, (const guchar *)"\x1e", 1); /* a point starts */
        for (char **v = pt->sets; v && *v; v++) {
            g_checksum_update(ck, (const guchar *)*v, -1);
            g_checksum_update(ck, (const guchar *)"\n", 1);
        }
    }
    return g_strdup(g_checksum_get_string(ck));
}

/* "POINT SHA-256-OF-ROW\n": one line of the record. */
static char *record_line(int point, const char *row) {
    g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, row, -1);
    return g_strdup_printf("%d %s\n", point, sum);
}

/* Read the record of a file to resume: its lines in a set; FALSE unless it is this sweep's. */
static gboolean record_read(SweepOut *out, GHashTable *lines, GError **err) {
    g_autofree char *text = NULL;
    if (!g_file_get_contents(out->record, &text, NULL, NULL)) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                    "%s: no %s records which sweep wrote it, so its rows cannot be trusted; "
                    "write to another file, or remove it to start again",
                    out->path, out->record);
        return FALSE;
    }
    g_auto(GStrv) split = g_strsplit(text, "\n", -1);
    g_autofree char *want = g_strconcat(RECORD_MAGIC, out->identity, NULL);
    if (!split[0] || strcmp(split[0], want) != 0) {
        g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                    "%s: written by another sweep (another scenario, --set, --vary, format or "
                    "columns; see %s); write to another file, or remove it to start again",
                    out->path, out->record);
        return FALSE;
    }
    for (int i = 1; split[i]; i++)
        if (*split[i])
            g_hash_table_add(lines, g_strconcat(split[i], "\n", NULL));
    return TRUE;
}

/* The record of every row held, through a temporary file renamed over it. */
static gboolean record_rewrite(SweepOut *out, GError **err) {
    g_autoptr(GString) g = g_string_new(RECORD_MAGIC);
    g_string_append_printf(g, "%s\n", out->identity);
    for (guint i = 0; i < out->sw->points->len; i++)
        if (out->rows[i]) {
            g_autofree char *line = record_line((int)i, out->rows[i]);
            g_string_append(g, line);
        }
    return outfile_write(out->record, g->str, g->len, err);
}

/* --- the file ------------------------------------------------------------------------------- */

/* Write header and every row held, in point order, to path (outfile.h: through a temporary
 * file renamed over it, so a reader never sees half a file). */
static gboolean rewrite_sorted(SweepOut *out, GError **err) {
    OutFile *o = outfile_open(out->path, err);
    if (!o)
        return FALSE;
    FILE *f = outfile_stream(o);
    fputs(sweep_header(out->sw), f);
    for (guint i = 0; i < out->sw->points->len; i++)
        if (out->rows[i])
            fputs(out->rows[i], f);
    return outfile_commit(o, err);
}

/* Fields of a CSV line, quotes respected. */
static int csv_fields(const char *s, size_t n, size_t *end_of_field, int want) {
    int fields = 1;
    gboolean q = FALSE;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"')
            q = !q;
        else if (s[i] == ',' && !q) {
            if (fields == want && end_of_field)
                *end_of_field = i + 1;
            fields++;
        }
    }
    return fields;
}

/* Read a previous run's file: keep the rows that belong to points of this sweep. */
static gboolean resume_read(SweepOut *out, GError **err) {
    const Sweep *sw = out->sw;
    g_autofree char *text = NULL;
    gsize len = 0;
    g_autoptr(GError) ioerr = NULL;
    if (!g_file_get_contents(out->path, &text, &len, &ioerr)) {
        if (g_error_matches(ioerr, G_FILE_ERROR, G_FILE_ERROR_NOENT))
            return TRUE; /* nothing to resume */
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "%s", ioerr->message);
        return FALSE;
    }
    g_autoptr(GHashTable) records = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    if (!record_read(out, records, err))
        return FALSE;
    g_autoptr(GHashTable) by_prefix = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < sw->points->len; i++) {
        const Point *p = sw->points->pdata[i];
        if (p->status == SWEEP_POINT_OK)
            g_hash_table_insert(by_prefix, p->prefix, GINT_TO_POINTER(i + 1));
    }
    int ncols = (int)sw->columns->len, nkeys = (int)sw->keys->len;
    const char *first_fixed = sw->columns->pdata[nkeys];
    g_autofree char *marker = g_strdup_printf(", \"%s\": ", first_fixed);
    g_autofree char *last =
        g_strdup_printf("\"%s\": ", (char *)sw->columns->pdata[sw->columns->len - 1]);
    const char *p = text, *end = text + len;
    int line = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* a row cut short by the interruption: not finished */
        size_t n = (size_t)(nl - p) + 1;
        line++;
        if (line == 1 && sw->fmt == SWEEP_CSV) {
            if (n != strlen(sw->header) || memcmp(p, sw->header, n) != 0) {
                g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                            "%s: its header is not this sweep's (other varied keys, columns or "
                            "format); write to another file, or remove it to start again",
                            out->path);
                return FALSE;
            }
            p = nl + 1;
            continue;
        }
        size_t plen = 0;
        gboolean shaped;
        if (sw->fmt == SWEEP_CSV) {
            shaped = csv_fields(p, n - 1, &plen, nkeys) == ncols;
            if (nkeys == 0)
                plen = 0;
        } else {
            const char *m = g_strstr_len(p, (gssize)n, nkeys ? marker : "{");
            shaped = m && n >= 2 && p[n - 2] == '}' && g_strstr_len(p, (gssize)n, last);
            plen = m ? (size_t)(m - p) + (nkeys ? 2 : 1) : 0;
        }
        g_autofree char *prefix = g_strndup(p, plen);
        int i = shaped ? GPOINTER_TO_INT(g_hash_table_lookup(by_prefix, prefix)) - 1 : -1;
        if (i < 0) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                        "%s:%d: not a row of this sweep (its varied values or columns match no "
                        "point); write to another file, or remove it to start again",
                        out->path, line);
            return FALSE;
        }
        g_autofree char *row = g_strndup(p, n);
        g_autofree char *rec = record_line(i, row);
        if (!g_hash_table_contains(records, rec)) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_INVALID,
                        "%s:%d: this row is not as the sweep wrote it (edited since?); write to "
                        "another file, or remove it to start again",
                        out->path, line);
            return FALSE;
        }
        if (!out->rows[i]) {
            out->rows[i] = g_steal_pointer(&row);
            out->todo[i] = 0;
            out->kept++;
        }
        p = nl + 1;
    }
    return TRUE;
}

static void draw(SweepOut *out, gboolean last);

SweepOut *sweep_out_new(const Sweep *sw, const char *path, gboolean resume, gboolean progress,
                        GError **err) {
    int n = (int)sw->points->len;
    g_autoptr(SweepOut) out = g_new0(SweepOut, 1);
    out->sw = sw;
    out->fd = -1;
    out->progress = progress_new(progress);
    out->todo = g_new0(guint8, n);
    out->finished = g_new0(guint8, n);
    out->rows = g_new0(char *, n);
    out->record_fd = -1;
    /* links resolved (outfile.h), so that later appends go where the rewrite went */
    if (path && !(out->path = outfile_target(path, err)))
        return NULL;
    if (path) {
        out->record = g_strconcat(out->path, ".resume", NULL);
        out->identity = sweep_identity(sw);
    }
    for (int i = 0; i < n; i++)
        out->todo[i] = sweep_point_at(sw, i)->status == SWEEP_POINT_OK;
    if (!path) {
        g_return_val_if_fail(!resume, NULL);
        fputs(sw->header, stdout);
        fflush(stdout);
    } else {
        if (resume && !resume_read(out, err))
            return NULL;
        if (!rewrite_sorted(out, err) || !record_rewrite(out, err))
            return NULL;
        out->record_fd = open(out->record, O_WRONLY | O_APPEND);
        out->fd = open(out->path, O_WRONLY | O_APPEND);
        if (out->fd < 0 || out->record_fd < 0) {
            g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "cannot write %s: %s",
                        out->fd < 0 ? path : out->record, g_strerror(errno));
            return NULL;
        }
    }
    for (int i = 0; i < n; i++)
        out->expected += out->todo[i];
    return g_steal_pointer(&out);
}

void sweep_out_free(SweepOut *out) {
    if (!out)
        return;
    progress_end(out->progress, TRUE);
    if (out->fd >= 0)
        close(out->fd);
    if (out->record_fd >= 0)
        close(out->record_fd);
    g_free(out->record);
    g_free(out->identity);
    for (guint i = 0; i < out->sw->points->len; i++)
        g_free(out->rows[i]);
    g_free(out->rows);
    g_free(out->todo);
    g_free(out->finished);
    g_free(out->path);
    g_free(out);
}

const guint8 *sweep_out_todo(const SweepOut *out) {
    return out->todo;
}

int sweep_out_kept(const SweepOut *out) {
    return out->kept;
}

int sweep_out_failed(const SweepOut *out) {
    return out->failed;
}

int sweep_out_bad_input(const SweepOut *out) {
    return out->bad_input;
}

/* The bar, when due (last: at once, as the sweep ends); nothing before PROGRESS_DELAY_S. */
static void draw(SweepOut *out, gboolean last) {
    if (!last && !progress_due(out->progress))
        return;
    int width = 30, filled = out->expected ? width * out->done / out->expected : width;
    char bar[64];
    memset(bar, '#', (size_t)filled);
    memset(bar + filled, '.', (size_t)(width - filled));
    bar[width] = '\0';
    progress_draw(out->progress, last, "sweep [%s] %d/%d points", bar, out->done, out->expected);
}

void sweep_out_add(SweepOut *out, SweepResult *r) {
    int i = r->point;
    g_assert(out->todo[i] && !out->finished[i]);
    out->finished[i] = 1;
    out->done++;
    if (r->error) {
        g_autofree char *name = sweep_point_name(out->sw, i);
        progress_break(out->progress);
        fprintf(stderr, "sim sweep: %s: %s\n", name, r->error);
        out->failed++;
        out->bad_input += r->bad_input;
    } else {
        out->rows[i] = g_steal_pointer(&r->row);
        /* the record first: a row on disk always has its line in the record */
        g_autofree char *rec = out->fd >= 0 ? record_line(i, out->rows[i]) : NULL;
        if (out->fd >= 0 && (!write_all(out->record_fd, rec, strlen(rec)) ||
                             !write_all(out->fd, out->rows[i], strlen(out->rows[i]))))
            fprintf(stderr, "sim sweep: cannot write %s: %s\n", out->path, g_strerror(errno));
    }
    sweep_result_free(r);
    if (out->fd < 0) { /* stdout, in point order: write every row whose turn has come */
        int n = (int)out->sw->points->len;
        while (out->next < n && (!out->todo[out->next] || out->finished[out->next])) {
            if (out->rows[out->next])
                fputs(out->rows[out->next], stdout);
            out->next++;
        }
        fflush(stdout);
    }
    draw(out, FALSE);
}

gboolean sweep_out_finish(SweepOut *out, GError **err) {
    if (out->expected > 0)
        draw(out, TRUE);
    progress_break(out->progress); /* the bar stays, notes go below it */
    if (out->fd < 0) { /* a failed write earlier leaves the error flag, not a failing flush */
        if (fflush(stdout) == 0 && !ferror(stdout))
            return TRUE;
        g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "cannot write the output: %s",
                    errno ? g_strerror(errno) : "write error");
        return FALSE;
    }
    close(out->fd);
    out->fd = -1;
    return rewrite_sorted(out, err) && record_rewrite(out, err);
}
