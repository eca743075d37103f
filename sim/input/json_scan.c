/* json_scan: see json_scan.h. */
#include "json_scan.h"

#include <string.h>

gboolean json_prescan(const char *path, const char *s, gsize len, int max_depth, GQuark domain,
                      int code, const char *holds, GError **err) {
    int depth = 0, line = 1;
    gsize line_start = 0;
    gboolean in_str = FALSE;
    for (gsize i = 0; i < len; i++) {
        char c = s[i];
        const char *what = NULL;
        if (c == '\0') {
            what = "a NUL byte";
        } else if (c == '\n') {
            line++;
            line_start = i + 1;
        } else if (in_str) {
            if (c == '"') {
                in_str = FALSE;
            } else if (c == '\\' && i + 1 < len) {
                if (s[i + 1] == 'u' && i + 5 < len && strncmp(s + i + 2, "0000", 4) == 0)
                    what = "a NUL character (\\u0000) in a string";
                i++; /* the escaped character, whatever it is */
            }
        } else if (c == '"') {
            in_str = TRUE;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) {
                g_set_error(err, domain, code,
                            "%s:%d:%d: objects and arrays nested more than %d deep", path, line,
                            (int)(i - line_start) + 1, max_depth);
                return FALSE;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        } else if (c == '-' || g_ascii_isdigit(c)) {
            /* an integer past int64 came back from json-glib wrapped: hidden_size
             * 9223372036854775808 was echoed as -9223372036854775808 */
            gsize n = 0;
            while (i + n < len && (g_ascii_isdigit(s[i + n]) || strchr("-+.eE", s[i + n])))
                n++;
            g_autofree char *num = g_strndup(s + i, n);
            const char *digits = num + (num[0] == '-');
            gboolean integer = *digits && strspn(digits, "0123456789") == strlen(digits);
            if (integer && !g_ascii_string_to_signed(num, 10, G_MININT64, G_MAXINT64, NULL, NULL)) {
                g_set_error(err, domain, code,
                            "%s:%d:%d: the whole number %s is past what 64 bits hold", path, line,
                            (int)(i - line_start) + 1, num);
                return FALSE;
            }
            i += n - 1;
        }
        if (what) {
            g_set_error(err, domain, code, "%s:%d:%d: %s; %s", path, line,
                        (int)(i - line_start) + 1, what, holds);
            return FALSE;
        }
    }
    return TRUE;
}
