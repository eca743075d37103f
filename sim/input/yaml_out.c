/* yaml_out: see yaml_out.h. One scalar is one document of a stream; its implicit start and end
 * write no markers, so the stream's text is the quoted scalar and a line break. */
#include "yaml_out.h"

#include <string.h>
#include <yaml.h>

static int append_out(void *data, unsigned char *buf, size_t size) {
    g_string_append_len(data, (const char *)buf, (gssize)size);
    return 1;
}

static gboolean emit(yaml_emitter_t *e, const char *s) {
    yaml_event_t ev;
    return yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
           yaml_emitter_emit(e, &ev) &&
           yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
           yaml_emitter_emit(e, &ev) &&
           yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                        YAML_DOUBLE_QUOTED_SCALAR_STYLE) &&
           yaml_emitter_emit(e, &ev) && yaml_document_end_event_initialize(&ev, 1) &&
           yaml_emitter_emit(e, &ev) && yaml_stream_end_event_initialize(&ev) &&
           yaml_emitter_emit(e, &ev);
}

void yaml_out_quoted(GString *out, const char *s) {
    g_autofree char *valid = g_utf8_make_valid(s, -1);
    g_autoptr(GString) buf = g_string_new(NULL);
    yaml_emitter_t e;
    g_assert(yaml_emitter_initialize(&e));
    yaml_emitter_set_output(&e, append_out, buf);
    yaml_emitter_set_width(&e, -1);  /* never fold a long scalar over lines */
    yaml_emitter_set_unicode(&e, 1); /* UTF-8 as it is, not \u escapes */
    gboolean ok = emit(&e, valid);
    yaml_emitter_delete(&e);
    /* valid UTF-8 without NUL (a C string) is all the emitter can refuse */
    g_assert(ok && buf->len >= 3 && buf->str[0] == '"');
    while (buf->len > 0 && buf->str[buf->len - 1] == '\n')
        g_string_truncate(buf, buf->len - 1);
    g_string_append_len(out, buf->str, (gssize)buf->len);
}
