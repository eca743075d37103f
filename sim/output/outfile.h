/* outfile: the one way `sim` writes a file a user names (-o, --trace, a validation baseline).
 *
 * For: every output path, so that each behaves alike: a symbolic link is written through (its
 * target replaced, the link kept); a device, a FIFO or a directory is refused, never replaced
 * (`sim import -o /dev/full` used to replace the device node with a YAML file); the text goes to
 * a temporary file beside the target, renamed over it only once every byte is written, so a
 * reader never sees half a file and a failed write leaves the old file as it was; any write
 * error is reported (the caller exits 1). /dev/null is written to as it is (output thrown away
 * on purpose). A NULL path is stdout, whose errors (a full disk, a
 * closed pipe) are reported too. Not for: what is written, or files sim reads. */
#ifndef SIM_OUTFILE_H
#define SIM_OUTFILE_H

#include <glib.h>
#include <stdio.h>

typedef struct OutFile OutFile;

/* The file that writing path replaces: path itself when nothing is there yet, else path with
 * symbolic links resolved when that is a regular file or the null device. NULL and err
 * (CONF_ERROR_IO, naming path) for a directory, a device, a FIFO, a socket or a link to nothing. */
char *outfile_target(const char *path, GError **err);

/* Start writing path (NULL: stdout). NULL and err (CONF_ERROR_IO) when path cannot be written
 * (outfile_target's refusals, or no temporary file can be made beside it). */
OutFile *outfile_open(const char *path, GError **err);

/* The stream to write to; errors on it are collected and reported by outfile_commit. */
FILE *outfile_stream(OutFile *o);

/* Finish: flush, check that every write succeeded, and put the file in place (rename over the
 * target). FALSE and err (CONF_ERROR_IO) otherwise, the target left as it was. o is freed. */
gboolean outfile_commit(OutFile *o, GError **err);

/* Give up writing: the temporary file is removed, the target left as it was. NULL is fine. */
void outfile_free(OutFile *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(OutFile, outfile_free)

/* The whole of data written to path (NULL: stdout) as outfile_open and outfile_commit would. */
gboolean outfile_write(const char *path, const char *data, gsize len, GError **err);

#endif
