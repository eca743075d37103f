/* yaml_out: scalars written for YAML readers (sim import's scenarios, --print-scenario) by
 * libyaml's own emitter, so that what is written reads back as the same string. */
#ifndef SIM_YAML_OUT_H
#define SIM_YAML_OUT_H

#include <glib.h>

/* s as a double-quoted YAML scalar appended to out, on one line: bytes that are not UTF-8 become
 * U+FFFD first (the emitter refuses them); libyaml escapes '"', '\\', every control character
 * and the line breaks NEL, LS and PS (\N, \L, \P), and folds nothing (unlimited width). */
void yaml_out_quoted(GString *out, const char *s);

#endif
