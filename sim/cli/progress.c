/* progress: the one progress line on standard error (progress.h). A mutex orders the ticker
 * thread's draws against the caller's; a draw is "\r" + text + "\033[K" (erase to the end of the
 * line), so a shorter text leaves nothing of the longer one behind it. */
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

struct Progress {
    gboolean enabled; /* wanted and standard error a terminal */
    double delay_s;   /* PROGRESS_DELAY_S, or $SIM_PROGRESS_DELAY (tests: 0) */
    gboolean drawn;   /* a line is on the screen, not yet ended */
    gint64 t0, last;  /* monotonic microseconds: start, last draw */
    GMutex lock;
    /* ticker */
    GThread *thread;
    GCond stop_cond;
    gboolean stop;
    char *label;
};

Progress *progress_new(gboolean wanted) {
    Progress *p = g_new0(Progress, 1);
    p->enabled = wanted && isatty(STDERR_FILENO);
    p->t0 = g_get_monotonic_time();
    const char *d = g_getenv("SIM_PROGRESS_DELAY");
    p->delay_s = d ? g_ascii_strtod(d, NULL) : PROGRESS_DELAY_S;
    if (!(p->delay_s >= 0 && p->delay_s < 1e6))
        p->delay_s = PROGRESS_DELAY_S;
    g_mutex_init(&p->lock);
    g_cond_init(&p->stop_cond);
    return p;
}

double progress_elapsed(const Progress *p) {
    return (double)(g_get_monotonic_time() - p->t0) / 1e6;
}

gboolean progress_due(Progress *p) {
    if (!p || !p->enabled)
        return FALSE;
    gint64 now = g_get_monotonic_time();
    return now - p->t0 >= (gint64)(p->delay_s * 1e6) && now - p->last >= 100000;
}

static void draw_locked(Progress *p, const char *text) {
    fprintf(stderr, "\r%s, %.1f s\033[K", text, progress_elapsed(p));
    fflush(stderr);
    p->drawn = TRUE;
    p->last = g_get_monotonic_time();
}

void progress_draw(Progress *p, gboolean force, const char *fmt, ...) {
    if (!p || !p->enabled || progress_elapsed(p) < p->delay_s)
        return;
    if (!force && !progress_due(p))
        return;
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_mutex_lock(&p->lock);
    draw_locked(p, text);
    g_mutex_unlock(&p->lock);
}

void progress_break(Progress *p) {
    if (!p)
        return;
    g_mutex_lock(&p->lock);
    if (p->drawn) {
        fputc('\n', stderr);
        p->drawn = FALSE;
    }
    g_mutex_unlock(&p->lock);
}

static gpointer tick(gpointer data) {
    Progress *p = data;
    g_mutex_lock(&p->lock);
    while (!p->stop) { /* the first draw once the delay is over, then twice a second */
        gint64 until =
            p->drawn ? g_get_monotonic_time() + 500000 : p->t0 + (gint64)(p->delay_s * 1e6);
        g_cond_wait_until(&p->stop_cond, &p->lock, until);
        if (!p->stop && progress_elapsed(p) >= p->delay_s)
            draw_locked(p, p->label);
    }
    g_mutex_unlock(&p->lock);
    return NULL;
}

Progress *progress_ticker(const char *label) {
    Progress *p = progress_new(TRUE);
    p->label = g_strdup(label);
    if (p->enabled)
        p->thread = g_thread_new("progress", tick, p);
    return p;
}

void progress_end(Progress *p, gboolean keep) {
    if (!p)
        return;
    if (p->thread) {
        g_mutex_lock(&p->lock);
        p->stop = TRUE;
        g_cond_signal(&p->stop_cond);
        g_mutex_unlock(&p->lock);
        g_thread_join(p->thread);
    }
    if (p->drawn) {
        fputs(keep ? "\n" : "\r\033[K", stderr);
        fflush(stderr);
    }
    g_mutex_clear(&p->lock);
    g_cond_clear(&p->stop_cond);
    g_free(p->label);
    g_free(p);
}
