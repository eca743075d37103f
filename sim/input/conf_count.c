/* conf_count: counts with a decimal suffix ("300e9", "300B", "1.5T"), the conf module's reader
 * for quantities that are neither sizes nor rates, such as training.token_budget. In its own file
 * so that conf.c stays within the 800-line limit; declared in conf.h. */
#include <math.h>
#include <string.h>

#include "conf.h"

gboolean conf_parse_count(const char *s, double *out) {
    static const char prefixes[] = "kKMBGTP"; /* B and G both 1e9: "300B tokens" */
    static const double mults[] = {1e3, 1e3, 1e6, 1e9, 1e9, 1e12, 1e15};
    while (g_ascii_isspace(*s))
        s++;
    char *rest = NULL;
    double v = g_ascii_strtod(s, &rest);
    if (rest == s || !isfinite(v))
        return FALSE;
    const char *at = *rest ? strchr(prefixes, *rest) : NULL;
    if (*rest && (!at || rest[1] != '\0'))
        return FALSE;
    *out = at ? v * mults[at - prefixes] : v;
    return isfinite(*out);
}

gboolean conf_count(const ConfNode *map, const char *key, gboolean required, double *out,
                    GError **err) {
    const ConfNode *n = conf_get(map, key);
    if (!n)
        return required ? conf_fail(err, CONF_ERROR_KEY, map, "missing key '%s'", key) : TRUE;
    if (n->kind != CONF_SCALAR)
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' must be a single value", key);
    double v = 0;
    if (!conf_parse_count(n->value, &v))
        return conf_fail(err, CONF_ERROR_VALUE, n,
                         "'%s' must be a count such as 300e9, 300B, 1.5T or 2000000, not '%s'", key,
                         n->value);
    if (!(v > 0))
        return conf_fail(err, CONF_ERROR_VALUE, n, "'%s' must be positive ('%s')", key, n->value);
    *out = v;
    return TRUE;
}
