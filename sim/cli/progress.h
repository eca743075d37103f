/* progress: one line of progress on standard error for work that lasts more than a couple of
 * seconds ("sweep [####......] 12/40 points, 3.1 s", "sim: simulating ..., 12 s"), drawn only
 * when standard error is a terminal: piped or redirected, nothing is written, so tests and
 * scripts see the same bytes as before.
 *
 * For: drawing and clearing that line. Not for: what the line says (the caller's text), or
 * messages (a caller that prints one while a line is drawn ends the line first:
 * progress_break). */
#ifndef SIM_PROGRESS_H
#define SIM_PROGRESS_H

#include <glib.h>

typedef struct Progress Progress;

#define PROGRESS_DELAY_S                                                                           \
    2.0 /* nothing is drawn before the work has lasted this long                                   \
           (environment SIM_PROGRESS_DELAY=SECONDS: another delay, for tests) */

/* A progress line, drawn only when wanted and standard error is a terminal. */
Progress *progress_new(gboolean wanted);

/* Whether a draw now would show: enabled, PROGRESS_DELAY_S passed since progress_new, and a
 * tenth of a second since the last draw. Cheap: callers test it before formatting. */
gboolean progress_due(Progress *p);

/* Draw the line (the text, then ", N.N s" of wall time) in place of the last, when due or when
 * force (and enabled and past the delay). */
void progress_draw(Progress *p, gboolean force, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* A line is on the screen: end it with a newline so that a message can follow. */
void progress_break(Progress *p);

/* Seconds since progress_new. */
double progress_elapsed(const Progress *p);

/* Done: a drawn line is kept (keep, with a newline) or erased. p is freed; NULL is fine. */
void progress_end(Progress *p, gboolean keep);

/* For one long computation that reports nothing as it goes (a single run): a thread redraws
 * "label, N s" twice a second once PROGRESS_DELAY_S has passed. progress_end stops it. */
Progress *progress_ticker(const char *label);

#endif
