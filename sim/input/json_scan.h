/* json_scan: what json-glib must not be handed, refused with its line and column before it
 * parses (sim import's configuration files, sim compare's reports). */
#ifndef SIM_JSON_SCAN_H
#define SIM_JSON_SCAN_H

#include <glib.h>

/* Refuse, in s (len bytes, read from path), with err set in (domain, code) as
 * "PATH:LINE:COL: what" and FALSE:
 * - objects and arrays nested deeper than max_depth: json-glib's parser recurses once a level,
 *   and 100,000 '[' (a 200 KB file) overflowed the stack (SIGSEGV);
 * - a NUL, raw or as the escape \u0000 (RFC 8259 section 7 allows the escape), which json-glib
 *   hands back in a C string cut short: "train_batch_size\u0000junk" was read as
 *   train_batch_size;
 * - a whole number past int64, which json-glib wraps (9223372036854775808 became negative).
 * `holds` names the kind of file in the NUL message ("a configuration holds none").
 * One pass, O(bytes); strings and their escapes are followed, so that a bracket or "\\u0000"
 * inside a string counts for nothing. */
gboolean json_prescan(const char *path, const char *s, gsize len, int max_depth, GQuark domain,
                      int code, const char *holds, GError **err);

#endif
