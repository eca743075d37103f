/* outfile: writing the files a user names (outfile.h). One place for what `sim sweep -o` had
 * learnt alone: resolve links with realpath(3) so that rename(2) replaces the link's target,
 * refuse what is not a regular file (POSIX rename replaces a device node's directory entry, not
 * the device), and write through a temporary file in the target's directory (rename is atomic
 * only within one file system: POSIX.1-2017 rename(), "EXDEV"). */
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf.h"

struct OutFile {
    FILE *f;      /* the temporary file, or stdout */
    char *path;   /* as the user gave it, for messages; NULL for stdout */
    char *target; /* what the rename replaces */
    char *tmp;    /* the temporary file beside it; NULL once renamed */
};

static gboolean io_fail(GError **err, const char *path, const char *why) {
    g_set_error(err, CONF_ERROR, CONF_ERROR_IO, "cannot write %s: %s", path, why);
    return FALSE;
}

/* The null device: output thrown away on purpose (`-o /dev/null`, as with any Unix tool), written
 * to as it is, never replaced. */
static gboolean is_null_device(const struct stat *st) {
    struct stat null;
    return S_ISCHR(st->st_mode) && stat("/dev/null", &null) == 0 && S_ISCHR(null.st_mode) &&
           st->st_rdev == null.st_rdev;
}

char *outfile_target(const char *path, GError **err) {
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return g_strdup(path); /* a new file: its folder is checked when it is made */
        io_fail(err, path, g_strerror(errno));
        return NULL;
    }
    char *real = realpath(path, NULL);
    if (!real) {
        io_fail(err, path, S_ISLNK(st.st_mode) ? "a symbolic link to nothing" : g_strerror(errno));
        return NULL;
    }
    if (stat(real, &st) != 0 || !(S_ISREG(st.st_mode) || is_null_device(&st))) {
        io_fail(err, path,
                S_ISDIR(st.st_mode) ? "a directory; name a file in it"
                                    : "not a regular file (a device, a FIFO or a socket is never "
                                      "replaced; leave out the option to write to stdout)");
        free(real);
        return NULL;
    }
    char *dup = g_strdup(real);
    free(real);
    return dup;
}

OutFile *outfile_open(const char *path, GError **err) {
    g_autoptr(OutFile) o = g_new0(OutFile, 1);
    if (!path) {
        o->f = stdout;
        return g_steal_pointer(&o);
    }
    o->path = g_strdup(path);
    if (!(o->target = outfile_target(path, err)))
        return NULL;
    struct stat st;
    if (stat(o->target, &st) == 0 && is_null_device(&st)) {
        if (!(o->f = fopen(o->target, "w"))) {
            io_fail(err, path, g_strerror(errno));
            return NULL;
        }
        return g_steal_pointer(&o);
    }
    g_autofree char *dir = g_path_get_dirname(o->target);
    g_autofree char *base = g_path_get_basename(o->target);
    g_autofree char *tmpl = g_strdup_printf("%s/.%s.XXXXXX", dir, base);
    int fd = g_mkstemp_full(tmpl, O_WRONLY, 0666); /* the umask applies, as for fopen */
    if (fd < 0) {
        io_fail(err, path, g_strerror(errno));
        return NULL;
    }
    o->tmp = g_steal_pointer(&tmpl);
    /* a file replaced keeps its permissions */
    if (stat(o->target, &st) == 0 && fchmod(fd, st.st_mode & 07777) != 0) {
        io_fail(err, path, g_strerror(errno));
        close(fd);
        return NULL;
    }
    if (!(o->f = fdopen(fd, "w"))) {
        io_fail(err, path, g_strerror(errno));
        close(fd);
        return NULL;
    }
    return g_steal_pointer(&o);
}

FILE *outfile_stream(OutFile *o) {
    return o->f;
}

gboolean outfile_commit(OutFile *o, GError **err) {
    g_autoptr(OutFile) own = o;
    const char *name = o->path ? o->path : "standard output";
    errno = 0;
    gboolean ok = fflush(o->f) == 0 && !ferror(o->f);
    int saved = errno;
    if (o->f != stdout) {
        FILE *f = o->f;
        o->f = NULL;
        if (fclose(f) != 0 && ok) {
            ok = FALSE;
            saved = errno;
        }
    }
    if (!ok)
        return io_fail(err, name, saved ? g_strerror(saved) : "a write failed");
    if (o->tmp) {
        if (rename(o->tmp, o->target) != 0)
            return io_fail(err, name, g_strerror(errno));
        g_clear_pointer(&o->tmp, g_free);
    }
    return TRUE;
}

void outfile_free(OutFile *o) {
    if (!o)
        return;
    if (o->f && o->f != stdout)
        fclose(o->f);
    if (o->tmp)
        g_unlink(o->tmp);
    g_free(o->tmp);
    g_free(o->target);
    g_free(o->path);
    g_free(o);
}

gboolean outfile_write(const char *path, const char *data, gsize len, GError **err) {
    OutFile *o = outfile_open(path, err);
    if (!o)
        return FALSE;
    fwrite(data, 1, len, o->f);
    return outfile_commit(o, err);
}
